package signin

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/store"
)

// userRecord is a user as stored.
type userRecord struct {
	ID            string
	Pool          string
	Email         string
	PasswordHash  string
	EmailVerified bool
	Disabled      bool
	CreatedAt     time.Time
	UpdatedAt     time.Time
	LastSignInAt  time.Time
}

const userCols = `id, pool_id, email, password_hash, email_verified, disabled, created_at, updated_at, last_sign_in_at`

func scanUser(sc interface{ Scan(...any) error }) (userRecord, error) {
	var u userRecord
	var created, updated, last string
	err := sc.Scan(&u.ID, &u.Pool, &u.Email, &u.PasswordHash, &u.EmailVerified, &u.Disabled, &created, &updated, &last)
	u.CreatedAt, u.UpdatedAt, u.LastSignInAt = store.ParseTime(created), store.ParseTime(updated), store.ParseTime(last)
	return u, err
}

// userBy returns the pool's user matching column = v, store.ErrNotFound
// when none does.
func userBy(ctx context.Context, q store.Querier, pool, column, v string) (userRecord, error) {
	u, err := scanUser(q.QueryRowContext(ctx, `SELECT `+userCols+` FROM signin_users WHERE pool_id = ? AND `+column+` = ?`, pool, v))
	if errors.Is(err, sql.ErrNoRows) {
		return u, store.ErrNotFound
	}
	if err != nil {
		return u, fmt.Errorf("signin: user: %w", err)
	}
	return u, nil
}

// User is an app's user as the APIs show it; never a password.
type User struct {
	ID            string `json:"id"`
	Email         string `json:"email"`
	EmailVerified bool   `json:"emailVerified"`
	// Disabled users cannot sign in or refresh (management answers only).
	Disabled bool `json:"disabled"`
	// LockedUntil is when the lockout of the user's e-mail address ends,
	// while one lasts (management answers only).
	LockedUntil  *time.Time `json:"lockedUntil,omitempty"`
	CreatedAt    time.Time  `json:"createdAt"`
	LastSignInAt *time.Time `json:"lastSignInAt"`
}

func (u userRecord) view() User {
	v := User{ID: u.ID, Email: u.Email, EmailVerified: u.EmailVerified, Disabled: u.Disabled, CreatedAt: u.CreatedAt}
	if !u.LastSignInAt.IsZero() {
		t := u.LastSignInAt
		v.LastSignInAt = &t
	}
	return v
}

// UserAnswer wraps one user.
type UserAnswer struct {
	User User `json:"user"`
}

// UserPage is a page of a pool's users, oldest first.
type UserPage struct {
	Users []User `json:"users"`
	// NextCursor, when set, is the cursor of the next page.
	NextCursor string `json:"nextCursor,omitempty"`
}

// UserPatch is the body of PATCH /api/auth-pools/{id}/users/{userId}.
type UserPatch struct {
	// Disabled true ends the user's sessions and refuses their sign-ins;
	// false lets them sign in again.
	Disabled *bool `json:"disabled,omitempty"`
	// Unlock true ends a lockout of the user's e-mail address now.
	Unlock bool `json:"unlock,omitempty"`
}

// Listing bounds.
const (
	DefaultPageSize = 50
	MaxPageSize     = 200
	// maxSearch bounds the e-mail search text.
	maxSearch = 254
)

// cursor encodes the position after u.
func cursorAfter(u userRecord) string {
	return base64.RawURLEncoding.EncodeToString([]byte(store.FormatTime(u.CreatedAt) + "|" + u.ID))
}

func parseCursor(c string) (created, id string, err error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	created, id, ok := strings.Cut(string(raw), "|")
	if err != nil || !ok || id == "" || store.ParseTime(created).IsZero() {
		return "", "", api.Invalid("cursor is not one this API gave: pass nextCursor as it was answered").With("field", "cursor")
	}
	return created, id, nil
}

// likeEscape escapes s for LIKE ... ESCAPE '\'.
func likeEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s)
}

// lockedUntil returns the lockouts in force at now of the given e-mail
// addresses of pool.
func lockedUntil(ctx context.Context, q store.Querier, pool string, now time.Time, emails []string) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	if len(emails) == 0 {
		return out, nil
	}
	args := []any{pool, store.FormatTime(now)}
	marks := make([]string, len(emails))
	for i, e := range emails {
		marks[i] = "?"
		args = append(args, e)
	}
	rows, err := q.QueryContext(ctx, `SELECT email, locked_until FROM signin_lockouts WHERE pool_id = ? AND locked_until > ? AND email IN (`+strings.Join(marks, ",")+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("signin: lockouts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var email, until string
		if err := rows.Scan(&email, &until); err != nil {
			return nil, fmt.Errorf("signin: lockouts: %w", err)
		}
		out[email] = store.ParseTime(until)
	}
	return out, rows.Err()
}

