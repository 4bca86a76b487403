package agents

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
)

// Signed app events: the payment webhooks' scheme, keyed with the agent's
// events secret.
const (
	HeaderEvent     = "Service-Event"
	HeaderDelivery  = "Service-Delivery"
	HeaderSignature = "Service-Signature"
	// MaxDeliveryID and MaxEventType bound the two headers (ours).
	MaxDeliveryID = 200
	MaxEventType  = 100
)

// ErrBadSignature refuses an event whose signature is missing, malformed,
// wrong or too old.
var ErrBadSignature = errors.New("agents: bad event signature")

// EventAnswer is the answer of POST /api/agents/{id}/events.
type EventAnswer struct {
	RunID     string `json:"run_id"`
	Status    string `json:"status"`
	Duplicate bool   `json:"duplicate"`
}

// Signature is a parsed Service-Signature header.
type Signature struct {
	Timestamp int64
	V1        [][]byte
}

// ParseSignature reads "t=<unix seconds>,v1=<hex>[,v1=<hex>...]"; other
// schemes are ignored, as receivers of such headers do.
func ParseSignature(h string) (Signature, error) {
	var sig Signature
	if len(h) > 1024 {
		return sig, ErrBadSignature
	}
	seenT := false
	for _, part := range strings.Split(h, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return Signature{}, ErrBadSignature
		}
		switch k {
		case "t":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || seenT || n <= 0 {
				return Signature{}, ErrBadSignature
			}
			sig.Timestamp, seenT = n, true
		case "v1":
			b, err := hex.DecodeString(v)
			if err != nil || len(b) != sha256.Size {
				return Signature{}, ErrBadSignature
			}
			if len(sig.V1) < 8 {
				sig.V1 = append(sig.V1, b)
			}
		}
	}
	if !seenT || len(sig.V1) == 0 {
		return Signature{}, ErrBadSignature
	}
	return sig, nil
}

// Sign returns the Service-Signature of body at t with secret.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte("."))
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks header against body with secret at now: a v1 that matches
// in constant time and a timestamp within SignatureTolerance.
func Verify(secret, header string, body []byte, now time.Time) error {
	sig, err := ParseSignature(header)
	if err != nil {
		return err
	}
	if d := now.Sub(time.Unix(sig.Timestamp, 0)); d > SignatureTolerance || d < -SignatureTolerance {
		return ErrBadSignature
	}
	want := mac(secret, strconv.FormatInt(sig.Timestamp, 10), body)
	for _, v := range sig.V1 {
		if hmac.Equal(v, want) {
			return nil
		}
	}
	return ErrBadSignature
}

var errSignature = api.E(api.KindUnauthenticated, "invalid_signature",
	"Service-Signature does not match: sign t=<unix seconds>,v1=<hex HMAC-SHA256 of <t>.<raw body>> with the agent's events secret; timestamps more than 300 seconds from now are refused")

// eventKey identifies a verified event by what its signature covers: the
// signed timestamp and the SHA-256 of the body. The delivery id is not
// signed, so the same signed event sent again under another delivery id
// (a replay within the timestamp's window) has the same key.
func eventKey(signature string, body []byte) string {
	sig, err := ParseSignature(signature)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(body)
	return strconv.FormatInt(sig.Timestamp, 10) + "." + hex.EncodeToString(sum[:])
}

// Event takes a signed app event for agent id: verified against the raw
// body, a repeated delivery id or a repeated signed timestamp and body
// (eventKey) answers the first run, otherwise a run is queued (202 at
// once).
func (s *Service) Event(ctx context.Context, id, eventType, delivery, signature string, body []byte) (EventAnswer, error) {
	a, err := s.st.agent(ctx, s.d.DB, id)
	if err != nil {
		return EventAnswer{}, err
	}
	if len(a.secret) == 0 {
		return EventAnswer{}, api.E(api.KindNotFound, "events_off", "this agent does not take events; turn them on with PATCH {\"events\": true}")
	}
	secret, err := s.d.Sealer.Open(a.secret, s.secretAAD(a.ID))
	if err != nil {
		return EventAnswer{}, api.Internal(err)
	}
	if err := Verify(string(secret), signature, body, s.now()); err != nil {
		return EventAnswer{}, errSignature.Wrap(err)
	}
	eventType, delivery = strings.TrimSpace(eventType), strings.TrimSpace(delivery)
	switch {
	case delivery == "" || len(delivery) > MaxDeliveryID:
		return EventAnswer{}, api.Invalid("%s is required: the delivery's id, at most %d characters", HeaderDelivery, MaxDeliveryID)
	case eventType == "" || len(eventType) > MaxEventType:
		return EventAnswer{}, api.Invalid("%s is required: the event's name, at most %d characters", HeaderEvent, MaxEventType)
	case !json.Valid(body):
		return EventAnswer{}, api.Invalid("the event body must be JSON")
	}
	ev := eventRef{delivery: delivery, key: eventKey(signature, body), eventType: eventType}
	if prev, dup, err := s.duplicateOf(ctx, s.d.DB, a.ID, ev); err != nil {
		return EventAnswer{}, err
	} else if dup {
		return EventAnswer{RunID: prev.ID, Status: prev.Status, Duplicate: true}, nil
	}
	if a.Status == StatusPaused {
		return EventAnswer{}, ErrPaused
	}
	if ok, wait := s.events.take(a.ID, EventsPerMinute); !ok {
		e := api.E(api.KindRateLimited, "rate_limited", "at most %d events a minute per agent", EventsPerMinute).With("limit", EventsPerMinute)
		e.RetryAfter = retrySeconds(wait)
		return EventAnswer{}, e
	}
	input := "App event " + eventType + " (delivery " + delivery + "):\n" + string(body)
	x, dup, err := s.enqueue(ctx, a, a.setup, ModeEvent, input, ev)
	if err != nil {
		s.events.giveBack(a.ID, EventsPerMinute)
		return EventAnswer{}, err
	}
	return EventAnswer{RunID: x.ID, Status: x.Status, Duplicate: dup}, nil
}
