package databases_test

import (
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/plans"
)

// bigRows returns n rows of a value of size bytes (hex of size/2 zero bytes).
func bigRows(n, size int) string {
	return "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < " + itoa(n) + ") SELECT i, hex(zeroblob(" + itoa(size/2) + ")) AS h FROM c"
}

func itoa(n int) string {
	b := []byte{}
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
		if n == 0 {
			return string(b)
		}
	}
}

func batchOf(stmts ...string) map[string]any {
	items := make([]map[string]any, len(stmts))
	for i, s := range stmts {
		items[i] = map[string]any{"sql": s}
	}
	return map[string]any{"batch": items}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// Issue 11 item 1: a batch of 20 statements, each a recursive CTE of 15
// rows of hex(zeroblob(999999)), answered 200 with a 600 MB body and left
// the process at 2.9 GB. The answer is now bounded per request, all
// statements together: the same batch is refused with 400
// result_too_large, allocating a small multiple of the limit rather than
// the 600 MB, and the memory is given back after.
func TestAnswerBoundedPerRequestAttack(t *testing.T) {
	e := newEnv(t, plans.Pro)
	id := e.create("main")
	attack := batchOf(repeat("WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 15) SELECT hex(zeroblob(999999)) FROM c", 20)...)

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r := e.Owner.Do("POST", "/api/databases/"+id, attack)
	runtime.ReadMemStats(&after)
	body := expect(t, r, http.StatusBadRequest, "result_too_large")
	if body["limitName"] != "result_bytes" || num(body["limit"]) != 32<<20 {
		t.Fatalf("error %v", body)
	}
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 256<<20 {
		t.Fatalf("the refused request allocated %d MB", allocated>>20)
	}
	debug.FreeOSMemory()
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapInuse) - int64(before.HeapInuse); grown > 48<<20 {
		t.Fatalf("heap in use grew by %d MB after the answer", grown>>20)
	}
}

// The answer's rows and bytes are bounded across the statements of a batch
// and of one sql; a refused request keeps nothing it wrote.
func TestAnswerBoundedPerRequest(t *testing.T) {
	e := newEnv(t, plans.Pro)
	id := e.create("main")
	lim := e.svc.Limits()
	lim.MaxResultBytes, lim.MaxResultRows = 1_000_000, 1000
	if err := e.svc.SetLimits(lim); err != nil {
		t.Fatal(err)
	}
	e.run(e.Owner, id, "CREATE TABLE t(a)")
	for _, tc := range []struct {
		name  string
		body  map[string]any
		limit string // "" when the answer is 200
	}{
		{"one statement under", batchOf(bigRows(2, 400_000)), ""},
		{"two statements under", batchOf(bigRows(1, 400_000), bigRows(1, 400_000)), ""},
		{"three statements over", batchOf(repeat(bigRows(1, 400_000), 3)...), "result_bytes"},
		{"one statement over", batchOf(bigRows(3, 400_000)), "result_bytes"},
		{"rows at the limit", batchOf(bigRows(1000, 2)), ""},
		{"rows past the limit", batchOf(bigRows(1001, 2)), "result_rows"},
		{"rows past the limit across statements", batchOf(bigRows(600, 2), bigRows(600, 2)), "result_rows"},
		{"sql keeps only the last statement", sqlBody(strings.Repeat(bigRows(2, 400_000)+";", 5)), ""},
		{"sql last statement over", sqlBody(bigRows(1, 10) + ";" + bigRows(3, 400_000)), "result_bytes"},
		{"write refused whole", batchOf("INSERT INTO t VALUES (1)", bigRows(3, 400_000)), "result_bytes"},
		{"sql write refused whole", sqlBody("INSERT INTO t VALUES (1); " + bigRows(1001, 2)), "result_rows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.Owner.Do("POST", "/api/databases/"+id, tc.body)
			if tc.limit == "" {
				if r.Status != http.StatusOK {
					t.Fatalf("status %d: %.300s", r.Status, r.Body)
				}
				return
			}
			body := expect(t, r, http.StatusBadRequest, "result_too_large")
			if body["limitName"] != tc.limit || !strings.Contains(body["message"].(string), "all statements together") {
				t.Fatalf("error %v", body)
			}
		})
	}
	if a := e.run(e.Owner, id, "SELECT count(*) AS n FROM t"); a.Results[0]["n"] != float64(0) {
		t.Fatalf("a refused request kept its insert: %v", a.Results)
	}
}
