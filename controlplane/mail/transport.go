package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/mail"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"

	"github.com/svcplatform/platform/controlplane/auth"
)

// envelope is who a message is delivered from (MAIL FROM, where bounces
// go) and to (RCPT TO): bare addresses.
type envelope struct {
	from string
	to   []string
}

// transport delivers built messages: the SMTP relay or the folder.
type transport interface {
	// send delivers raw, the whole message; an error says whether to
	// retry (classify).
	send(ctx context.Context, env envelope, raw []byte) error
	// name is the metric label: smtp or file.
	name() string
	describe() string
	check(ctx context.Context) error
}

// STARTTLS modes of an smtp:// relay.
const (
	StartTLSOpportunistic = "opportunistic"
	StartTLSRequired      = "required"
	StartTLSOff           = "off"
)

// RelayConfig is a parsed relay URL.
type RelayConfig struct {
	Host string
	Port int
	// ImplicitTLS is smtps://: TLS from the first byte.
	ImplicitTLS bool
	// StartTLS is the smtp:// mode: opportunistic (when offered), required
	// or off.
	StartTLS string
	User     string
	Password string
}

// String is the relay's URL without its password.
func (r RelayConfig) String() string {
	scheme := "smtp"
	if r.ImplicitTLS {
		scheme = "smtps"
	}
	u := url.URL{Scheme: scheme, Host: net.JoinHostPort(r.Host, strconv.Itoa(r.Port))}
	if r.User != "" {
		u.User = url.User(r.User)
	}
	if !r.ImplicitTLS && r.StartTLS != StartTLSOpportunistic {
		u.RawQuery = "starttls=" + r.StartTLS
	}
	return u.String()
}

// ErrRelayURL is returned for a relay URL that cannot be used.
var ErrRelayURL = errors.New("mail: SMTP relay URL")

// ParseRelayURL reads smtp://[user[:pass]@]host[:port][?starttls=required|off]
// (port 587 by default) or smtps://[user[:pass]@]host[:port] (465). Its
// errors never repeat the password.
func ParseRelayURL(s string) (RelayConfig, error) {
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return RelayConfig{}, fmt.Errorf("%w is malformed (%v); write smtp://user:password@host:port or smtps://user:password@host:port", ErrRelayURL, err)
	}
	var rc RelayConfig
	switch u.Scheme {
	case "smtp":
		rc.Port, rc.StartTLS = 587, StartTLSOpportunistic
	case "smtps":
		rc.Port, rc.ImplicitTLS = 465, true
	default:
		return RelayConfig{}, fmt.Errorf("%w must start with smtp:// (STARTTLS) or smtps:// (TLS), not %q", ErrRelayURL, u.Scheme)
	}
	rc.Host = u.Hostname()
	if rc.Host == "" {
		return RelayConfig{}, fmt.Errorf("%w names no host", ErrRelayURL)
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return RelayConfig{}, fmt.Errorf("%w: port %q is not 1 to 65535", ErrRelayURL, p)
		}
		rc.Port = n
	}
	if u.User != nil {
		rc.User = u.User.Username()
		rc.Password, _ = u.User.Password()
	}
	if u.Path != "" && u.Path != "/" || u.Fragment != "" {
		return RelayConfig{}, fmt.Errorf("%w takes no path or fragment", ErrRelayURL)
	}
	for k, v := range u.Query() {
		switch {
		case k == "starttls" && !rc.ImplicitTLS && len(v) == 1 && (v[0] == StartTLSRequired || v[0] == StartTLSOff || v[0] == StartTLSOpportunistic):
			rc.StartTLS = v[0]
		case k == "starttls" && rc.ImplicitTLS:
			return RelayConfig{}, fmt.Errorf("%w: smtps:// is TLS from the start; starttls applies to smtp:// only", ErrRelayURL)
		case k == "starttls":
			return RelayConfig{}, fmt.Errorf("%w: starttls must be required, opportunistic or off", ErrRelayURL)
		default:
			return RelayConfig{}, fmt.Errorf("%w: unknown parameter %q (only starttls)", ErrRelayURL, k)
		}
	}
	return rc, nil
}

// smtpTransport delivers through the relay, one connection per message.
type smtpTransport struct {
	rc      RelayConfig
	helo    string
	tls     *tls.Config
	timeout time.Duration
}

func (t *smtpTransport) name() string { return "smtp" }

func (t *smtpTransport) describe() string {
	mode := "TLS"
	if !t.rc.ImplicitTLS {
		switch t.rc.StartTLS {
		case StartTLSRequired:
			mode = "STARTTLS required"
		case StartTLSOff:
			mode = "no TLS"
		default:
			mode = "STARTTLS when offered"
		}
	}
	return "mail: sending through the SMTP relay " + t.rc.String() + " (" + mode + ")"
}

