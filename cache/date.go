package cache

import (
	"bufio"
	"bytes"
	"reflect"
	"sync"
	"time"
	"unsafe"

	"github.com/valyala/fasthttp"
)

// ParseHTTPDate parses an HTTP-date strictly (RFC 9110 §5.6.7): an exact
// IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"), or one of the two obsolete
// formats a recipient must accept, rfc850-date ("Sunday, 06-Nov-94
// 08:49:37 GMT") and asctime-date ("Sun Nov  6 08:49:37 1994"). HTTP-date is
// case-sensitive; anything else (other zones, missing or extra spaces,
// single-digit fields, out-of-range values, a day the month does not have)
// is rejected, so an Expires that is not a valid date means already
// expired (RFC 9111 §5.3). The day name must be one of the seven; whether it
// agrees with the date is not checked, as in Go's net/http. A two-digit
// rfc850 year is read as the nearest year not more than 50 years in the
// future. It does not allocate.
func ParseHTTPDate(b []byte) (time.Time, bool) {
	switch {
	case len(b) == 29 && b[3] == ',':
		return parseIMFFixdate(b)
	case len(b) == 24 && b[3] == ' ':
		return parseASCTime(b)
	}
	return parseRFC850(b)
}

// parseHTTPDate is ParseHTTPDate for the package's own callers.
func parseHTTPDate(b []byte) (time.Time, bool) { return ParseHTTPDate(b) }

var (
	dayNames   = [...]string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}
	dayNamesL  = [...]string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
	monthNames = [...]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}
)

// parseIMFFixdate parses "Sun, 06 Nov 1994 08:49:37 GMT".
func parseIMFFixdate(b []byte) (time.Time, bool) {
	if !isDayName(b[:3]) || string(b[3:5]) != ", " || b[7] != ' ' || b[11] != ' ' ||
		b[16] != ' ' || string(b[25:]) != " GMT" {
		return time.Time{}, false
	}
	day, ok1 := digits(b[5:7])
	month, ok2 := monthNumber(b[8:11])
	year, ok3 := digits(b[12:16])
	if !ok1 || !ok2 || !ok3 {
		return time.Time{}, false
	}
	return makeDate(year, month, day, b[17:25])
}

// parseRFC850 parses "Sunday, 06-Nov-94 08:49:37 GMT".
func parseRFC850(b []byte) (time.Time, bool) {
	comma := bytes.IndexByte(b, ',')
	if comma < 0 || !isDayNameL(b[:comma]) {
		return time.Time{}, false
	}
	r := b[comma:]
	if len(r) != 24 || r[1] != ' ' || r[4] != '-' || r[8] != '-' || r[11] != ' ' || string(r[20:]) != " GMT" {
		return time.Time{}, false
	}
	day, ok1 := digits(r[2:4])
	month, ok2 := monthNumber(r[5:8])
	yy, ok3 := digits(r[9:11])
	if !ok1 || !ok2 || !ok3 {
		return time.Time{}, false
	}
	return makeDate(fullYear(yy, currentYear()), month, day, r[12:20])
}

// parseASCTime parses "Sun Nov  6 08:49:37 1994" (day space-padded).
func parseASCTime(b []byte) (time.Time, bool) {
	if !isDayName(b[:3]) || b[7] != ' ' || b[10] != ' ' || b[19] != ' ' {
		return time.Time{}, false
	}
	month, ok1 := monthNumber(b[4:7])
	var day int
	ok2 := false
	if b[8] == ' ' {
		day, ok2 = digits(b[9:10])
	} else if b[8] != '0' {
		day, ok2 = digits(b[8:10])
	}
	year, ok3 := digits(b[20:24])
	if !ok1 || !ok2 || !ok3 {
		return time.Time{}, false
	}
	return makeDate(year, month, day, b[11:19])
}

// makeDate checks a time-of-day "08:49:37" and the ranges of every field
// (RFC 9110 §5.6.7: hour 00-23, minute 00-59, second 00-60, a day the month
// has) and returns the UTC time.
func makeDate(year, month, day int, tod []byte) (time.Time, bool) {
	if tod[2] != ':' || tod[5] != ':' {
		return time.Time{}, false
	}
	hh, ok1 := digits(tod[0:2])
	mm, ok2 := digits(tod[3:5])
	ss, ok3 := digits(tod[6:8])
	if !ok1 || !ok2 || !ok3 || hh > 23 || mm > 59 || ss > 60 || day < 1 || day > 31 {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hh, mm, 0, 0, time.UTC)
	if t.Day() != day { // 30 Feb, 31 Apr, ...
		return time.Time{}, false
	}
	return t.Add(time.Duration(ss) * time.Second), true
}

// fullYear reads a two-digit year as RFC 9110 §5.6.7 asks: a year that
// would be more than 50 years after now is the most recent past year with
// the same last two digits.
func fullYear(yy, now int) int {
	y := now - now%100 + yy
	switch {
	case y > now+50:
		y -= 100
	case y < now-49:
		y += 100
	}
	return y
}

