// Package plans holds every per-plan limit of the specification in one table.
//
// Values the specification gives are quoted from it; values it leaves open
// (marked "ours" below) are this platform's choice and are documented in the
// README. Unlimited is expressed as -1.
package plans

import (
	"context"
	"fmt"
	"strings"
)

// Name is a plan's identifier.
type Name string

// The plans, from smallest to largest.
const (
	Hobby      Name = "hobby"
	Pro        Name = "pro"
	Team       Name = "team"
	Scale      Name = "scale"
	Enterprise Name = "enterprise"
)

// Unlimited marks a limit that does not apply.
const Unlimited = -1

// GB is 10^9 bytes, the unit the specification's storage limits use.
const GB int64 = 1_000_000_000

// Limits is everything that differs by plan.
type Limits struct {
	// Databases is how many databases a workspace may hold.
	Databases int `json:"databases"`
	// DatabaseStorageBytes is the storage allowance of all databases together.
	DatabaseStorageBytes int64 `json:"databaseStorageBytes"`
	// VectorCollections is how many vector collections a workspace may hold.
	VectorCollections int `json:"vectorCollections"`
	// MediaAssets is how many videos and live channels a workspace may hold; 0 means none.
	MediaAssets int `json:"mediaAssets"`
	// PaymentAccounts is how many projects may take payments.
	PaymentAccounts int `json:"paymentAccounts"`
	// AIRequestsPerMinute is the per-workspace AI rate (chat and embeddings each).
	AIRequestsPerMinute int `json:"aiRequestsPerMinute"`
	// AIReservationCents is the most one AI request may reserve.
	AIReservationCents int64 `json:"aiReservationCents"`
	// AICreditCents is the included monthly AI credit.
	AICreditCents int64 `json:"aiCreditCents"`
	// UsageCreditCents is a monthly usage credit that pays for storage overage first.
	UsageCreditCents int64 `json:"usageCreditCents"`
	// AgentConcurrentRuns is how many agent runs may run at once.
	AgentConcurrentRuns int `json:"agentConcurrentRuns"`
	// SitePasswords tells whether Shield site passwords may be set.
	SitePasswords bool `json:"sitePasswords"`
	// StorageOverage tells whether storage past the allowance is charged (paid
	// plans) rather than held (hobby).
	StorageOverage bool `json:"storageOverage"`
	// LogRetentionHours is how long a project's log lines (build, deploy,
	// app and function output) are kept, and LogBytes how much of their
	// text, per project (ours; Vercel's runtime logs are kept by plan too).
	LogRetentionHours int `json:"logRetentionHours"`
	LogBytes          int `json:"logBytes"`
	// MonthlyPriceCents is the plan's price for a UTC month, paid from the
	// workspace Balance (ours: the specification names no prices).
	MonthlyPriceCents int64 `json:"monthlyPriceCents"`
	// SelfServe tells whether an owner may move to the plan themselves
	// (POST /api/workspace/plan); otherwise only the operator sets it.
	SelfServe bool `json:"selfServe"`
}

// table is the one place plan limits live.
var table = map[Name]Limits{
	Hobby: {
		Databases: 1, DatabaseStorageBytes: GB / 2, VectorCollections: 1, MediaAssets: 0,
		PaymentAccounts: 1, AIRequestsPerMinute: 60, AIReservationCents: 200, AICreditCents: 0,
		AgentConcurrentRuns: 1, SitePasswords: false, LogRetentionHours: 24, LogBytes: 1 << 20,
		MonthlyPriceCents: 0, SelfServe: true,
	},
	Pro: {
		Databases: 10, DatabaseStorageBytes: 5 * GB, VectorCollections: 10, MediaAssets: 100,
		PaymentAccounts: 10, AIRequestsPerMinute: 600, AIReservationCents: 1000, AICreditCents: 1000,
		AgentConcurrentRuns: 5, SitePasswords: true, StorageOverage: true, LogRetentionHours: 72, LogBytes: 4 << 20,
		MonthlyPriceCents: 2000, SelfServe: true,
	},
	Team: { // vectors, media, payments, AI: ours (as pro)
		Databases: 50, DatabaseStorageBytes: 25 * GB, VectorCollections: 10, MediaAssets: 100,
		PaymentAccounts: 10, AIRequestsPerMinute: 600, AIReservationCents: 1000, AICreditCents: 1000,
		UsageCreditCents: 2000, AgentConcurrentRuns: 10, SitePasswords: true, StorageOverage: true,
		LogRetentionHours: 7 * 24, LogBytes: 8 << 20,
		MonthlyPriceCents: 6000, SelfServe: true,
	},
	Scale: { // vectors, media, payments, AI: ours (as enterprise)
		Databases: 100, DatabaseStorageBytes: 100 * GB, VectorCollections: 200, MediaAssets: 1000,
		PaymentAccounts: 100, AIRequestsPerMinute: 6000, AIReservationCents: 1000, AICreditCents: 10000,
		AgentConcurrentRuns: 20, SitePasswords: true, StorageOverage: true, LogRetentionHours: 7 * 24, LogBytes: 8 << 20,
		MonthlyPriceCents: 25000, SelfServe: true,
	},
	Enterprise: { // databases, storage, agents: ours (as scale)
		Databases: 100, DatabaseStorageBytes: 100 * GB, VectorCollections: 200, MediaAssets: 1000,
		PaymentAccounts: 100, AIRequestsPerMinute: 6000, AIReservationCents: 1000, AICreditCents: 10000,
		AgentConcurrentRuns: 20, SitePasswords: true, StorageOverage: true, LogRetentionHours: 30 * 24, LogBytes: 16 << 20,
		// Enterprise is agreed with the operator, who sets it.
		MonthlyPriceCents: 100000, SelfServe: false,
	},
}

// ErrUnknown is returned for a plan name that is not in the table.
var ErrUnknown = fmt.Errorf("plans: unknown plan")

// Parse returns the plan called s (case-insensitive).
func Parse(s string) (Name, error) {
	n := Name(strings.ToLower(strings.TrimSpace(s)))
	if _, ok := table[n]; !ok {
		return "", fmt.Errorf("%w %q (want hobby, pro, team, scale or enterprise)", ErrUnknown, s)
	}
	return n, nil
}

// Of returns the limits of plan n; an unknown plan gets hobby's.
func Of(n Name) Limits {
	if l, ok := table[n]; ok {
		return l
	}
	return table[Hobby]
}

// Table returns every plan's limits and price, in order (the dashboard and
// the usage report show it).
func Table() []Plan {
	out := make([]Plan, 0, len(table))
	for _, n := range All() {
		out = append(out, Plan{Name: n, Limits: table[n]})
	}
	return out
}

// Plan is one row of the table.
type Plan struct {
	Name Name `json:"name"`
	Limits
}

// All returns the plan names in order.
func All() []Name { return []Name{Hobby, Pro, Team, Scale, Enterprise} }

// Source tells a workspace's plan (*accounts.Service): what every area
// that enforces a plan's limits is given.
type Source interface {
	Plan(ctx context.Context, workspace string) Name
}
