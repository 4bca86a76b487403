package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svcplatform/platform/controlplane/vectors/index"
	"github.com/svcplatform/platform/controlplane/vectors/synth"
)

// vecRun is one line of vectors.jsonl: a build, or one pass of every query
// by one engine.
type vecRun struct {
	Kind    string  `json:"kind"` // build, query, filtered
	Round   int     `json:"round"`
	Engine  string  `json:"engine"`
	Threads int     `json:"threads"`
	Ef      int     `json:"ef,omitempty"`
	Queries int     `json:"queries"`
	WallS   float64 `json:"wall_s"`
	CPUS    float64 `json:"cpu_s"`
	Recall  float64 `json:"recall"`
	How     string  `json:"how,omitempty"`
}

func (r vecRun) qps() float64 { return float64(r.Queries) / r.WallS }

// qpc is queries per CPU-second: what holds when other processes share
// the cores.
func (r vecRun) qpc() float64 { return float64(r.Queries) / r.CPUS }

type vecData struct {
	n, dims, nq, k int
	data, queries  [][]float32
	gt, gtf        [][]int32
	mask           []bool
}

// maskOf accepts about one slot in 100, spread by a hash so it does not
// follow the clusters (which are drawn at random per vector anyway).
func maskOf(n int) []bool {
	m := make([]bool, n)
	for i := range m {
		x := uint64(i) + 0x9e3779b97f4a7c15
		x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
		x = (x ^ (x >> 27)) * 0x94d049bb133111eb
		x ^= x >> 31
		m[i] = x%100 == 0
	}
	return m
}

// prepareData generates the vectors (synth.Clustered, seed 2026, 100
// clusters) and queries, computes the exact top k of every query once
// (float32 scan of every vector: index.Store.ExactFloat), unfiltered and
// among the masked 1 %, and keeps them all under cache, where later runs
// read them back.
func prepareData(cache string, n, dims, nq, k int) (*vecData, string, error) {
	dir := filepath.Join(cache, fmt.Sprintf("vectors-n%d-d%d-q%d-k%d-s2026", n, dims, nq, k))
	d := &vecData{n: n, dims: dims, nq: nq, k: k, mask: maskOf(n)}
	if _, err := os.Stat(filepath.Join(dir, "meta.json")); err == nil {
		var err error
		if d.data, err = readF32(filepath.Join(dir, "data.f32"), n, dims); err != nil {
			return nil, "", err
		}
		if d.queries, err = readF32(filepath.Join(dir, "queries.f32"), nq, dims); err != nil {
			return nil, "", err
		}
		if d.gt, err = readI32(filepath.Join(dir, "gt.i32"), nq, k); err != nil {
			return nil, "", err
		}
		if d.gtf, err = readI32(filepath.Join(dir, "gtf.i32"), nq, k); err != nil {
			return nil, "", err
		}
		logf("vectors: data and ground truth from %s", dir)
		return d, dir, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	start := time.Now()
	d.data = synth.Clustered(n, dims, 100, 1.0, 2026)
	d.queries = synth.Queries(nq, dims, 100, 1.0, 2026)
	st := index.NewStore(dims, index.Cosine)
	for _, v := range d.data {
		p, _ := st.Prepare(v)
		st.Add(p)
	}
	accept := func(slot int32) bool { return d.mask[slot] }
	d.gt, d.gtf = make([][]int32, nq), make([][]int32, nq)
	for i, q := range d.queries {
		p, _ := st.Prepare(q)
		d.gt[i] = slots(st.ExactFloat(p, k, nil))
		d.gtf[i] = slots(st.ExactFloat(p, k, accept))
	}
	logf("vectors: %d x %d generated and ground truth of %d queries computed in %v", n, dims, nq, time.Since(start).Round(time.Millisecond))
	mask := make([]byte, n)
	for i, m := range d.mask {
		if m {
			mask[i] = 1
		}
	}
	meta, _ := json.Marshal(map[string]any{"n": n, "dims": dims, "queries": nq, "k": k, "clusters": 100, "spread": 1.0, "seed": 2026, "metric": "cosine"})
	for _, f := range []struct {
		name string
		b    []byte
	}{
		{"data.f32", f32Bytes(d.data)}, {"queries.f32", f32Bytes(d.queries)},
		{"gt.i32", i32Bytes(d.gt)}, {"gtf.i32", i32Bytes(d.gtf)}, {"mask.u8", mask}, {"meta.json", meta},
	} {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.b, 0o644); err != nil {
			return nil, "", err
		}
	}
	return d, dir, nil
}

