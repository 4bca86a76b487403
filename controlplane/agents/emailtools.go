package agents

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/svcplatform/platform/controlplane/auth"
)

// maxEmailRecipients bounds the recipients of one send_email call (the
// mail area's own limit is larger: an agent writes to a few people).
const maxEmailRecipients = 10

type sendEmailArgs struct {
	To      []string `json:"to"`
	Subject string   `json:"subject"`
	Text    string   `json:"text,omitempty"`
	HTML    string   `json:"html,omitempty"`
	ReplyTo string   `json:"replyTo,omitempty"`
}

type listEmailsArgs struct {
	State  string `json:"state,omitempty"`
	Limit  int    `json:"limit,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

// emailTools send e-mail as the agent's project and read what it sent,
// through POST and GET /api/projects/{id}/emails: the project's sender,
// the plan's daily sending limit (429 mail_rate_limited) and the emails
// metric are the mail area's, as for any caller.
func emailTools() []*Tool {
	return []*Tool{
		{Name: "send_email", op: auth.OpMailSend,
			Description: "Send an e-mail as the agent's project, from the project's sender: to (1-10 addresses), subject (one line), text or html (or both). Counts against the plan's daily sending limit and as e-mails in usage; answers the queued message with its id and state.",
			Parameters: schema(`{"type":"object","properties":{` +
				`"to":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":10,"description":"recipient addresses"},` +
				`"subject":{"type":"string","description":"one line, at most 900 bytes"},` +
				`"text":{"type":"string","description":"the plain-text body"},` +
				`"html":{"type":"string","description":"the HTML body"},` +
				`"replyTo":{"type":"string","description":"where replies go instead of the project's reply-to address"}},` +
				`"required":["to","subject"],"additionalProperties":false}`),
			build: func(p string, raw json.RawMessage) (toolRequest, error) {
				var a sendEmailArgs
				if err := decodeArgs(raw, &a); err != nil {
					return toolRequest{}, err
				}
				if len(a.To) == 0 || len(a.To) > maxEmailRecipients {
					return toolRequest{}, badArgs("to must hold 1 to %d addresses", maxEmailRecipients)
				}
				if a.Text == "" && a.HTML == "" {
					return toolRequest{}, badArgs("text or html is required")
				}
				return toolRequest{Method: http.MethodPost, Path: "/api/projects/" + p + "/emails", Body: a}, nil
			}},
		{Name: "emails_list", op: auth.OpMailRead,
			Description: "List the project's e-mails, newest first, each with its state (queued, sent or failed) and why it failed (state to narrow them, limit 1-100, cursor from the previous page).",
			Parameters:  schema(`{"type":"object","properties":{"state":{"type":"string","enum":["queued","sent","failed"]},"limit":{"type":"integer","minimum":1,"maximum":100},"cursor":{"type":"string"}},"additionalProperties":false}`),
			build: func(p string, raw json.RawMessage) (toolRequest, error) {
				var a listEmailsArgs
				if err := decodeArgs(raw, &a); err != nil {
					return toolRequest{}, err
				}
				q := url.Values{}
				if a.State != "" {
					q.Set("state", a.State)
				}
				if a.Limit != 0 {
					q.Set("limit", strconv.Itoa(a.Limit))
				}
				if a.Cursor != "" {
					q.Set("cursor", a.Cursor)
				}
				return toolRequest{Method: http.MethodGet, Path: "/api/projects/" + p + "/emails", Query: q}, nil
			}},
	}
}
