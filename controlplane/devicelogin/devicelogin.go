// Package devicelogin lets a command line without a browser sign in the
// way OAuth's device authorization grant (RFC 8628) does: it asks for a
// code pair, shows the person the short user code, a signed-in member
// approves that code (in the dashboard, with an API call, or with
// `platform login --approve CODE` from a machine already logged in), and
// the command line collects an API key made for that member through the
// accounts area. The secret device code is stored only as its SHA-256; the
// key's secret is kept sealed until collected, once.
package devicelogin

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/seal"
	"github.com/svcplatform/platform/controlplane/store"
)

// Defaults of Config's zero fields.
const (
	// DefaultTTL is how long a code pair waits for its approval.
	DefaultTTL = 10 * time.Minute
	// DefaultInterval is the least time between two polls of one device
	// code; a faster poll answers 429 slow_down.
	DefaultInterval = 5 * time.Second
	// DefaultMaxPending bounds the code pairs waiting at once (they are
	// asked for without credentials).
	DefaultMaxPending = 1000
	// DefaultKeyDays is the life of a key made by a device login.
	DefaultKeyDays = 90
	// MaxClientName bounds the name a command line gives itself.
	MaxClientName = 100
)

// Config is the area's configuration; the zero value works.
type Config struct {
	// TTL is how long a code pair waits for approval (DefaultTTL).
	TTL time.Duration `json:"ttl"`
	// Interval is the least time between polls (DefaultInterval).
	Interval time.Duration `json:"interval"`
	// MaxPending bounds the code pairs waiting at once (DefaultMaxPending).
	MaxPending int `json:"maxPending"`
	// KeyDays is the life of the keys made (DefaultKeyDays, 1..3650).
	KeyDays int `json:"keyDays"`
	// VerificationPath is the dashboard page where a member approves a
	// code, relative to the API's address ("/device").
	VerificationPath string `json:"verificationPath"`
}

// Provision fills the defaults.
func (c *Config) Provision() {
	if c.TTL <= 0 {
		c.TTL = DefaultTTL
	}
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.MaxPending <= 0 {
		c.MaxPending = DefaultMaxPending
	}
	if c.KeyDays <= 0 {
		c.KeyDays = DefaultKeyDays
	}
	if c.VerificationPath == "" {
		c.VerificationPath = "/device"
	}
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	if c.KeyDays > 3650 {
		return fmt.Errorf("devicelogin: key days %d: at most 3650", c.KeyDays)
	}
	return nil
}

// KeyMaker makes an API key for the calling member (accounts.Service).
type KeyMaker interface {
	CreateKey(ctx context.Context, p *auth.Principal, req accounts.CreateKeyRequest, projectExists accounts.ProjectChecker) (accounts.CreatedKey, error)
}

var _ KeyMaker = (*accounts.Service)(nil)

// Deps are what the area is built on.
type Deps struct {
	DB     *store.DB
	Sealer *seal.Sealer
	Keys   KeyMaker
	// ProjectExists checks the project a key is limited to.
	ProjectExists accounts.ProjectChecker
	// Clock dates code pairs (clock.System when nil).
	Clock  clock.Clock
	Logger *slog.Logger
}

func (d *Deps) check() error {
	var missing []string
	if d.DB == nil {
		missing = append(missing, "DB")
	}
	if d.Sealer == nil {
		missing = append(missing, "Sealer")
	}
	if d.Keys == nil {
		missing = append(missing, "Keys")
	}
	if d.ProjectExists == nil {
		missing = append(missing, "ProjectExists")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s", ErrNotConfigured, strings.Join(missing, ", "))
	}
	return nil
}

// ErrNotConfigured is returned by New when a dependency is missing.
var ErrNotConfigured = errors.New("devicelogin: missing dependencies")

// Service is the device login area.
type Service struct {
	cfg Config
	d   Deps
}

