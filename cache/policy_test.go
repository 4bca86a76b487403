package cache

import (
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	reqTime, respTime := t0, t0.Add(time.Second)
	date := "Date: " + httpDate(time.Second)
	etag := `ETag: "v1"`
	tests := []struct {
		name       string
		req        []string // request line, then header lines
		status     int
		resp       []string
		want       Reason
		lifetime   time.Duration
		revalidate bool
	}{
		// Method and status (RFC 9111 §3).
		{name: "§3 GET 200 max-age stored", req: []string{"GET /a"}, status: 200, resp: []string{date, "Cache-Control: max-age=60"}, want: ReasonStorable, lifetime: time.Minute},
		{name: "§3 HEAD response not stored", req: []string{"HEAD /a"}, status: 200, resp: []string{date, "Cache-Control: max-age=60"}, want: ReasonMethod},
		{name: "§3 POST response not stored", req: []string{"POST /a"}, status: 200, resp: []string{date, "Cache-Control: max-age=60"}, want: ReasonMethod},
		{name: "§3 206 partial content not stored", req: []string{"GET /a", "Range: bytes=0-1"}, status: 206, resp: []string{date, "Cache-Control: max-age=60", "Content-Range: bytes 0-1/10"}, want: ReasonStatus},
		{name: "§3 304 not stored as a new response", req: []string{"GET /a"}, status: 304, resp: []string{date, "Cache-Control: max-age=60", etag}, want: ReasonStatus},
		{name: "§3 1xx is not final", req: []string{"GET /a"}, status: 103, resp: []string{date, "Cache-Control: max-age=60"}, want: ReasonStatus},
		{name: "§3 default-cacheable 404 with max-age stored", req: []string{"GET /a"}, status: 404, resp: []string{date, "Cache-Control: max-age=60"}, want: ReasonStorable, lifetime: time.Minute},
		{name: "§3 302 with explicit max-age stored", req: []string{"GET /a"}, status: 302, resp: []string{date, "Cache-Control: max-age=30", "Location: /b"}, want: ReasonStorable, lifetime: 30 * time.Second},
		{name: "§3 500 with s-maxage stored", req: []string{"GET /a"}, status: 500, resp: []string{date, "Cache-Control: s-maxage=5"}, want: ReasonStorable, lifetime: 5 * time.Second},
		{name: "§3 302 with public but no lifetime not stored", req: []string{"GET /a"}, status: 302, resp: []string{date, "Cache-Control: public", etag}, want: ReasonNotExplicit},

		// Directives that forbid storing.
		{name: "§5.2.2.5 response no-store", req: []string{"GET /a"}, status: 200, resp: []string{date, "Cache-Control: no-store, max-age=60"}, want: ReasonNoStore},
		{name: "§5.2.1.5 request no-store", req: []string{"GET /a", "Cache-Control: no-store"}, status: 200, resp: []string{date, "Cache-Control: max-age=60"}, want: ReasonRequestNoStore},
		{name: "§5.2.2.7 private", req: []string{"GET /a"}, status: 200, resp: []string{date, "Cache-Control: private, max-age=60"}, want: ReasonPrivate},
		{name: "§5.2.2.7 qualified private treated as private", req: []string{"GET /a"}, status: 200, resp: []string{date, `Cache-Control: private="Set-Cookie", max-age=60`}, want: ReasonPrivate},
		{name: "§5.2.2.7 private wins over s-maxage", req: []string{"GET /a"}, status: 200, resp: []string{date, "Cache-Control: private, s-maxage=60"}, want: ReasonPrivate},

		// Authorization (§3.5).
		{name: "§3.5 Authorization with max-age only not stored", req: []string{"GET /a", "Authorization: Bearer x"}, status: 200, resp: []string{date, "Cache-Control: max-age=60"}, want: ReasonAuthorization},
		{name: "§3.5 Authorization with public stored", req: []string{"GET /a", "Authorization: Bearer x"}, status: 200, resp: []string{date, "Cache-Control: public, max-age=60"}, want: ReasonStorable, lifetime: time.Minute},
		{name: "§3.5 Authorization with s-maxage stored", req: []string{"GET /a", "Authorization: Bearer x"}, status: 200, resp: []string{date, "Cache-Control: s-maxage=60"}, want: ReasonStorable, lifetime: time.Minute},
		{name: "§3.5 Authorization with must-revalidate stored", req: []string{"GET /a", "Authorization: Bearer x"}, status: 200, resp: []string{date, "Cache-Control: must-revalidate, max-age=60"}, want: ReasonStorable, lifetime: time.Minute},
		{name: "§3.5 Authorization with proxy-revalidate not enough", req: []string{"GET /a", "Authorization: Bearer x"}, status: 200, resp: []string{date, "Cache-Control: proxy-revalidate, max-age=60"}, want: ReasonAuthorization},

		// Set-Cookie: decision of this cache, like Cloudflare and Varnish.
		{name: "Set-Cookie never stored even when public", req: []string{"GET /a"}, status: 200, resp: []string{date, "Cache-Control: public, max-age=60", "Set-Cookie: sid=1; Path=/"}, want: ReasonSetCookie},

		// Vary (§4.1).
		{name: "§4.1 Vary: * never matches, not stored", req: []string{"GET /a"}, status: 200, resp: []string{date, "Cache-Control: max-age=60", "Vary: *"}, want: ReasonVaryStar},
		{name: "§4.1 Vary: * among names", req: []string{"GET /a"}, status: 200, resp: []string{date, "Cache-Control: max-age=60", "Vary: Accept-Encoding", "Vary: *"}, want: ReasonVaryStar},
		{name: "§4.1 Vary with names stored", req: []string{"GET /a"}, status: 200, resp: []string{date, "Cache-Control: max-age=60", "Vary: Accept-Encoding"}, want: ReasonStorable, lifetime: time.Minute},

		// Heuristic freshness (§4.2.2) only from Last-Modified, for heuristically cacheable codes.
		{name: "§4.2.2 no directives not stored", req: []string{"GET /a"}, status: 200, resp: []string{date}, want: ReasonNotExplicit},
		{name: "§4.2.2 Last-Modified alone gives a heuristic lifetime", req: []string{"GET /a"}, status: 200, resp: []string{date, "Last-Modified: " + httpDate(-24*time.Hour+time.Second)}, want: ReasonStorable, lifetime: 144 * time.Minute},
		{name: "§4.2.2 ETag alone is not a mark", req: []string{"GET /a"}, status: 200, resp: []string{date, etag}, want: ReasonNotExplicit},
		{name: "§5.2.2.9 public with ETag stored, always revalidated", req: []string{"GET /a"}, status: 200, resp: []string{date, "Cache-Control: public", etag}, want: ReasonStorable, revalidate: true},
		{name: "§5.2.2.9 public without validators useless", req: []string{"GET /a"}, status: 200, resp: []string{date, "Cache-Control: public"}, want: ReasonNoLifetime, revalidate: true},

		// no-cache and zero lifetimes: stored only to revalidate.
		{name: "§5.2.2.4 no-cache with ETag stored, always revalidated", req: []string{"GET /a"}, status: 200, resp: []string{date, "Cache-Control: no-cache", etag}, want: ReasonStorable, revalidate: true},
		{name: "§5.2.2.4 no-cache with max-age still revalidated", req: []string{"GET /a"}, status: 200, resp: []string{date, "Cache-Control: no-cache, max-age=600", etag}, want: ReasonStorable, lifetime: 10 * time.Minute, revalidate: true},
		{name: "§5.2.2.4 no-cache without validators not stored", req: []string{"GET /a"}, status: 200, resp: []string{date, "Cache-Control: no-cache"}, want: ReasonNoLifetime, revalidate: true},
		{name: "§5.2.2.1 max-age=0 with Last-Modified stored to revalidate", req: []string{"GET /a"}, status: 200, resp: []string{date, "Cache-Control: max-age=0", "Last-Modified: " + httpDate(-time.Hour)}, want: ReasonStorable, revalidate: true},
		{name: "§5.2.2.1 max-age=0 without validators not stored", req: []string{"GET /a"}, status: 200, resp: []string{date, "Cache-Control: max-age=0"}, want: ReasonNoLifetime, revalidate: true},
		{name: "§5.2.2.2 must-revalidate with ETag and no lifetime", req: []string{"GET /a"}, status: 200, resp: []string{date, "Cache-Control: must-revalidate", etag}, want: ReasonStorable, revalidate: true},

		// Freshness lifetime (§4.2.1).
		{name: "§4.2.1 s-maxage over max-age", req: []string{"GET /a"}, status: 200, resp: []string{date, "Cache-Control: max-age=10, s-maxage=100"}, want: ReasonStorable, lifetime: 100 * time.Second},
		{name: "§4.2.1 max-age over Expires", req: []string{"GET /a"}, status: 200, resp: []string{date, "Cache-Control: max-age=10", "Expires: " + httpDate(time.Hour)}, want: ReasonStorable, lifetime: 10 * time.Second},
		{name: "§4.2.1 Expires minus Date", req: []string{"GET /a"}, status: 200, resp: []string{date, "Expires: " + httpDate(121*time.Second)}, want: ReasonStorable, lifetime: 120 * time.Second},
		{name: "§4.2.1 Expires without Date uses response time", req: []string{"GET /a"}, status: 200, resp: []string{"Expires: " + httpDate(61*time.Second)}, want: ReasonStorable, lifetime: time.Minute},
		{name: "RFC 9110 §5.6.7 obsolete RFC 850 Expires accepted", req: []string{"GET /a"}, status: 200, resp: []string{date, "Expires: Saturday, 01-Mar-25 12:02:01 GMT"}, want: ReasonStorable, lifetime: 120 * time.Second},
		{name: "§5.3 Expires in the past, no validators", req: []string{"GET /a"}, status: 200, resp: []string{date, "Expires: " + httpDate(-time.Hour)}, want: ReasonNoLifetime, revalidate: true},
		{name: "§5.3 invalid Expires means expired", req: []string{"GET /a"}, status: 200, resp: []string{date, "Expires: 0", etag}, want: ReasonStorable, revalidate: true},
		{name: "§4.2.1 conflicting max-age means stale", req: []string{"GET /a"}, status: 200, resp: []string{date, "Cache-Control: max-age=60, max-age=120", etag}, want: ReasonStorable, revalidate: true},
		{name: "§4.2.1 invalid max-age means stale", req: []string{"GET /a"}, status: 200, resp: []string{date, "Cache-Control: max-age=soon"}, want: ReasonNoLifetime, revalidate: true},
		{name: "§4.2.3 Age beyond max-age: stale on arrival", req: []string{"GET /a"}, status: 200, resp: []string{date, "Cache-Control: max-age=60", "Age: 100"}, want: ReasonNoLifetime, lifetime: time.Minute, revalidate: true},
		{name: "§4.2.3 Age within max-age", req: []string{"GET /a"}, status: 200, resp: []string{date, "Cache-Control: max-age=60", "Age: 30"}, want: ReasonStorable, lifetime: time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := newReq(t, tt.req[0], tt.req[1:]...)
			resp := newResp(t, max(tt.status, 200), "body", tt.resp...)
			resp.SetStatusCode(tt.status) // fasthttp's reader skips 1xx responses
			d := Decide(req, resp, reqTime, respTime)
			if d.Reason != tt.want {
				t.Fatalf("Reason = %v, want %v (decision %+v)", d.Reason, tt.want, d)
			}
			if d.Reason == ReasonStorable || d.Reason == ReasonNoLifetime {
				if d.Lifetime != tt.lifetime {
					t.Errorf("Lifetime = %v, want %v", d.Lifetime, tt.lifetime)
				}
				if d.Revalidate != tt.revalidate {
					t.Errorf("Revalidate = %v, want %v", d.Revalidate, tt.revalidate)
				}
			}
			if d.Storable() != (tt.want == ReasonStorable) {
				t.Errorf("Storable() = %v", d.Storable())
			}
		})
	}
}

