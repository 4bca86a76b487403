package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

var (
	errFirstByte = errors.New("no response from the upstream in time")
	errIdle      = errors.New("the upstream stream stalled")
)

// maxErrorBody bounds how much of an upstream error body is read.
const maxErrorBody = 64 << 10

// maxAnswerBody bounds a whole (unstreamed) answer.
const maxAnswerBody = 32 << 20

// call is one upstream request whose context is cancelled, with a cause,
// when a deadline of the call passes.
type call struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	resp   *http.Response
	idle   time.Duration
	timer  *time.Timer
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Header values every upstream request carries.
var (
	hdrContentType = []string{"application/json"}
	hdrAccept      = []string{"application/json, text/event-stream"}
)

// jsonAppender is a request body that writes its own JSON (with the
// newline encoding/json's Encoder ends with).
type jsonAppender interface{ appendJSON(dst []byte) []byte }

// post sends body to url and returns the call once a 200 arrived; any other
// status is read and classified with parseErr.
func post(ctx context.Context, cfg *Config, url string, body any, header func(http.Header),
	parseErr func(status int, body []byte) (code, msg string)) (*call, error) {
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer bufPool.Put(buf)
	if a, ok := body.(jsonAppender); ok {
		buf.Write(a.appendJSON(buf.AvailableBuffer()))
	} else {
		enc := json.NewEncoder(buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(body); err != nil {
			return nil, fmt.Errorf("provider %s: encode request: %w", cfg.Name, err)
		}
	}
	cctx, cancel := context.WithCancelCause(ctx)
	c := &call{ctx: cctx, cancel: cancel, idle: cfg.IdleTimeout}
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, url, bytes.NewReader(buf.Bytes()))
	if err != nil {
		cancel(nil)
		return nil, &Error{Provider: cfg.Name, Kind: ErrBadRequest, Err: err}
	}
	req.Header["Content-Type"] = hdrContentType // shared, never modified
	req.Header["Accept"] = hdrAccept
	header(req.Header)
	var fb *time.Timer
	if cfg.FirstByteTimeout > 0 {
		fb = time.AfterFunc(cfg.FirstByteTimeout, func() { cancel(errFirstByte) })
	}
	resp, err := cfg.HTTP.Do(req)
	if fb != nil {
		fb.Stop()
	}
	if err != nil {
		cause := context.Cause(cctx)
		cancel(nil)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if cause != nil {
			err = cause
		}
		return nil, transportError(cfg.Name, err)
	}
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		cancel(nil)
		e := &Error{Provider: cfg.Name, Status: resp.StatusCode, Kind: kindOfStatus(resp.StatusCode)}
		e.Code, e.Message = parseErr(resp.StatusCode, data)
		if s := resp.Header.Get("Retry-After"); s != "" {
			if n, err := strconv.Atoi(s); err == nil && n >= 0 {
				e.RetryAfter = time.Duration(n) * time.Second
			}
		}
		refine(e)
		return nil, e
	}
	c.resp = resp
	return c, nil
}

// refine reclassifies an upstream error by its code or message where the
// status alone says too little (vendors signal refusals and context overflow
// inside 400s, and overload as 529).
func refine(e *Error) {
	code, msg := strings.ToLower(e.Code), strings.ToLower(e.Message)
	switch {
	case code == "context_length_exceeded" || code == "request_too_large" ||
		strings.Contains(msg, "prompt is too long") || strings.Contains(msg, "maximum context length"):
		e.Kind = ErrTooLong
	case code == "content_policy_violation" || code == "content_filter" || code == "refusal":
		e.Kind = ErrRefused
	case code == "overloaded_error" || e.Status == 529 || (code == "api_error" && e.Status >= 500):
		e.Kind = ErrServer
	case code == "rate_limit_error" || code == "rate_limit_exceeded":
		e.Kind = ErrRateLimited
	case code == "authentication_error" || code == "permission_error" || code == "invalid_api_key":
		e.Kind = ErrAuth
	}
}

// readAll reads a whole answer body within the call's deadlines.
func (c *call) readAll(name string) ([]byte, error) {
	defer c.close()
	data, err := io.ReadAll(io.LimitReader(c.resp.Body, maxAnswerBody+1))
	if err != nil {
		return nil, c.readErr(name, err)
	}
	if len(data) > maxAnswerBody {
		return nil, &Error{Provider: name, Kind: ErrProtocol, Message: "answer larger than 32 MiB"}
	}
	return data, nil
}

// arm starts the idle deadline before a read of a stream.
func (c *call) arm() {
	if c.idle <= 0 {
		return
	}
	if c.timer == nil {
		c.timer = time.AfterFunc(c.idle, func() { c.cancel(errIdle) })
		return
	}
	c.timer.Reset(c.idle)
}

// disarm stops the idle deadline after a read.
func (c *call) disarm() {
	if c.timer != nil {
		c.timer.Stop()
	}
}

// readErr classifies a failure while reading the body.
func (c *call) readErr(name string, err error) error {
	if cause := context.Cause(c.ctx); cause != nil && cause != context.Canceled {
		if cause == errIdle || cause == errFirstByte {
			return transportError(name, cause)
		}
		return cause
	}
	if errors.Is(err, errEventTooLarge) {
		return &Error{Provider: name, Kind: ErrProtocol, Err: err}
	}
	return transportError(name, err)
}

func (c *call) close() {
	c.disarm()
	c.resp.Body.Close()
	c.cancel(nil)
}
