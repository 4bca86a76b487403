package cache

import (
	"time"

	"github.com/valyala/fasthttp"
)

// FreshnessLifetime returns a response's freshness lifetime for a shared
// cache (RFC 9111 §4.2.1): s-maxage, else max-age, else Expires minus Date
// (the response time when Date is absent or invalid). explicit is false when
// the response gives none of these; [HeuristicLifetime] may then apply
// (§4.2.2). An invalid Expires
// means already expired (§5.3), and so do invalid or conflicting max-age or
// s-maxage directives (cc.Invalid).
func FreshnessLifetime(cc *CacheControl, expires, date []byte, responseTime time.Time) (lifetime time.Duration, explicit bool) {
	switch {
	case cc.Invalid:
		return 0, true
	case cc.SMaxAge != Unset:
		return seconds(cc.SMaxAge), true
	case cc.MaxAge != Unset:
		return seconds(cc.MaxAge), true
	case expires != nil:
		exp, ok := parseHTTPDate(expires)
		if !ok {
			return 0, true
		}
		d, ok := parseHTTPDate(date)
		if !ok {
			d = responseTime
		}
		return max(exp.Sub(d), 0), true
	}
	return 0, false
}

// InitialAge returns corrected_initial_age (RFC 9111 §4.2.3): the larger of
// the apparent age (response time minus Date, at least 0) and the Age field
// value plus the response delay. ageValue is the received Age field value
// (nil when absent; an invalid one is ignored, §5.1); date is the received
// Date (the response time when absent or invalid).
func InitialAge(ageValue, date []byte, requestTime, responseTime time.Time) time.Duration {
	var apparent time.Duration
	if d, ok := parseHTTPDate(date); ok {
		apparent = max(responseTime.Sub(d), 0)
	}
	delay := max(responseTime.Sub(requestTime), 0)
	return max(apparent, seconds(parseAge(ageValue))+delay)
}

// CurrentAge returns current_age (RFC 9111 §4.2.3): the corrected initial
// age plus the time the response has been resident in the cache.
func CurrentAge(initialAge time.Duration, responseTime, now time.Time) time.Duration {
	return initialAge + max(now.Sub(responseTime), 0)
}

// AppendAge appends an Age field value for age (RFC 9111 §5.1): whole
// seconds, rounded down, at most MaxDeltaSeconds.
func AppendAge(dst []byte, age time.Duration) []byte {
	s := int64(max(age, 0) / time.Second)
	return fasthttp.AppendUint(dst, int(min(s, MaxDeltaSeconds)))
}

// parseAge returns the first member of an Age field value, or 0 when it is
// absent or invalid (§5.1).
func parseAge(v []byte) int64 {
	v = v[skipOWS(v, 0):]
	end := 0
	for end < len(v) && v[end] != ',' && v[end] != ' ' && v[end] != '\t' {
		end++
	}
	n, ok := parseDelta(v[:end])
	if !ok {
		return 0
	}
	return n
}

func seconds(n int64) time.Duration {
	return time.Duration(n) * time.Second
}