func TestFreshnessLifetime(t *testing.T) {
	respTime := t0
	tests := []struct {
		name         string
		cc           string
		expires      []byte
		date         string
		want         time.Duration
		wantExplicit bool
	}{
		{name: "§4.2.2 nothing explicit", want: 0, wantExplicit: false},
		{name: "§4.2.1 s-maxage", cc: "s-maxage=7, max-age=3", want: 7 * time.Second, wantExplicit: true},
		{name: "§4.2.1 max-age", cc: "max-age=3", expires: []byte(httpDate(time.Hour)), want: 3 * time.Second, wantExplicit: true},
		{name: "§4.2.1 Expires - Date", expires: []byte(httpDate(time.Hour)), date: httpDate(0), want: time.Hour, wantExplicit: true},
		{name: "§4.2.1 Expires before Date is zero", expires: []byte(httpDate(-time.Hour)), date: httpDate(0), want: 0, wantExplicit: true},
		{name: "§5.3 empty Expires is expired", expires: []byte{}, want: 0, wantExplicit: true},
		{name: "§4.2.1 invalid Date falls back to response time", expires: []byte(httpDate(time.Minute)), date: "yesterday", want: time.Minute, wantExplicit: true},
		{name: "§4.2.1 invalid directive is stale", cc: "max-age=x, s-maxage=100", want: 0, wantExplicit: true},
		{name: "§1.2.2 huge max-age capped", cc: "max-age=99999999999", want: MaxDeltaSeconds * time.Second, wantExplicit: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cc := ParseCacheControl([]byte(tt.cc))
			var date []byte
			if tt.date != "" {
				date = []byte(tt.date)
			}
			got, explicit := FreshnessLifetime(&cc, tt.expires, date, respTime)
			if got != tt.want || explicit != tt.wantExplicit {
				t.Fatalf("FreshnessLifetime = %v, %v; want %v, %v", got, explicit, tt.want, tt.wantExplicit)
			}
		})
	}
}

