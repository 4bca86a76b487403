package auth

import "fmt"

// Op is an operation a principal may be allowed to perform.
type Op string

// Scope says how an operation relates to projects, which decides what a key
// limited to one project may do.
type Scope int

const (
	// ScopeWorkspace operations act on the workspace as a whole (repos, the
	// AI gateway, Shield, members): keys limited to a project are refused.
	ScopeWorkspace Scope = iota
	// ScopeProject operations act on one project's resources: a project key
	// reaches only its own project.
	ScopeProject
	// ScopeListing operations list across projects: a project key is allowed
	// and sees only its own project (the handler filters).
	ScopeListing
)

// Rule is one row of the permission table.
type Rule struct {
	// MinRole is the lowest role allowed.
	MinRole Role
	// Write marks operations that change something: read-only keys are refused.
	Write bool
	// FullAccess marks reads that still need a full-access credential
	// (database queries, environment values): read-only keys are refused.
	FullAccess bool
	// Scope decides what project keys may do.
	Scope Scope
	// OwnerSession reserves the operation to the owner signed in to the
	// dashboard (money leaving the platform): every key is refused.
	OwnerSession bool
	// SessionOnly marks account operations on the caller's own sign-in
	// (password, two-factor) that keys cannot perform.
	SessionOnly bool
	// Pending marks what a workspace waiting for its owner's e-mail
	// verification may still do (read itself, verify, manage the sign-in).
	Pending bool
}

// The operations of the API. Each handler names exactly one.
const (
	OpWorkspaceRead   Op = "workspace.read"
	OpWorkspaceCreate Op = "workspace.create"
	OpWorkspacePlan   Op = "workspace.plan"
	OpWorkspaceLeave  Op = "workspace.leave"
	OpWorkspaceDelete Op = "workspace.delete"

	OpProjectList   Op = "project.list"
	OpProjectCreate Op = "project.create"
	OpProjectRead   Op = "project.read"
	OpProjectUpdate Op = "project.update"
	OpProjectDelete Op = "project.delete"
	OpEnvRead       Op = "env.read"
	OpEnvWrite      Op = "env.write"

	OpKeyList      Op = "key.list"
	OpKeyCreate    Op = "key.create"
	OpKeyRevoke    Op = "key.revoke"
	OpMemberList   Op = "member.list"
	OpMemberManage Op = "member.manage"
	OpAccount      Op = "account.manage"

	OpAuditRead    Op = "audit.read"
	OpActivityRead Op = "activity.read"
	OpUsageRead    Op = "usage.read"
	OpEmailVerify  Op = "account.email_verify"
	OpBillingRead  Op = "billing.read"
	OpBillingWrite Op = "billing.write"
	OpSecurityRead Op = "security.read"

	OpShieldRead  Op = "shield.read"
	OpShieldWrite Op = "shield.write"
	OpCDNRead     Op = "cdn.read"
	OpCDNWrite    Op = "cdn.write"

	OpRepoRead   Op = "repo.read"
	OpRepoWrite  Op = "repo.write"
	OpRepoDeploy Op = "repo.deploy"

	OpDatabaseRead   Op = "database.read"
	OpDatabaseWrite  Op = "database.write"
	OpDatabaseQuery  Op = "database.query"
	OpVectorRead     Op = "vector.read"
	OpVectorWrite    Op = "vector.write"
	OpMediaRead      Op = "media.read"
	OpMediaSecrets   Op = "media.secrets"
	OpMediaWrite     Op = "media.write"
	OpPaymentsRead   Op = "payments.read"
	OpPaymentsWrite  Op = "payments.write"
	OpPaymentsPayout Op = "payments.payout"
	OpAIRead         Op = "ai.read"
	OpAIUse          Op = "ai.use"
	OpAgentRead      Op = "agent.read"
	OpAgentWrite     Op = "agent.write"
	OpAgentRun       Op = "agent.run"
	OpMailRead       Op = "mail.read"
	OpMailSend       Op = "mail.send"
	OpMailDomains    Op = "mail.domains"
	OpAuthPoolRead   Op = "auth_pool.read"
	OpAuthPoolWrite  Op = "auth_pool.write"
	OpAuthUserRead   Op = "auth_user.read"
	OpMemoryRead     Op = "memory.read"
	OpMemoryWrite    Op = "memory.write"
	OpBucketRead     Op = "bucket.read"
	OpBucketWrite    Op = "bucket.write"
	OpBucketData     Op = "bucket.data"
)

