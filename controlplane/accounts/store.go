package accounts

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
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

// FirstWorkspace is what CreateFirstWorkspace stores.
type FirstWorkspace struct {
	Workspace Workspace
	Person    Person
	Owner     MemberRecord
	Key       KeyRecord
}

// KeyRecord is a new key as stored.
type KeyRecord struct {
	Key
	// WorkspaceID owns the key.
	WorkspaceID string
	// SecretHash is auth.HashSecret of the key; the secret itself is never stored.
	SecretHash []byte
}

// KeyCredential is what authenticating an API key needs.
type KeyCredential struct {
	ID          string
	WorkspaceID string
	MemberID    string
	Prefix      string
	SecretHash  []byte
	// Access is full or read_only.
	Access    string
	ProjectID string
	// ExpiresAt is nil for a key that never expires.
	ExpiresAt *time.Time
	// RevokedAt is nil for a key in force.
	RevokedAt *time.Time
	// Role is the member's current role.
	Role auth.Role
	// Pending is set while the workspace waits for its owner's e-mail
	// verification.
	Pending bool
}

// MemberRecord is a new member as stored, with their invitation.
type MemberRecord struct {
	// Member gives id, e-mail, name, role, status and creation time.
	Member
	// WorkspaceID owns the member.
	WorkspaceID string
	// InviteHash is auth.HashSecret of the invitation or setup token.
	InviteHash []byte
	// InviteExpires ends the invitation.
	InviteExpires time.Time
	// PersonID is the member's person ("" while invited).
	PersonID string
}

// Acceptance is a redeemed invitation.
type Acceptance struct {
	// InviteHash is auth.HashSecret of the presented token.
	InviteHash []byte
	// PasswordHash is the member's new password hash.
	PasswordHash string
	// Name replaces the member's name when not empty.
	Name string
	// At is when the password was set.
	At time.Time
}

// PersonState is what accepting an invitation knows of the person it joins.
type PersonState struct {
	// Exists is false when accepting makes a new person.
	Exists bool
	// Own is true when the member already belongs to the person (the
	// owner's setup token).
	Own bool
	// PasswordHash is the person's password hash ("" when none is set).
	PasswordHash string
}

// TOTP is a member's two-factor state.
type TOTP struct {
	// Secret is the enrolled secret ("" when none).
	Secret string
	// Enabled tells whether sign-ins need a code.
	Enabled bool
	// LastStep is the last step accepted; earlier and equal steps are replays.
	LastStep int64
}

// SignInCandidate is an active member a sign-in may be for.
type SignInCandidate struct {
	MemberID     string
	WorkspaceID  string
	PasswordHash string
	TOTP         TOTP
}

// SessionRecord is a new dashboard session as stored.
type SessionRecord struct {
	ID string
	// TokenHash and CSRFHash are auth.HashSecret of the two tokens.
	TokenHash    []byte
	CSRFHash     []byte
	MemberID     string
	WorkspaceID  string
	SecondFactor bool
	CreatedAt    time.Time
	ExpiresAt    time.Time
}

// SessionCredential is what authenticating a dashboard session needs.
type SessionCredential struct {
	MemberID     string
	WorkspaceID  string
	SecondFactor bool
	CSRFHash     []byte
	ExpiresAt    time.Time
	// Role and Status are the member's current ones.
	Role   auth.Role
	Status string
	// Pending is set while the workspace waits for its owner's e-mail
	// verification.
	Pending bool
}

// SQLStore is Store on the metadata database. NewSQLStore makes one.
type SQLStore struct {
	db        *store.DB
	audit     *audit.Log
	keyByHash *sql.Stmt
}

var _ Store = (*SQLStore)(nil)

