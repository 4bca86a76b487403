package mail

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/store"
)

// List page sizes of GET /api/projects/{id}/emails.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// ListQuery pages and filters a project's messages.
type ListQuery struct {
	Limit  int
	Cursor string
	// State, when set, is queued, sent or failed.
	State string
}

func encodeCursor(r record) string {
	return base64.RawURLEncoding.EncodeToString([]byte(store.FormatTime(r.CreatedAt) + "|" + r.ID))
}

var errCursor = api.E(api.KindInvalid, "invalid_cursor", "cursor is not one this API returned; use nextCursor of the previous page")

func decodeCursor(c string) (at, id string, err error) {
	b, derr := base64.RawURLEncoding.DecodeString(c)
	at, id, ok := strings.Cut(string(b), "|")
	if derr != nil || !ok || id == "" || len(c) > 200 || store.ParseTime(at).IsZero() {
		return "", "", errCursor
	}
	return at, id, nil
}

// Emails lists a project's messages, newest first.
func (s *Service) Emails(ctx context.Context, pr *auth.Principal, projectID string, q ListQuery) (EmailPage, error) {
	p, err := s.d.Projects.Get(ctx, pr.WorkspaceID, projectID)
	if err != nil {
		return EmailPage{}, err
	}
	switch q.State {
	case "", StateQueued, StateSent, StateFailed:
	default:
		return EmailPage{}, api.Invalid("state must be queued, sent or failed")
	}
	if q.Limit <= 0 {
		q.Limit = DefaultPageSize
	}
	var at, id string
	if q.Cursor != "" {
		if at, id, err = decodeCursor(q.Cursor); err != nil {
			return EmailPage{}, err
		}
	}
	rows, err := listMessages(ctx, s.d.DB, p.ID, q.State, at, id, q.Limit)
	if err != nil {
		return EmailPage{}, err
	}
	out := EmailPage{Emails: make([]Email, 0, min(len(rows), q.Limit))}
	for i, r := range rows {
		if i == q.Limit {
			c := encodeCursor(rows[i-1])
			out.NextCursor = &c
			break
		}
		out.Emails = append(out.Emails, r.view())
	}
	return out, nil
}

var errEmailNotFound = api.NotFound("e-mail")

// Email reads one of a project's messages.
func (s *Service) Email(ctx context.Context, pr *auth.Principal, projectID, id string) (Email, error) {
	p, err := s.d.Projects.Get(ctx, pr.WorkspaceID, projectID)
	if err != nil {
		return Email{}, err
	}
	r, err := getMessage(ctx, s.d.DB, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && r.Project != p.ID {
		return Email{}, errEmailNotFound
	}
	if err != nil {
		return Email{}, err
	}
	return r.view(), nil
}
