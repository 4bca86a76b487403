package edge

import (
	"bytes"
	"io"
	"net/netip"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/svcplatform/platform/cache"
	"github.com/svcplatform/platform/rules"
)

var (
	hdrRange   = []byte("Range")
	hdrIfRange = []byte("If-Range")
	hdrINM     = []byte("If-None-Match")
	hdrIMS     = []byte("If-Modified-Since")
)

// serveStatic answers a request for a static site, after Shield: the site
// password, the file guard, then the file from the cache or the deployment.
func (e *Edge) serveStatic(ctx *fasthttp.RequestCtx, t *table, st *site, addr netip.Addr, p proto) {
	h := &ctx.Request.Header
	path := ctx.Path()
	if st.password != nil {
		if string(path) == passwordPath {
			e.passwordSubmit(ctx, t, st, addr, p)
			return
		}
		if !e.sessionValid(h, t, st) {
			e.passwordForm(ctx, st, p, fasthttp.StatusUnauthorized, formAsk)
			return
		}
	}
	// The file guard on the full repository path: the deployment's root
	// (judged once, when the table is compiled) and the request path.
	if st.dep.private || rules.IsPrivateRequestPath(h.RequestURI()) {
		e.metrics.guarded.Inc()
		e.notFound(ctx, st, p)
		return
	}
	if !h.IsGet() && !h.IsHead() {
		e.plain(ctx, p, fasthttp.StatusMethodNotAllowed, bodyMethod)
		ctx.Response.Header.SetCanonical(hdrAllow, valGetHead)
		return
	}
	if len(path) == 0 || path[0] != '/' {
		e.plain(ctx, p, fasthttp.StatusBadRequest, bodyBadRequest)
		return
	}
	f := st.dep.files[string(path[1:])]
	switch {
	case f == nil:
		e.notFound(ctx, st, p)
	case f.redirect:
		e.redirectDir(ctx, f, p)
	default:
		e.serveFile(ctx, st, f, p)
	}
}

// notFound answers the site's 404.html with status 404, or a plain 404.
func (e *Edge) notFound(ctx *fasthttp.RequestCtx, st *site, p proto) {
	if nf := st.dep.notFound; nf != nil && (ctx.Request.Header.IsGet() || ctx.Request.Header.IsHead()) {
		e.serveFile(ctx, st, nf, p)
		return
	}
	e.plain(ctx, p, fasthttp.StatusNotFound, bodyNotFound)
}

// redirectDir sends a directory asked for without its trailing slash to the
// address with it, keeping the query.
func (e *Edge) redirectDir(ctx *fasthttp.RequestCtx, f *file, p proto) {
	loc := make([]byte, 0, len(f.path)+64)
	loc = append(loc, '/')
	loc = append(loc, f.path...)
	if q := ctx.URI().QueryString(); len(q) > 0 {
		loc = append(loc, '?')
		loc = append(loc, q...)
	}
	ctx.Response.Header.SetStatusCode(fasthttp.StatusPermanentRedirect)
	ctx.Response.Header.SetBytesV(fasthttp.HeaderLocation, loc)
	ctx.Response.Header.SetCanonical(hdrCacheControl, valNoStore)
	e.securityHeaders(&ctx.Response.Header, p, false)
}

