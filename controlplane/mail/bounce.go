package mail

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base32"
	"errors"
	"fmt"
	"net/mail"
	"slices"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/store"
)

// Defaults of the bounce configuration.
const (
	// DefaultBounceLocal is the local part of envelope senders:
	// bounces+<token>@<bounce domain>.
	DefaultBounceLocal = "bounces"
	// DefaultBounceMaxBytes bounds one report (a DSN carries the original
	// message's headers, sometimes all of it).
	DefaultBounceMaxBytes = 2 << 20
	// DefaultBounceMaxConns bounds simultaneous listener connections.
	DefaultBounceMaxConns = 32
	// DefaultBounceTimeout bounds one listener connection.
	DefaultBounceTimeout = 2 * time.Minute
)

// Kinds of report events, as stored and as Email.Bounce shows them.
const (
	// EventBounce: a recipient refused the message for good (5.x.x); the
	// address is suppressed.
	EventBounce = "bounce"
	// EventSoftBounce: the remote side gave up with a temporary status
	// (4.x.x); recorded, not suppressed.
	EventSoftBounce = "soft_bounce"
	// EventDelayed: delivery is still being tried; recorded, not suppressed.
	EventDelayed = "delayed"
	// EventComplaint: the recipient marked the message as spam (a feedback
	// report); the address is suppressed.
	EventComplaint = "complaint"
)

// CodeSuppressed is the error code of a send to a suppressed address.
const CodeSuppressed = "recipient_suppressed"

var verpEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// newVERPToken is 128 random bits, lower-case base32 (26 characters).
func newVERPToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return strings.ToLower(verpEncoding.EncodeToString(b[:]))
}

// envelopeOf is r's envelope sender: its VERP address, or (for a message
// stored without a token) the sender recorded with it.
func (s *Service) envelopeOf(r record) string {
	if r.VERPToken == "" {
		return r.EnvelopeFrom
	}
	return s.cfg.BounceLocal + "+" + r.VERPToken + "@" + s.cfg.BounceDomain
}

// verpToken reads the token of a VERP address of ours, "" when addr is not
// one (another local part or domain, or a malformed token).
func (s *Service) verpToken(addr string) string {
	local, dom, ok := strings.Cut(strings.ToLower(strings.Trim(addr, "<> ")), "@")
	if !ok || dom != s.cfg.BounceDomain {
		return ""
	}
	prefix, tok, ok := strings.Cut(local, "+")
	if !ok || prefix != strings.ToLower(s.cfg.BounceLocal) || len(tok) != 26 || strings.Trim(tok, "abcdefghijklmnopqrstuvwxyz234567") != "" {
		return ""
	}
	return tok
}

// messageByToken finds the message a VERP token names.
func messageByToken(ctx context.Context, q store.Querier, token string) (record, error) {
	r, err := scanMessage(q.QueryRowContext(ctx, `SELECT `+messageCols+` FROM mail_messages WHERE verp_token = ?`, token))
	if errors.Is(err, sql.ErrNoRows) {
		return r, store.ErrNotFound
	}
	return r, err
}

// Suppression is an address a project no longer sends to.
type Suppression struct {
	Address string `json:"address"`
	// Reason is bounce (refused for good) or complaint (marked as spam).
	Reason string `json:"reason"`
	// EmailID is the message the bounce or complaint was about.
	EmailID    string    `json:"emailId,omitempty"`
	Diagnostic string    `json:"diagnostic,omitempty"`
	CreatedAt  time.Time `json:"createdAt"`
}

// SuppressionPage is one page of a project's suppressions, by address;
// NextCursor (null on the last page) asks for the next one.
type SuppressionPage struct {
	Suppressions []Suppression `json:"suppressions"`
	NextCursor   *string       `json:"nextCursor"`
}

// Bounce is the latest report received about a message.
type Bounce struct {
	// Type is bounce, soft_bounce, delayed or complaint.
	Type       string    `json:"type"`
	Recipient  string    `json:"recipient"`
	Status     string    `json:"status,omitempty"`
	Diagnostic string    `json:"diagnostic,omitempty"`
	At         time.Time `json:"at"`
}

// suppressedAmong returns which of addrs are on project's list.
func suppressedAmong(ctx context.Context, q store.Querier, project string, addrs []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(addrs) == 0 {
		return out, nil
	}
	args := []any{project}
	for _, a := range addrs {
		args = append(args, strings.ToLower(a))
	}
	rows, err := q.QueryContext(ctx, `SELECT address FROM mail_suppressions WHERE project_id = ? AND address IN (?`+
		strings.Repeat(",?", len(addrs)-1)+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			return nil, err
		}
		out[a] = true
	}
	return out, rows.Err()
}

