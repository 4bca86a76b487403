package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// dbRun is one line of databases.jsonl: one run of one operation through
// one target.
type dbRun struct {
	Round    int     `json:"round"`
	Target   string  `json:"target"`
	Op       string  `json:"op"`
	Requests int     `json:"requests"`
	Errors   int     `json:"errors"`
	WallS    float64 `json:"wall_s"`
	P50      float64 `json:"p50_us"`
	P99      float64 `json:"p99_us"`
	CPUus    float64 `json:"cpu_us_per_request"`
	// FirstError is the first failed answer of the run, if any.
	FirstError string `json:"first_error,omitempty"`
}

func (r dbRun) rps() float64 { return float64(r.Requests-r.Errors) / r.WallS }

// dbTarget sends the three operations to one database.
type dbTarget struct {
	name string
	pid  int // the server's process; its descendants' CPU counts too
	// body returns the URL and JSON body of op (read: its row id).
	req    func(op string, id int) (string, []byte)
	header http.Header
	// ok checks an answer of op.
	ok func(op string, body []byte) bool
}

const dbRows = 1000

func platformDB(base, key string, client *http.Client) (dbTarget, error) {
	h := http.Header{"Authorization": {"Bearer " + key}, "Content-Type": {"application/json"}}
	post := func(path string, body any, out any) error {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", base+path, bytes.NewReader(b))
		req.Header = h.Clone()
		res, err := client.Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		data, _ := io.ReadAll(res.Body)
		if res.StatusCode/100 != 2 {
			return fmt.Errorf("POST %s: %d %.300s", path, res.StatusCode, data)
		}
		if out != nil {
			return json.Unmarshal(data, out)
		}
		return nil
	}
	var project struct {
		Project struct{ ID string } `json:"project"`
	}
	if err := post("/api/projects", map[string]any{"name": "peers-db"}, &project); err != nil {
		return dbTarget{}, err
	}
	var db struct {
		Database struct{ ID string } `json:"database"`
	}
	if err := post("/api/projects/"+project.Project.ID+"/databases", map[string]any{"name": "kv"}, &db); err != nil {
		return dbTarget{}, err
	}
	url := base + "/api/databases/" + db.Database.ID
	path := "/api/databases/" + db.Database.ID
	// The database may still be being created: retry the schema a while.
	var err error
	for range 100 {
		if err = post(path, map[string]any{"sql": "CREATE TABLE kv (id INTEGER PRIMARY KEY, v TEXT NOT NULL)"}, nil); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return dbTarget{}, err
	}
	// The seed rows in batches of 100 (the API's batch limit).
	for first := 0; first < dbRows; first += 100 {
		seed := make([]map[string]any, 0, 100)
		for i := first; i < min(first+100, dbRows); i++ {
			seed = append(seed, map[string]any{"sql": "INSERT INTO kv (v) VALUES (?)", "params": []string{"seed value " + strconv.Itoa(i)}})
		}
		if err := post(path, map[string]any{"batch": seed}, nil); err != nil {
			return dbTarget{}, err
		}
	}
	insert := make([]map[string]any, 10)
	for i := range insert {
		insert[i] = map[string]any{"sql": "INSERT INTO kv (v) VALUES (?)", "params": []string{"inserted " + strconv.Itoa(i)}}
	}
	insertBody, _ := json.Marshal(map[string]any{"batch": insert})
	scanBody, _ := json.Marshal(map[string]any{"sql": "SELECT id, v FROM kv ORDER BY id LIMIT 1000"})
	return dbTarget{name: "platform", header: h,
		req: func(op string, id int) (string, []byte) {
			switch op {
			case "read":
				b, _ := json.Marshal(map[string]any{"sql": "SELECT id, v FROM kv WHERE id = ?", "params": []int{id}})
				return url, b
			case "insert":
				return url, insertBody
			}
			return url, scanBody
		},
		ok: func(op string, body []byte) bool {
			switch op {
			case "read":
				return bytes.Contains(body, []byte("seed value"))
			case "scan":
				return bytes.Count(body, []byte(`value`)) >= dbRows
			}
			return true
		}}, nil
}

