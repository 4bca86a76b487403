package media

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/media/rtmp"
)

// LiveConfig configures live channels: the RTMP server the platform runs.
type LiveConfig struct {
	// Listen is the RTMP address nginx listens on (127.0.0.1:1935 when empty).
	Listen string `json:"listen"`
	// IngestURL is what publishers are told (rtmps://<TLSListen>/live when
	// TLSListen is set, else rtmp://<Listen>/live, when empty). With RTMPS,
	// name the host the certificate is for.
	IngestURL string `json:"ingestUrl"`
	// TLSListen is the RTMPS address, e.g. :1936 (empty: no RTMPS). The
	// platform terminates TLS there with TLS (or TLSCertFile/TLSKeyFile)
	// and forwards to the RTMP server, whose stream-key check applies as is.
	TLSListen string `json:"tlsListen"`
	// TLSCertFile and TLSKeyFile are the PEM certificate chain and key of
	// RTMPS when TLS is nil.
	TLSCertFile string `json:"tlsCertFile"`
	TLSKeyFile  string `json:"tlsKeyFile"`
	// TLS is RTMPS's configuration (the platform's certificate for the
	// ingest host); it wins over the files.
	TLS *tls.Config `json:"-"`
	// NotifyBaseURL is how nginx reaches the control plane's API for its
	// callbacks, e.g. http://127.0.0.1:7070 (required).
	NotifyBaseURL string `json:"notifyBaseUrl"`
	// Nginx and Module locate the programs (found on PATH / Debian's path when empty).
	Nginx  string `json:"nginx"`
	Module string `json:"module"`
	// UpdateSeconds is how often running publishers are re-checked, which
	// bounds how long end-stream takes to cut one (2 when 0).
	UpdateSeconds int `json:"updateSeconds"`
}

// livePlaylist is a live channel's HLS playlist name.
const livePlaylist = "index.m3u8"

// liveServer is the running RTMP server, or why there is none.
type liveServer struct {
	cfg    LiveConfig
	rc     rtmp.Config
	tlsCfg *tls.Config
	// err is set at construction when the packages are missing.
	err    error
	secret string
	// started is closed once Run has started the server (or failed to),
	// or at construction when it cannot start.
	started     chan struct{}
	markStarted func()

	mu  sync.Mutex
	srv *rtmp.Server
	tls *rtmp.TLSProxy
}

// newLiveServer prepares the RTMP server that Run starts; a missing
// package is not an error here (video works without it) but makes live
// creates answer 503.
func newLiveServer(s *Service, c LiveConfig) (*liveServer, error) {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:1935"
	}
	if c.NotifyBaseURL == "" {
		return nil, errors.New("media: live needs the API's base URL for the RTMP server's callbacks")
	}
	ls := &liveServer{cfg: c, started: make(chan struct{})}
	ls.markStarted = sync.OnceFunc(func() { close(ls.started) })
	if c.TLSListen != "" {
		var err error
		if ls.tlsCfg, err = c.tlsConfig(); err != nil {
			return nil, err
		}
	}
	if c.IngestURL == "" {
		ls.cfg.IngestURL = "rtmp://" + c.Listen + "/" + rtmp.App
		if c.TLSListen != "" {
			ls.cfg.IngestURL = "rtmps://" + ingestHost(c.TLSListen) + "/" + rtmp.App
		}
	}
	var b [32]byte
	rand.Read(b[:])
	ls.secret = hex.EncodeToString(b[:])
	ls.rc = rtmp.Config{Nginx: c.Nginx, Module: c.Module, Dir: filepath.Join(s.cfg.Dir, "live"), Listen: c.Listen,
		Notify: strings.TrimRight(c.NotifyBaseURL, "/") + "/media/live/hooks/" + ls.secret, UpdateSeconds: c.UpdateSeconds, Logger: s.d.Logger}
	if err := ls.rc.Find(); err != nil {
		ls.err = err
		ls.markStarted()
		s.d.Logger.Warn("media: live channels unavailable", "err", err)
	}
	return ls, nil
}

