package cache

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestConcurrentUse mixes every operation from several goroutines; run
// with -race it proves entries are shared safely.
func TestConcurrentUse(t *testing.T) {
	clk := newClock()
	c := newCache(t, Config{MaxBytes: 1 << 20}, clk)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 300 {
				p := fmt.Sprintf("/p%d", i%17)
				key := StaticKey{Deployment: fmt.Sprintf("d%d", g%2), Path: []byte(p)}
				switch i % 6 {
				case 0:
					c.SetStatic(key, staticResp(p), time.Hour)
				case 1:
					if e, ok := c.GetStatic(key); ok && string(e.Body) != p {
						t.Errorf("static %s = %q", p, e.Body)
					}
				case 2:
					exchange{req: get(p, "Accept-Language: fr"), status: 200, body: p, resp: []string{"Cache-Control: max-age=60", `ETag: "x"`, "Vary: Accept-Language"}}.store(t, c, clk.Now())
				case 3:
					if r := c.Lookup("app", newReq(t, "GET "+p, "Accept-Language: fr")); r.Entry != nil && string(r.Entry.Body()) != p {
						t.Errorf("shared %s = %q", p, r.Entry.Body())
					}
				case 4:
					exchange{req: []string{"DELETE " + p}, status: 204}.store(t, c, clk.Now())
				case 5:
					clk.Add(time.Second)
				}
			}
		})
	}
	wg.Wait()
}
