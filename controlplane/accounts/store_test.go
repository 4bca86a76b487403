package accounts_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

var t0 = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)

// first is the workspace newSQLStore bootstraps: an owner with a setup
// token and a full-access key.
var first = accounts.FirstWorkspace{
	Workspace: accounts.Workspace{ID: "ws_1", Name: "Test", Plan: plans.Pro, CreatedAt: t0},
	Person:    accounts.Person{ID: "per_owner", Email: "owner@example.com", CreatedAt: t0},
	Owner: accounts.MemberRecord{WorkspaceID: "ws_1", InviteHash: auth.HashSecret("setup"), InviteExpires: t0.Add(time.Hour), PersonID: "per_owner",
		Member: accounts.Member{ID: "mem_owner", Email: "owner@example.com", Name: "Owner", Role: auth.Owner, Status: "active", CreatedAt: t0}},
	Key: accounts.KeyRecord{WorkspaceID: "ws_1", SecretHash: auth.HashSecret("owner secret"),
		Key: accounts.Key{ID: "key_owner", Name: "owner", Prefix: "svc_owner", Access: "full", MemberID: "mem_owner", CreatedAt: t0}},
}

func TestMain(m *testing.M) { pgtest.Main(m) }

// eachEngine runs test once on SQLite and once on PostgreSQL.
func eachEngine(t *testing.T, test func(t *testing.T, e pgtest.Engine)) {
	for _, e := range pgtest.Engines() {
		t.Run(e.Name, func(t *testing.T) { test(t, e) })
	}
}

