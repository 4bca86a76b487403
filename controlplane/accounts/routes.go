package accounts

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
)

// Routes is the area's rows of the route table: workspaces, keys,
// members, sessions, sign-up and the signed-in person's account.
func Routes(h Handlers) []api.Route {
	const G, P, U, A, D = http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete
	return []api.Route{
		{Method: G, Path: "/api/workspace", Op: auth.OpWorkspaceRead, Handler: h.GetWorkspace, Summary: "The workspace and the caller", Response: WhoAmI{}},
		{Method: G, Path: "/api/workspaces", Op: auth.OpWorkspaceRead, Handler: h.ListWorkspaces, Summary: "Your workspaces and your role in each (a key: its own workspace)", Response: WorkspaceList{}},
		{Method: P, Path: "/api/workspaces", Op: auth.OpWorkspaceCreate, Handler: h.CreateWorkspace, Status: 201, Summary: "Create a workspace on the default plan; you are its owner (signed in)", Request: CreateWorkspaceRequest{}, Response: MembershipAnswer{}},
		{Method: P, Path: "/api/workspace/leave", Op: auth.OpWorkspaceLeave, Handler: h.LeaveWorkspace, Summary: "Leave the workspace (signed in): your keys in it are revoked; the session moves to another of your workspaces or ends", Response: Left{}},
		{Method: D, Path: "/api/workspace", Op: auth.OpWorkspaceDelete, Handler: h.DeleteWorkspace, Summary: "Delete the workspace and every project in it (the owner, signed in); blocked by what project deletion is and by money on the Balance", Request: DeleteRequest{}, Response: Left{}},
		{Method: P, Path: "/api/session/workspace", Op: auth.OpAccount, Handler: h.SwitchWorkspace, Summary: "Make the session act in another of your workspaces", Request: SwitchRequest{}, Response: Switched{}},
		{Method: P, Path: "/api/signup", Public: true, Handler: h.SignUp, Status: 202, Summary: "Sign up: a person and their first workspace, when the operator opened sign-up; the same answer whether or not the e-mail had an account (the mail says)", Request: SignUpRequest{}, Response: SignedUp{}},
		{Method: G, Path: "/api/keys", Op: auth.OpKeyList, Handler: h.ListKeys, Summary: "List API keys (your own; every key for admins)", Response: KeyList{}},
		{Method: P, Path: "/api/keys", Op: auth.OpKeyCreate, Handler: h.CreateKey, Status: 201, Summary: "Create an API key; the secret is shown once", Request: CreateKeyRequest{}, Response: CreatedKey{}},
		{Method: D, Path: "/api/keys/{id}", Op: auth.OpKeyRevoke, Handler: h.RevokeKey, Summary: "Revoke an API key", Response: KeyAnswer{}},
		{Method: G, Path: "/api/members", Op: auth.OpMemberList, Handler: h.ListMembers, Summary: "List members", Response: MemberList{}},
		{Method: P, Path: "/api/members", Op: auth.OpMemberManage, Handler: h.Invite, Status: 201, Summary: "Invite a member; the invitation token is shown once", Request: InviteRequest{}, Response: Invitation{}},
		{Method: P, Path: "/api/members/accept", Public: true, Handler: h.Accept, Summary: "Accept an invitation (or the owner's setup token) and set a password", Request: AcceptRequest{}, Response: MemberAnswer{}},
		{Method: A, Path: "/api/members/{id}", Op: auth.OpMemberManage, Handler: h.UpdateMember, Summary: "Change a member's role", Request: UpdateMemberRequest{}, Response: MemberAnswer{}},
		{Method: D, Path: "/api/members/{id}", Op: auth.OpMemberManage, Handler: h.RemoveMember, Summary: "Remove a member and revoke their keys", Response: api.Deleted{}},
		{Method: P, Path: "/api/session", Public: true, Handler: h.SignIn, Summary: "Sign in to the dashboard (sets the session cookie)", Request: SignInRequest{}, Response: SignedIn{}},
		{Method: G, Path: "/api/session", Op: auth.OpWorkspaceRead, Handler: h.GetSession, Summary: "The signed-in member", Response: SessionInfo{}},
		{Method: D, Path: "/api/session", Op: auth.OpAccount, Handler: h.SignOut, Summary: "Sign out"},
		{Method: U, Path: "/api/account/password", Op: auth.OpAccount, Handler: h.ChangePassword, Summary: "Change your password", Request: PasswordRequest{}},
		{Method: P, Path: "/api/account/totp", Op: auth.OpAccount, Handler: h.StartTOTP, Summary: "Start two-factor enrolment", Response: TOTPEnrollment{}},
		{Method: P, Path: "/api/account/totp/confirm", Op: auth.OpAccount, Handler: h.ConfirmTOTP, Summary: "Confirm two-factor with a code", Request: CodeRequest{}, Response: TOTPState{}},
		{Method: D, Path: "/api/account/totp", Op: auth.OpAccount, Handler: h.DisableTOTP, Summary: "Turn two-factor off with a code", Request: CodeRequest{}, Response: TOTPState{}},
		{Method: P, Path: "/api/account/email/verification", Op: auth.OpEmailVerify, Handler: h.RequestEmailVerification, Status: 202, Summary: "Mail yourself an e-mail verification token (24 hours, single use)", Response: VerificationSent{}},
		{Method: P, Path: "/api/account/email/verify", Public: true, Handler: h.VerifyEmail, Summary: "Redeem an e-mail verification token", Request: VerifyRequest{}, Response: MemberAnswer{}},
		{Method: P, Path: "/api/account/password/reset", Public: true, Handler: h.RequestPasswordReset, Status: 202, MaxBody: 4 << 10, Summary: "Forgot password: a reset token is mailed to the address when it has an account (the same answer either way)", Request: ResetRequest{}, Response: ResetSent{}},
		{Method: P, Path: "/api/account/password/reset/confirm", Public: true, Handler: h.ResetPassword, MaxBody: 4 << 10, Summary: "Redeem a reset token with a new password: every session ends and the address is verified", Request: ResetConfirm{}, Response: ResetDone{}},
	}
}
