package accounts

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store"
)

// Store is the persistence of the accounts area: workspaces, members, API
// keys and dashboard sessions. Every method that changes something writes its
// audit row in the same transaction as the change, and the callbacks a method
// takes run inside that transaction, so a rule they check still holds when the
// change commits. SQLStore implements it on the platform's SQLite database;
// another SQL database is another implementation, with no change to the
// service or the handlers.
//
// A missing workspace, member or key is an api.NotFound error, as the API
// answers it. A look-up by a credential (key hash, session token, invitation
// token) or by the caller's own member id returns store.ErrNotFound instead;
// the service decides what to answer.
type Store interface {
	// Workspace returns workspace id, or a 404 error.
	Workspace(ctx context.Context, id string) (Workspace, error)
	// SetPlan changes the plan of workspace id, or returns a 404 error.
	SetPlan(ctx context.Context, id string, plan plans.Name, ev audit.Event) error
	// CreateFirstWorkspace stores the workspace, owner and key that first
	// returns when the database holds no workspace yet, and reports whether
	// it did; first is called only then.
	CreateFirstWorkspace(ctx context.Context, first func() FirstWorkspace, ev func(FirstWorkspace) audit.Event) (bool, error)

	// KeyByHash returns the key whose secret hashes to hash, with its
	// member's current role, or store.ErrNotFound. Every API request runs it.
	KeyByHash(ctx context.Context, hash []byte) (KeyCredential, error)
	// TouchKey records at as the last use of key id.
	TouchKey(ctx context.Context, id string, at time.Time) error
	// Keys lists the workspace's keys, newest first, leaving out ephemeral
	// ones: every key when member is nil, otherwise only *member's.
	Keys(ctx context.Context, workspace string, member *string) ([]Key, error)
	// CreateKey stores k once check accepts the counts of the workspace's
	// unrevoked keys and of k's member's unrevoked keys (ephemeral ones
	// left out of the member's).
	CreateKey(ctx context.Context, k KeyRecord, check func(workspaceActive, memberActive int) error, ev audit.Event) error
	// RevokeKey loads a key of the workspace (404 when absent or ephemeral)
	// and lets apply decide; when apply returns true, having set
	// k.RevokedAt, the revocation is stored.
	RevokeKey(ctx context.Context, workspace, id string, apply func(k *Key) (bool, error), ev func(Key) audit.Event) (Key, error)
	// ResetMemberKeys loads k's member (404 when absent) and lets check
	// refuse it given the counts of the workspace's and the member's
	// unrevoked keys (after the revocation); then, when revoke, it revokes
	// every unrevoked key of the member, ephemeral ones included, at
	// k.CreatedAt, and stores k. It returns the revoked keys' ids.
	ResetMemberKeys(ctx context.Context, k KeyRecord, revoke bool, check func(m Member, workspaceActive, memberActive int) error, ev func(m Member, revoked []string) audit.Event) ([]string, error)

	// Members lists the workspace's members, oldest first.
	Members(ctx context.Context, workspace string) ([]Member, error)
	// Member returns a member of the workspace, or a 404 error.
	Member(ctx context.Context, workspace, id string) (Member, error)
	// CreateMember stores an invited member; a 409 member_exists error when
	// the e-mail is already in the workspace.
	CreateMember(ctx context.Context, m MemberRecord, ev audit.Event) error
	// AcceptInvitation finds the member whose invitation hashes to
	// a.InviteHash (store.ErrNotFound when none) and its person (the
	// member's own, else the person with its e-mail), lets check refuse
	// the expiry given the person's password hash ("" when none or no
	// person) and say whether to set a.PasswordHash, then links the member
	// to that person (made when missing), makes the member active and ends
	// the invitation. ev receives the member's workspace.
	AcceptInvitation(ctx context.Context, a Acceptance, check func(expires time.Time, person PersonState) (setPassword bool, err error), ev func(workspace string, m Member) audit.Event) (Member, error)
	// UpdateMember loads a member of the workspace (404 when absent), lets
	// apply change its role, and stores it when apply returns true.
	// otherOwners counts the workspace's other active owners.
	UpdateMember(ctx context.Context, workspace, id string, apply func(m *Member, otherOwners func() (int, error)) (bool, error), ev func(Member) audit.Event) (Member, error)
	// RemoveMember loads a member of the workspace (404 when absent), lets
	// check refuse, then revokes the member's keys at revokedAt and deletes
	// the member, which ends their sessions. otherOwners is as for
	// UpdateMember.
	RemoveMember(ctx context.Context, workspace, id string, revokedAt time.Time, check func(m Member, otherOwners func() (int, error)) error, ev func(Member) audit.Event) error

	// SignInCandidates returns the active members with e-mail email, in
	// workspace only when it is not empty.
	SignInCandidates(ctx context.Context, email, workspace string) ([]SignInCandidate, error)
	// ClaimTOTPStep records step as the last TOTP step a member signed in
	// with, only if it is later than the recorded one: false means the code
	// was already used (a replay, or a concurrent sign-in with the same code).
	ClaimTOTPStep(ctx context.Context, member string, step int64) (bool, error)
	// CreateSession stores a session, sweeps sessions expired before
	// r.CreatedAt, and returns the session's member.
	CreateSession(ctx context.Context, r SessionRecord, ev func(Member) audit.Event) (Member, error)
	// Session returns the session whose token hashes to tokenHash, with its
	// member's current role and status, or store.ErrNotFound.
	Session(ctx context.Context, tokenHash []byte) (SessionCredential, error)
	// DeleteSession ends the session whose token hashes to tokenHash, if any.
	DeleteSession(ctx context.Context, tokenHash []byte) error
	// PasswordHash returns a member's password hash ("" when none is set).
	PasswordHash(ctx context.Context, member string) (string, error)
	// SetPassword stores a member's new password hash, set at at, and ends
	// the member's sessions except the one whose token hash is keep.
	SetPassword(ctx context.Context, member, hash string, at time.Time, keep []byte, ev audit.Event) error
	// TOTPStatus returns a member's e-mail and whether two-factor is on.
	TOTPStatus(ctx context.Context, member string) (email string, enabled bool, err error)
	// SetTOTPSecret stores a member's new TOTP secret, only while two-factor
	// is off: false means it was turned on meanwhile and nothing changed.
	SetTOTPSecret(ctx context.Context, member, secret string) (bool, error)
	// UpdateTOTP loads a member's two-factor state, lets apply change it, and
	// stores it.
	UpdateTOTP(ctx context.Context, member string, apply func(t *TOTP) error, ev audit.Event) error

	// CreateEmailVerification stores a verification token, replacing the
	// member's earlier ones and sweeping expired ones.
	CreateEmailVerification(ctx context.Context, v EmailVerification, ev audit.Event) error
	// VerifyEmail finds the verification whose token hashes to tokenHash
	// (store.ErrNotFound when none), lets check refuse it given the member's
	// current e-mail, then marks the member's e-mail verified and deletes
	// every token of the member. ev receives the member's workspace.
	VerifyEmail(ctx context.Context, tokenHash []byte, check func(v EmailVerification, currentEmail string) error, ev func(workspace string, m Member) audit.Event) (Member, error)
	// CreatePasswordReset stores a reset token for the person whose e-mail
	// is r.Email (store.ErrNotFound when none), replacing their earlier
	// ones and dropping expired ones.
	CreatePasswordReset(ctx context.Context, r PasswordReset) error
	// ResetPassword finds the reset whose token hashes to tokenHash
	// (store.ErrNotFound when none) and, once check accepts it given the
	// person's current e-mail, sets the password, marks the e-mail
	// verified (lifting signed-up workspaces' wait for it), removes the
	// second factor when the e-mail was not verified before, ends every
	// session of the person and deletes their reset tokens; one audit
	// event per workspace of theirs. It returns the e-mail.
	ResetPassword(ctx context.Context, tokenHash []byte, hash string, at time.Time, check func(r PasswordReset, currentEmail string) error, ev func(workspace, member, email string) audit.Event) (string, error)
	// OwnerEmailVerified reports whether an active owner of the workspace
	// has a verified e-mail.
	OwnerEmailVerified(ctx context.Context, workspace string) (bool, error)

	// PersonOfMember returns the person of member, or store.ErrNotFound.
	PersonOfMember(ctx context.Context, member string) (Person, error)
	// Memberships lists the active memberships of member's person, oldest
	// first.
	Memberships(ctx context.Context, member string) ([]Membership, error)
	// CreateWorkspace stores person (when not nil), workspace w and its
	// owner, once check accepts how many workspaces owner's person owns.
	CreateWorkspace(ctx context.Context, w Workspace, person *Person, owner MemberRecord, check func(owned int) error, ev audit.Event) error
	// SwitchSession moves the session whose token hashes to tokenHash to
	// its person's active member of workspace (404 when there is none)
	// and returns that member.
	SwitchSession(ctx context.Context, tokenHash []byte, workspace string, ev func(Member) audit.Event) (Member, error)
	// SwapPlanTx sets a workspace's plan inside tx (another area's
	// transaction), records ev there, and returns the plan it replaced.
	SwapPlanTx(ctx context.Context, tx *sql.Tx, workspace string, plan plans.Name, ev audit.Event) (plans.Name, error)
	// RemoveMembers loads a member of the workspace (404 when absent), lets
	// check refuse, moves the member's sessions to their person's oldest
	// other workspace (or ends them), revokes their keys at at and deletes
	// the member. It returns where the session hashing to caller acts now.
	RemoveMembers(ctx context.Context, workspace, member string, at time.Time, check func(m Member, otherOwners func() (int, error)) error, ev audit.Event, caller []byte) (string, error)
	// DeleteWorkspace marks the workspace deleted, moves its sessions as
	// RemoveMembers does, revokes its keys and deletes its members.
	DeleteWorkspace(ctx context.Context, workspace string, at time.Time, caller []byte, ev audit.Event) (string, error)
	// WorkspacesNamed returns the ids of the workspaces called name.
	WorkspacesNamed(ctx context.Context, name string) ([]string, error)

	// Close releases what the store holds (prepared statements).
	Close() error
}

