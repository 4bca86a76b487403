package mail

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/store"
)

// Message states, as stored and as the API shows them.
const (
	StateQueued = "queued"
	StateSent   = "sent"
	StateFailed = "failed"
)

// Sources of messages: what made the platform send them.
const (
	// SourceAPI is POST /api/projects/{id}/emails.
	SourceAPI = "api"
	// SourcePlatform is the platform's own mail (accounts.Mailer).
	SourcePlatform = "platform"
	// SourceReceipt is a payment receipt to a buyer (the payments area,
	// through SendAs).
	SourceReceipt = "receipt"
)

// record is a row of mail_messages.
type record struct {
	ID, Workspace, Project, Source, IdemKey     string
	From, EnvelopeFrom, ReplyTo, RequestedReply string
	Recipients                                  []string
	RecipientCount                              int
	Subject                                     string
	Sealed                                      []byte
	Size                                        int
	DomainID, MessageID, State                  string
	Attempts                                    int
	LastError                                   string
	SMTPCode                                    int
	SendingUntil                                time.Time
	CreatedAt, UpdatedAt, SentAt, FailedAt      time.Time
	// VERPToken names the message in its envelope sender; the bounce
	// fields are the latest report received for it.
	VERPToken                                             string
	BounceType, BounceRecipient, BounceStatus, BounceDiag string
	BouncedAt                                             time.Time
}

const messageCols = `id, workspace_id, project_id, source, idempotency_key, from_addr, envelope_from, reply_to, requested_reply,
	recipients, recipient_count, subject, content_sealed, size_bytes, domain_id, message_id, state, attempts, last_error,
	smtp_code, sending_until, created_at, updated_at, sent_at, failed_at, verp_token, bounce_type, bounce_recipient, bounce_status,
	bounce_diagnostic, bounced_at`

func scanMessage(row interface{ Scan(...any) error }) (record, error) {
	var r record
	var rcpts, until, created, updated, sent, failed, bounced string
	err := row.Scan(&r.ID, &r.Workspace, &r.Project, &r.Source, &r.IdemKey, &r.From, &r.EnvelopeFrom, &r.ReplyTo, &r.RequestedReply,
		&rcpts, &r.RecipientCount, &r.Subject, &r.Sealed, &r.Size, &r.DomainID, &r.MessageID, &r.State, &r.Attempts, &r.LastError,
		&r.SMTPCode, &until, &created, &updated, &sent, &failed, &r.VERPToken, &r.BounceType, &r.BounceRecipient, &r.BounceStatus,
		&r.BounceDiag, &bounced)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal([]byte(rcpts), &r.Recipients); err != nil {
		return r, err
	}
	r.SendingUntil, r.CreatedAt, r.UpdatedAt = store.ParseTime(until), store.ParseTime(created), store.ParseTime(updated)
	r.SentAt, r.FailedAt = store.ParseTime(sent), store.ParseTime(failed)
	r.BouncedAt = store.ParseTime(bounced)
	return r, nil
}

