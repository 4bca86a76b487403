package agents

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/auth"
)

// maxEmailRecipients bounds the recipients of one send_email call (the
// mail area's own limit is larger: an agent writes to a few people).
const maxEmailRecipients = 10

type sendEmailArgs struct {
	To      []string `json:"to" jsonschema:"recipient addresses"`
	Subject string   `json:"subject" jsonschema:"one line, at most 900 bytes"`
	Text    string   `json:"text,omitempty" jsonschema:"the plain-text body"`
	HTML    string   `json:"html,omitempty" jsonschema:"the HTML body"`
	ReplyTo string   `json:"replyTo,omitempty" jsonschema:"where replies go instead of the project's reply-to address"`
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
		withArgs(&Tool{Name: "send_email", op: auth.OpMailSend,
			Description: "Send an e-mail as the agent's project, from the project's sender: to (1-10 addresses), subject (one line), text or html (or both). Counts against the plan's daily sending limit and as e-mails in usage; answers the queued message with its id and state."},
			func(p string, a sendEmailArgs) (toolRequest, error) {
				if len(a.To) == 0 || len(a.To) > maxEmailRecipients {
					return toolRequest{}, badArgs("to must hold 1 to %d addresses", maxEmailRecipients)
				}
				if a.Text == "" && a.HTML == "" {
					return toolRequest{}, badArgs("text or html is required")
				}
				return toolRequest{Method: http.MethodPost, Path: "/api/projects/" + p + "/emails", Body: a}, nil
			},
			count("to", 1, maxEmailRecipients)),
		withArgs(&Tool{Name: "emails_list", op: auth.OpMailRead,
			Description: "List the project's e-mails, newest first, each with its state (queued, sent or failed) and why it failed (state to narrow them, limit 1-100, cursor from the previous page)."},
			func(p string, a listEmailsArgs) (toolRequest, error) {
				return toolRequest{Method: http.MethodGet, Path: "/api/projects/" + p + "/emails",
					Query: query("state", a.State, "limit", itoa(a.Limit), "cursor", a.Cursor)}, nil
			},
			oneOf("state", "queued", "sent", "failed"), between("limit", 1, 100)),
	}
}
