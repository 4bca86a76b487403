package edge

import (
	"bytes"
	"html"
	"io"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/svcplatform/platform/rules"
)

// passwordPath is where the password form of a protected static site posts
// to. It is reserved on every protected site.
const passwordPath = "/__platform/password"

// maxPasswordForm bounds the form body read from a visitor.
const maxPasswordForm = 4 << 10

// verifyWait is how long a submission waits for a free password check
// before it is answered 503 (argon2id is memory-hard, so checks run a few
// at a time).
const verifyWait = 10 * time.Second

// formState says which message the password page shows.
type formState uint8

const (
	formAsk formState = iota
	formWrong
	formThrottled
)

var cookieName = []byte(rules.SessionCookieName)

// sessionValid reports whether the request carries a valid session cookie
// for st's current password. It does not allocate.
func (e *Edge) sessionValid(h *fasthttp.RequestHeader, t *table, st *site) bool {
	if t.signer == nil {
		return false
	}
	c := h.CookieBytes(cookieName)
	return len(c) > 0 && t.signer.Verify(c, st.projectID, st.password.version, e.now())
}

// passwordSubmit checks a posted password: a right one sets the session
// cookie and sends the visitor back where they were going; a wrong one
// shows the form again, and too many attempts from one address on one
// site are throttled with 429 (see throttle).
func (e *Edge) passwordSubmit(ctx *fasthttp.RequestCtx, t *table, st *site, addr netip.Addr, p proto) {
	if !ctx.IsPost() {
		if e.sessionValid(&ctx.Request.Header, t, st) {
			e.redirectTo(ctx, "/", p)
			return
		}
		e.passwordForm(ctx, st, p, fasthttp.StatusUnauthorized, formAsk)
		return
	}
	now := e.now()
	// The attempt is reserved before the slow check, so concurrent wrong
	// passwords are counted as they arrive, not after their hashes.
	if wait, ok := e.throttle.reserve(addr, st.projectID, now); !ok {
		e.metrics.password(passwordThrottled)
		e.passwordForm(ctx, st, p, fasthttp.StatusTooManyRequests, formThrottled)
		ctx.Response.Header.SetCanonical(hdrRetryAfter, strconv.AppendInt(nil, int64(wait/time.Second)+1, 10))
		return
	}
	form, err := readForm(ctx)
	if err != nil {
		e.throttle.release(addr, st.projectID, now)
		e.plain(ctx, p, fasthttp.StatusRequestEntityTooLarge, bodyTooLarge)
		closeUnread(ctx)
		return
	}
	password, next := form.Get("password"), safeNext(form.Get("next"))
	if len(password) > rules.MaxSitePasswordLen {
		password = ""
	}
	timer := time.NewTimer(verifyWait)
	select {
	case e.verifySem <- struct{}{}:
		timer.Stop()
	case <-timer.C:
		e.throttle.release(addr, st.projectID, now)
		e.plain(ctx, p, fasthttp.StatusServiceUnavailable, bodyUnavailable)
		return
	}
	ok := password != "" && rules.VerifyPassword(st.password.hash, password)
	<-e.verifySem
	if !ok || t.signer == nil {
		e.metrics.password(passwordWrong)
		e.passwordForm(ctx, st, p, fasthttp.StatusUnauthorized, formWrong)
		return
	}
	value, err := t.signer.Issue(st.projectID, st.password.version, now)
	if err != nil {
		e.log.Error("edge: issue site session", "site", st.host, "err", err)
		e.plain(ctx, p, fasthttp.StatusInternalServerError, bodyUnavailable)
		return
	}
	e.throttle.succeeded(addr, st.projectID)
	e.metrics.password(passwordRight)
	var c fasthttp.Cookie
	c.SetKey(rules.SessionCookieName)
	c.SetValue(value)
	c.SetPath("/")
	c.SetMaxAge(int(rules.SessionTTL / time.Second))
	c.SetHTTPOnly(true)
	c.SetSecure(true)
	c.SetSameSite(fasthttp.CookieSameSiteLaxMode)
	ctx.Response.Header.SetCookie(&c)
	e.redirectTo(ctx, next, p)
}