// keyByHashSQL finds a key and its member's current role; prepared once,
// since every API request runs it.
const keyByHashSQL = `SELECT k.id, k.workspace_id, k.member_id, k.public_id, k.secret_hash, k.access, k.project_id,
		k.expires_at, k.revoked_at, m.role, w.verification_required
	FROM api_keys k JOIN members m ON m.id = k.member_id JOIN workspaces w ON w.id = k.workspace_id WHERE k.secret_hash = ?`

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

// Workspace implements Store.
func (s *SQLStore) Workspace(ctx context.Context, id string) (Workspace, error) {
	var w Workspace
	var created, plan string
	err := s.db.QueryRowContext(ctx, `SELECT id, name, plan, created_at,
			EXISTS (SELECT 1 FROM members m JOIN people p ON p.id = m.person_id
				WHERE m.workspace_id = workspaces.id AND m.role = 'owner' AND m.status = 'active' AND p.email_verified = 1),
			verification_required
		FROM workspaces WHERE id = ? AND deleted_at = ''`, id).
		Scan(&w.ID, &w.Name, &plan, &created, &w.OwnerEmailVerified, &w.VerificationRequired)
	if errors.Is(err, sql.ErrNoRows) {
		return w, api.NotFound("workspace")
	}
	if err != nil {
		return w, fmt.Errorf("accounts: workspace: %w", err)
	}
	w.Plan, w.CreatedAt = plans.Name(plan), store.ParseTime(created)
	return w, nil
}

// SetPlan implements Store.
func (s *SQLStore) SetPlan(ctx context.Context, id string, plan plans.Name, ev audit.Event) error {
	return s.db.Tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE workspaces SET plan = ? WHERE id = ?`, string(plan), id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return api.NotFound("workspace")
		}
		if err := s.db.Notifier().Notify(ctx, tx, PlanChannel, id); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, ev)
	})
}

// CreateFirstWorkspace implements Store.
func (s *SQLStore) CreateFirstWorkspace(ctx context.Context, first func() FirstWorkspace, ev func(FirstWorkspace) audit.Event) (bool, error) {
	created := false
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM workspaces`).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		f := first()
		if _, err := tx.ExecContext(ctx, `INSERT INTO workspaces(id, name, plan, created_at) VALUES (?,?,?,?)`,
			f.Workspace.ID, f.Workspace.Name, string(f.Workspace.Plan), store.FormatTime(f.Workspace.CreatedAt)); err != nil {
			return err
		}
		if err := insertPerson(ctx, tx, f.Person); err != nil {
			return err
		}
		if err := insertMember(ctx, tx, f.Owner); err != nil {
			return err
		}
		if err := insertKey(ctx, tx, f.Key); err != nil {
			return err
		}
		if err := s.audit.Record(ctx, tx, ev(f)); err != nil {
			return err
		}
		created = true
		return nil
	})
	return created && err == nil, err
}

// KeyByHash implements Store.
func (s *SQLStore) KeyByHash(ctx context.Context, hash []byte) (KeyCredential, error) {
	var c KeyCredential
	var expires, revoked, role string
	err := s.keyByHash.QueryRowContext(ctx, hash).
		Scan(&c.ID, &c.WorkspaceID, &c.MemberID, &c.Prefix, &c.SecretHash, &c.Access, &c.ProjectID, &expires, &revoked, &role, &c.Pending)
	if errors.Is(err, sql.ErrNoRows) {
		return KeyCredential{}, store.ErrNotFound
	}
	if err != nil {
		return KeyCredential{}, err
	}
	c.ExpiresAt, c.RevokedAt = optTime(expires), optTime(revoked)
	c.Role, _ = auth.ParseRole(role)
	return c, nil
}

// TouchKey implements Store.
func (s *SQLStore) TouchKey(ctx context.Context, id string, at time.Time) error {
	_, err := s.db.ExecContext(ctx, `UPDATE api_keys SET last_used_at = ? WHERE id = ?`, store.FormatTime(at), id)
	return err
}

const keyCols = `id, name, public_id, access, project_id, member_id, created_at, expires_at, last_used_at, revoked_at`

