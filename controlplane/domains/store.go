package domains

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/controlplane/store"
)

// Domain states, as stored and as the API shows them.
const (
	// StatePending: added; its TXT record was not found yet, so the name
	// is not the project's and the edges do not serve it.
	StatePending = "pending"
	// StateVerified: control was proven and the name routes to the edges.
	StateVerified = "verified"
	// StateMisconfigured: control was proven (the edges serve the name),
	// but its A/AAAA or CNAME records do not point at the edges.
	StateMisconfigured = "misconfigured"
)

// Redirect choices of an apex domain.
const (
	// RedirectWWW: the apex redirects to www.<apex>, which serves.
	RedirectWWW = "www"
	// RedirectApex: www.<apex> redirects to the apex, which serves.
	RedirectApex = "apex"
)

// domain is a row of domains.
type domain struct {
	ID, Workspace, Project, Name string
	Apex                         bool
	Redirect, Token, State       string
	Records                      []DNSRecord
	Problem                      string
	CheckedAt, VerifiedAt        time.Time
	CreatedAt, UpdatedAt         time.Time
}

// claimed reports whether control of the name was proven.
func (d domain) claimed() bool { return d.State != StatePending }

// hosts are the names the domain answers at: the name, and the www name
// of an apex with a redirect.
func (d domain) hosts() []string {
	if d.Apex && d.Redirect != "" {
		return []string{d.Name, "www." + d.Name}
	}
	return []string{d.Name}
}

// redirectOf is the host a host of d redirects to ("" when it serves).
func (d domain) redirectOf(host string) string {
	switch {
	case d.Redirect == RedirectWWW && host == d.Name:
		return "www." + d.Name
	case d.Redirect == RedirectApex && host == "www."+d.Name:
		return d.Name
	}
	return ""
}

const domainCols = `id, workspace_id, project_id, name, apex, redirect, token, state, records, problem, checked_at, verified_at, created_at, updated_at`

func scanDomain(row interface{ Scan(...any) error }) (domain, error) {
	var d domain
	var apex int
	var recs, checked, verified, created, updated string
	err := row.Scan(&d.ID, &d.Workspace, &d.Project, &d.Name, &apex, &d.Redirect, &d.Token, &d.State, &recs, &d.Problem,
		&checked, &verified, &created, &updated)
	if err != nil {
		return d, err
	}
	d.Apex = apex == 1
	if recs != "" {
		if err := json.Unmarshal([]byte(recs), &d.Records); err != nil {
			return d, err
		}
	}
	d.CheckedAt, d.VerifiedAt = store.ParseTime(checked), store.ParseTime(verified)
	d.CreatedAt, d.UpdatedAt = store.ParseTime(created), store.ParseTime(updated)
	return d, nil
}

func insertDomain(ctx context.Context, q store.Querier, d domain) error {
	apex := 0
	if d.Apex {
		apex = 1
	}
	_, err := q.ExecContext(ctx, `INSERT INTO domains (`+domainCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		d.ID, d.Workspace, d.Project, d.Name, apex, d.Redirect, d.Token, d.State, "", d.Problem, "", "",
		fmtTime(d.CreatedAt), fmtTime(d.UpdatedAt))
	return err
}

func getDomain(ctx context.Context, q store.Querier, id string) (domain, error) {
	d, err := scanDomain(q.QueryRowContext(ctx, `SELECT `+domainCols+` FROM domains WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return d, store.ErrNotFound
	}
	return d, err
}

// queryDomains lists domains matching where (with args), oldest first.
func queryDomains(ctx context.Context, q store.Querier, where string, args ...any) ([]domain, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+domainCols+` FROM domains WHERE `+where+` ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, err
	}
	return store.AppendRows(nil, rows, scanDomain)
}

// saveCheck stores what a look found.
func saveCheck(ctx context.Context, q store.Querier, d domain) error {
	recs, err := json.Marshal(d.Records)
	if err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, `UPDATE domains SET state = ?, records = ?, problem = ?, checked_at = ?, verified_at = ?, updated_at = ?
		WHERE id = ?`, d.State, string(recs), d.Problem, fmtTime(d.CheckedAt), fmtTime(d.VerifiedAt), fmtTime(d.UpdatedAt), d.ID)
	return err
}

// heldBy is a domain holding a host.
type heldBy struct {
	DomainID, Project, Workspace, Name string
}

// hostHolder returns the domain holding host, ok false when none does.
func hostHolder(ctx context.Context, q store.Querier, host string) (heldBy, bool, error) {
	var h heldBy
	err := q.QueryRowContext(ctx, `SELECT d.id, d.project_id, d.workspace_id, d.name FROM domain_hosts h JOIN domains d ON d.id = h.domain_id
		WHERE h.host = ?`, host).Scan(&h.DomainID, &h.Project, &h.Workspace, &h.Name)
	if errors.Is(err, sql.ErrNoRows) {
		return h, false, nil
	}
	return h, err == nil, err
}

// claimHosts makes d's hosts its own; ok is false (and nothing is
// written) when another domain holds one of them.
func claimHosts(ctx context.Context, tx *sql.Tx, d domain) (bool, error) {
	for _, h := range d.hosts() {
		res, err := tx.ExecContext(ctx, `INSERT INTO domain_hosts (host, domain_id, project_id, redirect_to) VALUES (?, ?, ?, ?)
			ON CONFLICT (host) DO NOTHING`, h, d.ID, d.Project, d.redirectOf(h))
		if err != nil {
			return false, err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return false, err
		}
	}
	return true, nil
}

// EdgeDomains returns the hosts of every claimed domain, for the edge
// snapshot (edgesync.Sources.Domains).
func EdgeDomains(ctx context.Context, q store.Querier) ([]snapshot.Domain, error) {
	rows, err := q.QueryContext(ctx, `SELECT host, project_id, redirect_to FROM domain_hosts ORDER BY host`)
	if err != nil {
		return nil, err
	}
	return store.AppendRows(nil, rows, func(sc store.RowScanner) (d snapshot.Domain, err error) {
		err = sc.Scan(&d.Host, &d.ProjectID, &d.RedirectTo)
		return d, err
	})
}

// fmtTime formats t for the store, "" for the zero time.
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return store.FormatTime(t)
}
