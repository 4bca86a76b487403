package domains

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
)

// Routes is the area's rows of the route table. A project's domains are
// among its settings: adding, verifying and removing one is
// OpProjectUpdate (developers and above; project keys of the project; not
// read-only keys), reading is OpProjectRead. A domain's project is known
// once it is loaded, so the service checks the permission table again
// with it.
func Routes(h Handlers) []api.Route {
	const G, P, U, D = http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete
	return []api.Route{
		{Method: P, Path: "/api/projects/{id}/domains", Op: auth.OpProjectUpdate, ProjectParam: "id", Handler: h.Add, Status: http.StatusCreated,
			Summary: "Add a custom domain {name, redirect?: www|apex|null}: answers the TXT and routing records to publish",
			Request: AddDomainRequest{}, Response: CustomDomainAnswer{}},
		{Method: G, Path: "/api/projects/{id}/domains", Op: auth.OpProjectRead, ProjectParam: "id", Handler: h.List,
			Summary: "The project's custom domains with their records and states", Response: CustomDomainList{}},
		{Method: G, Path: "/api/domains/{id}", Op: auth.OpProjectRead, Handler: h.Get,
			Summary: "A custom domain with its records, state and what is wrong", Response: CustomDomainAnswer{}},
		{Method: P, Path: "/api/domains/{id}/verify", Op: auth.OpProjectUpdate, Handler: h.Verify,
			Summary:  "Look the domain's records up now: the TXT record claims the name, the routing records make it verified or misconfigured",
			Response: CustomDomainAnswer{}},
		{Method: U, Path: "/api/domains/{id}", Op: auth.OpProjectUpdate, Handler: h.Update,
			Summary: "Change an apex domain's redirect {redirect: www|apex|null}: its www name is added, redirected or dropped",
			Request: UpdateDomainRequest{}, Response: CustomDomainAnswer{}},
		{Method: D, Path: "/api/domains/{id}", Op: auth.OpProjectUpdate, Handler: h.Delete,
			Summary: "Remove a custom domain: the edges stop answering at it", Response: api.Deleted{}},
	}
}
