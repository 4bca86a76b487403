package controlplane

import (
	"context"
	"errors"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/buckets"
	"github.com/svcplatform/platform/controlplane/cdn"
	"github.com/svcplatform/platform/controlplane/deploys"
	"github.com/svcplatform/platform/controlplane/domains"
	"github.com/svcplatform/platform/controlplane/edgesync"
	"github.com/svcplatform/platform/controlplane/mail"
	"github.com/svcplatform/platform/controlplane/payments"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/shield"
	"github.com/svcplatform/platform/controlplane/signin"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/rules"
)

// edgeSources are what edge snapshots and counts are read from, each
// provided by the area that owns the data.
func edgeSources() edgesync.Sources {
	return edgesync.Sources{
		Sites: deploys.EdgeSites,
		Projects: func(ctx context.Context, q store.Querier) (map[string]edgesync.ProjectRef, error) {
			refs, err := projects.AllRefs(ctx, q)
			out := make(map[string]edgesync.ProjectRef, len(refs))
			for id, r := range refs {
				out[id] = edgesync.ProjectRef{Workspace: r.Workspace, Slug: r.Slug}
			}
			return out, err
		},
		Project: func(ctx context.Context, q store.Querier, id string) (edgesync.ProjectRef, bool, error) {
			r, ok, err := projects.RefOf(ctx, q, id)
			return edgesync.ProjectRef{Workspace: r.Workspace, Slug: r.Slug}, ok, err
		},
		ServingKind: deploys.ServingKind,
		Served:      deploys.Served,
		Workspaces:  accounts.WorkspaceIDs,
		Shield:      shield.AllSettings,
		Passwords:   shield.AllPasswords,
		CDN:         cdn.All,
		Domains:     domains.EdgeDomains,
		// Published with the storage host (EdgeSync().SetStorage).
		PublicBuckets: buckets.PublicBucketIDs,
	}
}

// hostingSettings gives deploys the CDN and Shield settings in force.
type hostingSettings struct{ cp *ControlPlane }

func (s hostingSettings) CDN(ctx context.Context, workspace string) (cdn.Settings, error) {
	return s.cp.cdn.Get(ctx, workspace)
}

func (s hostingSettings) Shield(ctx context.Context, workspace string) (rules.Settings, error) {
	return s.cp.shield.Current(ctx, workspace)
}

// signinMailer sends sign-in pools' messages (verification, reset) as their
// project through the mail area: its sender, daily limit and emails metric.
type signinMailer struct{ m *mail.Service }

func (a signinMailer) Send(ctx context.Context, msg signin.Message) error {
	_, err := a.m.SendAs(ctx, msg.Workspace, msg.Project, "signin", "", mail.SendRequest{To: mail.Recipients{msg.To}, Subject: msg.Subject, Text: msg.Body})
	return err
}

// paymentsMailer sends the payments area's mail through the mail area:
// receipts as the payment's project (its sender, daily limit and emails
// metric), webhook-failure notices as the platform's own mail to the
// workspace's active owners. The mail area is built after payments, so it
// is read at each call.
type paymentsMailer struct{ cp *ControlPlane }

func (a paymentsMailer) SendAsProject(ctx context.Context, workspace, project, idemKey string, m payments.Mail) error {
	_, err := a.cp.mail.SendAs(ctx, workspace, project, mail.SourceReceipt, idemKey,
		mail.SendRequest{To: mail.Recipients{m.To}, Subject: m.Subject, Text: m.Text})
	return err
}

func (a paymentsMailer) NotifyOwners(ctx context.Context, workspace string, m payments.Mail) error {
	members, err := a.cp.Accounts.Members(ctx, workspace)
	if err != nil {
		return err
	}
	var errs []error
	for _, mb := range members {
		if mb.Role == auth.Owner && mb.Status == "active" {
			errs = append(errs, a.cp.mail.Send(ctx, accounts.Message{To: mb.Email, Subject: m.Subject, Body: m.Text}))
		}
	}
	return errors.Join(errs...)
}
