package controlplane

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/agents"
	"github.com/svcplatform/platform/controlplane/ai"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/billing"
	"github.com/svcplatform/platform/controlplane/cdn"
	"github.com/svcplatform/platform/controlplane/certs"
	"github.com/svcplatform/platform/controlplane/databases"
	"github.com/svcplatform/platform/controlplane/deploys"
	"github.com/svcplatform/platform/controlplane/edgesync"
	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/controlplane/media"
	"github.com/svcplatform/platform/controlplane/payments"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/repos"
	"github.com/svcplatform/platform/controlplane/security"
	"github.com/svcplatform/platform/controlplane/shield"
	"github.com/svcplatform/platform/controlplane/usage"
	"github.com/svcplatform/platform/controlplane/vectors"
)

// routeTable is every route of the API in one table, read top to bottom.
func (cp *ControlPlane) routeTable() []api.Route {
	acc := accounts.Handlers{S: cp.Accounts, ProjectExists: cp.Projects.Exists}
	prj := projects.Handlers{S: cp.Projects}
	aud := audit.Handlers{Log: cp.Audit}
	rh := repos.Handlers{S: cp.repos}
	dh := deploys.Handlers{S: cp.deploys}
	sh := shield.Handlers{S: cp.shield}
	ch := cdn.Handlers{S: cp.cdn}
	sec := security.Handlers{S: cp.security}
	dbh := databases.Handlers{S: cp.databases}
	eh := edgesync.Handlers{S: cp.edgeSync}
	bil := billing.Handlers{L: cp.Billing}
	uh := usage.Handlers{S: cp.usage}
	const G, P, U, A, D = http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete
	table := []api.Route{
		// Workspace, keys, members, sessions.
		{Method: G, Path: "/api/workspace", Op: auth.OpWorkspaceRead, Handler: acc.GetWorkspace, Summary: "The workspace and the caller", Response: accounts.WhoAmI{}},
		{Method: G, Path: "/api/keys", Op: auth.OpKeyList, Handler: acc.ListKeys, Summary: "List API keys (your own; every key for admins)", Response: accounts.KeyList{}},
		{Method: P, Path: "/api/keys", Op: auth.OpKeyCreate, Handler: acc.CreateKey, Status: 201, Summary: "Create an API key; the secret is shown once", Request: accounts.CreateKeyRequest{}, Response: accounts.CreatedKey{}},
		{Method: D, Path: "/api/keys/{id}", Op: auth.OpKeyRevoke, Handler: acc.RevokeKey, Summary: "Revoke an API key", Response: accounts.KeyAnswer{}},
		{Method: G, Path: "/api/members", Op: auth.OpMemberList, Handler: acc.ListMembers, Summary: "List members", Response: accounts.MemberList{}},
		{Method: P, Path: "/api/members", Op: auth.OpMemberManage, Handler: acc.Invite, Status: 201, Summary: "Invite a member; the invitation token is shown once", Request: accounts.InviteRequest{}, Response: accounts.Invitation{}},
		{Method: P, Path: "/api/members/accept", Public: true, Handler: acc.Accept, Summary: "Accept an invitation (or the owner's setup token) and set a password", Request: accounts.AcceptRequest{}, Response: accounts.MemberAnswer{}},
		{Method: A, Path: "/api/members/{id}", Op: auth.OpMemberManage, Handler: acc.UpdateMember, Summary: "Change a member's role", Request: accounts.UpdateMemberRequest{}, Response: accounts.MemberAnswer{}},
		{Method: D, Path: "/api/members/{id}", Op: auth.OpMemberManage, Handler: acc.RemoveMember, Summary: "Remove a member and revoke their keys", Response: api.Deleted{}},
		{Method: P, Path: "/api/session", Public: true, Handler: acc.SignIn, Summary: "Sign in to the dashboard (sets the session cookie)", Request: accounts.SignInRequest{}, Response: accounts.SignedIn{}},
		{Method: G, Path: "/api/session", Op: auth.OpWorkspaceRead, Handler: acc.GetSession, Summary: "The signed-in member", Response: accounts.SessionInfo{}},
		{Method: D, Path: "/api/session", Op: auth.OpAccount, Handler: acc.SignOut, Summary: "Sign out"},
		{Method: U, Path: "/api/account/password", Op: auth.OpAccount, Handler: acc.ChangePassword, Summary: "Change your password", Request: accounts.PasswordRequest{}},
		{Method: P, Path: "/api/account/totp", Op: auth.OpAccount, Handler: acc.StartTOTP, Summary: "Start two-factor enrolment", Response: accounts.TOTPEnrollment{}},
		{Method: P, Path: "/api/account/totp/confirm", Op: auth.OpAccount, Handler: acc.ConfirmTOTP, Summary: "Confirm two-factor with a code", Request: accounts.CodeRequest{}, Response: accounts.TOTPState{}},
		{Method: D, Path: "/api/account/totp", Op: auth.OpAccount, Handler: acc.DisableTOTP, Summary: "Turn two-factor off with a code", Request: accounts.CodeRequest{}, Response: accounts.TOTPState{}},
		{Method: P, Path: "/api/account/email/verification", Op: auth.OpEmailVerify, Handler: acc.RequestEmailVerification, Status: 202, Summary: "Mail yourself an e-mail verification token (24 hours, single use)", Response: accounts.VerificationSent{}},
		{Method: P, Path: "/api/account/email/verify", Public: true, Handler: acc.VerifyEmail, Summary: "Redeem an e-mail verification token", Request: accounts.VerifyRequest{}, Response: accounts.MemberAnswer{}},

		// Projects and environment variables.
		{Method: P, Path: "/api/projects", Op: auth.OpProjectCreate, Handler: prj.Create, Status: 201, Summary: "Create a project", Request: projects.CreateRequest{}, Response: projects.ProjectAnswer{}},
		{Method: G, Path: "/api/projects", Op: auth.OpProjectList, Handler: prj.List, Summary: "List projects with live_url", Response: projects.ProjectList{}},
		{Method: G, Path: "/api/projects/{id}", Op: auth.OpProjectRead, ProjectParam: "id", Handler: prj.Read, Summary: "Read a project, what it serves, what Deploy will do and its services", Response: projects.Detail{}},
		{Method: A, Path: "/api/projects/{id}", Op: auth.OpProjectUpdate, ProjectParam: "id", Handler: prj.Update, Summary: "Change a project", Request: projects.UpdateRequest{}, Response: projects.ProjectAnswer{}},
		{Method: D, Path: "/api/projects/{id}", Op: auth.OpProjectDelete, ProjectParam: "id", Handler: prj.Delete, Summary: "Delete a project and its resources", Response: api.Deleted{}},
		{Method: P, Path: "/api/projects/{id}/env", Op: auth.OpEnvWrite, ProjectParam: "id", Handler: prj.SetEnv, Status: 201, Summary: "Create or replace a variable", Request: projects.EnvRequest{}, Response: projects.EnvAnswer{}},
		{Method: G, Path: "/api/projects/{id}/env", Op: auth.OpEnvRead, ProjectParam: "id", Handler: prj.ListEnv, Summary: "List variables with values (developers and above)", Response: projects.EnvList{}},
		{Method: A, Path: "/api/projects/{id}/env/{envId}", Op: auth.OpEnvWrite, ProjectParam: "id", Handler: prj.PatchEnv, Summary: "Change a variable", Request: projects.EnvPatch{}, Response: projects.EnvAnswer{}},
		{Method: D, Path: "/api/projects/{id}/env/{envId}", Op: auth.OpEnvWrite, ProjectParam: "id", Handler: prj.DeleteEnv, Summary: "Delete a variable", Response: api.Deleted{}},

		// Databases: the database's project is known once it is loaded, so
		// the handlers check it again (a project key passes here only for
		// its own project's routes).
		{Method: P, Path: "/api/projects/{id}/databases", Op: auth.OpDatabaseWrite, ProjectParam: "id", Handler: dbh.Create, Status: 201, Summary: "Create a database (engine sqlite)", Request: databases.CreateRequest{}, Response: databases.DatabaseAnswer{}},
		{Method: G, Path: "/api/databases/{id}", Op: auth.OpDatabaseRead, Handler: dbh.Get, Summary: "Read a database, its endpoint and limits", Response: databases.DatabaseAnswer{}},
		{Method: P, Path: "/api/databases/{id}", Op: auth.OpDatabaseQuery, Handler: dbh.Query, MaxBody: databases.MaxQueryBody, Summary: "Run SQL: {sql, params?} or {batch: [{sql, params?}]}, as one transaction", Request: databases.QuerySchema{}, Response: databases.QueryAnswerSchema{}},
		{Method: A, Path: "/api/databases/{id}", Op: auth.OpDatabaseWrite, Handler: dbh.Retry, Summary: "Retry a failed create: {action: retry}", Request: databases.PatchRequest{}, Response: databases.DatabaseAnswer{}},
		{Method: D, Path: "/api/databases/{id}", Op: auth.OpDatabaseWrite, Handler: dbh.Delete, Summary: "Delete a database for good (later calls answer 410)", Response: api.Deleted{}},
		{Method: P, Path: "/api/databases/{id}/export", Op: auth.OpDatabaseWrite, Handler: dbh.Export, Summary: "Start an export, or ask after one with its bookmark", Request: databases.ExportRequest{}, Response: databases.ExportAnswer{}},
		{Method: G, Path: "/api/databases/{id}/export", Op: auth.OpDatabaseWrite, Handler: dbh.Download, Summary: "Download a complete export as a .sql file (?bookmark=)"},

		// Vectors: the rows are in controlplane/vectors/routes.go, appended below.

		// Repos and deploys.
		{Method: G, Path: "/api/repos", Op: auth.OpRepoRead, Handler: rh.List, Summary: "List repos with commit counts", Response: repos.RepoList{}},
		{Method: P, Path: "/api/repos", Op: auth.OpRepoWrite, Handler: rh.Create, Status: 201, Summary: "Create a repo", Request: repos.CreateRequest{}, Response: repos.RepoAnswer{}},
		{Method: G, Path: "/api/repos/{id}", Op: auth.OpRepoRead, Handler: rh.Read, Summary: "Read a repo and its commit history", Response: repos.Detail{}},
		{Method: D, Path: "/api/repos/{id}", Op: auth.OpRepoWrite, Handler: rh.Delete, Summary: "Delete a repo (its deployments keep serving)", Response: api.Deleted{}},
		{Method: P, Path: "/api/repos/{id}/commits", Op: auth.OpRepoWrite, Handler: rh.Push, Status: 201, MaxBody: repos.MaxPushBody,
			Summary: "Push a commit: a full snapshot of at most 500 files, 10 MB each, 25 MB in all", Request: repos.PushRequest{}, Response: repos.CommitAnswer{}},
		{Method: G, Path: "/api/repos/{id}/files", Op: auth.OpRepoRead, Handler: rh.Files,
			Summary: "File tree at ?commit= (default latest), or one text file with &path=", Response: repos.Tree{}},
		{Method: P, Path: "/api/repos/{id}/deploy", Op: auth.OpRepoDeploy, Handler: dh.Deploy, Status: 202,
			Summary: "Deploy a commit to a project (an older commit is a rollback); follow it at /api/deployments/{id}", Request: deploys.DeployRequest{}, Response: deploys.DeploymentAnswer{}},
		{Method: P, Path: "/api/projects/{id}/deploy", Op: auth.OpRepoDeploy, ProjectParam: "id", Handler: dh.Redeploy, Status: 202,
			Summary: "Do what the project's deployAction says: rebuild the latest commit of its repo or redeploy the kept files", Response: deploys.DeploymentAnswer{}},
		{Method: G, Path: "/api/projects/{id}/deployments", Op: auth.OpProjectRead, ProjectParam: "id", Handler: dh.List,
			Summary: "A project's deployments, newest first", Response: deploys.ProjectDeployments{}},
		{Method: G, Path: "/api/deployments/{id}", Op: auth.OpProjectRead, Handler: dh.Get,
			Summary: "A deployment with its deploy log and files", Response: deploys.Detail{}},

		// Media: the rows are in controlplane/media/routes.go, appended below.

		// Shield, CDN and the security overview.
		{Method: G, Path: "/api/services/shield", Op: auth.OpShieldRead, Handler: sh.Get,
			Summary: "Saved Shield settings, protectedSites and passwordsAllowed", Response: shield.Answer{}},
		{Method: U, Path: "/api/services/shield", Op: auth.OpShieldWrite, Handler: sh.Put, MaxBody: shield.MaxBody, Request: shield.PutDoc{},
			Summary: "Merge settings over the saved ones (answers appliedNote), or set {passwords: {site: password|null}} (static sites only)", Response: shield.Answer{}},
		{Method: P, Path: "/api/services/shield", Op: auth.OpShieldWrite, Handler: sh.Apply,
			Summary: "Apply now: put the saved rules on every live static site", Response: shield.ApplyAnswer{}},
		{Method: G, Path: "/api/services/shield/blocks", Op: auth.OpShieldRead, Handler: sh.Blocks,
			Summary: "What the rules caught per site, function and rule over ?days=7 or 30", Response: shield.Blocks{}},
		{Method: G, Path: "/api/services/cdn", Op: auth.OpCDNRead, Handler: ch.Get,
			Summary: "Saved CDN settings", Response: cdn.Answer{}},
		{Method: U, Path: "/api/services/cdn", Op: auth.OpCDNWrite, Handler: ch.Put,
			Summary: "Merge {enabled, cacheTtlSeconds} over the saved settings (admins); takes effect on each project's next deploy", Request: cdn.PatchDoc{}, Response: cdn.Answer{}},
		{Method: G, Path: "/api/security/overview", Op: auth.OpSecurityRead, Handler: sec.Overview,
			Summary: "Security score and checks, with audit changes per hour over the last 24 hours", Response: security.Overview{}},

		// Payments: the rows are in controlplane/payments/routes.go, appended below.
		// Billing: the workspace Balance, included credit and spending limit.
		{Method: G, Path: "/api/billing", Op: auth.OpBillingRead, Handler: bil.Get, Summary: "Balance, included credit, holds, month spend and spending limit (admins)", Response: billing.Answer{}},
		{Method: U, Path: "/api/billing/spend-limit", Op: auth.OpBillingWrite, Handler: bil.PutSpendLimit, Summary: "Set or remove the monthly spending limit (admins); null removes it", Request: billing.SpendLimitRequest{}, Response: billing.Answer{}},
		// AI gateway: the rows are in controlplane/ai/routes.go, appended below.
		// Agents: the rows are in controlplane/agents/routes.go, appended below.

		// Usage, attention, audit and activity.
		{Method: G, Path: "/api/usage", Op: auth.OpUsageRead, Handler: uh.Usage, Summary: "Usage report: ?period=month|last_month|7d|30d|90d&project=", Response: usage.Report{}},
		{Method: G, Path: "/api/attention", Op: auth.OpUsageRead, Handler: uh.Attention, Summary: "Ranked to-do list; each item links to what fixes it", Response: usage.Attention{}},
		{Method: G, Path: "/api/orgs/{id}/audit-logs", Op: auth.OpAuditRead, Handler: aud.List, Summary: "Audit rows, newest first (admins)", Response: audit.AuditPage{}},
		{Method: G, Path: "/api/activity", Op: auth.OpActivityRead, Handler: aud.Activity, Summary: "Short recent activity feed", Response: audit.Feed{}},

		// The edge protocol. Public: these take edge tokens, not API keys,
		// and check them in the handler.
		{Method: G, Path: snapshot.ConfigPath, Public: true, Handler: eh.Config,
			Summary: "Edge configuration snapshot; long-poll with ?after=<version> (edge token)", Response: snapshot.Snapshot{}},
		{Method: G, Path: snapshot.BlobsPath + "{sha256}", Public: true, Handler: eh.Blob,
			Summary: "A deployed file's bytes by SHA-256 (edge token)"},
		{Method: P, Path: snapshot.CountsPath, Public: true, Handler: eh.Counts, MaxBody: 4 << 20,
			Summary: "Shield counts from an edge, idempotent per batch (edge token)", Request: snapshot.CountBatch{}, Response: snapshot.CountAnswer{}},

		// The API's own description.
		{Method: G, Path: "/api/openapi.json", Public: true, Handler: cp.serveOpenAPI, Summary: "This API's OpenAPI 3.1 document"},
	}
	// Areas built on the assembly keep their rows beside their handlers (the
	// area's own HTTP tests mount the very same rows); they join the table
	// here, in this order.
	table = append(table, payments.Routes(payments.Handlers{S: cp.payments})...)
	table = append(table, cp.mcp.Routes()...)
	table = append(table, ai.Routes(ai.Handlers{S: cp.ai})...)
	table = append(table, agents.Routes(agents.Handlers{S: cp.agents})...)
	table = append(table, vectors.Routes(vectors.Handlers{S: cp.vectors})...)
	table = append(table, media.Routes(media.Handlers{S: cp.media})...)
	table = append(table, certs.Routes(certs.Handlers{S: cp.certs})...)
	return table
}
