package ai

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/svcplatform/platform/controlplane/ai/provider"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/internal/jsonesc"
)

// sseHeaders starts an event stream.
func sseHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
}

// nativeSink writes the native stream: event meta, delta { text } (or
// { toolCall }), then done or error, each with a JSON data line.
type nativeSink struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	buf     []byte
	started bool
	lazy    bool
	// arrived is when the handler got the request (HeaderGatewayMs;
	// zero: no header).
	arrived time.Time
}

var _ Sink = (*nativeSink)(nil)

func newNativeSink(w http.ResponseWriter) *nativeSink {
	return &nativeSink{w: w, rc: http.NewResponseController(w), buf: make([]byte, 0, 512)}
}

func (s *nativeSink) send() error {
	if _, err := s.w.Write(s.buf); err != nil {
		return err
	}
	if s.lazy {
		return nil
	}
	return s.rc.Flush()
}

// batchSink is a Sink that can leave meta and pieces in the response's
// buffer until flush: the relay flushes whenever the upstream has nothing
// more buffered, so pieces that arrived together leave in one write and
// none waits on a silent upstream. done and error events always flush.
type batchSink interface {
	Sink
	setLazy(on bool)
	flush()
}

func (s *nativeSink) setLazy(on bool) { s.lazy = on }
func (s *nativeSink) flush()          { s.rc.Flush() }

func (s *nativeSink) event(name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.buf = append(s.buf[:0], "event: "...)
	s.buf = append(s.buf, name...)
	s.buf = append(s.buf, "\ndata: "...)
	s.buf = append(s.buf, data...)
	s.buf = append(s.buf, "\n\n"...)
	return s.send()
}

// Meta starts the stream once a model answers.
func (s *nativeSink) Meta(m Meta) error {
	setGatewayTime(s.w, s.arrived, m.upstream)
	sseHeaders(s.w)
	s.started = true
	return s.event("meta", m)
}

// Delta writes one piece.
func (s *nativeSink) Delta(d provider.Delta) error {
	if d.ToolCall != nil {
		return s.event("delta", struct {
			ToolCall *provider.ToolCallDelta `json:"toolCall"`
		}{d.ToolCall})
	}
	s.buf = append(s.buf[:0], "event: delta\ndata: {\"text\":"...)
	s.buf = jsonesc.Append(s.buf, d.Text)
	s.buf = append(s.buf, "}\n\n"...)
	return s.send()
}

// doneEvent is the data of the done event.
type doneEvent struct {
	ID           string `json:"id"`
	FinishReason string `json:"finishReason"`
	Truncated    bool   `json:"truncated"`
	Note         string `json:"note,omitempty"`
	TokensIn     int64  `json:"tokensIn"`
	TokensOut    int64  `json:"tokensOut"`
	Cost         USD    `json:"cost"`
	CostMicros   Micros `json:"costMicros"`
	ModelUsed    string `json:"modelUsed"`
	FellBackFrom string `json:"fellBackFrom,omitempty"`
	LatencyMs    int64  `json:"latencyMs"`
}

func (s *nativeSink) done(a *Answer) error {
	s.lazy = false
	return s.event("done", doneEvent{ID: a.ID, FinishReason: a.FinishReason, Truncated: a.Truncated, Note: a.Note, TokensIn: a.TokensIn,
		TokensOut: a.TokensOut, Cost: a.Cost, CostMicros: a.CostMicros, ModelUsed: a.ModelUsed, FellBackFrom: a.FellBackFrom, LatencyMs: a.LatencyMs})
}

// fail writes the error event: its code, message, and what was charged.
func (s *nativeSink) fail(err error, a *Answer) error {
	s.lazy = false
	e := api.AsError(err)
	obj := map[string]any{"code": e.Code, "message": e.Message}
	if e.Kind == api.KindInternal {
		obj["code"], obj["message"] = "stream_error", "the stream failed"
	}
	if a != nil {
		obj["tokensIn"], obj["tokensOut"], obj["cost"], obj["costMicros"] = a.TokensIn, a.TokensOut, a.Cost, a.CostMicros
	}
	return s.event("error", obj)
}

// retryAfterSeconds renders a Retry-After value.
func retryAfterSeconds(n int) string { return strconv.Itoa(n) }
