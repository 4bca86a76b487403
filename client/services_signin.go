package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// AuthPool is a project's sign-in pool: end-user sign-up and sign-in for
// its apps.
type AuthPool struct {
	ID        string `json:"id"`
	ProjectID string `json:"projectId"`
	Name      string `json:"name"`
	// Settings are the pool's settings as the API shows them.
	Settings map[string]any `json:"settings"`
	// EffectiveOrigins are the browser origins allowed now.
	EffectiveOrigins []string `json:"effectiveOrigins"`
	UserCount        int      `json:"userCount"`
	// UserLimit is the plan's cap (-1: none).
	UserLimit int    `json:"userLimit"`
	Issuer    string `json:"issuer"`
	Audience  string `json:"audience"`
	Endpoints struct {
		// Base is the end-user API's base URL; JWKS the signing keys'.
		Base string `json:"base"`
		JWKS string `json:"jwks"`
	} `json:"endpoints"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// AuthUser is a user of a sign-in pool (never a password).
type AuthUser struct {
	ID            string     `json:"id"`
	Email         string     `json:"email"`
	EmailVerified bool       `json:"emailVerified"`
	Disabled      bool       `json:"disabled"`
	LockedUntil   *time.Time `json:"lockedUntil,omitempty"`
	CreatedAt     time.Time  `json:"createdAt"`
	LastSignInAt  *time.Time `json:"lastSignInAt"`
}

// AuthUserPage is a page of a pool's users, oldest first; NextCursor
// ("" on the last page) continues it.
type AuthUserPage struct {
	Users      []AuthUser `json:"users"`
	NextCursor string     `json:"nextCursor,omitempty"`
}

// AuthUserListOptions select a page of users.
type AuthUserListOptions struct {
	// Email narrows the users to addresses containing it.
	Email string
	// Limit is 1 to 200 (0: the API's default).
	Limit  int
	Cursor string
}

// AuthPools lists a project's sign-in pools.
func (c *Client) AuthPools(ctx context.Context, projectID string) ([]AuthPool, error) {
	var out struct {
		Pools []AuthPool `json:"pools"`
	}
	return out.Pools, c.get(ctx, "/api/projects/"+esc(projectID)+"/auth-pools", &out)
}

// CreateAuthPool makes a sign-in pool with the default settings.
func (c *Client) CreateAuthPool(ctx context.Context, projectID, name string) (AuthPool, error) {
	var out struct {
		Pool AuthPool `json:"pool"`
	}
	return out.Pool, c.post(ctx, "/api/projects/"+esc(projectID)+"/auth-pools", map[string]string{"name": name}, &out)
}

// DeleteAuthPool deletes a pool with its users, sessions and keys.
func (c *Client) DeleteAuthPool(ctx context.Context, poolID string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/api/auth-pools/" + esc(poolID)}, nil)
}

// AuthUsers lists a page of a pool's users (needs a developer or above
// with a full-access key).
func (c *Client) AuthUsers(ctx context.Context, poolID string, o AuthUserListOptions) (AuthUserPage, error) {
	q := url.Values{}
	if o.Email != "" {
		q.Set("email", o.Email)
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	var out AuthUserPage
	if err := c.do(ctx, request{method: http.MethodGet, path: "/api/auth-pools/" + esc(poolID) + "/users", query: q}, &out); err != nil {
		return AuthUserPage{}, err
	}
	return out, nil
}

// SetAuthUserDisabled disables a user (their sessions end, sign-ins are
// refused) or lets them sign in again.
func (c *Client) SetAuthUserDisabled(ctx context.Context, poolID, userID string, disabled bool) (AuthUser, error) {
	var out struct {
		User AuthUser `json:"user"`
	}
	return out.User, c.do(ctx, request{method: http.MethodPatch, path: "/api/auth-pools/" + esc(poolID) + "/users/" + esc(userID),
		json: map[string]bool{"disabled": disabled}}, &out)
}

// DeleteAuthUser deletes a user of a pool.
func (c *Client) DeleteAuthUser(ctx context.Context, poolID, userID string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/api/auth-pools/" + esc(poolID) + "/users/" + esc(userID)}, nil)
}