// refuseSuppressed refuses a send with a suppressed recipient (422).
func (s *Service) refuseSuppressed(ctx context.Context, project string, to []*mail.Address) error {
	addrs := make([]string, len(to))
	for i, a := range to {
		addrs[i] = a.Address
	}
	sup, err := suppressedAmong(ctx, s.d.DB, project, addrs)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if sup[strings.ToLower(a)] {
			return api.E(api.KindUnprocessable, CodeSuppressed,
				"%s is on the project's suppression list after a bounce or complaint: remove it with DELETE /api/projects/%s/email-suppressions/%s once the address works again, or leave it out",
				a, project, strings.ToLower(a)).With("address", strings.ToLower(a))
		}
	}
	return nil
}

// unsuppressed returns addrs less the project's suppressed ones.
func (s *Service) unsuppressed(ctx context.Context, project string, addrs []string) ([]string, error) {
	sup, err := suppressedAmong(ctx, s.d.DB, project, addrs)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(slices.Clone(addrs), func(a string) bool { return sup[strings.ToLower(a)] }), nil
}

// event is one recipient's outcome of a report.
type event struct {
	kind, recipient, status, diagnostic string
}

// events reads a report against the message it is about: only the
// message's own recipients count (a report naming anyone else changes
// nothing).
func events(rep *Report, r record) []event {
	rcpts := map[string]bool{}
	var only string
	for _, t := range r.Recipients {
		if a, err := mail.ParseAddress(t); err == nil {
			only = strings.ToLower(a.Address)
			rcpts[only] = true
		}
	}
	if len(rcpts) != 1 {
		only = ""
	}
	match := func(addrs ...string) string {
		for _, a := range addrs {
			if a != "" && rcpts[a] {
				return a
			}
		}
		return ""
	}
	var out []event
	switch rep.Type {
	case ReportARF:
		to := match(rep.OriginalRcptTo...)
		if to == "" && len(rep.OriginalRcptTo) == 0 {
			to = only // providers often redact the recipient
		}
		if to != "" {
			out = append(out, event{kind: EventComplaint, recipient: to, diagnostic: "feedback report: " + clipText(rep.FeedbackType, 60)})
		}
	case ReportDSN:
		for _, rs := range rep.Recipients {
			to := match(rs.Recipient, rs.Original)
			if to == "" {
				continue
			}
			var k string
			switch {
			case rs.Permanent():
				k = EventBounce
			case rs.Action == "failed":
				k = EventSoftBounce
			case rs.Action == "delayed":
				k = EventDelayed
			default:
				continue // delivered, relayed, expanded
			}
			out = append(out, event{kind: k, recipient: to, status: rs.Status, diagnostic: rs.Diagnostic})
		}
	}
	return out
}

// rank orders event kinds: a later report never overwrites a graver one.
var rank = map[string]int{EventDelayed: 1, EventSoftBounce: 2, EventBounce: 3, EventComplaint: 4}

// ErrUnknownToken is returned by Receive for a token naming no message.
var ErrUnknownToken = errors.New("mail: no message has this bounce address")

// Receive records a report about the message VERP token names: every
// event of the message's recipients, the gravest as the message's bounce,
// and hard bounces and complaints on the project's suppression list. It
// returns how many recipients the report concerned.
func (s *Service) Receive(ctx context.Context, token string, rep *Report) (int, error) {
	r, err := messageByToken(ctx, s.d.DB, token)
	if errors.Is(err, store.ErrNotFound) {
		return 0, ErrUnknownToken
	}
	if err != nil {
		return 0, err
	}
	evs := events(rep, r)
	if len(evs) == 0 {
		return 0, nil
	}
	now := s.now()
	ts := store.FormatTime(now)
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		cur, err := getMessage(ctx, tx, r.ID)
		if err != nil {
			return err
		}
		best := event{kind: cur.BounceType}
		for _, e := range evs {
			if _, err := tx.ExecContext(ctx, `INSERT INTO mail_events (id, message_id, workspace_id, project_id, kind, recipient, status, diagnostic, created_at)
				VALUES (?,?,?,?,?,?,?,?,?)`, store.NewID("mev"), r.ID, r.Workspace, r.Project, e.kind, e.recipient, e.status, e.diagnostic, ts); err != nil {
				return err
			}
			if rank[e.kind] >= rank[best.kind] {
				best = e
			}
			if (e.kind == EventBounce || e.kind == EventComplaint) && r.Project != "" {
				reason := map[string]string{EventBounce: "bounce", EventComplaint: "complaint"}[e.kind]
				if _, err := tx.ExecContext(ctx, `INSERT INTO mail_suppressions (project_id, address, workspace_id, reason, message_id, diagnostic, created_at)
					VALUES (?,?,?,?,?,?,?) ON CONFLICT (project_id, address) DO NOTHING`,
					r.Project, e.recipient, r.Workspace, reason, r.ID, e.diagnostic, ts); err != nil {
					return err
				}
			}
		}
		if best.recipient == "" {
			return nil // nothing graver than what is recorded
		}
		_, err = tx.ExecContext(ctx, `UPDATE mail_messages SET bounce_type = ?, bounce_recipient = ?, bounce_status = ?, bounce_diagnostic = ?,
			bounced_at = ?, updated_at = ? WHERE id = ?`, best.kind, best.recipient, best.status, best.diagnostic, ts, ts, r.ID)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("mail: record report for %s: %w", r.ID, err)
	}
	for _, e := range evs {
		s.m.reports.WithLabelValues(e.kind).Inc()
	}
	s.d.Logger.Info("mail: report received", "email", r.ID, "project", r.Project, "type", rep.Type, "events", len(evs))
	return len(evs), nil
}