func scanKey(sc interface{ Scan(...any) error }) (Key, error) {
	var k Key
	var created, expires, used, revoked string
	if err := sc.Scan(&k.ID, &k.Name, &k.Prefix, &k.Access, &k.ProjectID, &k.MemberID, &created, &expires, &used, &revoked); err != nil {
		return Key{}, err
	}
	k.CreatedAt, k.ExpiresAt, k.LastUsedAt, k.RevokedAt = store.ParseTime(created), optTime(expires), optTime(used), optTime(revoked)
	k.Kind = kindOf(k.Access, k.ProjectID)
	return k, nil
}

func insertKey(ctx context.Context, tx *sql.Tx, k KeyRecord) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO api_keys(id, workspace_id, member_id, name, public_id, secret_hash, access, project_id, created_at, expires_at)
		VALUES (?,?,?,?,?,?,?,?,?,?)`, k.ID, k.WorkspaceID, k.MemberID, k.Name, k.Prefix, k.SecretHash, k.Access, k.ProjectID,
		store.FormatTime(k.CreatedAt), optTimeString(k.ExpiresAt))
	return err
}

// Keys implements Store.
func (s *SQLStore) Keys(ctx context.Context, workspace string, member *string) ([]Key, error) {
	q := `SELECT ` + keyCols + ` FROM api_keys WHERE workspace_id = ? AND ephemeral = 0`
	args := []any{workspace}
	if member != nil {
		q += ` AND member_id = ?`
		args = append(args, *member)
	}
	rows, err := s.db.QueryContext(ctx, q+` ORDER BY created_at DESC`, args...)
	if err != nil {
		return nil, fmt.Errorf("accounts: list keys: %w", err)
	}
	defer rows.Close()
	keys := []Key{}
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, fmt.Errorf("accounts: list keys: %w", err)
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}

// CreateKey implements Store.
func (s *SQLStore) CreateKey(ctx context.Context, k KeyRecord, check func(workspaceActive, memberActive int) error, ev audit.Event) error {
	return s.db.Tx(ctx, func(tx *sql.Tx) error {
		var ws, member int
		if err := tx.QueryRowContext(ctx, `SELECT count(*), count(CASE WHEN member_id = ? AND ephemeral = 0 THEN 1 END)
			FROM api_keys WHERE workspace_id = ? AND revoked_at = ''`, k.MemberID, k.WorkspaceID).Scan(&ws, &member); err != nil {
			return err
		}
		if err := check(ws, member); err != nil {
			return err
		}
		if err := insertKey(ctx, tx, k); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, ev)
	})
}

// RevokeKey implements Store.
func (s *SQLStore) RevokeKey(ctx context.Context, workspace, id string, apply func(*Key) (bool, error), ev func(Key) audit.Event) (Key, error) {
	var k Key
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		var err error
		k, err = scanKey(tx.QueryRowContext(ctx, `SELECT `+keyCols+` FROM api_keys WHERE id = ? AND workspace_id = ? AND ephemeral = 0`, id, workspace))
		if errors.Is(err, sql.ErrNoRows) {
			return api.NotFound("key")
		}
		if err != nil {
			return err
		}
		revoke, err := apply(&k)
		if err != nil || !revoke {
			return err
		}
		if k.RevokedAt == nil {
			return fmt.Errorf("accounts: revoke key %s: no revocation time", id)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE api_keys SET revoked_at = ? WHERE id = ?`, store.FormatTime(*k.RevokedAt), id); err != nil {
			return err
		}
		if err := notifyKeys(ctx, s.db, tx, invKey+id); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, ev(k))
	})
	return k, err
}