// New returns the service.
func New(cfg Config, d Deps) (*Service, error) {
	cfg.Provision()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := d.check(); err != nil {
		return nil, err
	}
	if d.Clock == nil {
		d.Clock = clock.System{}
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	return &Service{cfg: cfg, d: d}, nil
}

// Statuses of a code pair.
const (
	StatusPending  = "pending"
	StatusApproved = "approved"
	StatusDenied   = "denied"
)

// CodeAnswer is the answer of POST /api/device/code.
type CodeAnswer struct {
	// DeviceCode is the secret the command line polls with; never shown
	// to a person.
	DeviceCode string `json:"deviceCode"`
	// UserCode is what the person approves: eight letters of userAlphabet
	// in two groups of four, e.g. "BCDF-GHJK".
	UserCode string `json:"userCode"`
	// VerificationURI is where a member approves it (the dashboard).
	VerificationURI string `json:"verificationUri"`
	// ExpiresIn is the seconds left to approve it.
	ExpiresIn int `json:"expiresIn"`
	// Interval is the least seconds between two polls.
	Interval int `json:"interval"`
}

// CodeRequest is the body of POST /api/device/code.
type CodeRequest struct {
	// ClientName says what asks (shown to the approving member), e.g.
	// "platform CLI on laptop".
	ClientName string `json:"clientName"`
}

// Start makes a code pair for a command line at ip.
func (s *Service) Start(ctx context.Context, req CodeRequest, ip string) (CodeAnswer, error) {
	name := strings.TrimSpace(req.ClientName)
	if name == "" {
		name = "platform CLI"
	}
	if len(name) > MaxClientName || strings.ContainsAny(name, "\x00\r\n") {
		return CodeAnswer{}, api.Invalid("clientName is at most %d characters on one line", MaxClientName)
	}
	now := s.d.Clock.Now()
	device := "dvc_" + randomToken()
	code := newUserCode()
	err := s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM device_logins WHERE expires_at < ?`, store.FormatTime(now)); err != nil {
			return err
		}
		var pending int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM device_logins WHERE status = ?`, StatusPending).Scan(&pending); err != nil {
			return err
		}
		if pending >= s.cfg.MaxPending {
			return api.E(api.KindRateLimited, "device_login_busy", "too many device logins are waiting for approval: try again in a few minutes, or log in with a key (platform login --key)")
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO device_logins(id, device_hash, user_code, client_name, client_ip, status, created_at, expires_at)
			VALUES (?,?,?,?,?,?,?,?)`, store.NewID("dvl"), hashOf(device), code, name, ip, StatusPending,
			store.FormatTime(now), store.FormatTime(now.Add(s.cfg.TTL)))
		return err
	})
	if err != nil {
		return CodeAnswer{}, err
	}
	return CodeAnswer{DeviceCode: device, UserCode: code, VerificationURI: s.cfg.VerificationPath, ExpiresIn: int(s.cfg.TTL / time.Second),
		Interval: int(s.cfg.Interval / time.Second)}, nil
}

// Request is a code pair as the approving member sees it.
type Request struct {
	UserCode   string    `json:"userCode"`
	ClientName string    `json:"clientName"`
	ClientIP   string    `json:"clientIp"`
	Status     string    `json:"status"`
	CreatedAt  time.Time `json:"createdAt"`
	ExpiresAt  time.Time `json:"expiresAt"`
}

// RequestAnswer wraps a Request.
type RequestAnswer struct {
	Request Request `json:"request"`
}

// errUnknownCode is the refusal of a user code that waits for nothing.
func errUnknownCode() error {
	return api.E(api.KindNotFound, "device_code_not_found", "no device login waits for this code: check it, or start again with platform login --device (codes last 10 minutes)")
}

// Lookup returns the code pair a user code names (what asks, from where),
// for the member about to approve it.
func (s *Service) Lookup(ctx context.Context, userCode string) (Request, error) {
	code, ok := ParseUserCode(userCode)
	if !ok {
		return Request{}, api.Invalid("userCode is 8 letters, like BCDF-GHJK")
	}
	var r Request
	var created, expires string
	err := s.d.DB.QueryRowContext(ctx, `SELECT user_code, client_name, client_ip, status, created_at, expires_at FROM device_logins WHERE user_code = ?`,
		code).Scan(&r.UserCode, &r.ClientName, &r.ClientIP, &r.Status, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return Request{}, errUnknownCode()
	}
	if err != nil {
		return Request{}, fmt.Errorf("devicelogin: lookup: %w", err)
	}
	r.CreatedAt, r.ExpiresAt = store.ParseTime(created), store.ParseTime(expires)
	if !r.ExpiresAt.After(s.d.Clock.Now()) {
		return Request{}, errUnknownCode()
	}
	return r, nil
}

// ApproveRequest is the body of POST /api/device/approve.
type ApproveRequest struct {
	UserCode string `json:"userCode"`
	// Deny refuses the login instead.
	Deny bool `json:"deny,omitempty"`
	// Access is full (default) or read_only: the key made.
	Access string `json:"access,omitempty"`
	// ProjectID limits the key made to one project.
	ProjectID string `json:"projectId,omitempty"`
}

// ApproveAnswer is the answer of POST /api/device/approve.
type ApproveAnswer struct {
	Status string `json:"status"`
	// Key is the key made (its secret goes to the command line only).
	Key *accounts.Key `json:"key,omitempty"`
}

// Approve makes a key for the calling member and hands it to the command
// line waiting with userCode (or refuses the login with Deny). The key
// never carries more than the caller (accounts.CreateKey).
func (s *Service) Approve(ctx context.Context, p *auth.Principal, req ApproveRequest) (ApproveAnswer, error) {
	r, err := s.Lookup(ctx, req.UserCode)
	if err != nil {
		return ApproveAnswer{}, err
	}
	if r.Status != StatusPending {
		return ApproveAnswer{}, api.Conflict("device_code_used", "this code was already %s: start again with platform login --device", r.Status)
	}
	if req.Deny {
		_, err := s.d.DB.ExecContext(ctx, `UPDATE device_logins SET status = ? WHERE user_code = ? AND status = ?`, StatusDenied, r.UserCode, StatusPending)
		if err != nil {
			return ApproveAnswer{}, fmt.Errorf("devicelogin: deny: %w", err)
		}
		return ApproveAnswer{Status: StatusDenied}, nil
	}
	made, err := s.d.Keys.CreateKey(ctx, p, accounts.CreateKeyRequest{Name: "device login: " + r.ClientName, Access: req.Access,
		ProjectID: req.ProjectID, ExpiresInDays: s.cfg.KeyDays}, s.d.ProjectExists)
	if err != nil {
		return ApproveAnswer{}, err
	}
	var id string
	if err := s.d.DB.QueryRowContext(ctx, `SELECT id FROM device_logins WHERE user_code = ?`, r.UserCode).Scan(&id); err != nil {
		return ApproveAnswer{}, fmt.Errorf("devicelogin: approve: %w", err)
	}
	sealed := s.d.Sealer.Seal([]byte(made.Secret), keyAAD(id))
	res, err := s.d.DB.ExecContext(ctx, `UPDATE device_logins SET status = ?, workspace_id = ?, member_id = ?, key_id = ?, key_sealed = ? WHERE id = ? AND status = ?`,
		StatusApproved, p.WorkspaceID, p.MemberID, made.Key.ID, sealed, id, StatusPending)
	if err != nil {
		return ApproveAnswer{}, fmt.Errorf("devicelogin: approve: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ApproveAnswer{}, api.Conflict("device_code_used", "this code was approved or denied meanwhile: revoke the key %s if it is not needed", made.Key.Prefix)
	}
	return ApproveAnswer{Status: StatusApproved, Key: &made.Key}, nil
}

// TokenRequest is the body of POST /api/device/token.
type TokenRequest struct {
	DeviceCode string `json:"deviceCode"`
}

// TokenAnswer is the answer of POST /api/device/token once approved: the
// key, shown this once.
type TokenAnswer struct {
	Key   string `json:"key"`
	KeyID string `json:"keyId"`
}

// Poll answers the command line: 400 authorization_pending while the code
// waits, 429 slow_down when asked again within the interval, 403
// access_denied when refused, 400 expired_token when unknown or expired,
// else the key (once: the code pair is then deleted).
func (s *Service) Poll(ctx context.Context, req TokenRequest) (TokenAnswer, error) {
	if !strings.HasPrefix(req.DeviceCode, "dvc_") || len(req.DeviceCode) > 100 {
		return TokenAnswer{}, api.Invalid("deviceCode is the code POST /api/device/code answered (dvc_...)")
	}
	now := s.d.Clock.Now()
	var out TokenAnswer
	err := s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		var id, status, expires, lastPoll, keyID string
		var sealed []byte
		err := tx.QueryRowContext(ctx, `SELECT id, status, expires_at, last_poll_at, key_id, key_sealed FROM device_logins WHERE device_hash = ?`,
			hashOf(req.DeviceCode)).Scan(&id, &status, &expires, &lastPoll, &keyID, &sealed)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && !store.ParseTime(expires).After(now)) {
			return api.E(api.KindInvalid, "expired_token", "this device login expired or is unknown: start again with platform login --device")
		}
		if err != nil {
			return err
		}
		switch status {
		case StatusDenied:
			if _, err := tx.ExecContext(ctx, `DELETE FROM device_logins WHERE id = ?`, id); err != nil {
				return err
			}
			return api.Forbidden("access_denied", "the login was refused by the member asked to approve it")
		case StatusApproved:
			secret, err := s.d.Sealer.Open(sealed, keyAAD(id))
			if err != nil {
				return fmt.Errorf("devicelogin: open key: %w", err)
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM device_logins WHERE id = ?`, id); err != nil {
				return err
			}
			out = TokenAnswer{Key: string(secret), KeyID: keyID}
			return nil
		}
		if lastPoll != "" && now.Sub(store.ParseTime(lastPoll)) < s.cfg.Interval {
			return api.E(api.KindRateLimited, "slow_down", "polled too often: wait %d seconds between polls", int(s.cfg.Interval/time.Second)).
				With("interval", int(s.cfg.Interval/time.Second))
		}
		return api.E(api.KindInvalid, "authorization_pending", "waiting for a member to approve the code")
	})
	var ae *api.Error
	if errors.As(err, &ae) && (ae.Code == "slow_down" || ae.Code == "authorization_pending") {
		// The refusal rolled the transaction back: record the poll.
		_, _ = s.d.DB.ExecContext(ctx, `UPDATE device_logins SET last_poll_at = ? WHERE device_hash = ?`, store.FormatTime(now), hashOf(req.DeviceCode))
	}
	return out, err
}

