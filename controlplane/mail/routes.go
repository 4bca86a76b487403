package mail

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
)

// Routes is the area's rows of the route table. Sending and managing
// sending domains change the project (developers and above; project keys
// of the project; not read-only keys); viewers read. A sending domain's
// project is known once it is loaded, so the service checks the permission
// table again with it.
func Routes(h Handlers) []api.Route {
	const G, P, D = http.MethodGet, http.MethodPost, http.MethodDelete
	return []api.Route{
		{Method: P, Path: "/api/projects/{id}/emails", Op: auth.OpMailSend, ProjectParam: "id", Handler: h.Send, Status: http.StatusAccepted, MaxBody: MaxSendBody,
			Summary: "Queue an e-mail {to, subject, text and/or html, replyTo?} from the project (Idempotency-Key honoured)", Request: SendRequest{}, Response: EmailAnswer{}},
		{Method: G, Path: "/api/projects/{id}/emails", Op: auth.OpMailRead, ProjectParam: "id", Handler: h.List,
			Summary: "The project's e-mails, newest first: ?state=queued|sent|failed&limit=&cursor=", Response: EmailPage{}},
		{Method: G, Path: "/api/projects/{id}/emails/{emailId}", Op: auth.OpMailRead, ProjectParam: "id", Handler: h.Get,
			Summary: "One e-mail: state, attempts and the failure reason", Response: EmailAnswer{}},
		{Method: P, Path: "/api/projects/{id}/mail/domains", Op: auth.OpMailDomains, ProjectParam: "id", Handler: h.AddDomain, Status: http.StatusCreated,
			Summary: "Add a sending domain {name}: answers the SPF and DKIM records to publish", Request: DomainRequest{}, Response: DomainAnswer{}},
		{Method: G, Path: "/api/projects/{id}/mail/domains", Op: auth.OpMailRead, ProjectParam: "id", Handler: h.ListDomains,
			Summary: "The project's sending domains with their records and states", Response: DomainList{}},
		{Method: G, Path: "/api/mail/domains/{id}", Op: auth.OpMailRead, Handler: h.GetDomain,
			Summary: "A sending domain with its records and state", Response: DomainAnswer{}},
		{Method: P, Path: "/api/mail/domains/{id}/verify", Op: auth.OpMailDomains, Handler: h.VerifyDomain,
			Summary: "Look the sending domain's SPF and DKIM records up now; verified once both are found", Response: DomainAnswer{}},
		{Method: D, Path: "/api/mail/domains/{id}", Op: auth.OpMailDomains, Handler: h.DeleteDomain,
			Summary: "Remove a sending domain and its key (mail goes from the platform's address)", Response: api.Deleted{}},
		{Method: G, Path: "/api/projects/{id}/email-suppressions", Op: auth.OpMailRead, ProjectParam: "id", Handler: h.ListSuppressions,
			Summary: "Addresses the project no longer sends to after a hard bounce or a complaint, by address: ?limit=&cursor=", Response: SuppressionPage{}},
		{Method: D, Path: "/api/projects/{id}/email-suppressions/{address}", Op: auth.OpMailSend, ProjectParam: "id", Handler: h.DeleteSuppression,
			Summary: "Remove an address from the suppression list so the project may send to it again", Response: api.Deleted{}},
	}
}