// start starts nginx (and the RTMPS front) and marks the server started.
func (ls *liveServer) start(ctx context.Context, log *slog.Logger) error {
	defer ls.markStarted()
	srv, err := rtmp.Start(ctx, ls.rc)
	if err != nil {
		return fmt.Errorf("media: live: %w", err)
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.srv = srv
	if ls.tlsCfg != nil {
		if ls.tls, err = rtmp.ListenTLS(ls.cfg.TLSListen, ls.tlsCfg, ls.cfg.Listen, log); err != nil {
			return errors.Join(fmt.Errorf("media: live: %w", err), ls.closeLocked())
		}
	}
	return nil
}

// tlsConfig is RTMPS's configuration: TLS, or the certificate files.
func (c LiveConfig) tlsConfig() (*tls.Config, error) {
	if c.TLS != nil {
		return c.TLS, nil
	}
	if c.TLSCertFile == "" || c.TLSKeyFile == "" {
		return nil, fmt.Errorf("media: live: tlsListen %s: %w (tlsCertFile and tlsKeyFile)", c.TLSListen, rtmp.ErrNoCertificate)
	}
	cert, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("media: live: rtmps certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}}, nil
}

// ingestHost is the host:port publishers are told for a listen address
// (an unspecified host becomes 127.0.0.1: set IngestURL in production).
func ingestHost(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

func (ls *liveServer) hlsDir() string              { return ls.rc.HLSDir() }
func (ls *liveServer) channelDir(id string) string { return filepath.Join(ls.rc.HLSDir(), id) }
func (ls *liveServer) close() error {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.closeLocked()
}

func (ls *liveServer) closeLocked() error {
	var err error
	if ls.tls != nil {
		err = ls.tls.Close()
		ls.tls = nil
	}
	if ls.srv != nil {
		err = errors.Join(err, ls.srv.Close())
		ls.srv = nil
	}
	return err
}

// ErrLiveUnavailable answers live requests on a platform without an RTMP server.
var ErrLiveUnavailable = api.E(api.KindUnavailable, "live_unavailable",
	"live channels need the Debian packages nginx and libnginx-mod-rtmp on the platform's host")

// liveAvailable is nil when live channels can be created. While Run is
// starting the RTMP server it waits for it (or for ctx).
func (s *Service) liveAvailable(ctx context.Context) error {
	if s.live == nil {
		return ErrLiveUnavailable
	}
	select {
	case <-s.live.started:
	case <-ctx.Done():
		return ctx.Err()
	}
	if s.live.err != nil {
		return ErrLiveUnavailable.Wrap(s.live.err)
	}
	s.live.mu.Lock()
	up := s.live.srv != nil
	s.live.mu.Unlock()
	if !up {
		return ErrLiveUnavailable.Wrap(errors.New("the RTMP server is not running"))
	}
	return nil
}

func (s *Service) ingestURL() string {
	if s.live == nil {
		return ""
	}
	return s.live.cfg.IngestURL
}

// newStreamKey returns a key, its sealed form and its hash.
func (s *Service) newStreamKey(id string) (string, []byte, string, error) {
	if s.d.Sealer == nil {
		return "", nil, "", api.Internal(errors.New("media: no sealer for stream keys"))
	}
	var b [32]byte
	rand.Read(b[:])
	key := "sk_" + base64.RawURLEncoding.EncodeToString(b[:])
	return key, s.d.Sealer.Seal([]byte(key), []byte("media-stream-key\x00"+id)), hashKey(key), nil
}

func hashKey(key string) string {
	h := sha256.Sum256([]byte("media-stream-key\x00" + key))
	return hex.EncodeToString(h[:])
}

func (s *Service) openStreamKey(r record) (string, error) {
	if s.d.Sealer == nil || len(r.StreamKeySealed) == 0 {
		return "", errors.New("media: no stream key")
	}
	b, err := s.d.Sealer.Open(r.StreamKeySealed, []byte("media-stream-key\x00"+r.ID))
	return string(b), err
}

// ActionRequest is the body of PATCH /api/media/{id}.
type ActionRequest struct {
	// Action is go-live or end-stream.
	Action string `json:"action"`
}

// Action runs go-live (the stream key is accepted from now on) or
// end-stream (publishers are cut within UpdateSeconds and the key refused).
// Going live checks the plan; ending never does.
func (s *Service) Action(ctx context.Context, p *auth.Principal, id string, req ActionRequest) (Asset, error) {
	var next string
	switch req.Action {
	case "go-live":
		next = StatusLive
	case "end-stream":
		next = StatusEnded
	case "":
		return Asset{}, api.Invalid("action is required: go-live or end-stream")
	default:
		return Asset{}, api.Invalid("action must be go-live or end-stream, not %q", req.Action)
	}
	r, err := s.load(ctx, p, id, auth.OpMediaWrite)
	if err != nil {
		return Asset{}, err
	}
	if r.Kind != KindLive {
		return Asset{}, api.Conflict("not_live", "%s applies to live channels; this is a video", req.Action)
	}
	if next == StatusLive {
		if err := s.d.Projects.RequireActive(ctx, r.Project); err != nil {
			return Asset{}, err
		}
		if err := s.liveAvailable(ctx); err != nil {
			return Asset{}, err
		}
	}
	if r.Status == next {
		return s.view(r, canSeeSecrets(p, r.Project)), nil
	}
	now := s.d.Clock.Now()
	plan := s.d.Plans.Plan(ctx, p.WorkspaceID)
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		if next == StatusLive {
			n, err := countWorkspace(ctx, tx, p.WorkspaceID)
			if err != nil {
				return err
			}
			if err := planLimit(plan, n, n, KindLive); err != nil {
				return err
			}
		}
		set := map[string]any{"status": next, "updated_at": now}
		if next == StatusLive {
			set["live_since"] = now
		}
		if _, err := update(ctx, tx, id, set, ""); err != nil {
			return err
		}
		return s.d.Audit.Record(ctx, tx, audit.Event{Workspace: p.WorkspaceID, Actor: p, Action: "media." + req.Action, Category: audit.CategoryData,
			TargetType: "media", TargetID: id, ProjectID: r.Project, Summary: fmt.Sprintf("%s on live channel %s", req.Action, r.Name)})
	})
	if err != nil {
		return Asset{}, err
	}
	r.Status, r.UpdatedAt = next, now
	return s.view(r, canSeeSecrets(p, r.Project)), nil
}

// Hook answers the RTMP server's callbacks (form posts of nginx-rtmp):
// publish accepts a live channel's stream key and renames the stream to
// the channel id (a 302 whose Location is the new name) so no playback
// path holds the key; update keeps a publisher only while its channel is
// live; done is acknowledged. Anything refused gets 403, which makes nginx
// drop the publisher.
func (s *Service) Hook(w http.ResponseWriter, r *http.Request, secret, event string) error {
	if s.live == nil || subtle.ConstantTimeCompare([]byte(secret), []byte(s.live.secret)) != 1 {
		return api.NotFound("hook")
	}
	if err := r.ParseForm(); err != nil {
		return api.Invalid("bad callback form: %v", err)
	}
	name := r.PostForm.Get("name")
	ctx := r.Context()
	deny := func(why string) error {
		s.d.Logger.Info("media: publish refused", "event", event, "why", why, "addr", r.PostForm.Get("addr"))
		w.WriteHeader(http.StatusForbidden)
		return nil
	}
	switch event {
	case "publish":
		if r.PostForm.Get("app") != rtmp.App || !strings.HasPrefix(name, "sk_") {
			return deny("not a stream key")
		}
		rs, err := queryRecords(ctx, s.d.DB, `stream_key_hash = ? AND kind = ?`, hashKey(name), KindLive)
		if err != nil {
			return err
		}
		if len(rs) != 1 {
			return deny("unknown stream key")
		}
		if rs[0].Status != StatusLive {
			return deny("channel not live")
		}
		// Relay into the HLS application under the channel id.
		w.Header().Set("Location", "rtmp://"+s.live.cfg.Listen+"/"+rtmp.HLSApp+"/"+rs[0].ID+"?relay="+s.live.secret)
		w.WriteHeader(http.StatusFound)
		return nil
	case "relay":
		// Only the ingest application's relay (carrying the secret) may
		// publish into the HLS application, for a live channel.
		if r.PostForm.Get("app") != rtmp.HLSApp || subtle.ConstantTimeCompare([]byte(r.Form.Get("relay")), []byte(s.live.secret)) != 1 || !validID(name) {
			return deny("not the platform's relay")
		}
		rs, err := queryRecords(ctx, s.d.DB, `id = ? AND kind = ?`, name, KindLive)
		if err != nil {
			return err
		}
		if len(rs) != 1 || rs[0].Status != StatusLive {
			return deny("channel not live")
		}
		w.WriteHeader(http.StatusOK)
		return nil
	case "update":
		var rs []record
		var err error
		if strings.HasPrefix(name, "sk_") {
			rs, err = queryRecords(ctx, s.d.DB, `stream_key_hash = ? AND kind = ?`, hashKey(name), KindLive)
		} else if validID(name) {
			rs, err = queryRecords(ctx, s.d.DB, `id = ? AND kind = ?`, name, KindLive)
		}
		if err != nil {
			return err
		}
		if len(rs) != 1 || rs[0].Status != StatusLive {
			return deny("channel no longer live")
		}
		w.WriteHeader(http.StatusOK)
		return nil
	case "done":
		w.WriteHeader(http.StatusOK)
		return nil
	}
	return api.NotFound("hook")
}