func d1DB(base string, client *http.Client) (dbTarget, error) {
	res, err := client.Post(base+"/init", "application/json", strings.NewReader("{}"))
	if err != nil {
		return dbTarget{}, err
	}
	data, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		return dbTarget{}, fmt.Errorf("miniflare /init: %d %.300s", res.StatusCode, data)
	}
	return dbTarget{name: "d1", header: http.Header{"Content-Type": {"application/json"}},
		req: func(op string, id int) (string, []byte) {
			if op == "read" {
				return base + "/read", []byte(`{"id":` + strconv.Itoa(id) + `}`)
			}
			return base + "/" + op, []byte("{}")
		},
		ok: func(op string, body []byte) bool {
			switch op {
			case "read":
				return bytes.Contains(body, []byte("seed value"))
			case "scan":
				return bytes.Count(body, []byte(`value`)) >= dbRows
			}
			return bytes.Contains(body, []byte(`"count":10`))
		}}, nil
}

// treeCPU is the CPU time of pid and every process descending from it
// (miniflare's workerd is a child of its Node.js process).
func treeCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	ents, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		f := splitFields(string(b[i+2:]))
		if len(f) > 1 {
			parent[p], _ = strconv.Atoi(f[1])
		}
	}
	var total time.Duration
	for p := range parent {
		for q := p; q > 1; q = parent[q] {
			if q == pid {
				total += pidCPU(p)
				break
			}
		}
	}
	return total
}

func dbLoad(client *http.Client, t dbTarget, op string, n int) dbRun {
	r := dbRun{Target: t.name, Op: op, Requests: n}
	var lat []float64
	c0 := treeCPU(t.pid)
	w0 := time.Now()
	for i := range n {
		url, body := t.req(op, 1+i%dbRows)
		req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
		req.Header = t.header.Clone()
		// Go's client resends a request whose reused keep-alive
		// connection the server had just closed only when it is
		// idempotent; this header marks it so (miniflare closes idle
		// connections), the same for every target.
		req.Header.Set("X-Idempotency-Key", "peerbench")
		start := time.Now()
		res, err := client.Do(req)
		if err != nil {
			r.Errors++
			if r.FirstError == "" {
				r.FirstError = err.Error()
			}
			continue
		}
		data, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !t.ok(op, data) {
			r.Errors++
			if r.FirstError == "" {
				r.FirstError = fmt.Sprintf("%d %.200s", res.StatusCode, data)
			}
			continue
		}
		lat = append(lat, float64(time.Since(start).Microseconds()))
	}
	r.WallS = time.Since(w0).Seconds()
	if t.pid > 0 && n > 0 {
		r.CPUus = float64((treeCPU(t.pid) - c0).Microseconds()) / float64(n)
	}
	slices.Sort(lat)
	r.P50, r.P99 = percentile(lat, 50), percentile(lat, 99)
	return r
}

