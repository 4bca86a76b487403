package cache

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// gather returns every sample of reg as "name{label=value,...}" -> value.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			out[mf.GetName()+"{"+strings.Join(labels, ",")+"}"] = value(mf.GetType(), m)
		}
	}
	return out
}

func value(typ dto.MetricType, m *dto.Metric) float64 {
	if typ == dto.MetricType_COUNTER {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

func TestMetrics(t *testing.T) {
	clk := newClock()
	c := newCache(t, Config{}, clk)
	reg := prometheus.NewRegistry()
	if err := c.Register(reg); err != nil {
		t.Fatal(err)
	}
	key := StaticKey{Deployment: "d", Path: []byte("/")}
	c.GetStatic(key) // miss
	c.SetStatic(key, staticResp("x"), time.Hour)
	c.SetStatic(key, staticResp("y"), time.Hour) // replaces: still one entry
	c.Wait()
	c.GetStatic(key)                     // hit
	c.GetStatic(key)                     // hit
	c.Lookup("app", newReq(t, "GET /a")) // miss
	exchange{req: get("/a"), status: 200, body: "a", resp: []string{"Cache-Control: max-age=60", "Vary: Accept"}}.store(t, c, clk.Now())
	c.Wait()
	c.Lookup("app", newReq(t, "GET /a"))    // hit
	c.Lookup("app", newReq(t, "POST /a"))   // bypass: not counted
	c.Lookup("app", newReq(t, "GET /none")) // miss

	got := gather(t, reg)
	for _, tc := range []struct {
		name string
		want float64
	}{
		{"platform_cache_hits_total{kind=static}", 2},
		{"platform_cache_misses_total{kind=static}", 1},
		{"platform_cache_hits_total{kind=shared}", 1},
		{"platform_cache_misses_total{kind=shared}", 2},
		{"platform_cache_entries{kind=static}", 1},
		{"platform_cache_entries{kind=shared}", 1}, // the Vary index is not an entry
		{"platform_cache_evictions_total{kind=static,reason=capacity}", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if v, ok := got[tc.name]; !ok || v != tc.want {
				t.Fatalf("%s = %v (present %v), want %v", tc.name, v, ok, tc.want)
			}
		})
	}
	t.Run("stored bytes count body, headers and key", func(t *testing.T) {
		b := got["platform_cache_stored_bytes{kind=static}"]
		if b < entryOverhead+1 || b > 1024 {
			t.Fatalf("static stored bytes = %v", b)
		}
		if st := c.StaticStats(); float64(st.Bytes) != b || st.Hits != 2 {
			t.Fatalf("StaticStats = %+v", st)
		}
	})
	t.Run("bounded label values only", func(t *testing.T) {
		for name := range got {
			if !strings.HasPrefix(name, "platform_cache_") {
				t.Errorf("metric %s lacks the platform_cache_ prefix", name)
			}
			if !strings.Contains(name, "kind=static") && !strings.Contains(name, "kind=shared") {
				t.Errorf("metric %s has no kind label", name)
			}
		}
	})
	t.Run("registering twice fails, no global state", func(t *testing.T) {
		if err := c.Register(reg); err == nil {
			t.Fatal("second Register succeeded")
		}
		if err := c.Register(prometheus.NewRegistry()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestEvictionAccounting fills a small cache far past its bound: evictions
// or rejections are counted, the stored bytes stay within the bound, and
// every byte accounted is given back when the cache is closed.
func TestEvictionAccounting(t *testing.T) {
	clk := newClock()
	c, err := New(Config{MaxBytes: 64 << 10, MaxEntryBytes: 4 << 10}, clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("x", 2048)
	for i := range 400 {
		c.SetStatic(StaticKey{Deployment: "d", Path: fmt.Appendf(nil, "/%d", i)}, StaticResponse{Status: 200, Body: []byte(body)}, time.Hour)
		if i%50 == 0 {
			c.Wait()
		}
	}
	c.Wait()
	st := c.StaticStats()
	t.Run("evictions counted", func(t *testing.T) {
		if st.Evictions == 0 {
			t.Fatalf("no evictions after filling the cache 12 times: %+v", st)
		}
	})
	t.Run("bytes within MaxBytes", func(t *testing.T) {
		if st.Bytes <= 0 || st.Bytes > 64<<10 || st.Entries <= 0 {
			t.Fatalf("stats %+v", st)
		}
	})
	t.Run("everything given back on Close", func(t *testing.T) {
		c.Close()
		if st := c.StaticStats(); st.Bytes != 0 || st.Entries != 0 {
			t.Fatalf("after Close: %+v", st)
		}
	})
}