// ResetMemberKeys implements Store.
func (s *SQLStore) ResetMemberKeys(ctx context.Context, k KeyRecord, revoke bool, check func(Member, int, int) error, ev func(Member, []string) audit.Event) ([]string, error) {
	var revoked []string
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		revoked = nil
		m, err := scanMember(tx.QueryRowContext(ctx, `SELECT `+memberCols+memberFrom+` WHERE m.workspace_id = ? AND m.id = ?`, k.WorkspaceID, k.MemberID))
		if errors.Is(err, sql.ErrNoRows) {
			return api.NotFound("member")
		}
		if err != nil {
			return err
		}
		if revoke {
			rows, err := tx.QueryContext(ctx, `SELECT id FROM api_keys WHERE member_id = ? AND revoked_at = '' ORDER BY created_at, id`, m.ID)
			if err != nil {
				return err
			}
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return err
				}
				revoked = append(revoked, id)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `UPDATE api_keys SET revoked_at = ? WHERE member_id = ? AND revoked_at = ''`,
				store.FormatTime(k.CreatedAt), m.ID); err != nil {
				return err
			}
		}
		var ws, member int
		if err := tx.QueryRowContext(ctx, `SELECT count(*), count(CASE WHEN member_id = ? AND ephemeral = 0 THEN 1 END)
			FROM api_keys WHERE workspace_id = ? AND revoked_at = ''`, m.ID, k.WorkspaceID).Scan(&ws, &member); err != nil {
			return err
		}
		if err := check(m, ws, member); err != nil {
			return err
		}
		if err := insertKey(ctx, tx, k); err != nil {
			return err
		}
		if err := notifyKeys(ctx, s.db, tx, invMember+m.ID); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, ev(m, revoked))
	})
	return revoked, err
}

// memberCols are a member's columns, selected FROM memberFrom: the
// credentials' state is the person's (none while invited).
const memberCols = `m.id, m.email, m.name, m.role, m.status, coalesce(p.totp_enabled, 0), coalesce(p.email_verified, 0),
	coalesce(p.password_hash, '') <> '', m.created_at`

// memberFrom joins each member to their person.
const memberFrom = ` FROM members m LEFT JOIN people p ON p.id = m.person_id`

// personOf selects the person of member ?.
const personOf = `(SELECT person_id FROM members WHERE id = ?)`

func scanMember(sc interface{ Scan(...any) error }) (Member, error) {
	var m Member
	var role, created string
	err := sc.Scan(&m.ID, &m.Email, &m.Name, &role, &m.Status, &m.TwoFactor, &m.EmailVerified, &m.HasPassword, &created)
	if err != nil {
		return m, err
	}
	m.Role, _ = auth.ParseRole(role)
	m.CreatedAt = store.ParseTime(created)
	return m, nil
}