func slots(hs []index.Hit) []int32 {
	out := make([]int32, len(hs))
	for i, h := range hs {
		out[i] = h.Slot
	}
	return out
}

func f32Bytes(vs [][]float32) []byte {
	var b []byte
	for _, v := range vs {
		for _, x := range v {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
	}
	return b
}

func i32Bytes(vs [][]int32) []byte {
	var b []byte
	for _, v := range vs {
		for _, x := range v {
			b = binary.LittleEndian.AppendUint32(b, uint32(x))
		}
	}
	return b
}

func readF32(path string, rows, cols int) ([][]float32, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) != rows*cols*4 {
		return nil, fmt.Errorf("%s: %d bytes, want %d: delete the folder to generate it again", path, len(b), rows*cols*4)
	}
	out := make([][]float32, rows)
	flat := make([]float32, rows*cols)
	for i := range flat {
		flat[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	for i := range out {
		out[i] = flat[i*cols : (i+1)*cols : (i+1)*cols]
	}
	return out, nil
}

func readI32(path string, rows, cols int) ([][]int32, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) != rows*cols*4 {
		return nil, fmt.Errorf("%s: %d bytes, want %d: delete the folder to generate it again", path, len(b), rows*cols*4)
	}
	out := make([][]int32, rows)
	for i := range out {
		out[i] = make([]int32, cols)
		for j := range out[i] {
			out[i][j] = int32(binary.LittleEndian.Uint32(b[4*(i*cols+j):]))
		}
	}
	return out, nil
}

func recallOf(got [][]int32, want [][]int32) float64 {
	hit, all := 0, 0
	for i, w := range want {
		for _, x := range w {
			all++
			if slices.Contains(got[i], x) {
				hit++
			}
		}
	}
	return float64(hit) / float64(all)
}

// platformVec is the platform's index in this process: the same Store and
// HNSW the vectors service holds per collection.
type platformVec struct {
	st      *index.Store
	h       *index.HNSW
	queries [][]float32 // prepared
}

func (p *platformVec) build(d *vecData, m, efc int) vecRun {
	runtime.GC()
	w0, c0 := time.Now(), processCPU()
	p.st = index.NewStore(d.dims, index.Cosine)
	for _, v := range d.data {
		pv, _ := p.st.Prepare(v)
		p.st.Add(pv)
	}
	// As the service builds it (vectors.Collection): batches of 64 per
	// core inserted in parallel.
	p.h = index.NewHNSW(p.st, index.HNSWConfig{M: m, EfConstruction: efc, Seed: 1})
	workers := runtime.GOMAXPROCS(0)
	for p.h.Covered() < p.st.Slots() {
		p.h.InsertBatch(min(64*workers, p.st.Slots()-p.h.Covered()), workers)
	}
	r := vecRun{Kind: "build", Engine: "platform", Threads: workers, Queries: d.n,
		WallS: time.Since(w0).Seconds(), CPUS: (processCPU() - c0).Seconds()}
	p.queries = make([][]float32, d.nq)
	for i, q := range d.queries {
		p.queries[i], _ = p.st.Prepare(q)
	}
	return r
}

// run answers every query once with threads goroutines (GOMAXPROCS set to
// threads meanwhile, so one thread is one core), by search.
func (p *platformVec) run(d *vecData, threads int, search func(q []float32) []index.Hit) (time.Duration, time.Duration, [][]int32) {
	prev := runtime.GOMAXPROCS(threads)
	defer runtime.GOMAXPROCS(prev)
	runtime.GC()
	got := make([][]int32, d.nq)
	var next atomic.Int64
	w0, c0 := time.Now(), processCPU()
	var wg sync.WaitGroup
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= d.nq {
					return
				}
				got[i] = slots(search(p.queries[i]))
			}
		}()
	}
	wg.Wait()
	return time.Since(w0), processCPU() - c0, got
}

