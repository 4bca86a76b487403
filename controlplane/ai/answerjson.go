package ai

import (
	"net/http"
	"strconv"
	"sync"

	"github.com/svcplatform/platform/internal/jsonesc"
)

// The plain answer is written by hand: the fields of Answer in its
// encoding/json order (TestAppendAnswer and FuzzAppendAnswer check that
// encoding/json reads it back as the same value), into a pooled buffer,
// in one Write.

var answerBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxPooledAnswer bounds the buffers kept for reuse.
const maxPooledAnswer = 64 << 10

// Shared header values (never modified: Set replaces the slice).
var (
	hdrJSON    = []string{"application/json; charset=utf-8"}
	hdrNoStore = []string{"no-store"}
)

// writeAnswer writes a as api.WriteJSON would, status 200.
func writeAnswer(w http.ResponseWriter, a *Answer) {
	writePooled(w, func(b []byte) []byte { return appendAnswer(b, a) })
}

// writePooled writes the JSON body add appends to a pooled buffer, status
// 200, with the headers api.WriteJSON sets.
func writePooled(w http.ResponseWriter, add func([]byte) []byte) {
	bp := answerBufs.Get().(*[]byte)
	b := add((*bp)[:0])
	h := w.Header()
	h["Content-Type"] = hdrJSON
	h["Cache-Control"] = hdrNoStore
	if len(b) > 2048 {
		// Above what net/http buffers before it would chunk the body
		// (small answers get their Content-Length from net/http).
		h["Content-Length"] = []string{strconv.Itoa(len(b))}
	}
	w.WriteHeader(http.StatusOK)
	w.Write(b)
	if cap(b) <= maxPooledAnswer {
		*bp = b
		answerBufs.Put(bp)
	}
}

// appendAnswer appends a's JSON and a newline (as json.Encoder ends).
func appendAnswer(b []byte, a *Answer) []byte {
	b = append(b, `{"id":`...)
	b = jsonesc.Append(b, a.ID)
	b = append(b, `,"output":`...)
	b = jsonesc.Append(b, a.Output)
	if len(a.ToolCalls) > 0 {
		b = append(b, `,"toolCalls":[`...)
		for i, tc := range a.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = jsonesc.Append(b, tc.ID)
			b = append(b, `,"name":`...)
			b = jsonesc.Append(b, tc.Name)
			b = append(b, `,"arguments":`...)
			b = jsonesc.Append(b, tc.Arguments)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"modelUsed":`...)
	b = jsonesc.Append(b, a.ModelUsed)
	b = append(b, `,"provider":`...)
	b = jsonesc.Append(b, a.Provider)
	b = append(b, `,"finishReason":`...)
	b = jsonesc.Append(b, a.FinishReason)
	b = append(b, `,"truncated":`...)
	b = strconv.AppendBool(b, a.Truncated)
	if a.Note != "" {
		b = append(b, `,"note":`...)
		b = jsonesc.Append(b, a.Note)
	}
	b = append(b, `,"tokensIn":`...)
	b = strconv.AppendInt(b, a.TokensIn, 10)
	b = append(b, `,"tokensOut":`...)
	b = strconv.AppendInt(b, a.TokensOut, 10)
	b = append(b, `,"cost":`...)
	b = appendDollars(b, Micros(a.Cost))
	b = append(b, `,"costMicros":`...)
	b = strconv.AppendInt(b, int64(a.CostMicros), 10)
	b = append(b, `,"latencyMs":`...)
	b = strconv.AppendInt(b, a.LatencyMs, 10)
	if a.FellBackFrom != "" {
		b = append(b, `,"fellBackFrom":`...)
		b = jsonesc.Append(b, a.FellBackFrom)
	}
	if a.ProjectID != "" {
		b = append(b, `,"projectId":`...)
		b = jsonesc.Append(b, a.ProjectID)
	}
	return append(b, '}', '\n')
}

// appendDollars appends m as Micros.String writes it ("0.001234").
func appendDollars(b []byte, m Micros) []byte {
	if m < 0 {
		if m == -m { // the most negative value: leave it to String
			return append(b, m.String()...)
		}
		b = append(b, '-')
		m = -m
	}
	b = strconv.AppendInt(b, int64(m/MicrosPerDollar), 10)
	frac := int64(m % MicrosPerDollar)
	b = append(b, '.')
	for d := int64(100_000); d > 0; d /= 10 {
		b = append(b, byte('0'+frac/d%10))
	}
	return b
}