// serveFile answers one file of a static deployment: from the cache when it
// holds it (no allocation), otherwise read, compressed for the chosen
// coding, kept for the deployment's TTL and answered.
func (e *Edge) serveFile(ctx *fasthttp.RequestCtx, st *site, f *file, p proto) {
	dep := st.dep
	h := &ctx.Request.Header
	rangeHdr := h.PeekBytes(hdrRange)
	enc := encIdentity
	if f.compress && len(rangeHdr) == 0 && f.size <= int64(e.cfg.MaxCompressBytes) {
		enc = negotiate(h.PeekBytes(hdrAcceptEncoding))
	}
	key := cache.StaticKey{Deployment: dep.id, Path: f.key, Encoding: encodingNames[enc]}
	if dep.ttl > 0 {
		if ent, ok := e.cache.GetStatic(key); ok {
			e.respondStatic(ctx, dep, f, &ent.StaticResponse, ent, p)
			return
		}
	}
	if f.size > e.cache.MaxEntryBytes() {
		e.streamFile(ctx, dep, f, p)
		return
	}
	resp, err := e.loadVariant(key, f, enc, dep)
	if err != nil {
		e.log.Error("edge: static file unreadable", "site", st.host, "path", f.path, "blob", f.sum, "err", err)
		e.plain(ctx, p, fasthttp.StatusBadGateway, bodyFileReadError)
		return
	}
	e.respondStatic(ctx, dep, f, &resp, nil, p)
}

// loadVariant reads f's blob and encodes it, once for concurrent misses of
// the same key, and keeps the result for the deployment's TTL.
func (e *Edge) loadVariant(key cache.StaticKey, f *file, enc encoding, dep *deployment) (cache.StaticResponse, error) {
	flightKey := dep.id + "\x00" + string(f.key) + "\x00" + encodingNames[enc]
	v, err := e.flights.do(flightKey, func() (any, error) {
		data, err := e.blobs.read(f.sum, f.size)
		if err != nil {
			return nil, err
		}
		r := cache.StaticResponse{Status: f.status, ContentType: f.contentType, ETag: f.etag[enc],
			LastModified: dep.lastModified, ContentEncoding: encodingBytes[enc], Body: data}
		if enc != encIdentity {
			r.Body = compress(data, enc)
			e.metrics.compressed.Inc()
		}
		if dep.ttl > 0 {
			e.cache.SetStatic(key, r, dep.ttl)
		}
		return r, nil
	})
	if err != nil {
		return cache.StaticResponse{}, err
	}
	return v.(cache.StaticResponse), nil
}

// respondStatic writes a static response: 304 when the client's validators
// match, 206 for a satisfiable single range, otherwise the whole
// representation; then Cache-Control, Vary and the security headers. ent is
// the cache entry when r came from the cache.
func (e *Edge) respondStatic(ctx *fasthttp.RequestCtx, dep *deployment, f *file, r *cache.StaticResponse, ent *cache.StaticEntry, p proto) {
	h := &ctx.Request.Header
	rh := &ctx.Response.Header
	defer func() {
		rh.SetCanonical(hdrCacheControl, dep.cacheControl)
		if f.compress {
			rh.SetCanonical(hdrVary, valAcceptEncoded)
		}
		if ent != nil {
			rh.SetCanonical(hdrXCache, valHit)
		} else {
			rh.SetCanonical(hdrXCache, valMiss)
		}
		e.securityHeaders(rh, p, false)
	}()
	if r.Status == fasthttp.StatusOK && notModified(h, r.ETag, r.LastModified) {
		rh.SetStatusCode(fasthttp.StatusNotModified)
		rh.SetCanonical(hdrETag, r.ETag)
		if len(r.LastModified) > 0 {
			rh.SetCanonical(hdrLastModified, r.LastModified)
		}
		ctx.Response.SkipBody = true
		return
	}
	rh.SetCanonical(hdrAcceptRanges, valBytes)
	if rg := h.PeekBytes(hdrRange); len(rg) > 0 && r.Status == fasthttp.StatusOK && len(r.ContentEncoding) == 0 &&
		ifRangeMatches(h.PeekBytes(hdrIfRange), r.ETag, r.LastModified) {
		start, end, ok, satisfiable := parseRange(rg, int64(len(r.Body)))
		if ok && !satisfiable {
			e.unsatisfiable(ctx, int64(len(r.Body)))
			return
		}
		if ok {
			writeStaticHeaders(rh, r)
			rh.SetStatusCode(fasthttp.StatusPartialContent)
			setContentRange(rh, start, end, int64(len(r.Body)))
			ctx.Response.SetBodyRaw(r.Body[start : end+1])
			return
		}
	}
	if ent != nil {
		ent.Respond(&ctx.Response, e.now())
		return
	}
	writeStaticHeaders(rh, r)
	rh.SetStatusCode(r.Status)
	ctx.Response.SetBodyRaw(r.Body)
}

