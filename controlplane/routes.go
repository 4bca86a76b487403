package controlplane

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/projects"
)

// routeTable is every route of the API in one readable table.
func (cp *ControlPlane) routeTable() []api.Route {
	acc := accounts.Handlers{S: cp.Accounts, ProjectExists: cp.Projects.Exists}
	prj := projects.Handlers{S: cp.Projects}
	aud := audit.Handlers{Log: cp.Audit}
	const G, P, U, A, D = http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete
	return []api.Route{
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

		// Audit and activity.
		{Method: G, Path: "/api/orgs/{id}/audit-logs", Op: auth.OpAuditRead, Handler: aud.List, Summary: "Audit rows, newest first (admins)", Response: audit.AuditPage{}},
		{Method: G, Path: "/api/activity", Op: auth.OpActivityRead, Handler: aud.Activity, Summary: "Short recent activity feed", Response: audit.Feed{}},

		// The API's own description.
		{Method: G, Path: "/api/openapi.json", Public: true, Handler: cp.serveOpenAPI, Summary: "This API's OpenAPI 3.1 document"},
	}
}
