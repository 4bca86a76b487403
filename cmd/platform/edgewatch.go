package main

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
)

// edgeWatch notes, for `platform status`, each edge's configuration
// long-poll as it passes through the API: which token (by its hash, the
// form edge_tokens keeps), from where, when, whether one is waiting now,
// and the snapshot version the edge holds (the version it asked after, or
// the one it was just sent). Only authenticated polls are kept; nothing
// else passes through it.
type edgeWatch struct {
	h     http.Handler
	clock func() time.Time
	mu    sync.Mutex
	seen  map[string]*edgeSeen // by hex SHA-256 of the token
}

// edgeSeen is one edge token's last poll.
type edgeSeen struct {
	Addr     string
	LastPoll time.Time
	Waiting  int
	Version  int64
}

func newEdgeWatch(h http.Handler) *edgeWatch {
	return &edgeWatch{h: h, clock: time.Now, seen: map[string]*edgeSeen{}}
}

func (e *edgeWatch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if r.Method != http.MethodGet || r.URL.Path != snapshot.ConfigPath || !ok || tok == "" {
		e.h.ServeHTTP(w, r)
		return
	}
	sum := sha256.Sum256([]byte(tok))
	key := hex.EncodeToString(sum[:])
	after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
	e.mu.Lock()
	s := e.seen[key]
	known := s != nil
	if known {
		s.Waiting++
	}
	e.mu.Unlock()
	sw := &statusWriter{ResponseWriter: w}
	e.h.ServeHTTP(sw, r)
	if !known && sw.code != http.StatusOK && sw.code != http.StatusNotModified {
		return // not an edge's token: never kept
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if s = e.seen[key]; s == nil {
		if len(e.seen) >= maxEdgesSeen {
			return
		}
		s = &edgeSeen{}
		e.seen[key] = s
	} else if known {
		s.Waiting--
	}
	if sw.code != http.StatusOK && sw.code != http.StatusNotModified {
		return
	}
	s.Addr, s.LastPoll, s.Version = r.RemoteAddr, e.clock(), after
	if v, err := strconv.ParseInt(sw.Header().Get(snapshot.VersionHeader), 10, 64); err == nil && sw.code == http.StatusOK {
		s.Version = v
	}
	if s.Waiting < 0 {
		s.Waiting = 0
	}
}

// maxEdgesSeen bounds the tokens kept.
const maxEdgesSeen = 10000

// snapshotOf returns a copy of what was seen, by token hash.
func (e *edgeWatch) snapshotOf() map[string]edgeSeen {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]edgeSeen, len(e.seen))
	for k, v := range e.seen {
		out[k] = *v
	}
	return out
}

// statusWriter records the status code written.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