// currentYear is the year two-digit rfc850 years are read against.
var currentYear = func() int { return time.Now().UTC().Year() }

func digits(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, len(b) > 0
}

func monthNumber(b []byte) (int, bool) {
	for i, m := range monthNames {
		if string(b) == m {
			return i + 1, true
		}
	}
	return 0, false
}

func isDayName(b []byte) bool {
	for _, d := range dayNames {
		if string(b) == d {
			return true
		}
	}
	return false
}

func isDayNameL(b []byte) bool {
	for _, d := range dayNamesL {
		if string(b) == d {
			return true
		}
	}
	return false
}

// AppendHTTPDate appends t as an IMF-fixdate.
func AppendHTTPDate(dst []byte, t time.Time) []byte {
	return fasthttp.AppendHTTPDate(dst, t)
}

// SetDate makes h carry and write exactly the Date field value date, as a
// cache must when it forwards a stored or origin response (RFC 9110 §6.6.1:
// the origin's Date is passed on unchanged). fasthttp manages Date itself:
// it ignores Date set through the header API and writes the server's clock
// instead unless the header is marked not to, which only its Server can do.
// SetDate adds the field the one way fasthttp's API allows (parsing it, with
// ResponseHeader.ReadTrailer) and marks the header: fasthttp has no setter
// for that mark, so SetDate sets its unexported noDefaultDate flag, found by
// reflection at start-up, through unsafe. HTTP/1.1, and the HTTP/2 and HTTP/3 bridges that copy
// [fasthttp.ResponseHeader.All], all send this value. Call it after the last
// Reset or CopyTo of h, which clear the mark. It reports false, changing
// nothing, when date is empty or not a valid field value, or when the
// fasthttp version in use no longer has the mark
// (TestRFC9110_6_6_1_DateForwardedUnchanged fails then).
// It does not allocate.
func SetDate(h *fasthttp.ResponseHeader, date []byte) bool {
	if !validDate(date) {
		return false
	}
	h.Del(fasthttp.HeaderDate)
	dr := datePool.Get().(*dateReader)
	dr.buf = append(append(append(dr.buf[:0], "Date: "...), date...), "\r\n\r\n"...)
	dr.r.Reset(dr.buf)
	dr.br.Reset(&dr.r)
	err := h.ReadTrailer(&dr.br)
	datePool.Put(dr)
	if err != nil {
		return false
	}
	markDate(h)
	return true
}

// validDate reports whether SetDate may write date: a non-empty field
// value of at most 256 bytes without CR or LF, with the mark available.
func validDate(date []byte) bool {
	return len(date) > 0 && len(date) <= 256 && noDefaultDateOffset != 0 && !bytes.ContainsAny(date, "\r\n")
}

// markDate sets h's noDefaultDate flag: fasthttp then writes the Date
// field h holds instead of its clock's.
func markDate(h *fasthttp.ResponseHeader) {
	*(*bool)(unsafe.Add(unsafe.Pointer(h), noDefaultDateOffset)) = true
}

// KeepDate prepares the header of a response forwarded from the origin:
// the origin's Date is written unchanged, or, when it sent none, the time
// the edge received it (RFC 9110 §6.6.1). received is only formatted then.
//
// The usual case, one Date field as parsed from the origin (fasthttp keeps
// it among the fields, under its canonical name, and only leaves it out
// when writing), costs one scan of the fields and the mark: the field is
// already there as it came. Two or more Date fields are replaced by the
// first, as SetDate does; a first one SetDate would refuse leaves h as it
// is (fasthttp then writes its clock's Date) and reports false.
func KeepDate(h *fasthttp.ResponseHeader, received time.Time) bool {
	switch ds := h.PeekAll(fasthttp.HeaderDate); {
	case len(ds) > 0 && !validDate(ds[0]):
		return false
	case len(ds) == 1:
		markDate(h)
		return true
	case len(ds) > 1:
		var buf [256]byte // ds is h's own storage, which SetDate changes
		return SetDate(h, append(buf[:0], ds[0]...))
	}
	var buf [32]byte
	return SetDate(h, AppendHTTPDate(buf[:0], received))
}

type dateReader struct {
	buf []byte
	r   bytes.Reader
	br  bufio.Reader
}

var datePool = sync.Pool{New: func() any {
	dr := &dateReader{buf: make([]byte, 0, 64)}
	dr.br.Reset(&dr.r)
	return dr
}}

// noDefaultDateOffset is the offset of fasthttp.ResponseHeader's
// noDefaultDate flag, 0 when the field is gone or not a bool.
var noDefaultDateOffset = func() uintptr {
	f, ok := reflect.TypeFor[fasthttp.ResponseHeader]().FieldByName("noDefaultDate")
	if !ok || len(f.Index) != 1 || f.Type.Kind() != reflect.Bool {
		return 0
	}
	return f.Offset
}()
