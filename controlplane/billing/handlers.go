package billing

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
)

// Handlers serve /api/billing.
type Handlers struct{ L *Ledger }

// Answer is the body of GET /api/billing and PUT /api/billing/spend-limit.
type Answer struct {
	Billing Summary `json:"billing"`
}

// SpendLimitRequest is the body of PUT /api/billing/spend-limit:
// {"spendLimitMicros": 50000000} sets 50 dollars a month, null removes the
// limit, 0 lets nothing be charged to the Balance.
type SpendLimitRequest struct {
	SpendLimitMicros json.RawMessage `json:"spendLimitMicros"`
}

// Limit parses the request: nil for no limit.
func (r SpendLimitRequest) Limit() (*Micros, error) {
	raw := bytes.TrimSpace(r.SpendLimitMicros)
	if len(raw) == 0 {
		return nil, api.E(api.KindInvalid, "invalid_setting", "send spendLimitMicros: a whole number of micro-dollars (1 dollar = 1000000), or null to remove the limit")
	}
	if string(raw) == "null" {
		return nil, nil
	}
	for _, c := range raw {
		if c < '0' || c > '9' {
			return nil, api.E(api.KindInvalid, "invalid_setting", "spendLimitMicros must be a whole, non-negative number of micro-dollars (1 dollar = 1000000) or null, not %.40s", raw)
		}
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || Micros(n) > MaxSpendLimit {
		return nil, api.E(api.KindInvalid, "invalid_setting", "spendLimitMicros must be at most %d (%s dollars a month)", int64(MaxSpendLimit), MaxSpendLimit.USD())
	}
	m := Micros(n)
	return &m, nil
}

// admin refuses callers below admin: the Balance and the spending limit are
// the workspace's money (the route's permission says so too).
func admin(r *http.Request) (*auth.Principal, error) {
	p := api.PrincipalFrom(r.Context())
	if p == nil {
		return nil, api.E(api.KindUnauthenticated, "", "missing credentials: send Authorization: Bearer <API key>")
	}
	if p.Role < auth.Admin {
		return nil, api.Forbidden("insufficient_role", "your role (%s) cannot see or change billing; it needs admin or owner", p.Role)
	}
	return p, nil
}

// Get answers GET /api/billing: the workspace's Balance, included credit
// (used, held, left), what is held by requests in flight, this month's
// spend from the Balance and the spending limit.
func (h Handlers) Get(w http.ResponseWriter, r *http.Request) error {
	p, err := admin(r)
	if err != nil {
		return err
	}
	s, err := h.L.Summary(r.Context(), p.WorkspaceID)
	return api.Reply(w, http.StatusOK, Answer{Billing: s}, err)
}

// PutSpendLimit answers PUT /api/billing/spend-limit (admins and the
// owner): sets or removes the monthly spending limit and answers the
// summary.
func (h Handlers) PutSpendLimit(w http.ResponseWriter, r *http.Request) error {
	p, err := admin(r)
	if err != nil {
		return err
	}
	if p.ReadOnly {
		return api.Forbidden("read_only_key", "this key is read-only and cannot change anything")
	}
	var req SpendLimitRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	limit, err := req.Limit()
	if err != nil {
		return err
	}
	if err := h.L.SetSpendLimitAs(r.Context(), p, p.WorkspaceID, limit); err != nil {
		return err
	}
	s, err := h.L.Summary(r.Context(), p.WorkspaceID)
	return api.Reply(w, http.StatusOK, Answer{Billing: s}, err)
}