func insertMember(ctx context.Context, tx *sql.Tx, m MemberRecord) error {
	if m.InviteHash == nil {
		m.InviteHash = []byte{}
	}
	expires := ""
	if !m.InviteExpires.IsZero() {
		expires = store.FormatTime(m.InviteExpires)
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO members(id, workspace_id, email, name, role, status, invite_hash, invite_expires, created_at, person_id)
		VALUES (?,?,?,?,?,?,?,?,?,?)`, m.ID, m.WorkspaceID, m.Email, m.Name, m.Role.String(), m.Status,
		m.InviteHash, expires, store.FormatTime(m.CreatedAt), m.PersonID)
	return err
}

// otherOwners counts, inside tx, the workspace's active owners other than member.
func otherOwners(ctx context.Context, tx *sql.Tx, workspace, member string) func() (int, error) {
	return func() (int, error) {
		var n int
		err := tx.QueryRowContext(ctx, `SELECT count(*) FROM members WHERE workspace_id = ? AND role = 'owner' AND status = 'active' AND id <> ?`,
			workspace, member).Scan(&n)
		return n, err
	}
}

// Members implements Store.
func (s *SQLStore) Members(ctx context.Context, workspace string) ([]Member, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+memberCols+memberFrom+` WHERE m.workspace_id = ? ORDER BY m.created_at`, workspace)
	if err != nil {
		return nil, fmt.Errorf("accounts: members: %w", err)
	}
	defer rows.Close()
	out := []Member{}
	for rows.Next() {
		m, err := scanMember(rows)
		if err != nil {
			return nil, fmt.Errorf("accounts: members: %w", err)
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// Member implements Store.
func (s *SQLStore) Member(ctx context.Context, workspace, id string) (Member, error) {
	m, err := scanMember(s.db.QueryRowContext(ctx, `SELECT `+memberCols+memberFrom+` WHERE m.workspace_id = ? AND m.id = ?`, workspace, id))
	if errors.Is(err, sql.ErrNoRows) {
		return m, api.NotFound("member")
	}
	return m, err
}

// CreateMember implements Store.
func (s *SQLStore) CreateMember(ctx context.Context, m MemberRecord, ev audit.Event) error {
	return s.db.Tx(ctx, func(tx *sql.Tx) error {
		err := insertMember(ctx, tx, m)
		if store.IsUniqueViolation(err) {
			return api.Conflict("member_exists", "%s is already a member or invited", m.Email)
		}
		if err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, ev)
	})
}

// AcceptInvitation implements Store.
func (s *SQLStore) AcceptInvitation(ctx context.Context, a Acceptance, check func(time.Time, PersonState) (bool, error), ev func(string, Member) audit.Event) (Member, error) {
	var m Member
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		var id, ws, expires, email, personID string
		err := tx.QueryRowContext(ctx, `SELECT id, workspace_id, invite_expires, email, person_id FROM members WHERE invite_hash = ?`, a.InviteHash).
			Scan(&id, &ws, &expires, &email, &personID)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		// The person: the member's own (the owner's setup token), or the
		// one with the invitation's e-mail, or a new one.
		var existingHash string
		own := personID != ""
		q := `SELECT id, password_hash FROM people WHERE id = ?`
		arg := personID
		if personID == "" {
			q, arg = `SELECT id, password_hash FROM people WHERE email = ?`, strings.ToLower(email)
		}
		err = tx.QueryRowContext(ctx, q, arg).Scan(&personID, &existingHash)
		exists := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		setPassword, err := check(store.ParseTime(expires), PersonState{Exists: exists, Own: own, PasswordHash: existingHash})
		if err != nil {
			return err
		}
		if !exists {
			personID = "per_" + strings.TrimPrefix(id, "mem_")
			if err := insertPerson(ctx, tx, Person{ID: personID, Email: strings.ToLower(email), Name: a.Name, CreatedAt: a.At}); err != nil {
				return err
			}
		}
		if setPassword {
			if _, err := tx.ExecContext(ctx, `UPDATE people SET password_hash = ?, password_set_at = ? WHERE id = ?`,
				a.PasswordHash, store.FormatTime(a.At), personID); err != nil {
				return err
			}
		}
		set := `UPDATE members SET status = 'active', person_id = ?, invite_hash = '', invite_expires = ''`
		args := []any{personID}
		if a.Name != "" {
			set += `, name = ?`
			args = append(args, a.Name)
		}
		if _, err := tx.ExecContext(ctx, set+` WHERE id = ?`, append(args, id)...); err != nil {
			if store.IsUniqueViolation(err) {
				return api.Conflict("member_exists", "%s is already a member of this workspace", email)
			}
			return err
		}
		if m, err = scanMember(tx.QueryRowContext(ctx, `SELECT `+memberCols+memberFrom+` WHERE m.id = ?`, id)); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, ev(ws, m))
	})
	return m, err
}

// UpdateMember implements Store.
func (s *SQLStore) UpdateMember(ctx context.Context, workspace, id string, apply func(*Member, func() (int, error)) (bool, error), ev func(Member) audit.Event) (Member, error) {
	var m Member
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		var err error
		m, err = scanMember(tx.QueryRowContext(ctx, `SELECT `+memberCols+memberFrom+` WHERE m.workspace_id = ? AND m.id = ?`, workspace, id))
		if errors.Is(err, sql.ErrNoRows) {
			return api.NotFound("member")
		}
		if err != nil {
			return err
		}
		changed, err := apply(&m, otherOwners(ctx, tx, workspace, id))
		if err != nil || !changed {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE members SET role = ? WHERE id = ?`, m.Role.String(), id); err != nil {
			return err
		}
		if err := notifyKeys(ctx, s.db, tx, invMember+id); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, ev(m))
	})
	return m, err
}

