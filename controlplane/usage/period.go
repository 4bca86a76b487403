package usage

import (
	"errors"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
)

// The periods of the usage report.
const (
	PeriodMonth     = "month"
	PeriodLastMonth = "last_month"
	Period7d        = "7d"
	Period30d       = "30d"
	Period90d       = "90d"
	// DefaultPeriod is the period when none is asked for.
	DefaultPeriod = Period30d
)

// ErrBadPeriod is the cause of the 400 for an unknown period.
var ErrBadPeriod = errors.New("usage: unknown period")

// Period is a span of whole UTC days: From is the first day's midnight and
// To the midnight after the last day (exclusive).
type Period struct {
	Name string    `json:"name"`
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	Days int       `json:"days"`
}

// FromDay and ToDay are From and To as the days events are stored under.
func (p Period) FromDay() string { return p.From.Format(time.DateOnly) }

// ToDay is the first day after the period.
func (p Period) ToDay() string { return p.To.Format(time.DateOnly) }

// ParsePeriod returns the period called name as seen at now: month is the
// current UTC month up to and including today, last_month the whole
// previous month, and 7d, 30d and 90d that many days ending with today.
// "" is DefaultPeriod; anything else is a 400 wrapping ErrBadPeriod.
func ParsePeriod(name string, now time.Time) (Period, error) {
	now = now.UTC()
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	tomorrow := today.AddDate(0, 0, 1)
	if name == "" {
		name = DefaultPeriod
	}
	var from, to time.Time
	switch name {
	case PeriodMonth:
		from, to = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC), tomorrow
	case PeriodLastMonth:
		to = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
		from = to.AddDate(0, -1, 0)
	case Period7d:
		from, to = tomorrow.AddDate(0, 0, -7), tomorrow
	case Period30d:
		from, to = tomorrow.AddDate(0, 0, -30), tomorrow
	case Period90d:
		from, to = tomorrow.AddDate(0, 0, -90), tomorrow
	default:
		shown := name
		if len(shown) > 40 {
			shown = shown[:40] + "..."
		}
		return Period{}, api.E(api.KindInvalid, "invalid_period",
			"period %q is not one of month, last_month, 7d, 30d (the default) or 90d", shown).Wrap(ErrBadPeriod)
	}
	return Period{Name: name, From: from, To: to, Days: int(to.Sub(from) / (24 * time.Hour))}, nil
}

// days lists the period's days ("2006-01-02"), oldest first.
func (p Period) days() []string {
	out := make([]string, 0, p.Days)
	for d := p.From; d.Before(p.To); d = d.AddDate(0, 0, 1) {
		out = append(out, d.Format(time.DateOnly))
	}
	return out
}