func writeStaticHeaders(rh *fasthttp.ResponseHeader, r *cache.StaticResponse) {
	rh.SetContentTypeBytes(r.ContentType)
	if len(r.ContentEncoding) > 0 {
		rh.SetContentEncodingBytes(r.ContentEncoding)
	}
	rh.SetCanonical(hdrETag, r.ETag)
	if len(r.LastModified) > 0 {
		rh.SetCanonical(hdrLastModified, r.LastModified)
	}
}

func (e *Edge) unsatisfiable(ctx *fasthttp.RequestCtx, size int64) {
	rh := &ctx.Response.Header
	rh.SetStatusCode(fasthttp.StatusRequestedRangeNotSatisfiable)
	rh.SetContentTypeBytes(valTextPlain)
	var buf [40]byte
	b := append(buf[:0], "bytes */"...)
	b = strconv.AppendInt(b, size, 10)
	rh.SetCanonical(hdrContentRange, b)
	ctx.Response.SetBodyRaw(bodyRangeNotSat)
}

func setContentRange(rh *fasthttp.ResponseHeader, start, end, size int64) {
	var buf [80]byte
	b := append(buf[:0], "bytes "...)
	b = strconv.AppendInt(b, start, 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, end, 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, size, 10)
	rh.SetCanonical(hdrContentRange, b)
}

// streamFile answers a file too large for the cache straight from its
// blob, with ranges, uncompressed.
func (e *Edge) streamFile(ctx *fasthttp.RequestCtx, dep *deployment, f *file, p proto) {
	h := &ctx.Request.Header
	rh := &ctx.Response.Header
	etag := f.etag[encIdentity]
	defer func() {
		rh.SetCanonical(hdrCacheControl, dep.cacheControl)
		e.securityHeaders(rh, p, false)
	}()
	r := cache.StaticResponse{Status: f.status, ContentType: f.contentType, ETag: etag, LastModified: dep.lastModified}
	if f.status == fasthttp.StatusOK && notModified(h, etag, dep.lastModified) {
		rh.SetStatusCode(fasthttp.StatusNotModified)
		rh.SetCanonical(hdrETag, etag)
		ctx.Response.SkipBody = true
		return
	}
	fh, err := e.blobs.open(f.sum, f.size)
	if err != nil {
		e.log.Error("edge: static file unreadable", "path", f.path, "blob", f.sum, "err", err)
		e.plain(ctx, p, fasthttp.StatusBadGateway, bodyFileReadError)
		return
	}
	writeStaticHeaders(rh, &r)
	rh.SetCanonical(hdrAcceptRanges, valBytes)
	rh.SetStatusCode(f.status)
	if rg := h.PeekBytes(hdrRange); len(rg) > 0 && f.status == fasthttp.StatusOK && ifRangeMatches(h.PeekBytes(hdrIfRange), etag, dep.lastModified) {
		start, end, ok, satisfiable := parseRange(rg, f.size)
		if ok && !satisfiable {
			fh.Close()
			e.unsatisfiable(ctx, f.size)
			return
		}
		if ok {
			if _, err := fh.Seek(start, io.SeekStart); err != nil {
				fh.Close()
				e.plain(ctx, p, fasthttp.StatusBadGateway, bodyFileReadError)
				return
			}
			rh.SetStatusCode(fasthttp.StatusPartialContent)
			setContentRange(rh, start, end, f.size)
			ctx.Response.SetBodyStream(&limitedFile{f: fh, r: io.LimitReader(fh, end-start+1)}, int(end-start+1))
			return
		}
	}
	ctx.Response.SetBodyStream(fh, int(f.size))
}

// limitedFile reads a window of a file and closes it.
type limitedFile struct {
	f io.Closer
	r io.Reader
}

