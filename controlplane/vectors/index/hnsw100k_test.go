package index

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/vectors/synth"
)

// BenchmarkHNSW100k is the index-level loop of the approximate path on the
// README benchmark's data (100,000 x 768 clustered, cosine, seed 2026, 200
// queries): the exact path and the graph at several ef (VECTORS_BENCH_EFS),
// p50 and mean latency, the search thread's CPU time, recall@10 and nodes
// ranked per query, each variant answering every query in turn, rounds
// repeated (VECTORS_BENCH_REPS). The graph is built once and cached in the
// temporary directory (VECTORS_HNSW_CACHE names another file; it holds the
// links only, so the search code can change between runs), so a run after
// the first takes seconds (VECTORS_BENCH_M and _EFC build other graphs;
// VECTORS_BENCH_DESCEND adds each ef started by the upper layers' descent
// instead of the pivots' scan, interleaved; the "start" column counts the
// nodes ranked to find the bottom layer's entry, pivots included, "whole"
// those whose both bit planes were read, "expand" the nodes expanded,
// "int8s" and "floats" the nodes re-ranked by the int8 codes and in
// float32; VECTORS_BENCH_SIGMAS and _FLOATS vary the walk's margin and the
// float32 re-rank):
//
//	go test -run '^$' -bench HNSW100k -benchtime 1x ./controlplane/vectors/index/
func BenchmarkHNSW100k(b *testing.B) {
	n, dims, clusters, nq := 100_000, 768, 100, 200
	if s := os.Getenv("VECTORS_BENCH_N"); s != "" {
		fmt.Sscan(s, &n)
	}
	start := time.Now()
	s := NewStore(dims, Cosine)
	for _, v := range synth.Clustered(n, dims, clusters, 1.0, 2026) {
		p, _ := s.Prepare(v)
		s.Add(p)
	}
	fmt.Printf("store of %d x %d built in %v\n", n, dims, time.Since(start).Round(time.Millisecond))
	if b, err := os.ReadFile("/proc/self/smaps_rollup"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "AnonHugePages") {
				fmt.Println(l)
			}
		}
	}
	cfg := HNSWConfig{Seed: 1}
	fmt.Sscan(os.Getenv("VECTORS_BENCH_M"), &cfg.M)
	fmt.Sscan(os.Getenv("VECTORS_BENCH_EFC"), &cfg.EfConstruction)
	efs := []int{48, DefaultEf, 96}
	if e := os.Getenv("VECTORS_BENCH_EFS"); e != "" {
		efs = nil
		for _, f := range strings.Fields(e) {
			var ef int
			fmt.Sscan(f, &ef)
			efs = append(efs, ef)
		}
	}
	h := NewHNSW(s, cfg)
	cache := os.Getenv("VECTORS_HNSW_CACHE")
	if cache == "" {
		cache = filepath.Join(os.TempDir(), fmt.Sprintf("vectors-hnsw-%d-%d-m%d-efc%d.bin", n, dims, h.m, h.efC))
	}
	start = time.Now()
	if err := loadGraph(h, cache); err != nil {
		workers := runtime.GOMAXPROCS(0)
		for h.Covered() < s.Slots() {
			h.InsertBatch(min(64*workers, s.Slots()-h.Covered()), workers)
		}
		fmt.Printf("graph built in %v (%v)\n", time.Since(start).Round(time.Millisecond), err)
		if err := saveGraph(h, cache); err != nil {
			b.Fatal(err)
		}
	} else {
		fmt.Printf("graph loaded from %s in %v\n", cache, time.Since(start).Round(time.Millisecond))
	}
	prepared := make([][]float32, nq)
	for i, q := range synth.Queries(nq, dims, clusters, 1.0, 2026) {
		prepared[i], _ = s.Prepare(q)
	}
	truth := make([][]Hit, nq)
	for i, q := range prepared {
		truth[i] = s.Exact(q, 10, nil)
	}
	p50 := func(l []time.Duration) time.Duration {
		l = slices.Clone(l)
		slices.Sort(l)
		return l[len(l)/2]
	}
	mean := func(l []time.Duration) time.Duration {
		var t time.Duration
		for _, d := range l {
			t += d
		}
		return t / time.Duration(len(l))
	}
	fmt.Printf("load %s", loadavg())
	// Each variant answers all the queries in turn, rounds repeated, so
	// that every variant meets the same load (other jobs share the cores)
	// and none finds the previous one's nodes in the caches.
	type variant struct {
		name     string
		fn       func(q []float32) ([]Hit, walkStats)
		lat, cpu []time.Duration
		found    int
		stats    walkStats
	}
	vs := []*variant{{name: "exact", fn: func(q []float32) ([]Hit, walkStats) { return s.Exact(q, 10, nil), walkStats{} }}}
	// VECTORS_BENCH_SIGMAS lists the walk's rejection margins (0 reads
	// every neighbour whole), VECTORS_BENCH_FLOATS the float32 re-rank's
	// sizes (16 was the previous one).
	sigmas := []float64{DefaultSigmas}
	if e := os.Getenv("VECTORS_BENCH_SIGMAS"); e != "" {
		sigmas = nil
		for _, f := range strings.Fields(e) {
			var k float64
			fmt.Sscan(f, &k)
			sigmas = append(sigmas, k)
		}
	}
	floats := []int{FloatRerank}
	if e := os.Getenv("VECTORS_BENCH_FLOATS"); e != "" {
		floats = nil
		for _, f := range strings.Fields(e) {
			var n int
			fmt.Sscan(f, &n)
			floats = append(floats, n)
		}
	}
	for _, ef := range efs {
		for _, k := range sigmas {
			for _, fl := range floats {
				name := fmt.Sprint("hnsw ef ", ef)
				if len(sigmas) > 1 || k != DefaultSigmas {
					name += fmt.Sprint(" sigmas ", k)
				}
				if len(floats) > 1 || fl != FloatRerank {
					name += fmt.Sprint(" floats ", fl)
				}
				vs = append(vs, &variant{name: name, fn: func(q []float32) ([]Hit, walkStats) {
					h.descend, h.sigmas, h.floatRerank = false, k, fl
					defer func() { h.sigmas, h.floatRerank = DefaultSigmas, FloatRerank }()
					return h.search(q, 10, ef)
				}})
			}
		}
		if os.Getenv("VECTORS_BENCH_DESCEND") != "" {
			// The start before the pivots: the upper layers' descent.
			vs = append(vs, &variant{name: fmt.Sprint("descent ef ", ef), fn: func(q []float32) ([]Hit, walkStats) {
				h.descend = true
				defer func() { h.descend = false }()
				return h.search(q, 10, ef)
			}})
		}
	}
	if os.Getenv("VECTORS_BENCH_WARM") != "" {
		// The same query twice: the second finds the nodes in the caches,
		// which splits a search's time into memory and computation.
		vs = append(vs, &variant{name: fmt.Sprint("twice, ef ", DefaultEf), fn: func(q []float32) ([]Hit, walkStats) {
			h.search(q, 10, DefaultEf)
			return h.search(q, 10, DefaultEf)
		}})
	}
	reps := 3
	fmt.Sscan(os.Getenv("VECTORS_BENCH_REPS"), &reps)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for b.Loop() {
		for rep := 0; rep < reps; rep++ {
			for _, v := range vs {
				for i, q := range prepared {
					c0 := threadCPU()
					t0 := time.Now()
					hits, st := v.fn(q)
					v.lat = append(v.lat, time.Since(t0))
					v.cpu = append(v.cpu, threadCPU()-c0)
					if rep == 0 {
						v.found += overlap(hits, truth[i])
						v.stats.dists += st.dists
						v.stats.start += st.start
						v.stats.whole += st.whole
						v.stats.expand += st.expand
						v.stats.floats += st.floats
						v.stats.int8s += st.int8s
					}
				}
			}
		}
	}
	fmt.Printf("load after %s", loadavg())
	fmt.Printf("%-28s %9s %9s %9s %8s %9s %6s %6s %6s %6s %6s %6s\n", "path", "p50", "mean", "cpu p50", "recall", "p50 ratio", "dists", "start", "whole", "expand", "int8s", "floats")
	for _, v := range vs {
		fmt.Printf("%-28s %9v %9v %9v %8.3f %8.1fx %6d %6d %6d %6d %6.1f %6.1f\n", v.name, p50(v.lat).Round(time.Microsecond), mean(v.lat).Round(time.Microsecond), p50(v.cpu).Round(time.Microsecond),
			float64(v.found)/float64(10*nq), float64(p50(vs[0].lat))/float64(p50(v.lat)), v.stats.dists/nq, v.stats.start/nq, v.stats.whole/nq, v.stats.expand/nq, float64(v.stats.int8s)/float64(nq), float64(v.stats.floats)/float64(nq))
	}
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return string(b)
}

