package payments

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/store"
)

// List page sizes.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// Page is one page of a list, newest first; NextCursor (null on the last
// page) asks for the next one.
type Page[T any] struct {
	Data       []T     `json:"data"`
	NextCursor *string `json:"nextCursor"`
}

// ListQuery filters and pages a list.
type ListQuery struct {
	Limit     int
	Cursor    string
	Status    string
	Reference string
}

// cursor is the position after the last row of a page: its creation time
// and id, opaque to clients.
func encodeCursor(created time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(store.FormatTime(created) + "|" + id))
}

// DecodeCursor reads a cursor; anything else is a 400.
func DecodeCursor(c string) (created, id string, err error) {
	b, derr := base64.RawURLEncoding.DecodeString(c)
	at, id, ok := strings.Cut(string(b), "|")
	if derr != nil || !ok || id == "" || store.ParseTime(at).IsZero() || len(c) > 200 {
		return "", "", api.E(api.KindInvalid, "invalid_cursor", "cursor is not one this API returned; use nextCursor of the previous page")
	}
	return at, id, nil
}

// where builds the filter and paging conditions of a list.
func (q ListQuery) where(base []string, args []any) (string, []any, error) {
	if q.Cursor != "" {
		at, id, err := DecodeCursor(q.Cursor)
		if err != nil {
			return "", nil, err
		}
		base = append(base, `(created_at < ? OR (created_at = ? AND id < ?))`)
		args = append(args, at, at, id)
	}
	if q.Reference != "" {
		if len([]rune(q.Reference)) > MaxReference {
			return "", nil, api.Invalid("reference is at most %d characters", MaxReference)
		}
		base = append(base, `reference = ?`)
		args = append(args, q.Reference)
	}
	return strings.Join(base, " AND "), args, nil
}

func page[T any](rows []T, limit int, key func(T) (time.Time, string)) Page[T] {
	p := Page[T]{Data: rows}
	if len(rows) > limit {
		p.Data = rows[:limit]
		at, id := key(rows[limit-1])
		c := encodeCursor(at, id)
		p.NextCursor = &c
	}
	return p
}

var paymentStatuses = map[string]bool{PaymentSucceeded: true, PaymentPartiallyRefunded: true, PaymentRefunded: true, PaymentDisputed: true, PaymentDisputeLost: true}

// ListPayments lists an account's payments.
func (s *Service) ListPayments(ctx context.Context, pr *auth.Principal, accountID string, q ListQuery) (Page[Payment], error) {
	a, err := s.account(ctx, pr, accountID, auth.OpPaymentsRead)
	if err != nil {
		return Page[Payment]{}, err
	}
	conds, args := []string{"account_id = ?"}, []any{a.ID}
	if q.Status != "" {
		if !paymentStatuses[q.Status] {
			return Page[Payment]{}, api.Invalid("status must be one of succeeded, partially_refunded, refunded, disputed, dispute_lost")
		}
		conds, args = append(conds, "status = ?"), append(args, q.Status)
	}
	return s.listPayments(ctx, q, conds, args)
}

func (s *Service) listPayments(ctx context.Context, q ListQuery, conds []string, args []any) (Page[Payment], error) {
	where, args, err := q.where(conds, args)
	if err != nil {
		return Page[Payment]{}, err
	}
	rows, err := queryList(ctx, s.d.DB, scanPayment, `SELECT `+paymentCols+` FROM payment_payments WHERE `+where+` ORDER BY created_at DESC, id DESC LIMIT ?`, append(args, q.Limit+1)...)
	if err != nil {
		return Page[Payment]{}, err
	}
	return page(rows, q.Limit, func(p Payment) (time.Time, string) { return p.CreatedAt, p.ID }), nil
}

// ListWorkspacePayments lists the workspace's recent payments (a project
// key sees its own project's).
func (s *Service) ListWorkspacePayments(ctx context.Context, pr *auth.Principal, q ListQuery) (Page[Payment], error) {
	conds, args := []string{"workspace_id = ?"}, []any{pr.WorkspaceID}
	if pr.ProjectID != "" {
		conds, args = append(conds, "project_id = ?"), append(args, pr.ProjectID)
	}
	q.Reference = ""
	return s.listPayments(ctx, q, conds, args)
}

