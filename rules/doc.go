// Package rules is Shield as pure code: a workspace's Shield settings are
// validated, compiled into an immutable Ruleset and evaluated for one visitor
// request at a time, without HTTP and without allocating.
//
// The package also holds the pieces of Shield that the edge and the control
// plane share: the curated list of AI crawler tokens (MatchCrawler), the
// private-file guard used at deploy and at request time (PrivateFile,
// IsPrivateRequestPath), site-password hashing and the signed session cookie
// (HashPassword, SessionSigner), and the counters the edge keeps of what the
// rules caught (Counters).
//
// Rule order, as the spec's Shield section has it:
//
//	enabled=false  -> no rule applies
//	deny list      -> 403, whatever else holds (deny beats allow, and log-only)
//	allow list     -> let past the country and AI-crawler rules
//	country        -> 403 "Not available in your region"
//	AI crawler     -> 403; /robots.txt always passes
//
// Under logOnly the country and AI-crawler rules count what they would refuse
// (Verdict WouldRefuse) and let the request through. Static sites get every
// rule; functions get the address lists, country, AI crawler, log-only and
// counts; server apps and worker programs get the country rule only.
package rules