func TestInitialAge(t *testing.T) {
	tests := []struct {
		name      string
		age, date string
		req, resp time.Duration // offsets from t0
		want      time.Duration
	}{
		{name: "§4.2.3 no Age, no Date, no delay", req: 0, resp: 0, want: 0},
		{name: "§4.2.3 response delay counts", req: 0, resp: 2 * time.Second, want: 2 * time.Second},
		{name: "§4.2.3 apparent age from Date", date: httpDate(0), req: 9 * time.Second, resp: 10 * time.Second, want: 10 * time.Second},
		{name: "§4.2.3 Age plus delay beats apparent age", age: "30", date: httpDate(0), req: 0, resp: 2 * time.Second, want: 32 * time.Second},
		{name: "§4.2.3 Date in the future: apparent age 0", date: httpDate(time.Hour), req: 0, resp: time.Second, want: time.Second},
		{name: "§5.1 invalid Age ignored", age: "-5", req: 0, resp: 0, want: 0},
		{name: "§5.1 list-valued Age uses the first member", age: "5, 60", req: 0, resp: 0, want: 5 * time.Second},
		{name: "§4.2.3 clock going back: delay 0", req: time.Second, resp: 0, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var age, date []byte
			if tt.age != "" {
				age = []byte(tt.age)
			}
			if tt.date != "" {
				date = []byte(tt.date)
			}
			if got := InitialAge(age, date, t0.Add(tt.req), t0.Add(tt.resp)); got != tt.want {
				t.Fatalf("InitialAge = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCurrentAgeAndAppendAge(t *testing.T) {
	tests := []struct {
		name     string
		initial  time.Duration
		resident time.Duration
		want     string
	}{
		{name: "§4.2.3 resident time adds", initial: 10 * time.Second, resident: 5 * time.Second, want: "15"},
		{name: "§5.1 whole seconds rounded down", initial: 1500 * time.Millisecond, resident: 0, want: "1"},
		{name: "§4.2.3 negative resident time ignored", initial: 3 * time.Second, resident: -time.Hour, want: "3"},
		{name: "§5.1 capped at 2^31", initial: 3 * MaxDeltaSeconds * time.Second, resident: 0, want: "2147483648"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			age := CurrentAge(tt.initial, t0, t0.Add(tt.resident))
			if got := string(AppendAge(nil, age)); got != tt.want {
				t.Fatalf("Age = %s, want %s", got, tt.want)
			}
		})
	}
}
