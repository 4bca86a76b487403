package rules

import (
	"net/netip"

	"github.com/svcplatform/platform/geodata"
)

// Target is the kind of thing a request is for. Rules apply by target kind
// (spec: Shield and security). The zero value is TargetStaticSite, the kind
// with every rule, so a Facts left unset is checked the most, not the least.
type Target uint8

// Target kinds.
const (
	// TargetStaticSite gets every rule: address lists, country, AI crawler,
	// log-only and counts.
	TargetStaticSite Target = iota
	// TargetServerApp gets the country rule only: no address lists, no
	// AI-crawler rule, no log-only (a blocked country is refused even under
	// logOnly) and no counts.
	TargetServerApp
	// TargetFunction gets address lists, country, AI crawler, log-only and
	// counts.
	TargetFunction
	// TargetWorker is a worker program; like a server app it gets the country
	// rule only.
	TargetWorker
)

// String returns "static", "server-app", "function" or "worker".
func (t Target) String() string {
	switch t {
	case TargetStaticSite:
		return "static"
	case TargetServerApp:
		return "server-app"
	case TargetFunction:
		return "function"
	case TargetWorker:
		return "worker"
	}
	return "unknown"
}

// countryOnly reports whether t gets the country rule and nothing else. An
// out-of-range Target is treated as a static site.
func (t Target) countryOnly() bool { return t == TargetServerApp || t == TargetWorker }

// Facts are what Evaluate needs to know about one request. The edge fills one
// per request (it may reuse it); Evaluate reads it and keeps nothing.
type Facts struct {
	// Addr is the client's address (the peer, or the one a trusted proxy
	// header names). IPv4-mapped IPv6 addresses are matched as IPv4; a zone
	// is ignored. An invalid Addr matches no address list and is in
	// country XX.
	Addr netip.Addr
	// UserAgent is the User-Agent header as received; nil if absent.
	UserAgent []byte
	// Path is the request path without the query ("/robots.txt").
	Path []byte
	// Target is the kind of thing the request is for.
	Target Target
}

// Verdict is what to do with a request.
type Verdict uint8

// Verdicts.
const (
	// Allow lets the request go on (to the site password, the file guard,
	// the cache and the origin).
	Allow Verdict = iota
	// Refuse answers Decision.Status with Decision.Body.
	Refuse
	// WouldRefuse lets the request go on but counts it: logOnly is on and
	// Decision.Rule would have refused it.
	WouldRefuse
)

// String returns "allow", "refuse" or "wouldRefuse".
func (v Verdict) String() string {
	switch v {
	case Allow:
		return "allow"
	case Refuse:
		return "refuse"
	case WouldRefuse:
		return "wouldRefuse"
	}
	return "unknown"
}

// MarshalText encodes v as String does.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText decodes what MarshalText encodes.
func (v *Verdict) UnmarshalText(b []byte) error {
	for _, c := range []Verdict{Allow, Refuse, WouldRefuse} {
		if string(b) == c.String() {
			*v = c
			return nil
		}
	}
	return invalid(string(b), "not a verdict")
}

// Rule names the Shield rule behind a decision.
type Rule uint8

// Rules. The zero value RuleNone is the rule of an Allow.
const (
	// RuleNone is the rule of an Allow: none refused.
	RuleNone Rule = iota
	// RuleDenyList is the rule for an address on denyIps.
	RuleDenyList
	// RuleCountry is the rule for a country on blockedCountries.
	RuleCountry
	// RuleAICrawler is the rule for a user agent that declares an AI crawler while
	// blockAiCrawlers is on.
	RuleAICrawler
)

// String returns "none", "denyList", "country" or "aiCrawler".
func (r Rule) String() string {
	switch r {
	case RuleNone:
		return "none"
	case RuleDenyList:
		return "denyList"
	case RuleCountry:
		return "country"
	case RuleAICrawler:
		return "aiCrawler"
	}
	return "unknown"
}

// MarshalText encodes r as String does.
func (r Rule) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText decodes what MarshalText encodes.
func (r *Rule) UnmarshalText(b []byte) error {
	for _, c := range []Rule{RuleNone, RuleDenyList, RuleCountry, RuleAICrawler} {
		if string(b) == c.String() {
			*r = c
			return nil
		}
	}
	return invalid(string(b), "not a rule")
}

// Response bodies of refusals. They are plain text.
const (
	// BodyCountry is the spec's answer to a visitor from a blocked country.
	BodyCountry = "Not available in your region"
	// BodyDenyList is the answer to an address on the deny list.
	BodyDenyList = "Access denied"
	// BodyAICrawler is the answer to a blocked AI crawler.
	BodyAICrawler = "AI crawlers are not allowed"
)

// StatusRefused is the HTTP status of every refusal.
const StatusRefused = 403

// Decision is the outcome of Evaluate for one request.
type Decision struct {
	// Verdict is Allow, Refuse or WouldRefuse.
	Verdict Verdict
	// Rule is the rule that refused or would have refused; RuleNone for an
	// Allow.
	Rule Rule
	// Count reports whether the edge counts this decision in Counters: a
	// Refuse or WouldRefuse for a static site or function. Server apps and
	// worker programs are not counted (spec: counts apply to static sites
	// and functions only).
	Count bool
	// Status is StatusRefused when Verdict is Refuse, else 0.
	Status int
	// Body is the plain-text body to answer with when Verdict is Refuse,
	// else empty.
	Body string
	// Country is the visitor's country when a country rule was checked, and
	// the zero Country when it was not looked up.
	Country geodata.Country
	// Crawler is the matched crawler token when Rule is RuleAICrawler.
	Crawler string
}
