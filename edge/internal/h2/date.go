package h2

import (
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// dateCache is the Date field value of the current second, formatted once
// a second and shared by the responses of that second.
type dateCache struct{ cur atomic.Pointer[dateValue] }

type dateValue struct {
	unix int64
	b    []byte
}

// get returns the Date field value for now.
func (d *dateCache) get(now time.Time) []byte {
	sec := now.Unix()
	if v := d.cur.Load(); v != nil && v.unix == sec {
		return v.b
	}
	v := &dateValue{unix: sec, b: fasthttp.AppendHTTPDate(make([]byte, 0, 29), now)}
	d.cur.Store(v)
	return v.b
}

// nopLogger drops what handlers log when Server.Logger is nil.
type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

func (s *Server) logger() fasthttp.Logger {
	if s.Logger == nil {
		return nopLogger{}
	}
	return s.Logger
}