func keyAAD(id string) []byte { return []byte("device login key\x00" + id) }

// hashOf is the stored form of a device code.
func hashOf(device string) string {
	sum := sha256.Sum256([]byte(device))
	return hex.EncodeToString(sum[:])
}

// randomToken is 32 random bytes, base64url.
func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// userAlphabet has no vowels (no words) and no look-alikes (RFC 8628 6.1):
// 20 letters, 8 of them: 20^8 (about 2.6e10) codes.
const userAlphabet = "BCDFGHJKLMNPQRSTVWXZ"

func newUserCode() string {
	var b [8]byte
	out := make([]byte, 0, 9)
	for i := range b {
		n, _ := rand.Int(rand.Reader, bigLen)
		out = append(out, userAlphabet[n.Int64()])
		if i == 3 {
			out = append(out, '-')
		}
	}
	return string(out)
}

// ParseUserCode reads a user code as a person types it (any case,
// with or without the dash and spaces) and returns it as stored.
func ParseUserCode(s string) (string, bool) {
	var letters []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '-' || c == ' ':
			continue
		case c >= 'a' && c <= 'z':
			c -= 'a' - 'A'
		}
		if strings.IndexByte(userAlphabet, c) < 0 {
			return "", false
		}
		letters = append(letters, c)
		if len(letters) > 8 {
			return "", false
		}
	}
	if len(letters) != 8 {
		return "", false
	}
	return string(letters[:4]) + "-" + string(letters[4:]), true
}

var bigLen = big.NewInt(int64(len(userAlphabet)))