// pyPeer is bench/peers/vectors.py, one JSON line each way.
type pyPeer struct {
	cmd      *exec.Cmd
	in       io.WriteCloser
	out      *bufio.Scanner
	versions map[string]any
}

func startPyPeer(python, script, dir string) (*pyPeer, error) {
	cmd := exec.Command(python, script, dir)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &pyPeer{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	p.out.Buffer(make([]byte, 1<<20), 1<<20)
	var hello struct {
		Ready    bool           `json:"ready"`
		Versions map[string]any `json:"versions"`
	}
	if !p.out.Scan() {
		cmd.Wait()
		return nil, fmt.Errorf("%s did not start (see its error above): install the peers with bench/peers.sh's installer", script)
	}
	if err := json.Unmarshal(p.out.Bytes(), &hello); err != nil || !hello.Ready {
		return nil, fmt.Errorf("%s: unexpected first line %q", script, p.out.Text())
	}
	p.versions = hello.Versions
	return p, nil
}

func (p *pyPeer) call(cmd map[string]any) (vecRun, error) {
	b, _ := json.Marshal(cmd)
	if _, err := p.in.Write(append(b, '\n')); err != nil {
		return vecRun{}, err
	}
	if !p.out.Scan() {
		return vecRun{}, errors.New("the Python peer stopped (see its error above)")
	}
	var r struct {
		vecRun
		Error string `json:"error"`
	}
	if err := json.Unmarshal(p.out.Bytes(), &r); err != nil {
		return vecRun{}, err
	}
	if r.Error != "" {
		return vecRun{}, errors.New(r.Error)
	}
	return r.vecRun, nil
}

func (p *pyPeer) close() {
	p.in.Write([]byte(`{"op":"quit"}` + "\n"))
	p.in.Close()
	p.cmd.Wait()
}

func runVectors(args []string) error {
	fs := flag.NewFlagSet("vectors", flag.ExitOnError)
	n := fs.Int("n", 100_000, "vectors")
	dims := fs.Int("dims", 768, "dimensions")
	nq := fs.Int("queries", 1000, "queries")
	k := fs.Int("k", 10, "top k (recall@k)")
	rounds := fs.Int("rounds", 3, "rounds of every query run, alternating the engines' order")
	efList := fs.String("efs", "16,32,64,96,128,192", "ef of the recall-versus-speed sweep")
	m := fs.Int("m", index.DefaultM, "HNSW M of every engine")
	efc := fs.Int("efc", index.DefaultEfConstruction, "HNSW efConstruction of every engine")
	cache := fs.String("cache", "bench/out/cache", "where the data and ground truth are kept between runs")
	out := fs.String("out", "", "results folder (vectors.jsonl, vectors.md)")
	python := fs.String("python", "/usr/bin/python3", "Python with hnswlib, faiss and numpy")
	script := fs.String("peer", "bench/peers/vectors.py", "the peers' driver")
	engines := fs.String("engines", "platform,hnswlib,faiss", "engines to measure")
	target := fs.Float64("recall", 0.95, "the recall the matched-recall rows compare at")
	fs.Parse(args)
	efs := []int{}
	for _, f := range strings.Split(*efList, ",") {
		e, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || e < *k {
			return fmt.Errorf("-efs: %q is not a number >= k", f)
		}
		efs = append(efs, e)
	}
	if *out == "" {
		return errors.New("-out is required")
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	d, dir, err := prepareData(*cache, *n, *dims, *nq, *k)
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, e := range strings.Split(*engines, ",") {
		want[strings.TrimSpace(e)] = true
	}
	var py *pyPeer
	if want["hnswlib"] || want["faiss"] {
		if py, err = startPyPeer(*python, *script, dir); err != nil {
			return err
		}
		defer py.close()
	}
	jf, err := os.Create(filepath.Join(*out, "vectors.jsonl"))
	if err != nil {
		return err
	}
	defer jf.Close()
	var runs []vecRun
	record := func(r vecRun) {
		runs = append(runs, r)
		b, _ := json.Marshal(r)
		jf.Write(append(b, '\n'))
		if r.Kind == "build" {
			logf("vectors: %s built in %.1f s (%.1f CPU-s)", r.Engine, r.WallS, r.CPUS)
		}
	}
	order := []string{}
	for _, e := range []string{"platform", "hnswlib", "faiss"} {
		if want[e] {
			order = append(order, e)
		}
	}
	plat := &platformVec{}
	cores := runtime.NumCPU()
	for _, e := range order {
		if e == "platform" {
			record(plat.build(d, *m, *efc))
			continue
		}
		r, err := py.call(map[string]any{"op": "build", "engine": e, "m": *m, "efc": *efc})
		if err != nil {
			return fmt.Errorf("%s build: %w", e, err)
		}
		r.Kind, r.Engine, r.Threads, r.Queries = "build", e, cores, d.n
		record(r)
	}
	accept := func(slot int32) bool { return d.mask[slot] }
	// The accepted slots as the posting list of a metadata value: the
	// service keeps one per indexed value as vectors are written.
	var accepted []int32
	for i, m := range d.mask {
		if m {
			accepted = append(accepted, int32(i))
		}
	}
	for round := 1; round <= *rounds; round++ {
		eng := slices.Clone(order)
		if round%2 == 0 {
			slices.Reverse(eng)
		}
		logf("vectors: round %d of %d", round, *rounds)
		for _, threads := range []int{1, cores} {
			for _, ef := range efs {
				for _, e := range eng {
					var r vecRun
					if e == "platform" {
						wall, cpu, got := plat.run(d, threads, func(q []float32) []index.Hit { return plat.h.Search(q, d.k, ef) })
						r = vecRun{WallS: wall.Seconds(), CPUS: cpu.Seconds(), Recall: recallOf(got, d.gt)}
					} else if r, err = py.call(map[string]any{"op": "query", "engine": e, "ef": ef, "threads": threads}); err != nil {
						return fmt.Errorf("%s query: %w", e, err)
					}
					r.Kind, r.Round, r.Engine, r.Threads, r.Ef, r.Queries = "query", round, e, threads, ef, d.nq
					record(r)
				}
			}
			for _, e := range eng {
				var r vecRun
				if e == "platform" {
					wall, cpu, got := plat.run(d, threads, func(q []float32) []index.Hit { return plat.st.ExactSlots(q, d.k, accepted, accept) })
					r = vecRun{WallS: wall.Seconds(), CPUS: cpu.Seconds(), Recall: recallOf(got, d.gtf), How: "exact over the value's posting list: the accepted slots bounded by int8 codes, float32 re-rank (the service's filtered path)"}
				} else if r, err = py.call(map[string]any{"op": "filtered", "engine": e, "threads": threads}); err != nil {
					return fmt.Errorf("%s filtered: %w", e, err)
				}
				r.Kind, r.Round, r.Engine, r.Threads, r.Queries = "filtered", round, e, threads, d.nq
				record(r)
			}
		}
	}
	var versions map[string]any
	if py != nil {
		versions = py.versions
	}
	table := vectorTable(runs, order, efs, *target, d, cores, versions)
	fmt.Print(table)
	return os.WriteFile(filepath.Join(*out, "vectors.md"), []byte(table), 0o644)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().UTC().Format("15:04:05")+" "+format+"\n", args...)
}