// ListSessions lists an account's checkout sessions.
func (s *Service) ListSessions(ctx context.Context, pr *auth.Principal, accountID string, q ListQuery) (Page[Session], error) {
	a, err := s.account(ctx, pr, accountID, auth.OpPaymentsRead)
	if err != nil {
		return Page[Session]{}, err
	}
	conds, args := []string{"account_id = ?"}, []any{a.ID}
	now := store.FormatTime(s.now())
	switch q.Status {
	case "":
	case SessionOpen:
		conds, args = append(conds, "state = 'open' AND expires_at > ?"), append(args, now)
	case SessionExpired:
		conds, args = append(conds, "(state = 'expired' OR (state = 'open' AND expires_at <= ?))"), append(args, now)
	case SessionPaid:
		conds = append(conds, "state = 'paid'")
	default:
		return Page[Session]{}, api.Invalid("status must be one of open, paid, expired")
	}
	where, args, err := q.where(conds, args)
	if err != nil {
		return Page[Session]{}, err
	}
	rows, err := queryList(ctx, s.d.DB, s.scanSession, `SELECT `+sessionCols+` FROM payment_sessions WHERE `+where+` ORDER BY created_at DESC, id DESC LIMIT ?`, append(args, q.Limit+1)...)
	if err != nil {
		return Page[Session]{}, err
	}
	return page(rows, q.Limit, func(x Session) (time.Time, string) { return x.CreatedAt, x.ID }), nil
}

// Analytics is the answer of the analytics read: totals, the checkout
// funnel and a daily series of the last 30 UTC days, in cents.
type Analytics struct {
	Totals Totals     `json:"totals"`
	Funnel Funnel     `json:"funnel"`
	Daily  []DayStats `json:"daily"`
}

// Totals are an account's totals since it was enabled. Fees and net are
// after refunds, as in Earnings: Gross = Fees + Net + Refunded.
type Totals struct {
	Currency string `json:"currency"`
	Payments int    `json:"payments"`
	// Gross is what buyers paid (Earnings.Gross).
	Gross int64 `json:"gross_cents" doc:"what buyers paid, before fees and refunds (earnings.gross)"`
	// Fees is the platform's fees after refunds returned their share
	// (Earnings.Fees).
	Fees int64 `json:"fee_cents" doc:"the platform's fees after refunds returned their share (earnings.fees)"`
	// Net is Gross less Fees and Refunded: what the sales earned after
	// fees and refunds, disputed and lost amounts included.
	Net int64 `json:"net_cents" doc:"gross_cents - fee_cents - refunded_cents: earned after fees and refunds (disputed and lost amounts included)"`
	// Refunded is what went back to buyers (Earnings.Refunded).
	Refunded int64 `json:"refunded_cents" doc:"what refunds returned to buyers (earnings.refunded)"`
	Disputes int   `json:"disputes"`
}

// Funnel counts checkout sessions by what became of them; conversion is
// paid out of created, in basis points (10000 = all).
type Funnel struct {
	Created              int `json:"created"`
	Open                 int `json:"open"`
	Paid                 int `json:"paid"`
	Expired              int `json:"expired"`
	ConversionBasisPoint int `json:"conversion_bp"`
}

// DayStats is one UTC day: the checkout sessions created and payments
// made that day.
type DayStats struct {
	Date     string `json:"date"`
	Sessions int    `json:"sessions"`
	Payments int    `json:"payments"`
	// Gross is what the day's payments took.
	Gross int64 `json:"gross_cents" doc:"what the day's payments took, before fees and refunds"`
	// Net is what the day's payments earned after fees and their refunds,
	// whenever those were made.
	Net int64 `json:"net_cents" doc:"what the day's payments earned after fees and their refunds (made on any day)"`
}

// AnalyticsDays is how many days the daily series covers.
const AnalyticsDays = 30