// RemoveMember implements Store.
func (s *SQLStore) RemoveMember(ctx context.Context, workspace, id string, revokedAt time.Time, check func(Member, func() (int, error)) error, ev func(Member) audit.Event) error {
	return s.db.Tx(ctx, func(tx *sql.Tx) error {
		m, err := scanMember(tx.QueryRowContext(ctx, `SELECT `+memberCols+memberFrom+` WHERE m.workspace_id = ? AND m.id = ?`, workspace, id))
		if errors.Is(err, sql.ErrNoRows) {
			return api.NotFound("member")
		}
		if err != nil {
			return err
		}
		if err := check(m, otherOwners(ctx, tx, workspace, id)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE api_keys SET revoked_at = ? WHERE member_id = ? AND revoked_at = ''`, store.FormatTime(revokedAt), id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM members WHERE id = ?`, id); err != nil {
			return err
		}
		if err := notifyKeys(ctx, s.db, tx, invMember+id); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, ev(m))
	})
}

// SignInCandidates implements Store: the person with e-mail email and
// their active membership in workspace, or their oldest active one when
// workspace is empty.
func (s *SQLStore) SignInCandidates(ctx context.Context, email, workspace string) ([]SignInCandidate, error) {
	q := `SELECT m.id, m.workspace_id, p.password_hash, p.totp_secret, p.totp_enabled, p.totp_last_step
		FROM people p JOIN members m ON m.person_id = p.id AND m.status = 'active' WHERE p.email = ?`
	args := []any{email}
	if workspace != "" {
		q += ` AND m.workspace_id = ?`
		args = append(args, workspace)
	}
	rows, err := s.db.QueryContext(ctx, q+` ORDER BY m.created_at, m.id LIMIT 1`, args...)
	if err != nil {
		return nil, fmt.Errorf("accounts: sign in: %w", err)
	}
	defer rows.Close()
	var out []SignInCandidate
	for rows.Next() {
		var c SignInCandidate
		if err := rows.Scan(&c.MemberID, &c.WorkspaceID, &c.PasswordHash, &c.TOTP.Secret, &c.TOTP.Enabled, &c.TOTP.LastStep); err != nil {
			return nil, fmt.Errorf("accounts: sign in: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("accounts: sign in: %w", err)
	}
	return out, nil
}

// ClaimTOTPStep implements Store.
func (s *SQLStore) ClaimTOTPStep(ctx context.Context, member string, step int64) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE people SET totp_last_step = ? WHERE id = `+personOf+` AND totp_last_step < ?`, step, member, step)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// CreateSession implements Store.
func (s *SQLStore) CreateSession(ctx context.Context, r SessionRecord, ev func(Member) audit.Event) (Member, error) {
	var m Member
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO sessions(id, token_hash, csrf_hash, member_id, workspace_id, second_factor, created_at, expires_at)
			VALUES (?,?,?,?,?,?,?,?)`, r.ID, r.TokenHash, r.CSRFHash, r.MemberID, r.WorkspaceID, r.SecondFactor,
			store.FormatTime(r.CreatedAt), store.FormatTime(r.ExpiresAt)); err != nil {
			return err
		}
		// Expired sessions are swept on the way.
		if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE expires_at < ?`, store.FormatTime(r.CreatedAt)); err != nil {
			return err
		}
		var err error
		if m, err = scanMember(tx.QueryRowContext(ctx, `SELECT `+memberCols+memberFrom+` WHERE m.id = ?`, r.MemberID)); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, ev(m))
	})
	return m, err
}

// Session implements Store.
func (s *SQLStore) Session(ctx context.Context, tokenHash []byte) (SessionCredential, error) {
	var c SessionCredential
	var expires, role string
	err := s.db.QueryRowContext(ctx, `SELECT s.member_id, s.workspace_id, s.second_factor, s.csrf_hash, s.expires_at, m.role, m.status,
			w.verification_required
		FROM sessions s JOIN members m ON m.id = s.member_id JOIN workspaces w ON w.id = s.workspace_id WHERE s.token_hash = ?`, tokenHash).
		Scan(&c.MemberID, &c.WorkspaceID, &c.SecondFactor, &c.CSRFHash, &expires, &role, &c.Status, &c.Pending)
	if errors.Is(err, sql.ErrNoRows) {
		return SessionCredential{}, store.ErrNotFound
	}
	if err != nil {
		return SessionCredential{}, err
	}
	c.ExpiresAt = store.ParseTime(expires)
	c.Role, _ = auth.ParseRole(role)
	return c, nil
}

// DeleteSession implements Store.
func (s *SQLStore) DeleteSession(ctx context.Context, tokenHash []byte) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM sessions WHERE token_hash = ?`, tokenHash)
	return err
}

