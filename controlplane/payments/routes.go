package payments

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
)

// MaxFormBody bounds the hosted page's form.
const MaxFormBody = 16 << 10

// Routes is the payments area's rows of the route table. Routes on an
// account ({accountId}) check the caller against the account's project once
// it is loaded; PATCH and DELETE check each action's own operation (money
// out needs the owner signed in: 403 payouts_require_owner otherwise).
func Routes(h Handlers) []api.Route {
	const G, P, A, D = http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete
	return []api.Route{
		{Method: P, Path: "/api/projects/{id}/payments", Op: auth.OpPaymentsWrite, ProjectParam: "id", Handler: h.Enable, Summary: "Enable (or re-enable) payments on a project", Response: AccountAnswer{}},
		{Method: G, Path: "/api/projects/{id}/payments", Op: auth.OpPaymentsRead, ProjectParam: "id", Handler: h.Read, Summary: "The payment account, earnings, recent payments, links, withdrawals and webhook deliveries", Response: Detail{}},
		{Method: G, Path: "/api/projects/{id}/payments/analytics", Op: auth.OpPaymentsRead, ProjectParam: "id", Handler: h.Analytics, Summary: "Payment totals, checkout funnel and daily series", Response: Analytics{}},
		{Method: G, Path: "/api/payments", Op: auth.OpPaymentsRead, Handler: h.ListAll, Summary: "The workspace's recent payments (limit, cursor)", Response: Page[Payment]{}},
		{Method: P, Path: "/api/payments/{accountId}", Op: auth.OpPaymentsWrite, Handler: h.Create, Status: http.StatusCreated, Summary: "Create a checkout link (Idempotency-Key header honoured)", Request: CreateRequest{}, Response: Created{}},
		{Method: A, Path: "/api/payments/{accountId}", Op: auth.OpPaymentsRead, Handler: h.Patch, Summary: "Webhook set/rotate/test (developers); refund, withdraw-setup, withdraw (owner signed in)", Request: PatchRequest{}, Response: WebhookSecret{}},
		{Method: D, Path: "/api/payments/{accountId}", Op: auth.OpPaymentsRead, Handler: h.Delete, Summary: "Disable payments, or erase the account with ?permanent=true (owner signed in)", Response: AccountAnswer{}},
		{Method: G, Path: "/api/payments/{accountId}/sessions/{sessionId}", Op: auth.OpPaymentsRead, Handler: h.Lookup, Summary: "Whether a checkout was paid, checked with the processor", Response: Lookup{}},
		{Method: G, Path: "/api/payments/{accountId}/payments", Op: auth.OpPaymentsRead, Handler: h.ListPayments, Summary: "An account's payments (limit 1-100, cursor, status, reference)", Response: Page[Payment]{}},
		{Method: G, Path: "/api/payments/{accountId}/sessions", Op: auth.OpPaymentsRead, Handler: h.ListSessions, Summary: "An account's checkout sessions (limit 1-100, cursor, status, reference)", Response: Page[Session]{}},
		{Method: P, Path: "/api/payments/{accountId}/test-hooks", Op: auth.OpPaymentsWrite, Handler: h.TestHook, Summary: "Test mode only: open, win or lose a dispute; confirm or fail a withdrawal", Request: TestHookRequest{}, Response: Detail{}},

		// The hosted checkout pages of the test processor: HTML, public.
		{Method: G, Path: "/pay/{sessionId}", Public: true, Handler: h.Page, Summary: "Hosted checkout page (HTML)"},
		{Method: P, Path: "/pay/{sessionId}", Public: true, Handler: h.Submit, MaxBody: MaxFormBody, Summary: "Hosted checkout form submit (HTML)"},
		{Method: G, Path: "/pay/{sessionId}/done", Public: true, Handler: h.Done, Summary: "Thank-you page after paying (HTML)"},
		{Method: G, Path: "/payouts/identity/{token}", Public: true, Handler: h.Identity, Summary: "Test-mode identity check of a payout account (HTML)"},
	}
}
