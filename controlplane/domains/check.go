package domains

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Record statuses.
const (
	// StatusPending: not looked up yet.
	StatusPending = "pending"
	// StatusOK: found as asked.
	StatusOK = "ok"
	// StatusMissing: not found.
	StatusMissing = "missing"
	// StatusWrong: found with another value (Found says which).
	StatusWrong = "wrong"
)

// Record purposes.
const (
	// PurposeVerification proves control of the name (TXT).
	PurposeVerification = "verification"
	// PurposeRouting sends the name's visitors to the edges (A, AAAA,
	// CNAME, or ALIAS where the provider offers one).
	PurposeRouting = "routing"
)

// DNSRecord is a DNS record to publish, with what the last look found.
type DNSRecord struct {
	Purpose string `json:"purpose" doc:"verification (the TXT record proving control) or routing (the records sending visitors to the edges)"`
	// Type is TXT, A, AAAA, CNAME, or ALIAS (an apex record the DNS
	// provider resolves itself: ALIAS, ANAME or a flattened CNAME).
	Type  string `json:"type" doc:"TXT, A, AAAA, CNAME, or ALIAS (an apex record the DNS provider resolves: ALIAS, ANAME or a flattened CNAME)"`
	Name  string `json:"name"`
	Value string `json:"value"`
	// Status is pending, ok, missing or wrong.
	Status string `json:"status" doc:"pending (not looked up yet), ok, missing, or wrong (found names what the DNS holds instead)"`
	// Found is what the DNS holds instead, when Status is wrong.
	Found []string `json:"found,omitempty"`
	Note  string   `json:"note,omitempty"`
}

func (r DNSRecord) key() string { return r.Type + " " + r.Name + " " + r.Value }

// challengeName is where a name's TXT record goes.
func challengeName(name string) string { return ChallengeLabel + "." + name }

// expected returns the records d needs, statuses pending, for a project
// answering at site.
func (s *Service) expected(d domain, site string) []DNSRecord {
	recs := []DNSRecord{{Purpose: PurposeVerification, Type: "TXT", Name: challengeName(d.Name), Value: TokenPrefix + d.Token, Status: StatusPending,
		Note: "proves the name is yours; it may be removed once the domain is verified"}}
	if d.Apex {
		if len(s.cfg.edges) == 0 {
			recs = append(recs, DNSRecord{Purpose: PurposeRouting, Type: "ALIAS", Name: d.Name, Value: site, Status: StatusPending,
				Note: "an ALIAS, ANAME or flattened CNAME record; or A and AAAA records to the addresses " + site + " resolves to"})
		}
		for _, a := range s.cfg.edges {
			typ := "A"
			if a.Is6() {
				typ = "AAAA"
			}
			recs = append(recs, DNSRecord{Purpose: PurposeRouting, Type: typ, Name: d.Name, Value: a.String(), Status: StatusPending})
		}
		if d.Redirect != "" {
			note := "www." + d.Name + " redirects to " + d.Name
			if d.Redirect == RedirectWWW {
				note = d.Name + " redirects to www." + d.Name
			}
			recs = append(recs, DNSRecord{Purpose: PurposeRouting, Type: "CNAME", Name: "www." + d.Name, Value: site, Status: StatusPending, Note: note})
		}
		return recs
	}
	return append(recs, DNSRecord{Purpose: PurposeRouting, Type: "CNAME", Name: d.Name, Value: site, Status: StatusPending})
}

// withStatuses is want with the statuses d's last look recorded.
func withStatuses(want, last []DNSRecord) []DNSRecord {
	byKey := make(map[string]DNSRecord, len(last))
	for _, r := range last {
		byKey[r.key()] = r
	}
	for i, r := range want {
		if l, ok := byKey[r.key()]; ok {
			want[i].Status, want[i].Found = l.Status, l.Found
		}
	}
	return want
}

// finding is what one look at a domain's records found.
type finding struct {
	records []DNSRecord
	txtOK   bool
	routeOK bool
	// txtProblem is what is wrong with the TXT record; problems what is
	// wrong with the routing records.
	txtProblem string
	problems   []string
}

// look looks d's records up for a project answering at site. An error
// means the DNS could not answer (a missing record is a finding).
func (s *Service) look(ctx context.Context, d domain, site string) (finding, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.LookupTimeout)
	defer cancel()
	f := finding{records: s.expected(d, site), routeOK: true}
	txts, err := lookupTXT(ctx, s.resolver, challengeName(d.Name))
	if err != nil {
		return f, fmt.Errorf("domains: look up TXT of %s: %w", challengeName(d.Name), err)
	}
	edges := s.cfg.edges
	if d.Apex && len(edges) == 0 {
		if edges, err = lookupAddrs(ctx, s.resolver, site); err != nil {
			return f, fmt.Errorf("domains: look up %s: %w", site, err)
		}
	}
	var apexAddrs []netip.Addr
	apexDone := false
	for i := range f.records {
		r := &f.records[i]
		switch {
		case r.Type == "TXT":
			r.Status = txtStatus(txts, r.Value)
			f.txtOK = r.Status == StatusOK
			switch r.Status {
			case StatusMissing:
				f.txtProblem = "no TXT record at " + r.Name + ": add it with the value shown"
			case StatusWrong:
				r.Found = clipAll(txts)
				f.txtProblem = "the TXT record at " + r.Name + " holds another value: set it to the value shown"
			}
		case r.Type == "CNAME":
			ok, problem, found, err := s.lookCNAME(ctx, r.Name, site)
			if err != nil {
				return f, err
			}
			r.Status, r.Found = ok, found
			if problem != "" {
				f.routeOK = false
				f.problems = append(f.problems, problem)
			}
		default: // the apex's A, AAAA or ALIAS records, judged together
			if !apexDone {
				apexDone = true
				if apexAddrs, err = lookupAddrs(ctx, s.resolver, d.Name); err != nil {
					return f, fmt.Errorf("domains: look up %s: %w", d.Name, err)
				}
				if p := apexProblem(d.Name, site, apexAddrs, edges); p != "" {
					f.routeOK = false
					f.problems = append(f.problems, p)
				}
			}
			r.Status = addrStatus(r, apexAddrs, edges)
			if r.Status == StatusWrong {
				r.Found = addrStrings(apexAddrs)
			}
		}
	}
	return f, nil
}