func runDB(args []string) error {
	fs := flag.NewFlagSet("databases", flag.ExitOnError)
	out := fs.String("out", "", "results folder (databases.jsonl, databases.md)")
	platform := fs.String("platform", "", "the platform's API base URL (http://127.0.0.1:PORT)")
	key := fs.String("platform-key", "", "the platform's workspace key")
	platformPID := fs.Int("platform-pid", 0, "the platform's process")
	d1 := fs.String("d1", "", "the miniflare Worker's base URL")
	d1PID := fs.Int("d1-pid", 0, "miniflare's Node.js process (workerd, its child, counts too)")
	requests := fs.Int("requests", 500, "requests of each run, one at a time")
	rounds := fs.Int("rounds", 5, "rounds, alternating the targets' order")
	fs.Parse(args)
	if *out == "" || *platform == "" {
		return errors.New("-out and -platform are required")
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}, Timeout: 30 * time.Second}
	p, err := platformDB(*platform, *key, client)
	if err != nil {
		return err
	}
	p.pid = *platformPID
	targets := []dbTarget{p}
	if *d1 != "" {
		d, err := d1DB(*d1, client)
		if err != nil {
			return err
		}
		d.pid = *d1PID
		targets = append(targets, d)
	}
	jf, err := os.Create(filepath.Join(*out, "databases.jsonl"))
	if err != nil {
		return err
	}
	defer jf.Close()
	var runs []dbRun
	ops := []string{"read", "insert", "scan"}
	for round := 1; round <= *rounds; round++ {
		ts := slices.Clone(targets)
		if round%2 == 0 {
			slices.Reverse(ts)
		}
		logf("databases: round %d of %d", round, *rounds)
		for _, op := range ops {
			n := *requests
			if op != "read" {
				n = max(1, n/5)
			}
			for _, t := range ts {
				dbLoad(client, t, op, max(1, n/10)) // warm-up
				r := dbLoad(client, t, op, n)
				r.Round = round
				runs = append(runs, r)
				b, _ := json.Marshal(r)
				jf.Write(append(b, '\n'))
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "### Databases: the platform's API against D1 as miniflare runs it\n\n")
	fmt.Fprintf(&b, "One request at a time, %d reads, %d inserts of 10 rows (one batch, one transaction) and %d scans of 1,000 rows a run, after a tenth as many to warm up. req/s over the run; CPU/req: the server's processes (miniflare: Node.js and workerd) ÷ requests. Ratios: platform ÷ D1, medians of per-round ratios (req/s above 1.00, CPU/req below 1.00: the platform is ahead).\n\n", *requests, max(1, *requests/5), max(1, *requests/5))
	b.WriteString("| operation | target | req/s | p50 | p99 | CPU/req | errors | req/s platform ÷ D1 | CPU/req platform ÷ D1 |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	pick := func(target, op string) map[int]dbRun {
		m := map[int]dbRun{}
		for _, r := range runs {
			if r.Target == target && r.Op == op {
				m[r.Round] = r
			}
		}
		return m
	}
	med := func(m map[int]dbRun, f func(dbRun) float64) float64 {
		var xs []float64
		for _, r := range m {
			xs = append(xs, f(r))
		}
		return median(xs)
	}
	ratio := func(a, c map[int]dbRun, f func(dbRun) float64) string {
		var xs []float64
		for round, x := range a {
			if y, ok := c[round]; ok && f(y) > 0 {
				xs = append(xs, f(x)/f(y))
			}
		}
		if len(xs) == 0 {
			return ""
		}
		return fmt.Sprintf("%.2f", median(xs))
	}
	for _, op := range ops {
		pm, dm := pick("platform", op), pick("d1", op)
		for _, t := range targets {
			m := pick(t.name, op)
			errs := 0
			for _, r := range m {
				errs += r.Errors
			}
			r1, r2 := "", ""
			if t.name == "d1" {
				r1, r2 = ratio(pm, dm, dbRun.rps), ratio(pm, dm, func(r dbRun) float64 { return r.CPUus })
			}
			fmt.Fprintf(&b, "| %s | %s | %.0f | %.0f µs | %.0f µs | %.0f µs | %d | %s | %s |\n", op, t.name,
				med(m, dbRun.rps), med(m, func(r dbRun) float64 { return r.P50 }), med(m, func(r dbRun) float64 { return r.P99 }),
				med(m, func(r dbRun) float64 { return r.CPUus }), errs, r1, r2)
		}
	}
	b.WriteString("\n")
	fmt.Print(b.String())
	return os.WriteFile(filepath.Join(*out, "databases.md"), []byte(b.String()), 0o644)
}