// table is the permission table: the one answer to "may this principal do
// this operation". Reads below developer are open to every member; changes
// need a developer; workspace-wide settings, members and the audit log need
// an admin; money leaving needs the owner in person. Every row applies the
// member's role to keys and sessions alike: a key narrows what its member
// may do (read-only, one project), never widens it.
var table = map[Op]Rule{
	OpWorkspaceRead: {MinRole: Viewer, Scope: ScopeListing, Pending: true},
	// A person makes a workspace (and owns it) signed in, whatever their
	// role in the one they act in.
	OpWorkspaceCreate: {MinRole: Viewer, Write: true, Scope: ScopeWorkspace, SessionOnly: true},
	// The plan is paid from the Balance: the owner's.
	OpWorkspacePlan:  {MinRole: Owner, Write: true, Scope: ScopeWorkspace},
	OpWorkspaceLeave: {MinRole: Viewer, Write: true, Scope: ScopeWorkspace, SessionOnly: true, Pending: true},
	// Deleting the workspace: the owner signed in, nobody else.
	OpWorkspaceDelete: {MinRole: Owner, Write: true, Scope: ScopeWorkspace, SessionOnly: true, Pending: true},

	OpProjectList:   {MinRole: Viewer, Scope: ScopeListing},
	OpProjectCreate: {MinRole: Developer, Write: true, Scope: ScopeWorkspace},
	OpProjectRead:   {MinRole: Viewer, Scope: ScopeProject},
	OpProjectUpdate: {MinRole: Developer, Write: true, Scope: ScopeProject},
	// "An admin or a full workspace key": a full-access workspace key of a
	// member who may delete. A key never does more than its member's role.
	OpProjectDelete: {MinRole: Admin, Write: true, Scope: ScopeWorkspace},
	OpEnvRead:       {MinRole: Developer, FullAccess: true, Scope: ScopeProject},
	OpEnvWrite:      {MinRole: Developer, Write: true, Scope: ScopeProject},

	OpKeyList:      {MinRole: Viewer, Scope: ScopeWorkspace},
	OpKeyCreate:    {MinRole: Viewer, Write: true, Scope: ScopeWorkspace},
	OpKeyRevoke:    {MinRole: Viewer, Write: true, Scope: ScopeWorkspace},
	OpMemberList:   {MinRole: Viewer, Scope: ScopeWorkspace},
	OpMemberManage: {MinRole: Admin, Write: true, Scope: ScopeWorkspace},
	OpAccount:      {MinRole: Viewer, Write: true, Scope: ScopeWorkspace, SessionOnly: true, Pending: true},

	OpAuditRead:    {MinRole: Admin, Scope: ScopeWorkspace},
	OpActivityRead: {MinRole: Viewer, Scope: ScopeWorkspace},
	OpUsageRead:    {MinRole: Viewer, Scope: ScopeListing}, // a project key sees its own project
	// Asking for an e-mail verification message: the member's own address,
	// with their session or one of their full-access keys.
	OpEmailVerify: {MinRole: Viewer, Write: true, Scope: ScopeWorkspace, Pending: true},
	// The workspace Balance and included credit: admins read and set the
	// monthly spending limit; loading money is an operator command.
	OpBillingRead:  {MinRole: Admin, Scope: ScopeWorkspace},
	OpBillingWrite: {MinRole: Admin, Write: true, Scope: ScopeWorkspace},
	OpSecurityRead: {MinRole: Viewer, Scope: ScopeWorkspace},

	OpShieldRead:  {MinRole: Viewer, Scope: ScopeWorkspace},
	OpShieldWrite: {MinRole: Admin, Write: true, Scope: ScopeWorkspace},
	OpCDNRead:     {MinRole: Viewer, Scope: ScopeWorkspace},
	OpCDNWrite:    {MinRole: Admin, Write: true, Scope: ScopeWorkspace},

	OpRepoRead:   {MinRole: Viewer, Scope: ScopeWorkspace},
	OpRepoWrite:  {MinRole: Developer, Write: true, Scope: ScopeWorkspace},
	OpRepoDeploy: {MinRole: Developer, Write: true, Scope: ScopeWorkspace},

	OpDatabaseRead:   {MinRole: Viewer, Scope: ScopeProject},
	OpDatabaseWrite:  {MinRole: Developer, Write: true, Scope: ScopeProject},
	OpDatabaseQuery:  {MinRole: Developer, Write: true, FullAccess: true, Scope: ScopeProject},
	OpVectorRead:     {MinRole: Viewer, Scope: ScopeProject},
	OpVectorWrite:    {MinRole: Developer, Write: true, Scope: ScopeProject},
	OpMediaRead:      {MinRole: Viewer, Scope: ScopeProject},
	OpMediaSecrets:   {MinRole: Developer, FullAccess: true, Scope: ScopeProject},
	OpMediaWrite:     {MinRole: Developer, Write: true, Scope: ScopeProject},
	OpPaymentsRead:   {MinRole: Viewer, Scope: ScopeProject},
	OpPaymentsWrite:  {MinRole: Developer, Write: true, Scope: ScopeProject},
	OpPaymentsPayout: {MinRole: Owner, Write: true, Scope: ScopeProject, OwnerSession: true},
	OpAIRead:         {MinRole: Viewer, Scope: ScopeWorkspace},
	OpAIUse:          {MinRole: Developer, Write: true, Scope: ScopeWorkspace},
	OpAgentRead:      {MinRole: Viewer, Scope: ScopeProject},
	OpAgentWrite:     {MinRole: Developer, Write: true, Scope: ScopeProject},
	OpAgentRun:       {MinRole: Developer, Write: true, Scope: ScopeProject},
	OpMailRead:       {MinRole: Viewer, Scope: ScopeProject},
	OpMailSend:       {MinRole: Developer, Write: true, Scope: ScopeProject},
	OpMailDomains:    {MinRole: Developer, Write: true, Scope: ScopeProject},
	OpAuthPoolRead:   {MinRole: Viewer, Scope: ScopeProject},
	OpAuthPoolWrite:  {MinRole: Developer, Write: true, Scope: ScopeProject},
	// App users' e-mail addresses are personal data: read like
	// environment values, with a full-access credential.
	OpAuthUserRead: {MinRole: Developer, FullAccess: true, Scope: ScopeProject},
	OpMemoryRead:   {MinRole: Viewer, Scope: ScopeProject},
	OpMemoryWrite:  {MinRole: Developer, Write: true, Scope: ScopeProject},
	OpBucketRead:   {MinRole: Viewer, Scope: ScopeProject},
	OpBucketWrite:  {MinRole: Developer, Write: true, Scope: ScopeProject},
	// Objects' bytes are the project's data (and a signed URL hands them
	// out): read like environment values, with a full-access credential.
	OpBucketData: {MinRole: Developer, FullAccess: true, Scope: ScopeProject},
}