// Suppressions lists a project's suppressed addresses in address order,
// after the cursor when given.
func (s *Service) Suppressions(ctx context.Context, pr *auth.Principal, projectID string, limit int, cursor string) (SuppressionPage, error) {
	p, err := s.d.Projects.Get(ctx, pr.WorkspaceID, projectID)
	if err != nil {
		return SuppressionPage{}, err
	}
	if limit <= 0 {
		limit = DefaultPageSize
	}
	after := ""
	if cursor != "" {
		if after, err = decodeAddrCursor(cursor); err != nil {
			return SuppressionPage{}, err
		}
	}
	rows, err := s.d.DB.QueryContext(ctx, `SELECT address, reason, message_id, diagnostic, created_at FROM mail_suppressions
		WHERE project_id = ? AND address > ? ORDER BY address LIMIT ?`, p.ID, after, limit+1)
	if err != nil {
		return SuppressionPage{}, err
	}
	defer rows.Close()
	out := SuppressionPage{Suppressions: []Suppression{}}
	for rows.Next() {
		var x Suppression
		var at string
		if err := rows.Scan(&x.Address, &x.Reason, &x.EmailID, &x.Diagnostic, &at); err != nil {
			return SuppressionPage{}, err
		}
		if len(out.Suppressions) == limit {
			c := encodeAddrCursor(out.Suppressions[limit-1].Address)
			out.NextCursor = &c
			break
		}
		x.CreatedAt = store.ParseTime(at)
		out.Suppressions = append(out.Suppressions, x)
	}
	return out, rows.Err()
}

func encodeAddrCursor(a string) string { return verpEncoding.EncodeToString([]byte(a)) }

func decodeAddrCursor(c string) (string, error) {
	b, err := verpEncoding.DecodeString(c)
	if err != nil || len(c) > 600 || len(b) == 0 {
		return "", errCursor
	}
	return string(b), nil
}

var errSuppressionNotFound = api.NotFound("suppression")

// Unsuppress removes an address from a project's suppression list, so the
// project may send to it again.
func (s *Service) Unsuppress(ctx context.Context, pr *auth.Principal, projectID, address string) error {
	p, err := s.d.Projects.Writable(ctx, pr.WorkspaceID, projectID)
	if err != nil {
		return err
	}
	res, err := s.d.DB.ExecContext(ctx, `DELETE FROM mail_suppressions WHERE project_id = ? AND address = ?`, p.ID, strings.ToLower(strings.TrimSpace(address)))
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return errSuppressionNotFound
	}
	s.d.Logger.Info("mail: suppression removed", "project", p.ID)
	return nil
}

// bounceRate summarises a workspace's reports since a time, per project.
type bounceRate struct {
	Project             string
	Sent                int
	Bounced, Complained int
	Last                time.Time
	LastDiag            string
}

func bounceRates(ctx context.Context, q store.Querier, workspace string, since time.Time) ([]bounceRate, error) {
	rows, err := q.QueryContext(ctx, `SELECT project_id, kind, created_at, diagnostic FROM mail_events
		WHERE workspace_id = ? AND project_id <> '' AND kind IN ('bounce','complaint') AND created_at > ? ORDER BY created_at DESC, id DESC`,
		workspace, store.FormatTime(since))
	if err != nil {
		return nil, err
	}
	idx := map[string]int{}
	var out []bounceRate
	for rows.Next() {
		var p, k, at, diag string
		if err := rows.Scan(&p, &k, &at, &diag); err != nil {
			rows.Close()
			return nil, err
		}
		i, ok := idx[p]
		if !ok {
			idx[p], i = len(out), len(out)
			out = append(out, bounceRate{Project: p, Last: store.ParseTime(at), LastDiag: diag})
		}
		if k == EventBounce {
			out[i].Bounced++
		} else {
			out[i].Complained++
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := range out {
		if err := q.QueryRowContext(ctx, `SELECT count(*) FROM mail_messages WHERE project_id = ? AND state = 'sent' AND sent_at > ?`,
			out[i].Project, store.FormatTime(since)).Scan(&out[i].Sent); err != nil {
			return nil, err
		}
	}
	return out, nil
}
