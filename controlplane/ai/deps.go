package ai

import (
	"context"
	"time"
)

// Ledger is what the gateway needs of the billing ledger (controlplane/billing):
// hold an estimate before a call, then charge exactly and release the rest.
// Its refusals are api errors answering 402 with the specification's codes
// (ai_credits_exhausted, ai_credits_insufficient, spend_limit_reached,
// ai_request_too_large) and pass through unchanged. Settle takes actual in
// full: what the holds and the money left cannot pay is recorded as owed,
// so the cost an answer and the history report is what the ledger took.
type Ledger interface {
	Reserve(ctx context.Context, r ReserveRequest) (Reservation, error)
	Settle(ctx context.Context, reservationID string, actual Micros) error
	Release(ctx context.Context, reservationID string) error
	Summary(ctx context.Context, workspace string) (CreditSummary, error)
}

// ReserveRequest asks the ledger to hold Amount for one request, refusing
// when it is above MaxPerRequest.
type ReserveRequest struct {
	Workspace, Project, Purpose, Ref string
	Amount, MaxPerRequest            Micros
}

// Reservation is a held amount.
type Reservation struct {
	ID        string
	Amount    Micros
	ExpiresAt time.Time
}

// CreditSummary is the workspace's AI money as GET /api/ai/chat shows it.
type CreditSummary struct {
	Included     Micros `json:"included"`
	IncludedUsed Micros `json:"includedUsed"`
	IncludedLeft Micros `json:"includedLeft"`
	Balance      Micros `json:"balance"`
	Reserved     Micros `json:"reserved"`
	// Owed is what requests used above what could be charged when they
	// finished; the next Balance load pays it.
	Owed       Micros  `json:"owed"`
	MonthSpend Micros  `json:"monthSpend"`
	SpendLimit *Micros `json:"spendLimit"`
}

// EmailVerifier tells whether the workspace owner's e-mail is verified
// (hobby workspaces need it for vendor models).
type EmailVerifier interface {
	OwnerEmailVerified(ctx context.Context, workspace string) (bool, error)
}

// Projects tells whether a project exists in a workspace (spend attribution).
type Projects interface {
	Exists(ctx context.Context, workspace, id string) (bool, error)
}
