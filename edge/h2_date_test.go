package edge

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// h3Client returns an HTTP/3 client of the edge (quic-go), dialling its
// HTTPS port over UDP.
func (le *liveEdge) h3Client(t *testing.T) *http.Client {
	tr := &http3.Transport{
		TLSClientConfig: &tls.Config{RootCAs: le.CA().Pool()},
		Dial: func(ctx context.Context, _ string, tlsCfg *tls.Config, qc *quic.Config) (*quic.Conn, error) {
			return quic.DialAddrEarly(ctx, le.https, tlsCfg, qc)
		},
	}
	t.Cleanup(func() { tr.Close() })
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// TestRFC9110_6_6_1_DateOnHTTP2AndHTTP3: the origin's Date reaches the
// client unchanged over HTTP/2 and HTTP/3 as over HTTP/1.1, on a forwarded
// response (miss, no-store) and on a stored one (hit, with its Age); an
// origin that sends no Date gets the time the edge received the response,
// never the time the bridge wrote it.
func TestRFC9110_6_6_1_DateOnHTTP2AndHTTP3(t *testing.T) {
	se := newSharedEdge(t)
	date := se.clock.Now().Add(-5 * time.Second).Format(http.TimeFormat)
	se.origin.handle("/fwd", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", date)
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, "forwarded")
	})
	se.origin.handle("/stored", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", date)
		w.Header().Set("Cache-Control", "max-age=86400")
		io.WriteString(w, "stored")
	})
	se.origin.handle("/nodate", func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Date"] = nil // net/http then sends none
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, "undated")
	})
	se.get("/stored").want(t, 200, "MISS", "stored")
	// The bridges' own clock is real time: move the edge's fake clock far
	// from it, so a Date the bridge made up cannot pass for the edge's.
	se.clock.Advance(time.Hour)
	received := se.clock.Now().Format(http.TimeFormat)
	for _, c := range []struct {
		name   string
		client *http.Client
		major  int
	}{{"HTTP/1.1", se.client, 1}, {"HTTP/2", se.h2Client(), 2}, {"HTTP/3", se.h3Client(t), 3}} {
		for _, tc := range []struct {
			path, xcache, date, body string
		}{
			{"/fwd", "MISS", date, "forwarded"},
			{"/stored", "HIT", date, "stored"},
			{"/nodate", "MISS", received, "undated"},
		} {
			t.Run(c.name+tc.path, func(t *testing.T) {
				resp, err := c.client.Get("https://app.apps.test" + tc.path)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.ProtoMajor != c.major || resp.StatusCode != 200 || string(b) != tc.body || resp.Header.Get("X-Cache") != tc.xcache {
					t.Fatalf("%s %d %q X-Cache %q", resp.Proto, resp.StatusCode, b, resp.Header.Get("X-Cache"))
				}
				if got := resp.Header.Values("Date"); len(got) != 1 || got[0] != tc.date {
					t.Fatalf("Date %q, want [%q]", got, tc.date)
				}
				if tc.xcache == "HIT" && resp.Header.Get("Age") != "3605" {
					t.Errorf("Age %q, want 3605", resp.Header.Get("Age"))
				}
			})
		}
	}
}
