package mail

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"strings"
)

// Report types a bounce listener understands (the report-type parameter
// of multipart/report).
const (
	// ReportDSN is an RFC 3464 delivery status notification.
	ReportDSN = "delivery-status"
	// ReportARF is an RFC 5965 feedback report (a complaint).
	ReportARF = "feedback-report"
)

// Limits of the report parser.
const (
	maxReportParts      = 16
	maxReportRecipients = 100
	maxStatusPart       = 64 << 10
)

// Report is what a delivery status notification or a feedback report says.
type Report struct {
	// Type is ReportDSN or ReportARF.
	Type string
	// Recipients are a DSN's per-recipient fields.
	Recipients []RecipientStatus
	// FeedbackType is an ARF report's Feedback-Type (abuse, fraud, ...).
	FeedbackType string
	// OriginalRcptTo are an ARF report's Original-Rcpt-To addresses.
	OriginalRcptTo []string
}

// RecipientStatus is one recipient's block of a DSN.
type RecipientStatus struct {
	// Recipient is the Final-Recipient address (lower-cased), or the
	// Original-Recipient when that is the only one given.
	Recipient string
	// Original is the Original-Recipient address, when given.
	Original string
	// Action is failed, delayed, delivered, relayed or expanded.
	Action string
	// Status is the enhanced status code (5.1.1).
	Status string
	// Diagnostic is the Diagnostic-Code text ("smtp; 550 5.1.1 ...").
	Diagnostic string
}

// Permanent reports a recipient refused for good: action failed with a
// 5.x.x status.
func (r RecipientStatus) Permanent() bool {
	return r.Action == "failed" && strings.HasPrefix(r.Status, "5.")
}

// ErrNotReport is returned for a message that is neither a delivery status
// notification nor a feedback report.
var ErrNotReport = errors.New("mail: not a delivery status notification (multipart/report; report-type=delivery-status) nor a feedback report (report-type=feedback-report)")

// ParseReport reads a message (headers and body, as received over SMTP)
// and returns the report it carries. Anything but multipart/report with
// report-type delivery-status or feedback-report is ErrNotReport.
func ParseReport(r io.Reader) (*Report, error) {
	m, err := mail.ReadMessage(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotReport, err)
	}
	mt, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/report" || params["boundary"] == "" {
		return nil, ErrNotReport
	}
	rep := &Report{Type: strings.ToLower(params["report-type"])}
	if rep.Type != ReportDSN && rep.Type != ReportARF {
		return nil, ErrNotReport
	}
	mr := multipart.NewReader(m.Body, params["boundary"])
	found := false
	for i := 0; ; i++ {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("mail: report: %w", err)
		}
		if i >= maxReportParts {
			return nil, fmt.Errorf("mail: report has more than %d parts", maxReportParts)
		}
		pt, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		want := map[string]string{ReportDSN: "message/delivery-status", ReportARF: "message/feedback-report"}[rep.Type]
		if pt != want && !(rep.Type == ReportDSN && pt == "message/global-delivery-status") {
			continue
		}
		body, err := io.ReadAll(io.LimitReader(decodePart(p), maxStatusPart+1))
		if err != nil {
			return nil, fmt.Errorf("mail: report: %w", err)
		}
		if len(body) > maxStatusPart {
			return nil, fmt.Errorf("mail: the %s part is larger than %d bytes", pt, maxStatusPart)
		}
		blocks, err := fieldBlocks(body)
		if err != nil {
			return nil, err
		}
		if rep.Type == ReportARF {
			if len(blocks) == 0 {
				return nil, errors.New("mail: empty feedback report")
			}
			h := blocks[0]
			rep.FeedbackType = strings.ToLower(strings.TrimSpace(h.Get("Feedback-Type")))
			for _, v := range h.Values("Original-Rcpt-To") {
				if a := bareAddress(v); a != "" && len(rep.OriginalRcptTo) < maxReportRecipients {
					rep.OriginalRcptTo = append(rep.OriginalRcptTo, a)
				}
			}
			if rep.FeedbackType == "" {
				return nil, errors.New("mail: feedback report without Feedback-Type")
			}
			found = true
			break
		}
		// The first block is per message; each next one is a recipient.
		for _, h := range blocks[1:] {
			rs := RecipientStatus{Recipient: typedAddress(h.Get("Final-Recipient")), Original: typedAddress(h.Get("Original-Recipient")),
				Action: strings.ToLower(strings.TrimSpace(h.Get("Action"))), Status: statusCode(h.Get("Status")),
				Diagnostic: clipText(strings.Join(strings.Fields(h.Get("Diagnostic-Code")), " "), 500)}
			if rs.Recipient == "" {
				rs.Recipient = rs.Original
			}
			if rs.Recipient == "" || rs.Action == "" {
				continue
			}
			if len(rep.Recipients) == maxReportRecipients {
				break
			}
			rep.Recipients = append(rep.Recipients, rs)
		}
		if len(rep.Recipients) == 0 {
			return nil, errors.New("mail: delivery status notification without a recipient block (Final-Recipient and Action)")
		}
		found = true
		break
	}
	if !found {
		return nil, fmt.Errorf("%w: no %s part", ErrNotReport, rep.Type)
	}
	return rep, nil
}

