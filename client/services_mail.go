package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// EmailRequest is a message an app sends as its project: one or more
// recipients, a subject, and text, HTML or both.
type EmailRequest struct {
	To      []string `json:"to"`
	Subject string   `json:"subject"`
	Text    string   `json:"text,omitempty"`
	HTML    string   `json:"html,omitempty"`
	// ReplyTo overrides the project's reply-to address.
	ReplyTo string `json:"replyTo,omitempty"`
}

// Email is a message of a project.
type Email struct {
	ID        string   `json:"id"`
	ProjectID string   `json:"projectId"`
	From      string   `json:"from"`
	ReplyTo   string   `json:"replyTo,omitempty"`
	To        []string `json:"to"`
	Subject   string   `json:"subject"`
	// State is queued, sent or failed.
	State         string     `json:"state"`
	Attempts      int        `json:"attempts"`
	FailureReason string     `json:"failureReason,omitempty"`
	LastError     string     `json:"lastError,omitempty"`
	SMTPCode      int        `json:"smtpCode,omitempty"`
	CreatedAt     time.Time  `json:"createdAt"`
	SentAt        *time.Time `json:"sentAt"`
	FailedAt      *time.Time `json:"failedAt"`
}

// EmailPage is a page of a project's messages, newest first; NextCursor
// (nil on the last page) continues it.
type EmailPage struct {
	Emails     []Email `json:"emails"`
	NextCursor *string `json:"nextCursor"`
}

// EmailListOptions select a page of messages.
type EmailListOptions struct {
	// State narrows them: queued, sent or failed.
	State string
	// Limit is 1 to 100 (0: the API's default, 20).
	Limit  int
	Cursor string
}

// SendEmail queues a message from the project's sender. The recipients
// count against the plan's daily limit (an *Error with status 429 and code
// mail_rate_limited past it). With an idempotency key already used in the
// project, the message it made is answered and nothing is sent again.
func (c *Client) SendEmail(ctx context.Context, projectID string, m EmailRequest, idempotencyKey string) (Email, error) {
	h := http.Header{}
	if idempotencyKey != "" {
		h.Set("Idempotency-Key", idempotencyKey)
	}
	var out struct {
		Email Email `json:"email"`
	}
	return out.Email, c.do(ctx, request{method: http.MethodPost, path: "/api/projects/" + esc(projectID) + "/emails", header: h, json: m}, &out)
}

// Emails lists a page of a project's messages.
func (c *Client) Emails(ctx context.Context, projectID string, o EmailListOptions) (EmailPage, error) {
	q := url.Values{}
	if o.State != "" {
		q.Set("state", o.State)
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	var out EmailPage
	return out, c.do(ctx, request{method: http.MethodGet, path: "/api/projects/" + esc(projectID) + "/emails", query: q}, &out)
}

// Email reads one message of a project.
func (c *Client) Email(ctx context.Context, projectID, emailID string) (Email, error) {
	var out struct {
		Email Email `json:"email"`
	}
	return out.Email, c.get(ctx, "/api/projects/"+esc(projectID)+"/emails/"+esc(emailID), &out)
}