func newSQLStore(t *testing.T, e pgtest.Engine) (*accounts.SQLStore, *store.DB) {
	t.Helper()
	ctx := context.Background()
	db := e.Open(t)
	st, err := accounts.NewSQLStore(ctx, db, audit.New(db, clock.NewFake(t0)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	created, err := st.CreateFirstWorkspace(ctx, func() accounts.FirstWorkspace { return first }, event[accounts.FirstWorkspace]("workspace.create"))
	if err != nil || !created {
		t.Fatalf("bootstrap: %v %v", created, err)
	}
	return st, db
}

func event[T any](action string) func(T) audit.Event {
	return func(T) audit.Event {
		return audit.Event{Workspace: "ws_1", Action: action, Category: audit.CategoryAccount}
	}
}

// dump renders every row of the accounts tables and the audit log.
func dump(t *testing.T, db *store.DB) string {
	t.Helper()
	var b strings.Builder
	for _, table := range []string{"workspaces", "members", "api_keys", "sessions", "audit_log"} {
		rows, err := db.Query(`SELECT * FROM ` + table + ` ORDER BY 1`) // the primary key
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(&b, table, vals)
		}
		rows.Close()
	}
	return b.String()
}

func TestSQLStoreRefusalStoresNothing(t *testing.T) { eachEngine(t, testSQLStoreRefusalStoresNothing) }

func testSQLStoreRefusalStoresNothing(t *testing.T, eng pgtest.Engine) {
	ctx := context.Background()
	errRefused := errors.New("refused")
	for _, tc := range []struct {
		name string
		run  func(st *accounts.SQLStore) error
	}{
		{"key limit", func(st *accounts.SQLStore) error {
			k := accounts.KeyRecord{WorkspaceID: "ws_1", SecretHash: auth.HashSecret("k2"),
				Key: accounts.Key{ID: "key_2", Name: "k2", Prefix: "svc_k2", Access: "full", MemberID: "mem_owner", CreatedAt: t0}}
			return st.CreateKey(ctx, k, func(active, member int) error {
				if active != 1 || member != 1 {
					return fmt.Errorf("active = %d, member %d, want 1, 1", active, member)
				}
				return errRefused
			}, audit.Event{Workspace: "ws_1", Action: "key.create"})
		}},
		{"revoke refused", func(st *accounts.SQLStore) error {
			_, err := st.RevokeKey(ctx, "ws_1", "key_owner", func(k *accounts.Key) (bool, error) {
				now := t0
				k.RevokedAt = &now
				return true, errRefused
			}, event[accounts.Key]("key.revoke"))
			return err
		}},
		{"owner key reset refused", func(st *accounts.SQLStore) error {
			k := accounts.KeyRecord{WorkspaceID: "ws_1", SecretHash: auth.HashSecret("k3"),
				Key: accounts.Key{ID: "key_3", Name: "k3", Prefix: "svc_k3", Access: "full", MemberID: "mem_owner", CreatedAt: t0}}
			_, err := st.ResetMemberKeys(ctx, k, true, func(m accounts.Member, active, member int) error {
				if m.ID != "mem_owner" || active != 0 || member != 0 { // counted after the revocation
					return fmt.Errorf("member %s, active = %d, member %d; want mem_owner, 0, 0", m.ID, active, member)
				}
				return errRefused
			}, func(accounts.Member, []string) audit.Event {
				return audit.Event{Workspace: "ws_1", Action: "key.owner_reset"}
			})
			return err
		}},
		{"invitation expired", func(st *accounts.SQLStore) error {
			_, err := st.AcceptInvitation(ctx, accounts.Acceptance{InviteHash: auth.HashSecret("setup"), PasswordHash: "h", Name: "New", At: t0},
				func(expires time.Time, person accounts.PersonState) (bool, error) {
					if !expires.Equal(t0.Add(time.Hour)) || !person.Exists || !person.Own {
						return false, fmt.Errorf("expires = %v, person %+v; want the owner's own person", expires, person)
					}
					return false, errRefused
				}, func(string, accounts.Member) audit.Event { return audit.Event{Action: "member.accept"} })
			return err
		}},
		{"last owner demoted", func(st *accounts.SQLStore) error {
			_, err := st.UpdateMember(ctx, "ws_1", "mem_owner", func(m *accounts.Member, otherOwners func() (int, error)) (bool, error) {
				m.Role = auth.Admin
				if n, err := otherOwners(); err != nil || n != 0 {
					return false, fmt.Errorf("other owners = %d, %v; want 0", n, err)
				}
				return true, errRefused
			}, event[accounts.Member]("member.role"))
			return err
		}},
		{"last owner removed", func(st *accounts.SQLStore) error {
			return st.RemoveMember(ctx, "ws_1", "mem_owner", t0, func(m accounts.Member, otherOwners func() (int, error)) error {
				if m.Role != auth.Owner {
					return fmt.Errorf("role = %v", m.Role)
				}
				return errRefused
			}, event[accounts.Member]("member.remove"))
		}},
		{"wrong TOTP code", func(st *accounts.SQLStore) error {
			return st.UpdateTOTP(ctx, "mem_owner", func(tt *accounts.TOTP) error {
				tt.Secret, tt.Enabled = "SECRET", true
				return errRefused
			}, audit.Event{Workspace: "ws_1", Action: "account.totp_on"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, db := newSQLStore(t, eng)
			before := dump(t, db)
			if err := tc.run(st); !errors.Is(err, errRefused) {
				t.Fatalf("err = %v, want the callback's refusal", err)
			}
			if after := dump(t, db); after != before {
				t.Fatalf("a refused change stored something:\nbefore\n%s\nafter\n%s", before, after)
			}
		})
	}
}

func TestSQLStore(t *testing.T) { eachEngine(t, testSQLStore) }

func testSQLStore(t *testing.T, eng pgtest.Engine) {
	ctx := context.Background()
	st, db := newSQLStore(t, eng)
	auditRows := func(action string) int {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM audit_log WHERE action = ?`, action).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// Bootstrap runs once: first is not called when a workspace exists.
	created, err := st.CreateFirstWorkspace(ctx, func() accounts.FirstWorkspace {
		t.Fatal("first called with a workspace present")
		return accounts.FirstWorkspace{}
	}, event[accounts.FirstWorkspace]("workspace.create"))
	if err != nil || created || auditRows("workspace.create") != 1 {
		t.Fatalf("second bootstrap: %v %v", created, err)
	}
	var e *api.Error
	if err := st.SetPlan(ctx, "ws_nope", plans.Scale, audit.Event{Action: "workspace.plan"}); !errors.As(err, &e) || e.Kind != api.KindNotFound {
		t.Fatalf("plan of an unknown workspace: %v", err)
	}

	// Key look-up by hash carries the member's current role.
	c, err := st.KeyByHash(ctx, auth.HashSecret("owner secret"))
	if err != nil || c.ID != "key_owner" || c.Role != auth.Owner || c.RevokedAt != nil || c.ExpiresAt != nil {
		t.Fatalf("key by hash: %+v %v", c, err)
	}
	if _, err := st.KeyByHash(ctx, auth.HashSecret("nope")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown key: %v", err)
	}

	// A developer with a key of their own; the list filter is by member.
	dev := accounts.MemberRecord{WorkspaceID: "ws_1", InviteHash: auth.HashSecret("inv"), InviteExpires: t0.Add(time.Hour),
		Member: accounts.Member{ID: "mem_dev", Email: "dev@example.com", Role: auth.Developer, Status: "invited", CreatedAt: t0}}
	if err := st.CreateMember(ctx, dev, audit.Event{Workspace: "ws_1", Action: "member.invite"}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateMember(ctx, dev, audit.Event{Workspace: "ws_1", Action: "member.invite"}); !errors.As(err, &e) || e.Code != "member_exists" {
		t.Fatalf("duplicate member: %v", err)
	}
	exp := t0.Add(24 * time.Hour)
	devKey := accounts.KeyRecord{WorkspaceID: "ws_1", SecretHash: auth.HashSecret("dev secret"),
		Key: accounts.Key{ID: "key_dev", Name: "dev", Prefix: "svc_dev", Access: "read_only", MemberID: "mem_dev", CreatedAt: t0.Add(time.Second), ExpiresAt: &exp}}
	if err := st.CreateKey(ctx, devKey, func(int, int) error { return nil }, audit.Event{Workspace: "ws_1", Action: "key.create"}); err != nil {
		t.Fatal(err)
	}
	mine := "mem_dev"
	for _, tc := range []struct {
		name   string
		member *string
		want   []string
	}{
		{"every key", nil, []string{"key_dev", "key_owner"}},
		{"one member's", &mine, []string{"key_dev"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys, err := st.Keys(ctx, "ws_1", tc.member)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, k := range keys {
				got = append(got, k.ID)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("keys %v, want %v", got, tc.want)
			}
			if k := keys[0]; k.Kind != "read_only" || k.ExpiresAt == nil || !k.ExpiresAt.Equal(exp) {
				t.Fatalf("newest key %+v", k)
			}
		})
	}

	// Revoking a revoked key writes nothing.
	revoke := func(k *accounts.Key) (bool, error) {
		if k.RevokedAt != nil {
			return false, nil
		}
		now := t0
		k.RevokedAt = &now
		return true, nil
	}
	for range 2 {
		if k, err := st.RevokeKey(ctx, "ws_1", "key_dev", revoke, event[accounts.Key]("key.revoke")); err != nil || k.RevokedAt == nil {
			t.Fatalf("revoke: %+v %v", k, err)
		}
	}
	if n := auditRows("key.revoke"); n != 1 {
		t.Fatalf("%d key.revoke rows, want 1", n)
	}

	// Accepting an invitation activates the member once.
	accept := accounts.Acceptance{InviteHash: auth.HashSecret("inv"), PasswordHash: "hash", Name: "Dev", At: t0}
	m, err := st.AcceptInvitation(ctx, accept, func(time.Time, accounts.PersonState) (bool, error) { return true, nil },
		func(ws string, m accounts.Member) audit.Event {
			return audit.Event{Workspace: ws, Action: "member.accept"}
		})
	if err != nil || m.Status != "active" || !m.HasPassword || m.Name != "Dev" {
		t.Fatalf("accept: %+v %v", m, err)
	}
	if _, err := st.AcceptInvitation(ctx, accept, func(time.Time, accounts.PersonState) (bool, error) { return true, nil },
		func(string, accounts.Member) audit.Event { return audit.Event{} }); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("invitation used twice: %v", err)
	}

	// Other active owners are counted inside the change.
	promote := func(m *accounts.Member, otherOwners func() (int, error)) (bool, error) {
		m.Role = auth.Owner
		return true, nil
	}
	if _, err := st.UpdateMember(ctx, "ws_1", "mem_dev", promote, event[accounts.Member]("member.role")); err != nil {
		t.Fatal(err)
	}
	err = st.RemoveMember(ctx, "ws_1", "mem_owner", t0, func(_ accounts.Member, otherOwners func() (int, error)) error {
		if n, err := otherOwners(); err != nil || n != 1 {
			return fmt.Errorf("other owners = %d, %v; want 1", n, err)
		}
		return nil
	}, event[accounts.Member]("member.remove"))
	if err != nil {
		t.Fatal(err)
	}
	var revoked string
	if err := db.QueryRow(`SELECT revoked_at FROM api_keys WHERE id = 'key_owner'`).Scan(&revoked); err != nil || revoked == "" {
		t.Fatalf("removed member's key not revoked: %q %v", revoked, err)
	}

	// Creating a session sweeps expired ones.
	sess := func(token string, at time.Time) accounts.SessionRecord {
		return accounts.SessionRecord{ID: store.NewID("ses"), TokenHash: auth.HashSecret(token), CSRFHash: auth.HashSecret("csrf"),
			MemberID: "mem_dev", WorkspaceID: "ws_1", CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
	}
	if _, err := st.CreateSession(ctx, sess("old", t0), event[accounts.Member]("session.create")); err != nil {
		t.Fatal(err)
	}
	if m, err := st.CreateSession(ctx, sess("new", t0.Add(2*time.Hour)), event[accounts.Member]("session.create")); err != nil || m.ID != "mem_dev" {
		t.Fatalf("session: %+v %v", m, err)
	}
	if _, err := st.Session(ctx, auth.HashSecret("old")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("expired session not swept: %v", err)
	}
	if s, err := st.Session(ctx, auth.HashSecret("new")); err != nil || s.Role != auth.Owner || s.Status != "active" {
		t.Fatalf("session: %+v %v", s, err)
	}
	if _, err := st.PasswordHash(ctx, "mem_nope"); !errors.Is(err, store.ErrNotFound) || errors.Is(err, sql.ErrNoRows) {
		t.Fatalf("password of an unknown member: %v", err)
	}
}

func TestClaimTOTPStepOnce(t *testing.T) {
	env := cptest.New(t)
	var member string
	env.CP.DB.QueryRow(`SELECT id FROM members LIMIT 1`).Scan(&member)
	st, err := accounts.NewSQLStore(context.Background(), env.CP.DB, env.CP.Audit)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	results := make(chan bool, 8)
	for i := 0; i < 8; i++ {
		go func() {
			ok, err := st.ClaimTOTPStep(context.Background(), member, 1000)
			results <- ok && err == nil
		}()
	}
	won := 0
	for i := 0; i < 8; i++ {
		if <-results {
			won++
		}
	}
	if won != 1 {
		t.Fatalf("%d concurrent sign-ins claimed the same TOTP step, want 1", won)
	}
	if ok, _ := st.ClaimTOTPStep(context.Background(), member, 999); ok {
		t.Fatal("an earlier step was accepted")
	}
	ok, err := st.SetTOTPSecret(context.Background(), member, "AAAA")
	if !ok || err != nil {
		t.Fatalf("secret not stored while two-factor is off: %v %v", ok, err)
	}
	env.CP.DB.Exec(`UPDATE people SET totp_enabled = 1 WHERE id = (SELECT person_id FROM members WHERE id = ?)`, member)
	if ok, _ := st.SetTOTPSecret(context.Background(), member, "BBBB"); ok {
		t.Fatal("an enabled person's secret was replaced")
	}
}
