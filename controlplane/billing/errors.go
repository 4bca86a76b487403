package billing

import (
	"errors"
	"fmt"
	"net/http"
)

// Error is a refusal a client may see: it carries its HTTP status and the
// specification's error code (the api package's coded-error convention), so
// that this package needs no HTTP layer. An error with added detail still
// matches its sentinel under errors.Is.
type Error struct {
	status int
	code   string
	msg    string
	base   *Error // the sentinel this one details
}

func (e *Error) Error() string { return e.msg }

// Status is the HTTP status of the refusal.
func (e *Error) Status() int { return e.status }

// ErrorCode is the specification's code of the refusal.
func (e *Error) ErrorCode() string { return e.code }

// Is matches the sentinel e details.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && e.base == t
}

// detail returns a copy of e whose message adds specifics.
func (e *Error) detail(format string, args ...any) *Error {
	base := e
	if e.base != nil {
		base = e.base
	}
	return &Error{status: e.status, code: e.code, msg: e.msg + ": " + fmt.Sprintf(format, args...), base: base}
}

// The ledger's refusals. The 402s are the specification's AI error table;
// nothing is charged or held when one is returned.
var (
	// ErrCreditsExhausted: included credit and Balance both used up.
	ErrCreditsExhausted = &Error{status: http.StatusPaymentRequired, code: "ai_credits_exhausted", msg: "included credit and the Balance are both used up; nothing was charged (load the Balance or wait for next month's credit)"}
	// ErrCreditsInsufficient: credit left is below the request's estimate.
	ErrCreditsInsufficient = &Error{status: http.StatusPaymentRequired, code: "ai_credits_insufficient", msg: "credit left is below this request's estimate; nothing was charged (lower max_tokens or load the Balance)"}
	// ErrSpendLimit: the estimate would take the month past the spending limit.
	ErrSpendLimit = &Error{status: http.StatusPaymentRequired, code: "spend_limit_reached", msg: "this request's estimate would take the month past the spending limit; nothing was charged (an admin can raise it)"}
	// ErrRequestTooLarge: the estimate is above what one request may reserve.
	ErrRequestTooLarge = &Error{status: http.StatusPaymentRequired, code: "ai_request_too_large", msg: "this request's estimate is above what one request may reserve (2 dollars on hobby, 10 on pro and enterprise); nothing was charged (lower max_tokens or shorten the input)"}

	// ErrInvalidAmount: an amount that is zero, negative or too large.
	ErrInvalidAmount = &Error{status: http.StatusBadRequest, code: "invalid_amount", msg: "invalid amount"}
	// ErrUnknownPurpose: a purpose other than ai, embeddings, agent or storage.
	ErrUnknownPurpose = &Error{status: http.StatusBadRequest, code: "invalid_request", msg: "unknown purpose"}
	// ErrUnknownWorkspace: no such workspace.
	ErrUnknownWorkspace = &Error{status: http.StatusNotFound, code: "not_found", msg: "workspace not found"}
	// ErrReservationNotFound: no such reservation.
	ErrReservationNotFound = &Error{status: http.StatusNotFound, code: "not_found", msg: "reservation not found"}
	// ErrReservationClosed: Settle of a reservation already released.
	ErrReservationClosed = &Error{status: http.StatusConflict, code: "reservation_closed", msg: "reservation already released: nothing more can be charged on it"}
)

// ErrMismatch is returned by Verify when the balance rows differ from what
// the entries add up to, or an invariant does not hold.
var ErrMismatch = errors.New("billing: ledger mismatch")