// withLocks renders users with their lockouts.
func (s *Service) withLocks(ctx context.Context, pool string, us []userRecord) ([]User, error) {
	emails := make([]string, len(us))
	for i, u := range us {
		emails[i] = u.Email
	}
	locks, err := lockedUntil(ctx, s.d.DB, pool, s.now(), emails)
	if err != nil {
		return nil, err
	}
	out := make([]User, len(us))
	for i, u := range us {
		out[i] = u.view()
		if t, ok := locks[u.Email]; ok {
			out[i].LockedUntil = &t
		}
	}
	return out, nil
}

// ListUsers returns a page of a pool's users, oldest first; search keeps
// those whose e-mail address contains it (case-insensitive).
func (s *Service) ListUsers(ctx context.Context, pr *auth.Principal, poolID string, limit int, cursor, search string) (UserPage, error) {
	p, _, err := s.load(ctx, pr, poolID, OpUsersRead)
	if err != nil {
		return UserPage{}, err
	}
	q := `SELECT ` + userCols + ` FROM signin_users WHERE pool_id = ?`
	args := []any{p.ID}
	if search = strings.ToLower(strings.TrimSpace(search)); search != "" {
		if len(search) > maxSearch {
			return UserPage{}, api.Invalid("email search is at most %d characters", maxSearch).With("field", "email")
		}
		q += ` AND email LIKE ? ESCAPE '\'`
		args = append(args, "%"+likeEscape(search)+"%")
	}
	if cursor != "" {
		created, id, err := parseCursor(cursor)
		if err != nil {
			return UserPage{}, err
		}
		q += ` AND (created_at > ? OR (created_at = ? AND id > ?))`
		args = append(args, created, created, id)
	}
	q += ` ORDER BY created_at, id LIMIT ?`
	args = append(args, limit+1)
	rows, err := s.d.DB.QueryContext(ctx, q, args...)
	if err != nil {
		return UserPage{}, fmt.Errorf("signin: users: %w", err)
	}
	defer rows.Close()
	var recs []userRecord
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return UserPage{}, fmt.Errorf("signin: users: %w", err)
		}
		recs = append(recs, u)
	}
	if err := rows.Err(); err != nil {
		return UserPage{}, fmt.Errorf("signin: users: %w", err)
	}
	var page UserPage
	if len(recs) > limit {
		recs = recs[:limit]
		page.NextCursor = cursorAfter(recs[limit-1])
	}
	if page.Users, err = s.withLocks(ctx, p.ID, recs); err != nil {
		return UserPage{}, err
	}
	return page, nil
}

// loadUser returns a pool's user for a caller allowed op on the pool.
func (s *Service) loadUser(ctx context.Context, pr *auth.Principal, poolID, userID string, op auth.Op) (poolRecord, userRecord, error) {
	p, _, err := s.load(ctx, pr, poolID, op)
	if err != nil {
		return poolRecord{}, userRecord{}, err
	}
	u, err := userBy(ctx, s.d.DB, p.ID, "id", userID)
	if errors.Is(err, store.ErrNotFound) {
		return p, u, api.NotFound("user " + userID)
	}
	return p, u, err
}

// GetUser returns one user of a pool.
func (s *Service) GetUser(ctx context.Context, pr *auth.Principal, poolID, userID string) (User, error) {
	p, u, err := s.loadUser(ctx, pr, poolID, userID, OpUsersRead)
	if err != nil {
		return User{}, err
	}
	us, err := s.withLocks(ctx, p.ID, []userRecord{u})
	if err != nil {
		return User{}, err
	}
	return us[0], nil
}

// revokeSessions ends every session of a user: their refresh tokens go
// and access tokens stop being accepted by /user.
func revokeSessions(ctx context.Context, q store.Querier, userID, reason string, now time.Time) error {
	if _, err := q.ExecContext(ctx, `DELETE FROM signin_refresh_tokens WHERE session_id IN (SELECT id FROM signin_sessions WHERE user_id = ?)`, userID); err != nil {
		return fmt.Errorf("signin: revoke sessions: %w", err)
	}
	if _, err := q.ExecContext(ctx, `UPDATE signin_sessions SET revoked_at = ?, revoked_reason = ? WHERE user_id = ? AND revoked_at = ''`,
		store.FormatTime(now), reason, userID); err != nil {
		return fmt.Errorf("signin: revoke sessions: %w", err)
	}
	return nil
}