// decodePart undoes a part's base64 transfer encoding (multipart.Reader
// undoes quoted-printable itself).
func decodePart(p *multipart.Part) io.Reader {
	switch strings.ToLower(strings.TrimSpace(p.Header.Get("Content-Transfer-Encoding"))) {
	case "base64":
		return base64.NewDecoder(base64.StdEncoding, p)
	case "quoted-printable":
		return quotedprintable.NewReader(p)
	}
	return p
}

// fieldBlocks splits a message/delivery-status body into its header
// blocks (separated by blank lines).
func fieldBlocks(b []byte) ([]textproto.MIMEHeader, error) {
	b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
	var out []textproto.MIMEHeader
	for _, chunk := range bytes.Split(b, []byte("\n\n")) {
		chunk = bytes.TrimLeft(chunk, "\n")
		if len(bytes.TrimSpace(chunk)) == 0 {
			continue
		}
		if len(out) > maxReportRecipients {
			break
		}
		tr := textproto.NewReader(bufio.NewReader(io.MultiReader(bytes.NewReader(chunk), strings.NewReader("\n\n"))))
		h, err := tr.ReadMIMEHeader()
		if err != nil && len(h) == 0 {
			return nil, fmt.Errorf("mail: status fields: %w", err)
		}
		out = append(out, h)
	}
	return out, nil
}

// typedAddress reads "rfc822; user@example.com" as the address.
func typedAddress(v string) string {
	typ, addr, ok := strings.Cut(v, ";")
	if !ok {
		addr = typ
	} else if t := strings.ToLower(strings.TrimSpace(typ)); t != "rfc822" && t != "utf-8" {
		return ""
	}
	return bareAddress(addr)
}

// bareAddress lower-cases an address, without angle brackets; "" unless
// it looks like local@domain.
func bareAddress(v string) string {
	a := strings.ToLower(strings.Trim(strings.TrimSpace(v), "<>"))
	local, dom, ok := strings.Cut(a, "@")
	if !ok || local == "" || dom == "" || len(a) > 320 || strings.ContainsAny(a, " <>\"") || strings.ContainsFunc(a, isControl) {
		return ""
	}
	return a
}

// statusCode returns the enhanced status code (class.subject.detail) at the
// start of v, "" when there is none.
func statusCode(v string) string {
	f := strings.Fields(v)
	if len(f) == 0 {
		return ""
	}
	parts := strings.Split(f[0], ".")
	if len(parts) != 3 || len(parts[0]) != 1 || !strings.Contains("245", parts[0]) {
		return ""
	}
	for _, p := range parts[1:] {
		if len(p) == 0 || len(p) > 3 || strings.Trim(p, "0123456789") != "" {
			return ""
		}
	}
	return f[0]
}