// readForm reads an urlencoded form body of at most maxPasswordForm bytes.
func readForm(ctx *fasthttp.RequestCtx) (url.Values, error) {
	var body []byte
	if s := ctx.RequestBodyStream(); s != nil {
		b, err := io.ReadAll(io.LimitReader(s, maxPasswordForm+1))
		if err != nil {
			return nil, err
		}
		body = b
	} else {
		body = ctx.Request.Body()
	}
	if len(body) > maxPasswordForm {
		return nil, errFormTooLarge
	}
	return url.ParseQuery(string(body))
}

var errFormTooLarge = fasthttp.ErrBodyTooLarge

// safeNext keeps a local path to return to after the form; anything else
// (another host, a scheme, a protocol-relative or backslash path) is "/".
func safeNext(next string) string {
	if next == "" || next[0] != '/' || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n\t") ||
		strings.HasPrefix(next, passwordPath) {
		return "/"
	}
	return next
}

func (e *Edge) redirectTo(ctx *fasthttp.RequestCtx, loc string, p proto) {
	rh := &ctx.Response.Header
	rh.SetStatusCode(fasthttp.StatusSeeOther)
	rh.Set(fasthttp.HeaderLocation, loc)
	rh.SetCanonical(hdrCacheControl, valNoStore)
	e.securityHeaders(rh, p, false)
}

// passwordForm answers the password page with status.
func (e *Edge) passwordForm(ctx *fasthttp.RequestCtx, st *site, p proto, status int, state formState) {
	next := string(ctx.Request.Header.RequestURI())
	if string(ctx.Path()) == passwordPath {
		next = "/"
	}
	var msg string
	switch state {
	case formWrong:
		msg = `<p class="err" role="alert">That password is not right. Try again.</p>`
	case formThrottled:
		msg = `<p class="err" role="alert">Too many wrong attempts from your address. Wait a minute, then try again.</p>`
	}
	var b bytes.Buffer
	b.WriteString(passwordPageHead)
	b.WriteString(html.EscapeString(st.host))
	b.WriteString(passwordPageMid)
	b.WriteString(msg)
	b.WriteString(`<form method="post" action="` + passwordPath + `"><input type="hidden" name="next" value="`)
	b.WriteString(html.EscapeString(next))
	b.WriteString(passwordPageTail)
	rh := &ctx.Response.Header
	rh.SetStatusCode(status)
	rh.SetContentTypeBytes(valTextHTML)
	rh.SetCanonical(hdrCacheControl, valNoStore)
	rh.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	e.securityHeaders(rh, p, false)
	ctx.Response.SetBody(b.Bytes())
}

const passwordPageHead = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>Password required</title>
<style>body{font:16px/1.5 system-ui,sans-serif;display:grid;place-items:center;min-height:100vh;margin:0;background:#f6f7f9;color:#111}
main{background:#fff;padding:2rem;border-radius:12px;box-shadow:0 2px 12px #0001;width:min(22rem,90vw)}
h1{font-size:1.25rem;margin:0 0 .25rem}p{margin:.25rem 0 1rem;color:#555}.err{color:#b00020}
input[type=password]{width:100%;box-sizing:border-box;padding:.6rem;border:1px solid #ccc;border-radius:8px;font:inherit}
button{margin-top:1rem;width:100%;padding:.6rem;border:0;border-radius:8px;background:#111;color:#fff;font:inherit;cursor:pointer}</style>
</head><body><main><h1>Password required</h1><p>`
const passwordPageMid = ` is protected. Enter the password to continue.</p>`
const passwordPageTail = `"><label for="pw">Password</label>
<input id="pw" type="password" name="password" autocomplete="current-password" required autofocus>
<button type="submit">Continue</button></form></main></body></html>
`