// PatchUser disables or enables a user (disabling ends their sessions)
// and/or ends the lockout of their e-mail address.
func (s *Service) PatchUser(ctx context.Context, pr *auth.Principal, poolID, userID string, req UserPatch) (User, error) {
	if req.Disabled == nil && !req.Unlock {
		return User{}, api.Invalid("send disabled (true or false) and/or unlock: true")
	}
	p, u, err := s.loadUser(ctx, pr, poolID, userID, OpWrite)
	if err != nil {
		return User{}, err
	}
	if err := s.d.Projects.RequireActive(ctx, p.Project); err != nil {
		return User{}, err
	}
	now := s.now()
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		var did []string
		if req.Disabled != nil {
			if _, err := tx.ExecContext(ctx, `UPDATE signin_users SET disabled = ?, updated_at = ? WHERE id = ?`, *req.Disabled, store.FormatTime(now), u.ID); err != nil {
				return fmt.Errorf("signin: disable user: %w", err)
			}
			if *req.Disabled {
				if err := revokeSessions(ctx, tx, u.ID, "disabled", now); err != nil {
					return err
				}
				did = append(did, "disabled")
			} else {
				did = append(did, "enabled")
			}
		}
		if req.Unlock {
			if _, err := tx.ExecContext(ctx, `DELETE FROM signin_lockouts WHERE pool_id = ? AND email = ?`, p.ID, u.Email); err != nil {
				return fmt.Errorf("signin: unlock: %w", err)
			}
			did = append(did, "unlocked")
		}
		return s.d.Audit.Record(ctx, tx, audit.Event{Workspace: p.Workspace, Actor: pr, Action: "auth_user.update", Category: audit.CategoryData,
			TargetType: "auth_user", TargetID: u.ID, ProjectID: p.Project,
			Summary: fmt.Sprintf("%s user %s of sign-in pool %s", strings.Join(did, " and "), u.ID, p.Name)})
	})
	if err != nil {
		return User{}, err
	}
	return s.GetUser(ctx, pr, poolID, userID)
}

// DeleteUser removes a user with their sessions and tokens; the e-mail
// address may sign up again.
func (s *Service) DeleteUser(ctx context.Context, pr *auth.Principal, poolID, userID string) error {
	p, u, err := s.loadUser(ctx, pr, poolID, userID, OpWrite)
	if err != nil {
		return err
	}
	return s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		if err := deleteUser(ctx, tx, u); err != nil {
			return err
		}
		return s.d.Audit.Record(ctx, tx, audit.Event{Workspace: p.Workspace, Actor: pr, Action: "auth_user.delete", Category: audit.CategoryData,
			TargetType: "auth_user", TargetID: u.ID, ProjectID: p.Project, Summary: fmt.Sprintf("deleted user %s of sign-in pool %s", u.ID, p.Name)})
	})
}

// deleteUser removes u's rows and takes it off its pool's count.
func deleteUser(ctx context.Context, tx *sql.Tx, u userRecord) error {
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`DELETE FROM signin_refresh_tokens WHERE session_id IN (SELECT id FROM signin_sessions WHERE user_id = ?)`, []any{u.ID}},
		{`DELETE FROM signin_sessions WHERE user_id = ?`, []any{u.ID}},
		{`DELETE FROM signin_email_tokens WHERE user_id = ?`, []any{u.ID}},
		{`DELETE FROM signin_lockouts WHERE pool_id = ? AND email = ?`, []any{u.Pool, u.Email}},
	} {
		if _, err := tx.ExecContext(ctx, q.sql, q.args...); err != nil {
			return fmt.Errorf("signin: delete user: %w", err)
		}
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM signin_users WHERE id = ?`, u.ID)
	if err != nil {
		return fmt.Errorf("signin: delete user: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		if _, err := tx.ExecContext(ctx, `UPDATE signin_pools SET user_count = user_count - 1 WHERE id = ? AND user_count > 0`, u.Pool); err != nil {
			return fmt.Errorf("signin: delete user: %w", err)
		}
	}
	return nil
}