// insertMessage writes r; with an idempotency key already used in the
// project it writes nothing and reports false.
func insertMessage(ctx context.Context, q store.Querier, r record) (bool, error) {
	rcpts, err := json.Marshal(r.Recipients)
	if err != nil {
		return false, err
	}
	res, err := q.ExecContext(ctx, `INSERT INTO mail_messages (`+messageCols+`)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT (project_id, idempotency_key) WHERE idempotency_key <> '' DO NOTHING`,
		r.ID, r.Workspace, r.Project, r.Source, r.IdemKey, r.From, r.EnvelopeFrom, r.ReplyTo, r.RequestedReply,
		string(rcpts), r.RecipientCount, r.Subject, r.Sealed, r.Size, r.DomainID, r.MessageID, r.State, r.Attempts, r.LastError,
		r.SMTPCode, "", store.FormatTime(r.CreatedAt), store.FormatTime(r.UpdatedAt), "", "", r.VERPToken, "", "", "", "", "")
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func getMessage(ctx context.Context, q store.Querier, id string) (record, error) {
	r, err := scanMessage(q.QueryRowContext(ctx, `SELECT `+messageCols+` FROM mail_messages WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, store.ErrNotFound
	}
	return r, err
}

func messageByKey(ctx context.Context, q store.Querier, project, key string) (record, error) {
	r, err := scanMessage(q.QueryRowContext(ctx, `SELECT `+messageCols+` FROM mail_messages WHERE project_id = ? AND idempotency_key = ?`, project, key))
	if errors.Is(err, sql.ErrNoRows) {
		return r, store.ErrNotFound
	}
	return r, err
}

// listMessages lists a project's messages newest first, after the cursor
// position (created, id) when given, at most limit+1 of them.
func listMessages(ctx context.Context, q store.Querier, project, state, afterAt, afterID string, limit int) ([]record, error) {
	conds, args := []string{"project_id = ?"}, []any{project}
	if state != "" {
		conds, args = append(conds, "state = ?"), append(args, state)
	}
	if afterID != "" {
		conds, args = append(conds, "(created_at < ? OR (created_at = ? AND id < ?))"), append(args, afterAt, afterAt, afterID)
	}
	args = append(args, limit+1)
	rows, err := q.QueryContext(ctx, `SELECT `+messageCols+` FROM mail_messages WHERE `+strings.Join(conds, " AND ")+`
		ORDER BY created_at DESC, id DESC LIMIT ?`, args...)
	if err != nil {
		return nil, err
	}
	return store.AppendRows(nil, rows, scanMessage)
}

// usedSince sums the recipients of the workspace's project messages
// accepted after since.
func usedSince(ctx context.Context, q store.Querier, workspace string, since time.Time) (int, error) {
	var n sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT sum(recipient_count) FROM mail_messages WHERE workspace_id = ? AND source <> ? AND created_at > ?`,
		workspace, SourcePlatform, store.FormatTime(since)).Scan(&n)
	return int(n.Int64), err
}

// windowUse lists, oldest first, when the workspace's project messages
// accepted after since were accepted and how many recipients each had.
func windowUse(ctx context.Context, q store.Querier, workspace string, since time.Time) ([]struct {
	at time.Time
	n  int
}, error) {
	rows, err := q.QueryContext(ctx, `SELECT created_at, recipient_count FROM mail_messages WHERE workspace_id = ? AND source <> ? AND created_at > ?
		ORDER BY created_at`, workspace, SourcePlatform, store.FormatTime(since))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []struct {
		at time.Time
		n  int
	}
	for rows.Next() {
		var at string
		var n int
		if err := rows.Scan(&at, &n); err != nil {
			return nil, err
		}
		out = append(out, struct {
			at time.Time
			n  int
		}{store.ParseTime(at), n})
	}
	return out, rows.Err()
}

// claimMessage takes message id for one attempt until until, provided it
// is queued and no other attempt holds it. It reports whether it did.
func claimMessage(ctx context.Context, q store.Querier, id string, now, until time.Time) (bool, error) {
	res, err := q.ExecContext(ctx, `UPDATE mail_messages SET sending_until = ?, attempts = attempts + 1, updated_at = ?
		WHERE id = ? AND state = 'queued' AND sending_until < ?`,
		store.FormatTime(until), store.FormatTime(now), id, store.FormatTime(now))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// finishMessage records how an attempt ended: sent, failed or queued
// again (a temporary failure). Content is dropped once the message is sent
// or failed.
func finishMessage(ctx context.Context, q store.Querier, r record, now time.Time) error {
	ts := store.FormatTime(now)
	var sealed any = r.Sealed
	sent, failed := "", ""
	switch r.State {
	case StateSent:
		sealed, sent = nil, ts
	case StateFailed:
		sealed, failed = nil, ts
	}
	_, err := q.ExecContext(ctx, `UPDATE mail_messages SET state = ?, from_addr = ?, envelope_from = ?, reply_to = ?, domain_id = ?,
		last_error = ?, smtp_code = ?, content_sealed = ?, sending_until = '', updated_at = ?, sent_at = ?, failed_at = ?
		WHERE id = ?`, r.State, r.From, r.EnvelopeFrom, r.ReplyTo, r.DomainID, r.LastError, r.SMTPCode, sealed, ts, sent, failed, r.ID)
	return err
}

// failedSince summarises a workspace's project messages that failed after
// since, per project: how many, the latest reason and when.
type failedSummary struct {
	Project string
	Count   int
	Last    time.Time
	Reason  string
}

func failedSince(ctx context.Context, q store.Querier, workspace string, since time.Time) ([]failedSummary, error) {
	rows, err := q.QueryContext(ctx, `SELECT project_id, failed_at, last_error FROM mail_messages
		WHERE workspace_id = ? AND state = 'failed' AND failed_at > ? ORDER BY failed_at DESC, id DESC`,
		workspace, store.FormatTime(since))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byProject := map[string]int{}
	var out []failedSummary
	for rows.Next() {
		var p, at, reason string
		if err := rows.Scan(&p, &at, &reason); err != nil {
			return nil, err
		}
		i, ok := byProject[p]
		if !ok {
			byProject[p] = len(out)
			out = append(out, failedSummary{Project: p, Last: store.ParseTime(at), Reason: reason})
			i = len(out) - 1
		}
		out[i].Count++
	}
	return out, rows.Err()
}

// domain is a row of mail_domains.
type domain struct {
	ID, Workspace, Project, Name, Selector, Public string
	Sealed                                         []byte
	State, SPF, DKIM, LastError                    string
	CheckedAt, VerifiedAt, CreatedAt, UpdatedAt    time.Time
}

const domainCols = `id, workspace_id, project_id, name, selector, dkim_public, dkim_key_sealed, state, spf_status, dkim_status,
	last_error, checked_at, verified_at, created_at, updated_at`

func scanDomain(row interface{ Scan(...any) error }) (domain, error) {
	var d domain
	var checked, verified, created, updated string
	err := row.Scan(&d.ID, &d.Workspace, &d.Project, &d.Name, &d.Selector, &d.Public, &d.Sealed, &d.State, &d.SPF, &d.DKIM,
		&d.LastError, &checked, &verified, &created, &updated)
	d.CheckedAt, d.VerifiedAt = store.ParseTime(checked), store.ParseTime(verified)
	d.CreatedAt, d.UpdatedAt = store.ParseTime(created), store.ParseTime(updated)
	return d, err
}

func queryDomains(ctx context.Context, q store.Querier, where string, args ...any) ([]domain, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+domainCols+` FROM mail_domains WHERE `+where+` ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, err
	}
	return store.AppendRows(nil, rows, scanDomain)
}

func getDomain(ctx context.Context, q store.Querier, id string) (domain, error) {
	d, err := scanDomain(q.QueryRowContext(ctx, `SELECT `+domainCols+` FROM mail_domains WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return d, store.ErrNotFound
	}
	return d, err
}

// verifiedDomain returns the project's verified domain called name.
func verifiedDomain(ctx context.Context, q store.Querier, project, name string) (domain, error) {
	d, err := scanDomain(q.QueryRowContext(ctx, `SELECT `+domainCols+` FROM mail_domains WHERE project_id = ? AND name = ? AND state = 'verified'`, project, name))
	if errors.Is(err, sql.ErrNoRows) {
		return d, store.ErrNotFound
	}
	return d, err
}

// insertDomain writes d unless the project has the name already or holds
// max domains; it reports which.
func insertDomain(ctx context.Context, tx *sql.Tx, d domain, max int) (exists, full bool, err error) {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM mail_domains WHERE project_id = ?`, d.Project).Scan(&n); err != nil {
		return false, false, err
	}
	if n >= max {
		return false, true, nil
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO mail_domains (`+domainCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT (project_id, name) DO NOTHING`,
		d.ID, d.Workspace, d.Project, d.Name, d.Selector, d.Public, d.Sealed, d.State, d.SPF, d.DKIM, d.LastError,
		"", "", store.FormatTime(d.CreatedAt), store.FormatTime(d.UpdatedAt))
	if err != nil {
		return false, false, err
	}
	k, err := res.RowsAffected()
	return k == 0, false, err
}

// saveCheck records what a look at d's records found.
func saveCheck(ctx context.Context, q store.Querier, d domain) error {
	_, err := q.ExecContext(ctx, `UPDATE mail_domains SET state = ?, spf_status = ?, dkim_status = ?, last_error = ?, checked_at = ?,
		verified_at = ?, updated_at = ? WHERE id = ?`, d.State, d.SPF, d.DKIM, d.LastError, store.FormatTime(d.CheckedAt),
		formatOptional(d.VerifiedAt), store.FormatTime(d.UpdatedAt), d.ID)
	return err
}

func formatOptional(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return store.FormatTime(t)
}
