package payments

import (
	"net/http"
	"strings"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
)

// Handlers serve the payments endpoints and the hosted checkout pages.
type Handlers struct {
	// S is the service the handlers call.
	S *Service
}

// AccountAnswer wraps an account.
type AccountAnswer struct {
	Account Account `json:"account"`
}

// Enable answers POST /api/projects/{id}/payments.
func (h Handlers) Enable(w http.ResponseWriter, r *http.Request) error {
	if err := api.Decode(r, &struct{}{}, true); err != nil {
		return err
	}
	a, err := h.S.Enable(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"))
	return api.Reply(w, http.StatusOK, AccountAnswer{Account: a}, err)
}

// Read answers GET /api/projects/{id}/payments.
func (h Handlers) Read(w http.ResponseWriter, r *http.Request) error {
	d, err := h.S.Read(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"))
	return api.Reply(w, http.StatusOK, d, err)
}

// Analytics answers GET /api/projects/{id}/payments/analytics.
func (h Handlers) Analytics(w http.ResponseWriter, r *http.Request) error {
	a, err := h.S.Analytics(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"))
	return api.Reply(w, http.StatusOK, a, err)
}

// Create answers POST /api/payments/{accountId}; an Idempotency-Key header
// makes a retry answer the first session.
func (h Handlers) Create(w http.ResponseWriter, r *http.Request) error {
	var req CreateRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	c, err := h.S.CreateCheckout(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("accountId"), strings.TrimSpace(r.Header.Get("Idempotency-Key")), req)
	return api.Reply(w, http.StatusCreated, c, err)
}

// Lookup answers GET /api/payments/{accountId}/sessions/{sessionId}.
func (h Handlers) Lookup(w http.ResponseWriter, r *http.Request) error {
	l, err := h.S.LookupSession(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("accountId"), r.PathValue("sessionId"))
	return api.Reply(w, http.StatusOK, l, err)
}

func listQuery(r *http.Request) (ListQuery, error) {
	limit, cursor, err := api.Page(r, DefaultPageSize, MaxPageSize, "cursor")
	if err != nil {
		return ListQuery{}, err
	}
	q := r.URL.Query()
	return ListQuery{Limit: limit, Cursor: cursor, Status: q.Get("status"), Reference: q.Get("reference")}, nil
}

// ListPayments answers GET /api/payments/{accountId}/payments.
func (h Handlers) ListPayments(w http.ResponseWriter, r *http.Request) error {
	q, err := listQuery(r)
	if err != nil {
		return err
	}
	p, err := h.S.ListPayments(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("accountId"), q)
	return api.Reply(w, http.StatusOK, p, err)
}

// ListSessions answers GET /api/payments/{accountId}/sessions.
func (h Handlers) ListSessions(w http.ResponseWriter, r *http.Request) error {
	q, err := listQuery(r)
	if err != nil {
		return err
	}
	p, err := h.S.ListSessions(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("accountId"), q)
	return api.Reply(w, http.StatusOK, p, err)
}

// ListAll answers GET /api/payments.
func (h Handlers) ListAll(w http.ResponseWriter, r *http.Request) error {
	q, err := listQuery(r)
	if err != nil {
		return err
	}
	if q.Status != "" || q.Reference != "" {
		return api.Invalid("the workspace-wide list takes limit and cursor only")
	}
	p, err := h.S.ListWorkspacePayments(r.Context(), api.PrincipalFrom(r.Context()), q)
	return api.Reply(w, http.StatusOK, p, err)
}

// PatchRequest is the body of PATCH /api/payments/{accountId}.
type PatchRequest struct {
	// Action is set-webhook, rotate-webhook-secret, test-webhook, refund,
	// withdraw-setup or withdraw.
	Action      string `json:"action"`
	WebhookURL  string `json:"webhookUrl,omitempty"`
	PaymentID   string `json:"paymentId,omitempty"`
	AmountCents *int64 `json:"amountCents,omitempty"`
}

// RefundAnswer is the answer of a refund.
type RefundAnswer struct {
	Refund Refund `json:"refund"`
}

// DeliveryAnswer is the answer of test-webhook.
type DeliveryAnswer struct {
	Delivery Delivery `json:"delivery"`
}

// Patch answers PATCH /api/payments/{accountId}: webhook actions need a
// developer; refunds, payout setup and withdrawals the owner signed in.
func (h Handlers) Patch(w http.ResponseWriter, r *http.Request) error {
	var req PatchRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	ctx, pr, id := r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("accountId")
	only := func(allowed ...string) error {
		given := map[string]bool{"webhookUrl": req.WebhookURL != "", "paymentId": req.PaymentID != "", "amountCents": req.AmountCents != nil}
		for _, a := range allowed {
			delete(given, a)
		}
		for f, set := range given {
			if set {
				return api.Invalid("%s does not go with action %s", f, req.Action)
			}
		}
		return nil
	}
	switch req.Action {
	case "set-webhook":
		if err := only("webhookUrl"); err != nil {
			return err
		}
		if req.WebhookURL == "" {
			return api.Invalid("webhookUrl is required")
		}
		out, err := h.S.SetWebhook(ctx, pr, id, req.WebhookURL)
		return api.Reply(w, http.StatusOK, out, err)
	case "rotate-webhook-secret":
		if err := only(); err != nil {
			return err
		}
		out, err := h.S.RotateWebhookSecret(ctx, pr, id)
		return api.Reply(w, http.StatusOK, out, err)
	case "test-webhook":
		if err := only(); err != nil {
			return err
		}
		d, err := h.S.TestWebhook(ctx, pr, id)
		return api.Reply(w, http.StatusOK, DeliveryAnswer{Delivery: d}, err)
	case "refund":
		if err := auth.Authorize(pr, auth.OpPaymentsPayout, pr.ProjectID); err != nil {
			return err
		}
		if err := only("paymentId", "amountCents"); err != nil {
			return err
		}
		if req.PaymentID == "" {
			return api.Invalid("paymentId is required")
		}
		out, err := h.S.Refund(ctx, pr, id, req.PaymentID, req.AmountCents)
		return api.Reply(w, http.StatusOK, RefundAnswer{Refund: out}, err)
	case "withdraw-setup":
		if err := auth.Authorize(pr, auth.OpPaymentsPayout, pr.ProjectID); err != nil {
			return err
		}
		if err := only(); err != nil {
			return err
		}
		out, err := h.S.WithdrawSetup(ctx, pr, id)
		return api.Reply(w, http.StatusOK, out, err)
	case "withdraw":
		if err := auth.Authorize(pr, auth.OpPaymentsPayout, pr.ProjectID); err != nil {
			return err
		}
		if err := only(); err != nil {
			return err
		}
		out, err := h.S.Withdraw(ctx, pr, id)
		return api.Reply(w, http.StatusOK, out, err)
	case "":
		return api.Invalid("action is required")
	}
	return api.Invalid("action must be set-webhook, rotate-webhook-secret, test-webhook, refund, withdraw-setup or withdraw, not %q", req.Action)
}

// Delete answers DELETE /api/payments/{accountId}: disables, or with
// ?permanent=true (the owner signed in) erases when nothing is owed or open.
func (h Handlers) Delete(w http.ResponseWriter, r *http.Request) error {
	ctx, pr, id := r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("accountId")
	switch r.URL.Query().Get("permanent") {
	case "", "false":
		a, err := h.S.Disable(ctx, pr, id)
		return api.Reply(w, http.StatusOK, AccountAnswer{Account: a}, err)
	case "true":
		if err := auth.Authorize(pr, auth.OpPaymentsPayout, pr.ProjectID); err != nil {
			return err
		}
		err := h.S.Erase(ctx, pr, id)
		return api.Reply(w, http.StatusOK, api.Deleted{ID: id, Deleted: true}, err)
	}
	return api.Invalid("permanent must be true or false")
}

// TestHook answers POST /api/payments/{accountId}/test-hooks.
func (h Handlers) TestHook(w http.ResponseWriter, r *http.Request) error {
	var req TestHookRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	ctx, pr, id := r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("accountId")
	if err := h.S.TestHook(ctx, pr, id, req); err != nil {
		return err
	}
	d, err := h.S.readAccount(ctx, pr, id)
	return api.Reply(w, http.StatusOK, d, err)
}
