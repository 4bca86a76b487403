package accounts

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/store"
)

// Key is an API key as listings show it; the secret is never here.
type Key struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	Kind       string     `json:"kind"`   // full, project or read_only
	Access     string     `json:"access"` // full or read_only
	ProjectID  string     `json:"projectId,omitempty"`
	MemberID   string     `json:"memberId"`
	CreatedAt  time.Time  `json:"createdAt"`
	ExpiresAt  *time.Time `json:"expiresAt"`
	LastUsedAt *time.Time `json:"lastUsedAt"`
	RevokedAt  *time.Time `json:"revokedAt"`
}

func kindOf(access, project string) string {
	switch {
	case access == "read_only":
		return "read_only"
	case project != "":
		return "project"
	}
	return "full"
}

var errBadCredentials = api.E(api.KindUnauthenticated, "invalid_credentials", "invalid, expired or revoked API key")

// Authenticate implements api.Authenticator: a bearer API key, or the
// dashboard session cookie (unsafe methods then also need the X-CSRF-Token
// header given at sign-in).
func (s *Service) Authenticate(r *http.Request) (*auth.Principal, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, token, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
			return nil, api.E(api.KindUnauthenticated, "invalid_credentials", "Authorization must be Bearer <API key>")
		}
		return s.authenticateKey(r.Context(), strings.TrimSpace(token))
	}
	if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
		return s.authenticateSession(r, c.Value)
	}
	return nil, nil
}

func (s *Service) authenticateKey(ctx context.Context, token string) (*auth.Principal, error) {
	if len(token) > 512 {
		return nil, errBadCredentials
	}
	hash := sha256.Sum256([]byte(token))
	now := s.clock.Now()
	c, hit, gen := s.keys.get(hash, now)
	if !hit {
		var err error
		c, err = s.store.KeyByHash(ctx, hash[:])
		if errors.Is(err, store.ErrNotFound) {
			return nil, errBadCredentials
		}
		if err != nil {
			return nil, fmt.Errorf("accounts: authenticate: %w", err)
		}
	}
	if subtle.ConstantTimeCompare(hash[:], c.SecretHash) != 1 || c.RevokedAt != nil || (c.ExpiresAt != nil && !now.Before(*c.ExpiresAt)) {
		return nil, errBadCredentials
	}
	if !hit {
		s.keys.put(hash, c, gen, now)
	}
	p := &auth.Principal{KeyID: c.ID, WorkspaceID: c.WorkspaceID, MemberID: c.MemberID, KeyPrefix: c.Prefix, ProjectID: c.ProjectID,
		Role: c.Role, ReadOnly: c.Access == "read_only", Pending: c.Pending}
	s.touch(ctx, p.KeyID, now)
	return p, nil
}

// touch records a key's last use, at most once a minute per key.
func (s *Service) touch(ctx context.Context, keyID string, now time.Time) {
	s.mu.Lock()
	last, ok := s.lastUsed[keyID]
	if ok && now.Sub(last) < lastUsedEvery {
		s.mu.Unlock()
		return
	}
	s.lastUsed[keyID] = now
	s.mu.Unlock()
	// Off the request's path: a write waits for the database's writer lock
	// (and, on SQLite, a commit's fsync), which a request must not.
	s.touching.add()
	go func() {
		defer s.touching.done()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := s.store.TouchKey(ctx, keyID, now); err != nil {
			s.log.Warn("key last use not recorded", "key", keyID, "err", err)
		}
	}()
}

// CreateKeyRequest is the body of POST /api/keys.
type CreateKeyRequest struct {
	// Name describes what the key is for.
	Name string `json:"name"`
	// Access is full (default) or read_only.
	Access string `json:"access,omitempty"`
	// ProjectID limits the key to one project.
	ProjectID string `json:"projectId,omitempty"`
	// ExpiresInDays makes the key expire (1 to 3650); omitted never expires.
	ExpiresInDays int `json:"expiresInDays,omitempty"`
}

// CreatedKey is the answer of POST /api/keys: the only time the secret is shown.
type CreatedKey struct {
	Key    Key    `json:"key"`
	Secret string `json:"secret"`
	Note   string `json:"note"`
}

// ProjectChecker tells whether a project exists in a workspace.
type ProjectChecker func(ctx context.Context, workspace, project string) (bool, error)