func (t *smtpTransport) client() (*gomail.Client, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.tls != nil {
		cfg = t.tls.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = t.rc.Host
	}
	opts := []gomail.Option{gomail.WithPort(t.rc.Port), gomail.WithTimeout(t.timeout), gomail.WithTLSConfig(cfg)}
	if t.helo != "" {
		opts = append(opts, gomail.WithHELO(t.helo))
	}
	switch {
	case t.rc.ImplicitTLS:
		opts = append(opts, gomail.WithSSL())
	case t.rc.StartTLS == StartTLSRequired:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	case t.rc.StartTLS == StartTLSOff:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	default:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	}
	if t.rc.User != "" {
		// The strongest mechanism the relay offers; PLAIN and LOGIN only
		// over TLS.
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover), gomail.WithUsername(t.rc.User), gomail.WithPassword(t.rc.Password))
	}
	c, err := gomail.NewClient(t.rc.Host, opts...)
	if err != nil {
		return nil, fmt.Errorf("mail: relay client: %w", err)
	}
	return c, nil
}

// relayError is the relay's refusal at one stage of a delivery; only
// refusals of the message itself (MAIL, RCPT, DATA) can be permanent.
type relayError struct {
	stage   string
	message bool
	err     error
}

func (e *relayError) Error() string { return e.stage + ": " + e.err.Error() }
func (e *relayError) Unwrap() error { return e.err }

// angle is an address as MAIL FROM and RCPT TO take it: <local@domain>.
func angle(addr string) string { return (&mail.Address{Address: addr}).String() }

// send connects (TLS and AUTH as configured), hands raw over for the
// envelope's recipients and quits. The message is taken or refused whole:
// a recipient the relay refuses refuses the message.
func (t *smtpTransport) send(ctx context.Context, env envelope, raw []byte) error {
	c, err := t.client()
	if err != nil {
		return err
	}
	sc, err := c.DialToSMTPClientWithContext(ctx)
	if err != nil {
		return &relayError{stage: "connecting to the relay", err: err}
	}
	defer c.CloseWithSMTPClient(sc)
	if err := sc.Mail(angle(env.from)); err != nil {
		return &relayError{stage: "MAIL FROM", message: true, err: err}
	}
	for _, to := range env.to {
		if err := sc.Rcpt(angle(to)); err != nil {
			return &relayError{stage: "RCPT TO " + to, message: true, err: err}
		}
	}
	w, err := sc.Data()
	if err != nil {
		return &relayError{stage: "DATA", message: true, err: err}
	}
	if _, err := w.Write(raw); err != nil {
		w.Close()
		return &relayError{stage: "sending the message", err: err}
	}
	if err := w.Close(); err != nil {
		return &relayError{stage: "end of DATA", message: true, err: err}
	}
	return nil
}

func (t *smtpTransport) check(ctx context.Context) error {
	c, err := t.client()
	if err != nil {
		return err
	}
	sc, err := c.DialToSMTPClientWithContext(ctx)
	if err != nil {
		return fmt.Errorf("mail: relay %s: %w", t.rc.String(), err)
	}
	return c.CloseWithSMTPClient(sc)
}

// failure is how an attempt went wrong.
type failure struct {
	// permanent: the relay refused the message for good (5xx on MAIL,
	// RCPT or DATA); retrying cannot help.
	permanent bool
	// code is the relay's reply code, 0 when there was none (connection,
	// TLS, timeouts).
	code   int
	reason string
}

// classify sorts a delivery error. Only a 5xx answer to the message itself
// (MAIL, RCPT, DATA) is permanent; everything else (4xx, connection, TLS,
// AUTH: the relay or its configuration, which the operator can fix) is
// retried.
func classify(err error) failure {
	var pe *permanentError
	if errors.As(err, &pe) {
		return failure{permanent: true, reason: pe.reason}
	}
	f := failure{reason: clipText(err.Error(), 400)}
	var te *textproto.Error
	if errors.As(err, &te) {
		f.code = te.Code
	}
	var re *relayError
	f.permanent = errors.As(err, &re) && re.message && f.code >= 500 && f.code <= 599
	return f
}

// fileTransport writes each message to a file of its own, for the operator
// to deliver or a developer to read: what the platform does without a
// relay.
type fileTransport struct {
	dir string
	log *slog.Logger
	now func() time.Time
}

func (t *fileTransport) name() string { return "file" }

func (t *fileTransport) describe() string {
	return "mail: no SMTP relay configured (--smtp-url): messages are written to " + t.dir
}

func (t *fileTransport) check(context.Context) error { return nil }

// send writes raw to a new file readable by the owner only, and logs the
// recipients and the file, never the content.
func (t *fileTransport) send(_ context.Context, env envelope, raw []byte) error {
	if err := os.MkdirAll(t.dir, 0o700); err != nil {
		return fmt.Errorf("mail: mail dir: %w", err)
	}
	name := t.now().UTC().Format("20060102T150405.000Z") + "-" + auth.RandomString(8) + ".eml"
	path := filepath.Join(t.dir, name)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("mail: write mail: %w", err)
	}
	if _, err := f.Write(raw); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("mail: write mail: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return fmt.Errorf("mail: write mail: %w", err)
	}
	t.log.Info("mail: written", "to", strings.Join(env.to, ", "), "file", path)
	return nil
}