// PasswordHash implements Store.
func (s *SQLStore) PasswordHash(ctx context.Context, member string) (string, error) {
	var hash string
	err := s.db.QueryRowContext(ctx, `SELECT p.password_hash FROM members m JOIN people p ON p.id = m.person_id WHERE m.id = ?`, member).Scan(&hash)
	if errors.Is(err, sql.ErrNoRows) {
		return "", store.ErrNotFound
	}
	return hash, err
}

// SetPassword implements Store.
func (s *SQLStore) SetPassword(ctx context.Context, member, hash string, at time.Time, keep []byte, ev audit.Event) error {
	return s.db.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE people SET password_hash = ?, password_set_at = ? WHERE id = `+personOf, hash, store.FormatTime(at), member); err != nil {
			return err
		}
		// Every session of the person ends, in whichever workspace it acts.
		if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE member_id IN (SELECT id FROM members WHERE person_id = `+personOf+`)
			AND token_hash <> ?`, member, keep); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, ev)
	})
}

// TOTPStatus implements Store.
func (s *SQLStore) TOTPStatus(ctx context.Context, member string) (string, bool, error) {
	var email string
	var enabled bool
	err := s.db.QueryRowContext(ctx, `SELECT p.email, p.totp_enabled FROM members m JOIN people p ON p.id = m.person_id WHERE m.id = ?`, member).Scan(&email, &enabled)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, store.ErrNotFound
	}
	return email, enabled, err
}

// SetTOTPSecret implements Store.
func (s *SQLStore) SetTOTPSecret(ctx context.Context, member, secret string) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE people SET totp_secret = ? WHERE id = `+personOf+` AND totp_enabled = 0`, secret, member)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// UpdateTOTP implements Store.
func (s *SQLStore) UpdateTOTP(ctx context.Context, member string, apply func(*TOTP) error, ev audit.Event) error {
	return s.db.Tx(ctx, func(tx *sql.Tx) error {
		var t TOTP
		err := tx.QueryRowContext(ctx, `SELECT p.totp_secret, p.totp_enabled, p.totp_last_step FROM members m JOIN people p ON p.id = m.person_id WHERE m.id = ?`, member).
			Scan(&t.Secret, &t.Enabled, &t.LastStep)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		if err := apply(&t); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE people SET totp_enabled = ?, totp_secret = ?, totp_last_step = ? WHERE id = `+personOf,
			t.Enabled, t.Secret, t.LastStep, member); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, ev)
	})
}
