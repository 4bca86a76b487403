package databases_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/plans"
)

// post sends a query from any goroutine (cptest's helpers stop the test,
// which only its own goroutine may do).
func post(srv string, id string, body any) (int, []byte, error) {
	data, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", srv+"/api/databases/"+id, bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+cptest.OwnerKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// Writers in many concurrent requests queue for the database's one writer:
// no update is lost and none sees "database is locked", while readers run
// beside them.
func TestConcurrentWriters(t *testing.T) {
	e := newEnv(t, plans.Pro)
	id := e.create("main")
	e.run(e.Owner, id, "CREATE TABLE counter(n INTEGER); INSERT INTO counter VALUES (0); CREATE TABLE log(w, i)")
	const writers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan string, writers*each*2)
	for w := range writers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range each {
				status, body, err := post(e.Server.URL, id, sqlBody("UPDATE counter SET n = n + 1; INSERT INTO log VALUES (?, ?)", w, i))
				if err != nil || status != http.StatusOK {
					errs <- fmt.Sprintf("writer %d: %d %s %v", w, status, body, err)
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range each {
				status, body, err := post(e.Server.URL, id, sqlBody("SELECT n FROM counter"))
				if err != nil || status != http.StatusOK {
					errs <- fmt.Sprintf("reader: %d %s %v", status, body, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for msg := range errs {
		t.Error(msg)
	}
	a := e.run(e.Owner, id, "SELECT (SELECT n FROM counter) AS n, (SELECT count(*) FROM log) AS logged")
	if a.Results[0]["n"] != float64(writers*each) || a.Results[0]["logged"] != float64(writers*each) {
		t.Fatalf("after %d increments: %v", writers*each, a.Results)
	}
}

const crashDirEnv = "DATABASES_CRASH_DIR"

// TestCrashChild is the process TestCrashSafety kills: it serves a
// control plane on the given data directory and writes through it from
// several goroutines, printing "ack <key>" once each write is answered.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("run by TestCrashSafety")
	}
	e := newCP(t, cptest.Options{Plan: plans.Pro, Configure: func(c *controlplane.Config) { c.DataDir = dir }})
	project := e.CreateProject("crash")
	var created struct {
		Database struct{ ID string } `json:"database"`
	}
	e.Owner.Must(http.StatusCreated, "POST", "/api/projects/"+project+"/databases", map[string]any{"name": "crash"}).JSON(t, &created)
	id := created.Database.ID
	e.Owner.Must(http.StatusOK, "POST", "/api/databases/"+id, sqlBody("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)"))
	fmt.Printf("db %s\n", id)
	var out sync.Mutex
	for w := range 4 {
		go func() {
			for i := 0; ; i++ {
				k := w*1_000_000 + i
				status, _, err := post(e.Server.URL, id, sqlBody("INSERT INTO t VALUES (?, ?)", k, strings.Repeat("v", 100)))
				if err == nil && status == http.StatusOK {
					out.Lock()
					fmt.Printf("ack %d\n", k)
					out.Unlock()
				}
			}
		}()
	}
	time.Sleep(time.Minute)
}

// A process killed with SIGKILL in the middle of writes loses none that
// it acknowledged: the data directory reopens with every one of them.
func TestCrashSafety(t *testing.T) {
	if os.Getenv(crashDirEnv) != "" {
		t.Skip("in the child")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1", "-test.timeout=2m")
	cmd.Env = append(childEnv(t, dir), crashDirEnv+"="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[int]bool{}
	id := ""
	sc := bufio.NewScanner(stdout)
	deadline := time.AfterFunc(90*time.Second, func() { cmd.Process.Kill() })
	defer deadline.Stop()
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "db "):
			id = strings.TrimPrefix(line, "db ")
		case strings.HasPrefix(line, "ack "):
			k, err := strconv.Atoi(strings.TrimPrefix(line, "ack "))
			if err != nil {
				t.Fatalf("child said %q", line)
			}
			acked[k] = true
			if len(acked) == 300 {
				cmd.Process.Kill() // SIGKILL: no chance to flush or close anything
			}
		}
	}
	cmd.Wait()
	if id == "" || len(acked) < 300 {
		t.Fatalf("child wrote %d rows to %q before dying", len(acked), id)
	}

	e := newCP(t, cptest.Options{Plan: plans.Pro, Configure: func(c *controlplane.Config) { c.DataDir = dir }})
	var a answer
	e.Owner.Must(http.StatusOK, "POST", "/api/databases/"+id, sqlBody("PRAGMA integrity_check")).JSON(t, &a)
	if a.Results[0]["integrity_check"] != "ok" {
		t.Fatalf("integrity check: %v", a.Results)
	}
	stored := map[int]bool{}
	var rows answer
	e.Owner.Must(http.StatusOK, "POST", "/api/databases/"+id, sqlBody("SELECT k FROM t")).JSON(t, &rows)
	for _, r := range rows.Results {
		stored[int(num(r["k"]))] = true
	}
	lost := 0
	for k := range acked {
		if !stored[k] {
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged writes lost", lost, len(acked))
	}
	t.Logf("%d acknowledged writes (%d stored) survived SIGKILL", len(acked), len(stored))
}