func overlap(got, want []Hit) int {
	n := 0
	for _, g := range got {
		for _, w := range want {
			if g.Slot == w.Slot {
				n++
				break
			}
		}
	}
	return n
}

// saveGraph writes h's levels and links (the cache of BenchmarkHNSW100k).
func saveGraph(h *HNSW, path string) error {
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	binary.Write(w, binary.LittleEndian, int64(h.Covered()))
	binary.Write(w, binary.LittleEndian, int64(h.entry))
	binary.Write(w, binary.LittleEndian, int64(h.maxLevel))
	for slot := 0; slot < h.Covered(); slot++ {
		lv := int(h.levels[slot])
		binary.Write(w, binary.LittleEndian, int8(lv))
		for l := 0; l <= lv; l++ {
			ls := h.linksOf(int32(slot), l)
			binary.Write(w, binary.LittleEndian, uint16(len(ls)))
			binary.Write(w, binary.LittleEndian, ls)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// loadGraph reads what saveGraph wrote into the empty graph h, whose store
// must hold the same slots.
func loadGraph(h *HNSW, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var n, entry, maxLevel int64
	binary.Read(r, binary.LittleEndian, &n)
	binary.Read(r, binary.LittleEndian, &entry)
	if err := binary.Read(r, binary.LittleEndian, &maxLevel); err != nil {
		return err
	}
	if int(n) != h.st.Slots() {
		return fmt.Errorf("cache has %d slots, store %d", n, h.st.Slots())
	}
	type node struct {
		lv    int8
		links [][]int32
	}
	nodes := make([]node, n)
	for slot := range nodes {
		nd := &nodes[slot]
		if err := binary.Read(r, binary.LittleEndian, &nd.lv); err != nil {
			return err
		}
		for l := 0; l <= int(nd.lv); l++ {
			var c uint16
			if err := binary.Read(r, binary.LittleEndian, &c); err != nil {
				return err
			}
			ls := make([]int32, c)
			if err := binary.Read(r, binary.LittleEndian, ls); err != nil && err != io.EOF {
				return err
			}
			nd.links = append(nd.links, ls)
		}
	}
	for _, nd := range nodes {
		h.appendNode(nd.lv)
	}
	for slot, nd := range nodes {
		for l, ls := range nd.links {
			h.setLinks(int32(slot), l, ls)
		}
	}
	h.entry, h.maxLevel = int32(entry), int(maxLevel)
	return nil
}