// txtStatus says whether txts hold want: ok, wrong (another value of
// ours, e.g. the token of an earlier attempt) or missing.
func txtStatus(txts []string, want string) string {
	status := StatusMissing
	for _, t := range txts {
		t = strings.TrimSpace(t)
		if t == want {
			return StatusOK
		}
		if strings.HasPrefix(t, TokenPrefix) {
			status = StatusWrong
		}
	}
	return status
}

// lookCNAME judges the routing of host, which should be a CNAME to site:
// also accepted are addresses that are all among site's (a flattened
// CNAME).
func (s *Service) lookCNAME(ctx context.Context, host, site string) (status, problem string, found []string, err error) {
	c, err := lookupCNAME(ctx, s.resolver, host)
	if err != nil {
		return "", "", nil, fmt.Errorf("domains: look up CNAME of %s: %w", host, err)
	}
	switch c {
	case site:
		return StatusOK, "", nil, nil
	case "":
		return StatusMissing, "no CNAME record at " + host + ": add " + host + " CNAME " + site, nil, nil
	}
	// Another name, or none: its addresses may still be the site's (a
	// chain through the site's own CNAME, or a flattened record).
	addrs, err := lookupAddrs(ctx, s.resolver, host)
	if err != nil {
		return "", "", nil, fmt.Errorf("domains: look up %s: %w", host, err)
	}
	want, err := s.edgesOf(ctx, site)
	if err != nil {
		return "", "", nil, err
	}
	if len(addrs) > 0 && subset(addrs, want) {
		return StatusOK, "", nil, nil
	}
	if c != host {
		return StatusWrong, host + " points at " + c + ", not at " + site + ": change its CNAME to " + site, []string{c}, nil
	}
	return StatusWrong, host + " resolves to " + strings.Join(addrStrings(addrs), ", ") + ", not to " + site + ": replace its records with a CNAME to " + site,
		addrStrings(addrs), nil
}

// edgesOf is the set a name routed to site may resolve to: the configured
// edge addresses and site's own.
func (s *Service) edgesOf(ctx context.Context, site string) ([]netip.Addr, error) {
	addrs, err := lookupAddrs(ctx, s.resolver, site)
	if err != nil {
		return nil, fmt.Errorf("domains: look up %s: %w", site, err)
	}
	return append(slices.Clone(s.cfg.edges), addrs...), nil
}

// apexProblem says what is wrong with an apex resolving to addrs when it
// should resolve to edges only ("" when nothing is).
func apexProblem(name, site string, addrs, edges []netip.Addr) string {
	switch {
	case len(edges) == 0:
		return site + " does not resolve, so " + name + " cannot be checked: the operator sets the edges' addresses (--edge-addresses)"
	case len(addrs) == 0:
		return name + " has no A or AAAA record: point it at " + strings.Join(addrStrings(edges), ", ")
	}
	var stray []string
	for _, a := range addrs {
		if !slices.Contains(edges, a) {
			stray = append(stray, a.String())
		}
	}
	if len(stray) > 0 {
		return name + " also resolves to " + strings.Join(stray, ", ") + ", which is not an edge: remove those records and point it at " +
			strings.Join(addrStrings(edges), ", ")
	}
	return ""
}

// addrStatus is the status of one apex record given what the apex
// resolves to.
func addrStatus(r *DNSRecord, addrs, edges []netip.Addr) string {
	if r.Type == "ALIAS" {
		switch {
		case len(addrs) == 0:
			return StatusMissing
		case len(edges) > 0 && subset(addrs, edges):
			return StatusOK
		}
		return StatusWrong
	}
	want, err := netip.ParseAddr(r.Value)
	if err != nil {
		return StatusWrong
	}
	if slices.Contains(addrs, want) {
		return StatusOK
	}
	return StatusMissing
}

func subset(a, of []netip.Addr) bool {
	for _, x := range a {
		if !slices.Contains(of, x) {
			return false
		}
	}
	return true
}

func addrStrings(as []netip.Addr) []string {
	out := make([]string, 0, len(as))
	for _, a := range as {
		out = append(out, a.String())
	}
	return out
}

// clipAll bounds what a record list echoes of the DNS.
func clipAll(ss []string) []string {
	if len(ss) > 5 {
		ss = ss[:5]
	}
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		out = append(out, clip(s))
	}
	return out
}
