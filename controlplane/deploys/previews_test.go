package deploys_test

import (
	"fmt"
	"testing"

	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/deploys"
)

// TestDeploymentAddresses: every static deployment among its project's
// latest deploys.AddressedDeployments answers at <number>--<slug>, with its
// own files and noindex; older ones lose the address, and the answers say
// which have one.
func TestDeploymentAddresses(t *testing.T) {
	env := cptest.New(t)
	s := newSite(t, env, "Numbered")
	total := deploys.AddressedDeployments + 2
	for i := 1; i <= total; i++ {
		c := s.push(t, map[string]string{"index.html": fmt.Sprintf("<p>%d</p>", i)})
		var out struct {
			Deployment struct {
				ID, State, PreviewURL string
				Number                int
				Preview               bool
			}
		}
		body := map[string]any{"projectId": s.project, "commit": c, "preview": i%2 == 0}
		env.Owner.Must(202, "POST", "/api/repos/"+s.repo+"/deploy", body).JSON(t, &out)
		if d := out.Deployment; d.Number != i || d.Preview != (i%2 == 0) || d.PreviewURL != fmt.Sprintf("https://%d--numbered.apps.test", i) {
			t.Fatalf("deploy %d answered %+v", i, d)
		}
		env.CP.Deploys().Wait()
	}
	snap := edgeSnapshot(t, env)
	for i := 1; i <= total; i++ {
		st := siteOf(snap, fmt.Sprintf("%d--numbered.apps.test", i))
		if kept := i > total-deploys.AddressedDeployments; (st != nil) != kept {
			t.Fatalf("deployment %d: address %v, want %v", i, st != nil, kept)
		}
		if st != nil && (!st.NoIndex || len(st.Deployment.Files) != 1 || st.ProjectID != s.project) {
			t.Fatalf("deployment %d's site: %+v", i, st)
		}
	}
	// Production is the last deployment that was not a preview.
	if prod := siteOf(snap, "numbered.apps.test"); prod == nil || prod.NoIndex || prod.Deployment.ID == "" {
		t.Fatalf("production site: %+v", prod)
	}
	var list struct {
		Deployments []struct {
			Number            int
			State, PreviewURL string
		}
	}
	env.Owner.Must(200, "GET", "/api/projects/"+s.project+"/deployments", nil).JSON(t, &list)
	for _, d := range list.Deployments {
		wantState := "inactive"
		switch {
		case d.Number == total-1: // the last one that was not a preview
			wantState = "live"
		case d.Number%2 == 0:
			wantState = "preview"
		}
		kept := d.Number > total-deploys.AddressedDeployments
		if d.State != wantState || (d.PreviewURL != "") != kept {
			t.Fatalf("deployment %d listed as %+v", d.Number, d)
		}
	}
}