// Analytics reads a project's payment analytics.
func (s *Service) Analytics(ctx context.Context, pr *auth.Principal, projectID string) (Analytics, error) {
	a, err := s.accountOfProject(ctx, pr, projectID)
	if err != nil {
		return Analytics{}, err
	}
	var out Analytics
	out.Totals.Currency = "usd"
	// Fees and net are after refunds, as earnings reports them: the fees
	// bucket of the ledger (a refund returns its fee share from it), and
	// net is what is left of gross after those fees and the refunds.
	err = s.d.DB.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(amount_cents),0), coalesce(sum(refunded_cents),0),
		coalesce(sum(CASE WHEN disputed_at <> '' THEN 1 ELSE 0 END),0) FROM payment_payments WHERE account_id = ?`, a.ID).
		Scan(&out.Totals.Payments, &out.Totals.Gross, &out.Totals.Refunded, &out.Totals.Disputes)
	if err != nil {
		return out, fmt.Errorf("payments: analytics: %w", err)
	}
	b, err := accountBalances(ctx, s.d.DB, a.ID)
	if err != nil {
		return out, fmt.Errorf("payments: analytics: %w", err)
	}
	out.Totals.Fees = b[Fees]
	out.Totals.Net = out.Totals.Gross - out.Totals.Fees - out.Totals.Refunded
	now := s.now()
	err = s.d.DB.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(CASE WHEN state = 'open' AND expires_at > ? THEN 1 ELSE 0 END),0),
		coalesce(sum(CASE WHEN state = 'paid' THEN 1 ELSE 0 END),0) FROM payment_sessions WHERE account_id = ?`, store.FormatTime(now), a.ID).Scan(&out.Funnel.Created, &out.Funnel.Open, &out.Funnel.Paid)
	if err != nil {
		return out, fmt.Errorf("payments: analytics: %w", err)
	}
	out.Funnel.Expired = out.Funnel.Created - out.Funnel.Open - out.Funnel.Paid
	if out.Funnel.Created > 0 {
		out.Funnel.ConversionBasisPoint = out.Funnel.Paid * 10000 / out.Funnel.Created
	}
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	from := today.AddDate(0, 0, -(AnalyticsDays - 1))
	byDay := map[string]*DayStats{}
	for i := range AnalyticsDays {
		d := from.AddDate(0, 0, i).Format("2006-01-02")
		out.Daily = append(out.Daily, DayStats{Date: d})
	}
	for i := range out.Daily {
		byDay[out.Daily[i].Date] = &out.Daily[i]
	}
	type row struct {
		day   string
		n     int
		gross int64
		net   int64
	}
	scanRow := func(r scanner) (row, error) {
		var x row
		return x, r.Scan(&x.day, &x.n, &x.gross, &x.net)
	}
	// A day's net is what its payments earned after their refunds (on
	// whatever day those came): gross less refunds less the fees the
	// ledger keeps for them.
	pays, err := queryList(ctx, s.d.DB, scanRow, `SELECT substr(p.created_at,1,10), count(*), sum(p.amount_cents),
			sum(p.amount_cents - p.refunded_cents - coalesce(f.cents,0))
		FROM payment_payments p LEFT JOIN (
			SELECT payment_id, sum(CASE WHEN credit = 'fees' THEN amount_cents ELSE -amount_cents END) AS cents
			FROM payment_ledger WHERE account_id = ? AND (credit = 'fees' OR debit = 'fees') GROUP BY payment_id) f ON f.payment_id = p.id
		WHERE p.account_id = ? AND p.created_at >= ? GROUP BY 1`, a.ID, a.ID, store.FormatTime(from))
	if err != nil {
		return out, err
	}
	for _, x := range pays {
		if d := byDay[x.day]; d != nil {
			d.Payments, d.Gross, d.Net = x.n, x.gross, x.net
		}
	}
	sess, err := queryList(ctx, s.d.DB, scanRow, `SELECT substr(created_at,1,10), count(*), 0, 0 FROM payment_sessions
		WHERE account_id = ? AND created_at >= ? GROUP BY 1`, a.ID, store.FormatTime(from))
	if err != nil {
		return out, err
	}
	for _, x := range sess {
		if d := byDay[x.day]; d != nil {
			d.Sessions = x.n
		}
	}
	return out, nil
}