// CreateKey makes a key for the calling member. It never carries more than
// the caller: a read-only caller makes read-only keys, a project key cannot
// make keys at all (the permission table refuses it).
func (s *Service) CreateKey(ctx context.Context, p *auth.Principal, req CreateKeyRequest, projectExists ProjectChecker) (CreatedKey, error) {
	req.Name = strings.TrimSpace(req.Name)
	if req.Name == "" || len(req.Name) > 100 {
		return CreatedKey{}, api.Invalid("name is required, at most 100 characters")
	}
	switch req.Access {
	case "":
		req.Access = "full"
	case "full", "read_only":
	default:
		return CreatedKey{}, api.Invalid("access must be full or read_only")
	}
	if p.ReadOnly && req.Access == "full" {
		return CreatedKey{}, api.Forbidden("read_only_key", "a read-only key can only create read-only keys")
	}
	if req.ExpiresInDays < 0 || req.ExpiresInDays > 3650 {
		return CreatedKey{}, api.Invalid("expiresInDays must be 1 to 3650")
	}
	if req.ProjectID != "" {
		ok, err := projectExists(ctx, p.WorkspaceID, req.ProjectID)
		if err != nil {
			return CreatedKey{}, err
		}
		if !ok {
			return CreatedKey{}, api.Invalid("projectId %q is not a project of this workspace", req.ProjectID)
		}
	}
	now := s.clock.Now()
	secret, prefix, hash := auth.NewKey()
	k := Key{ID: store.NewID("key"), Name: req.Name, Prefix: prefix, Access: req.Access, ProjectID: req.ProjectID,
		MemberID: p.MemberID, CreatedAt: now, Kind: kindOf(req.Access, req.ProjectID)}
	if req.ExpiresInDays > 0 {
		t := now.Add(time.Duration(req.ExpiresInDays) * 24 * time.Hour)
		k.ExpiresAt = &t
	}
	err := s.store.CreateKey(ctx, KeyRecord{Key: k, WorkspaceID: p.WorkspaceID, SecretHash: hash}, func(workspaceActive, memberActive int) error {
		if memberActive >= MaxKeysPerMember {
			return api.E(api.KindConflict, "key_limit_member", "a member holds at most %d unrevoked keys and you have %d; revoke some first", MaxKeysPerMember, memberActive).
				With("limit", MaxKeysPerMember).With("current", memberActive)
		}
		if workspaceActive >= MaxKeysPerWorkspace {
			return api.E(api.KindConflict, "key_limit", "a workspace holds at most %d unrevoked keys; revoke some first", MaxKeysPerWorkspace).
				With("limit", MaxKeysPerWorkspace).With("current", workspaceActive)
		}
		return nil
	}, audit.Event{Workspace: p.WorkspaceID, Actor: p, Action: "key.create", Category: audit.CategoryKey,
		TargetType: "key", TargetID: k.ID, ProjectID: k.ProjectID, Summary: fmt.Sprintf("created %s key %s (%s)", k.Kind, prefix, k.Name)})
	if err != nil {
		return CreatedKey{}, err
	}
	return CreatedKey{Key: k, Secret: secret, Note: "Store this key now: it is shown only once."}, nil
}

// ListKeys returns the caller's keys, or every key of the workspace for admins.
func (s *Service) ListKeys(ctx context.Context, p *auth.Principal) ([]Key, error) {
	s.touching.wait() // last uses recorded so far show
	var member *string
	if p.Role < auth.Admin {
		member = &p.MemberID
	}
	return s.store.Keys(ctx, p.WorkspaceID, member)
}

// RevokeKey revokes key id: the caller's own, or any key for admins.
// Revoking an already revoked key succeeds and changes nothing.
func (s *Service) RevokeKey(ctx context.Context, p *auth.Principal, id string) (Key, error) {
	defer s.keys.invalidate(invKey + id)
	return s.store.RevokeKey(ctx, p.WorkspaceID, id, func(k *Key) (bool, error) {
		if p.Role < auth.Admin && k.MemberID != p.MemberID {
			return false, api.NotFound("key")
		}
		if k.RevokedAt != nil {
			return false, nil
		}
		now := s.clock.Now()
		k.RevokedAt = &now
		return true, nil
	}, func(k Key) audit.Event {
		return audit.Event{Workspace: p.WorkspaceID, Actor: p, Action: "key.revoke", Category: audit.CategoryKey,
			TargetType: "key", TargetID: id, Summary: "revoked key " + k.Prefix}
	})
}

// inflight counts background writes; wait returns once none is running.
type inflight struct {
	mu   sync.Mutex
	cond *sync.Cond
	n    int
}

func (f *inflight) add() {
	f.mu.Lock()
	f.n++
	f.mu.Unlock()
}

func (f *inflight) done() {
	f.mu.Lock()
	f.n--
	if f.n == 0 && f.cond != nil {
		f.cond.Broadcast()
	}
	f.mu.Unlock()
}

func (f *inflight) wait() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cond == nil {
		f.cond = sync.NewCond(&f.mu)
	}
	for f.n > 0 {
		f.cond.Wait()
	}
}