// SQLStore is Store on the metadata database. NewSQLStore makes one. Its
// methods are grouped by what they store: workspace_store.go,
// members_store.go, keys_store.go, sessions_store.go, people_store.go
// (a person and their password and two-factor state), email_store.go and
// leave_store.go (leaving and deleting workspaces).
type SQLStore struct {
	db        *store.DB
	audit     *audit.Log
	keyByHash *sql.Stmt
}

var _ Store = (*SQLStore)(nil)

// NewSQLStore returns the accounts store over db, recording audit rows in
// log. It prepares the key look-up once; Close releases it.
func NewSQLStore(ctx context.Context, db *store.DB, log *audit.Log) (*SQLStore, error) {
	stmt, err := db.PrepareContext(ctx, keyByHashSQL)
	if err != nil {
		return nil, fmt.Errorf("accounts: prepare: %w", err)
	}
	return &SQLStore{db: db, audit: log, keyByHash: stmt}, nil
}

// Close implements Store.
func (s *SQLStore) Close() error { return s.keyByHash.Close() }

func optTime(s string) *time.Time {
	if s == "" {
		return nil
	}
	t := store.ParseTime(s)
	return &t
}

func optTimeString(t *time.Time) string {
	if t == nil {
		return ""
	}
	return store.FormatTime(*t)
}
