package signin

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/ratelimit"
)

// TestSignInThrottleConcurrent: concurrent wrong passwords cannot all be
// hashed, because each attempt takes its place in the limits before its
// password is checked: for one account no more than the lockout threshold,
// from one address no more than the address limit, for one account from
// many addresses no more than the account limit.
func TestSignInThrottleConcurrent(t *testing.T) {
	const attempts = 40
	tests := []struct {
		name     string
		cfg      Config
		settings map[string]any
		email    func(i int) string
		addr     func(i int) string // "" over HTTP from the test's address
		checked  int
		codes    []string // of the refusals (429)
	}{
		{name: "one account", settings: map[string]any{"lockoutThreshold": 5},
			email: func(int) string { return "ada@example.com" }, checked: 5, codes: []string{"account_locked", "too_many_attempts"}},
		{name: "one address, many accounts", cfg: Config{Throttles: Throttles{Address: ratelimit.PerWindow(10, 15*time.Minute)}},
			email: func(i int) string { return fmt.Sprintf("user%d@example.com", i) }, checked: 10, codes: []string{"too_many_attempts"}},
		{name: "one account, many addresses", cfg: Config{Throttles: Throttles{Account: ratelimit.PerWindow(4, time.Hour)}}, settings: map[string]any{"lockoutThreshold": 100},
			email: func(int) string { return "ada@example.com" }, addr: func(i int) string { return "198.51.100." + strconv.Itoa(i) }, checked: 4, codes: []string{"too_many_attempts"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, options{cfg: tt.cfg})
			p := e.pool("customers", tt.settings)
			e.signUp(p.ID, "ada@example.com")
			before := counter(t, e.svc.m.passwordChecks)
			codes := make([]string, attempts)
			statuses := make([]int, attempts)
			var wg sync.WaitGroup
			for i := range attempts {
				wg.Go(func() {
					cred := Credentials{Email: tt.email(i), Password: "wrong password " + strconv.Itoa(i)}
					if tt.addr == nil {
						r := e.endUser(p.ID, "POST", "/signin", cred, "")
						statuses[i], codes[i] = r.Status, r.Code()
						return
					}
					rec, err := poolByID(context.Background(), e.DB, p.ID)
					if err != nil {
						t.Error(err)
						return
					}
					_, err = e.svc.signIn(context.Background(), rec, tt.addr(i), cred)
					statuses[i], codes[i] = statusOf(err)
				})
			}
			wg.Wait()
			checked := int(counter(t, e.svc.m.passwordChecks) - before)
			refused := 0
			for i := range attempts {
				switch {
				case statuses[i] == 401 && codes[i] == "invalid_credentials":
				case statuses[i] == 429 && slices.Contains(tt.codes, codes[i]):
					refused++
				default:
					t.Fatalf("attempt %d: %d %s", i, statuses[i], codes[i])
				}
			}
			if checked != tt.checked || refused != attempts-tt.checked {
				t.Fatalf("%d passwords hashed and %d refused of %d; want %d hashed", checked, refused, attempts, tt.checked)
			}
		})
	}
}

// statusOf is the status and code an error is answered with.
func statusOf(err error) (int, string) {
	if err == nil {
		return 200, ""
	}
	e := api.AsError(err)
	return e.Kind.Status(), e.Code
}

// counter is a counter's value.
func counter(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestLockout: failed sign-ins in a row lock the e-mail address for the
// pool's lockoutMinutes, the right password included, and the same for an
// address nobody has (so a lockout tells nothing); the overview counts the
// locked users; the lockout ends with its time, a success in between
// starts the count over, and developers can end it.
func TestLockout(t *testing.T) {
	e := newEnv(t)
	p := e.pool("customers", map[string]any{"lockoutThreshold": 3, "lockoutMinutes": 10})
	ada := e.signUp(p.ID, "ada@example.com")
	fail := func(email string) response {
		return e.endUser(p.ID, "POST", "/signin", Credentials{Email: email, Password: "wrong password"}, "")
	}
	// Two failures, a success, two failures: not three in a row.
	fail("ada@example.com")
	fail("ada@example.com")
	e.signIn(p.ID, "ada@example.com", password)
	fail("ada@example.com")
	fail("ada@example.com")
	e.signIn(p.ID, "ada@example.com", password)

	for _, email := range []string{"ada@example.com", "ghost@example.com"} {
		for i := range 3 {
			if r := fail(email); r.Status != 401 {
				t.Fatalf("%s failure %d: %d %s", email, i, r.Status, r.Body)
			}
		}
	}
	right := e.endUser(p.ID, "POST", "/signin", Credentials{Email: "ada@example.com", Password: password}, "")
	ghost := e.endUser(p.ID, "POST", "/signin", Credentials{Email: "ghost@example.com", Password: password}, "")
	if right.Status != 429 || right.Code() != "account_locked" || right.Header.Get("Retry-After") != "600" ||
		ghost.Status != right.Status || ghost.Code() != right.Code() || string(ghost.Body) != string(right.Body) {
		t.Fatalf("locked: %d %s %v; unknown address: %d %s", right.Status, right.Body, right.Header, ghost.Status, ghost.Body)
	}
	if n, err := e.svc.LockedOutUsers(t.Context(), e.Owner.WorkspaceID); err != nil || n != 1 {
		t.Fatalf("locked-out users %d %v, want 1 (the unknown address is not a user)", n, err)
	}
	var u UserAnswer
	e.must(200, "GET", "/api/auth-pools/"+p.ID+"/users/"+ada.User.ID, nil).Decode(t, &u)
	if u.User.LockedUntil == nil || !u.User.LockedUntil.Equal(e.Clock.Now().Add(10*time.Minute)) {
		t.Fatalf("lockedUntil %v", u.User.LockedUntil)
	}

	e.Clock.Advance(10 * time.Minute)
	e.signIn(p.ID, "ada@example.com", password)
	if n, _ := e.svc.LockedOutUsers(t.Context(), e.Owner.WorkspaceID); n != 0 {
		t.Fatalf("locked-out users after the lockout %d", n)
	}

	// Locked again, then ended by a developer.
	for range 3 {
		fail("ada@example.com")
	}
	if r := e.endUser(p.ID, "POST", "/signin", Credentials{Email: "ada@example.com", Password: password}, ""); r.Status != 429 {
		t.Fatalf("locked again: %d", r.Status)
	}
	u = UserAnswer{}
	e.must(200, "PATCH", "/api/auth-pools/"+p.ID+"/users/"+ada.User.ID, map[string]any{"unlock": true}).Decode(t, &u)
	if u.User.LockedUntil != nil {
		t.Fatalf("still locked: %+v", u.User)
	}
	e.signIn(p.ID, "ada@example.com", password)

	// The sweep forgets lockouts that ended a day after their last failure.
	e.Clock.Advance(failureMemory + time.Minute)
	if err := e.svc.Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	var rows int
	e.DB.QueryRowContext(t.Context(), `SELECT count(*) FROM signin_lockouts WHERE pool_id = ?`, p.ID).Scan(&rows)
	if rows != 0 {
		t.Fatalf("%d lockout rows after the sweep", rows)
	}
}