// RuleOf returns the table row of op and whether op is known.
func RuleOf(op Op) (Rule, bool) {
	r, ok := table[op]
	return r, ok
}

// Ops lists every operation in the table.
func Ops() []Op {
	out := make([]Op, 0, len(table))
	for op := range table {
		out = append(out, op)
	}
	return out
}

// Denied is a refusal by the permission table. It answers 403 (401 when no
// principal) with a stable code and a message that says what would be
// allowed, never more about the resource than the caller already knows.
type Denied struct {
	Code    string
	Message string
	Unauth  bool
}

func (d *Denied) Error() string { return d.Message }

// Status is the HTTP status of the refusal.
func (d *Denied) Status() int {
	if d.Unauth {
		return 401
	}
	return 403
}

// ErrorCode is the stable code of the refusal.
func (d *Denied) ErrorCode() string { return d.Code }

func deny(code, format string, args ...any) *Denied {
	return &Denied{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Authorize decides whether p may perform op on a resource of projectID
// (empty for workspace-wide resources). It returns nil or a *Denied.
func Authorize(p *Principal, op Op, projectID string) error {
	rule, ok := table[op]
	if !ok {
		return deny("forbidden", "operation %s is not in the permission table", op)
	}
	if p == nil || p.WorkspaceID == "" {
		return &Denied{Code: "unauthenticated", Message: "missing or invalid credentials", Unauth: true}
	}
	if p.Pending && !rule.Pending {
		return deny("email_unverified", "this workspace waits for its owner's e-mail verification: redeem the mailed token with POST /api/account/email/verify (ask for a new one with POST /api/account/email/verification)")
	}
	if rule.OwnerSession {
		if !p.Session || p.Role < Owner {
			return deny("payouts_require_owner", "this action moves money out of the platform: the workspace owner must do it signed in to the dashboard; API keys and other members cannot")
		}
		return nil
	}
	if rule.SessionOnly && !p.Session {
		return deny("session_required", "this changes your own sign-in: do it signed in to the dashboard, not with an API key")
	}
	if p.ReadOnly && (rule.Write || rule.FullAccess) {
		if rule.FullAccess {
			return deny("full_access_required", "this needs a full-access key, even to read; read-only keys cannot use it")
		}
		return deny("read_only_key", "this key is read-only and cannot change anything")
	}
	if p.ProjectID != "" {
		switch rule.Scope {
		case ScopeWorkspace:
			return deny("workspace_key_required", "this is workspace-wide: use a workspace key, not a key limited to one project")
		case ScopeProject:
			if projectID != p.ProjectID {
				return deny("project_key_mismatch", "this key is limited to another project")
			}
		}
	}
	if p.Role < rule.MinRole {
		return deny("insufficient_role", "your role (%s) cannot do this; it needs %s or above", p.Role, rule.MinRole)
	}
	return nil
}
