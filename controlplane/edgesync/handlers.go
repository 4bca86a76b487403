package edgesync

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/blobs"
	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
)

// Handlers serve the edge protocol under /edge/v1. The routes are Public in
// the API's route table: they take edge tokens, not API keys, and check them
// here.
type Handlers struct{ S *Service }

// errToken is the refusal of a missing, unknown or revoked edge token.
var errToken = api.E(api.KindUnauthenticated, "edge_token_invalid", "send a valid edge token: Authorization: Bearer svc_edge_...")

func (h Handlers) auth(w http.ResponseWriter, r *http.Request) (string, error) {
	id, ok := h.S.authenticate(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="edge"`)
		return "", errToken
	}
	return id, nil
}

// Config answers GET /edge/v1/config?after=<version>&wait=<seconds>: 200
// with the snapshot as soon as its version differs from after (at once for
// after=0 or absent), 304 with no body when nothing changed within wait
// (default 30, at most 60 seconds). Both carry Platform-Config-Version. The
// body is gzip-compressed when the edge accepts it.
func (h Handlers) Config(w http.ResponseWriter, r *http.Request) error {
	if _, err := h.auth(w, r); err != nil {
		return err
	}
	q := r.URL.Query()
	var after int64
	if s := q.Get("after"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return api.Invalid("after must be a snapshot version (a whole number)")
		}
		after = n
	}
	wait := DefaultWait
	if s := q.Get("wait"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || time.Duration(n)*time.Second > MaxWait {
			return api.Invalid("wait must be from 0 to %d seconds", int(MaxWait/time.Second))
		}
		wait = time.Duration(n) * time.Second
	}
	if after == 0 {
		wait = 0
	}
	b, ok, err := h.S.Await(r.Context(), after, wait)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	if !ok {
		w.Header().Set(snapshot.VersionHeader, strconv.FormatInt(h.S.Version(), 10))
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	w.Header().Set(snapshot.VersionHeader, strconv.FormatInt(b.version, 10))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Add("Vary", "Accept-Encoding")
	body := b.json
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		w.Header().Set("Content-Encoding", "gzip")
		body = b.gzip
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
	return nil
}

func acceptsGzip(ae string) bool {
	for _, part := range strings.Split(ae, ",") {
		name, params, _ := strings.Cut(part, ";")
		if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
			continue
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			q, err := strconv.ParseFloat(v, 64)
			return err == nil && q > 0
		}
		return true
	}
	return false
}

// Blob answers GET /edge/v1/blobs/{sha256}: the bytes of a file that a
// deployment serves (others answer 404), with Range support and an
// immutable Cache-Control.
func (h Handlers) Blob(w http.ResponseWriter, r *http.Request) error {
	if _, err := h.auth(w, r); err != nil {
		return err
	}
	sum := r.PathValue("sha256")
	if !blobs.ValidSum(sum) {
		return api.Invalid("a blob is named by 64 lower-case hex digits")
	}
	served, err := h.S.Served(r.Context(), sum)
	if err != nil {
		return err
	}
	if !served {
		return api.NotFound("blob")
	}
	f, err := h.S.blobs.Get(r.Context(), sum)
	if errors.Is(err, blobs.ErrNotFound) {
		return api.NotFound("blob")
	}
	if err != nil {
		return err
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Cache-Control", "private, max-age=31536000, immutable")
	w.Header().Set("ETag", `"`+sum+`"`)
	http.ServeContent(w, r, "", f.Info().ModTime, f)
	return nil
}

// Counts answers POST /edge/v1/counts with a snapshot.CountAnswer.
func (h Handlers) Counts(w http.ResponseWriter, r *http.Request) error {
	id, err := h.auth(w, r)
	if err != nil {
		return err
	}
	var b snapshot.CountBatch
	if err := api.Decode(r, &b, false); err != nil {
		return err
	}
	out, err := h.S.Ingest(r.Context(), id, b)
	return api.Reply(w, http.StatusOK, out, err)
}
