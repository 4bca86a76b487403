package accounts_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
	"github.com/svcplatform/platform/internal/passhash"
)

var cheapHash = passhash.Params{Memory: 64, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32}

// An installation from before people existed keeps working after the
// migration: its members become people (one per e-mail, with the
// credentials set last), sign-in, keys and open sessions work as before,
// the credentials leave the members table, and an outstanding invitation
// still joins.
func TestPeopleMigrationKeepsInstallationsWorking(t *testing.T) {
	for _, e := range pgtest.Engines() {
		t.Run(e.Name, func(t *testing.T) {
			ctx := context.Background()
			dsn := e.DSN(t)
			db, err := store.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			// Back to the schema before 0210_people.sql (and the tables that
			// reference people, made after it).
			for _, q := range []string{
				`DROP TABLE password_resets`, `DELETE FROM schema_migrations WHERE name = '0212_password_resets.sql'`,
				`DROP INDEX members_workspace_person`, `DROP INDEX members_person`,
				`ALTER TABLE members DROP COLUMN person_id`, `ALTER TABLE workspaces DROP COLUMN verification_required`,
				`ALTER TABLE workspaces DROP COLUMN deleted_at`,
				`DROP TABLE people`, `DELETE FROM schema_migrations WHERE name = '0210_people.sql'`,
			} {
				if _, err := db.Exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			oldHash, _ := passhash.HashWith(cheapHash, "the old password 1")
			newHash, _ := passhash.HashWith(cheapHash, "the newer password 2")
			ts := store.FormatTime(t0)
			for _, q := range []struct {
				sql  string
				args []any
			}{
				{`INSERT INTO workspaces (id, name, plan, created_at) VALUES ('ws_1','One','pro',?), ('ws_2','Two','hobby',?)`, []any{ts, ts}},
				{`INSERT INTO members (id, workspace_id, email, name, role, status, email_verified, password_hash, password_set_at, created_at)
					VALUES ('mem_o1','ws_1','Owner@Example.com','Owner','owner','active',1,?,'2026-01-01T00:00:00Z',?)`, []any{oldHash, ts}},
				{`INSERT INTO members (id, workspace_id, email, name, role, status, email_verified, password_hash, password_set_at, created_at)
					VALUES ('mem_o2','ws_2','owner@example.com','Owner','owner','active',0,?,'2026-06-01T00:00:00Z',?)`, []any{newHash, ts}},
				{`INSERT INTO members (id, workspace_id, email, name, role, status, invite_hash, invite_expires, created_at)
					VALUES ('mem_inv','ws_1','new@example.com','','viewer','invited',?,?,?)`, []any{auth.HashSecret("svcinv_old"), store.FormatTime(t0.AddDate(0, 0, 7)), ts}},
				{`INSERT INTO api_keys (id, workspace_id, member_id, name, public_id, secret_hash, access, created_at)
					VALUES ('key_1','ws_1','mem_o1','old key','svc_oldkey',?,'full',?)`, []any{auth.HashSecret("svc_old_key_secret_0123456789"), ts}},
				{`INSERT INTO sessions (id, token_hash, csrf_hash, member_id, workspace_id, created_at, expires_at)
					VALUES ('ses_1',?,?,'mem_o2','ws_2',?,?)`, []any{auth.HashSecret("svcsess_old"), auth.HashSecret("csrf"), ts, store.FormatTime(t0.AddDate(0, 0, 1))}},
			} {
				if _, err := db.Exec(q.sql, q.args...); err != nil {
					t.Fatalf("%s: %v", q.sql, err)
				}
			}
			db.Close()

			// The next start migrates.
			db, err = store.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			clk := clock.NewFake(t0)
			s, err := accounts.New(ctx, accounts.Config{PasswordHash: cheapHash}, accounts.Deps{DB: db, Clock: clk, Audit: audit.New(db, clk)})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()

			var people, leftovers int
			db.QueryRow(`SELECT count(*) FROM people`).Scan(&people)
			db.QueryRow(`SELECT count(*) FROM members WHERE password_hash <> '' OR totp_secret <> ''`).Scan(&leftovers)
			if people != 1 || leftovers != 0 {
				t.Fatalf("%d people (want 1: one e-mail), %d members still holding credentials", people, leftovers)
			}
			// The key and the open session work as before.
			req := httptest.NewRequest("GET", "/api/workspace", nil)
			req.Header.Set("Authorization", "Bearer svc_old_key_secret_0123456789")
			if p, err := s.Authenticate(req); err != nil || p.WorkspaceID != "ws_1" || p.Role != auth.Owner {
				t.Fatalf("old key: %+v %v", p, err)
			}
			req = httptest.NewRequest("GET", "/api/workspace", nil)
			req.AddCookie(&http.Cookie{Name: "svc_session", Value: "svcsess_old"})
			p, err := s.Authenticate(req)
			if err != nil || p == nil || p.WorkspaceID != "ws_2" || !p.Session {
				t.Fatalf("old session: %+v %v", p, err)
			}
			// The person has both workspaces, the password set last, and
			// the verified e-mail of... the member whose credentials won.
			ms, err := s.Workspaces(ctx, p)
			if err != nil || len(ms) != 2 {
				t.Fatalf("workspaces %+v %v", ms, err)
			}
			if _, err := s.SignIn(ctx, accounts.SignInRequest{Email: "owner@example.com", Password: "the old password 1"}, "192.0.2.1"); err == nil {
				t.Fatal("the older password still signs in")
			}
			si, err := s.SignIn(ctx, accounts.SignInRequest{Email: "owner@example.com", Password: "the newer password 2", WorkspaceID: "ws_1"}, "192.0.2.1")
			if err != nil || si.WorkspaceID != "ws_1" {
				t.Fatalf("sign-in: %+v %v", si, err)
			}
			// The outstanding invitation joins a new person.
			m, err := s.Accept(ctx, accounts.AcceptRequest{Token: "svcinv_old", Password: "a long password 1"})
			if err != nil || m.Status != "active" || !m.HasPassword {
				t.Fatalf("accept: %+v %v", m, err)
			}
			if _, err := s.SignIn(ctx, accounts.SignInRequest{Email: "new@example.com", Password: "a long password 1"}, "192.0.2.1"); err != nil {
				t.Fatal(err)
			}
		})
	}
}