func (l *limitedFile) Read(p []byte) (int, error) { return l.r.Read(p) }
func (l *limitedFile) Close() error               { return l.f.Close() }

// notModified evaluates If-None-Match (weak comparison), or else
// If-Modified-Since, against a representation's validators (RFC 9110
// §13.2.2). It does not allocate.
func notModified(h *fasthttp.RequestHeader, etag, lastModified []byte) bool {
	if inm := h.PeekBytes(hdrINM); inm != nil {
		return etagListMatch(inm, etag)
	}
	ims := h.PeekBytes(hdrIMS)
	if len(ims) == 0 || len(lastModified) == 0 {
		return false
	}
	if bytes.Equal(ims, lastModified) {
		return true
	}
	since, err := fasthttp.ParseHTTPDate(ims)
	if err != nil {
		return false
	}
	lm, err := fasthttp.ParseHTTPDate(lastModified)
	return err == nil && !lm.After(since)
}

// etagListMatch reports whether an If-None-Match list names etag, by weak
// comparison, or is "*".
func etagListMatch(list, etag []byte) bool {
	want := opaque(etag)
	if want == nil {
		return false
	}
	for len(list) > 0 {
		var item []byte
		if i := bytes.IndexByte(list, ','); i >= 0 {
			item, list = list[:i], list[i+1:]
		} else {
			item, list = list, nil
		}
		item = trimSpace(item)
		if len(item) == 1 && item[0] == '*' {
			return true
		}
		if o := opaque(item); o != nil && bytes.Equal(o, want) {
			return true
		}
	}
	return false
}

// opaque returns an entity-tag without W/, quotes included; nil if
// malformed.
func opaque(t []byte) []byte {
	if len(t) >= 2 && t[0] == 'W' && t[1] == '/' {
		t = t[2:]
	}
	if len(t) < 2 || t[0] != '"' || t[len(t)-1] != '"' {
		return nil
	}
	return t
}

// ifRangeMatches reports whether a Range may be honoured under If-Range
// (RFC 9110 §13.1.5): absent, the strong ETag, or the exact Last-Modified.
func ifRangeMatches(ir, etag, lastModified []byte) bool {
	if len(ir) == 0 {
		return true
	}
	if ir[0] == '"' {
		return bytes.Equal(ir, etag)
	}
	return len(lastModified) > 0 && bytes.Equal(ir, lastModified)
}

// parseRange parses a Range header for one byte range of a representation
// of size bytes. ok is false when the header is to be ignored (malformed,
// another unit, several ranges); satisfiable is false when the range lies
// past the end. end is inclusive.
func parseRange(h []byte, size int64) (start, end int64, ok, satisfiable bool) {
	const prefix = "bytes="
	if len(h) < len(prefix) || !equalFoldASCII(h[:len(prefix)], prefix) {
		return 0, 0, false, false
	}
	spec := trimSpace(h[len(prefix):])
	if bytes.IndexByte(spec, ',') >= 0 {
		return 0, 0, false, false
	}
	dash := bytes.IndexByte(spec, '-')
	if dash < 0 {
		return 0, 0, false, false
	}
	first, last := trimSpace(spec[:dash]), trimSpace(spec[dash+1:])
	if len(first) == 0 { // suffix: the last n bytes
		n, ok := parseDigits(last)
		if !ok {
			return 0, 0, false, false
		}
		if n == 0 || size == 0 {
			return 0, 0, true, false
		}
		n = min(n, size)
		return size - n, size - 1, true, true
	}
	s, ok1 := parseDigits(first)
	if !ok1 {
		return 0, 0, false, false
	}
	e := size - 1
	if len(last) > 0 {
		v, ok2 := parseDigits(last)
		if !ok2 || v < s {
			return 0, 0, false, false
		}
		e = min(v, size-1)
	}
	if s >= size {
		return 0, 0, true, false
	}
	return s, e, true, true
}

// parseDigits parses a non-negative decimal of at most 18 digits.
func parseDigits(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
