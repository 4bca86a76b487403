package main

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/svcplatform/platform/geodata"
	"github.com/svcplatform/platform/rules"
)

// blockedCountries are the 50 countries of workload 1. Neither the allowed
// client's country nor XX (loopback, the peer of every request) is among them.
var blockedCountries = strings.Fields(`
	CN RU KP IR SY CU BY VE MM AF IQ LY SD SO YE ER ZW NI ML CF
	SS CD LB BI GN HT PK BD NG VN TH ID PH KH LA UZ TM TJ KG KZ
	AZ AM GE MD RS BA MK AL EG BR`)

// aiCrawlerTokens are the user-agent tokens nginx's rule set refuses: a
// sample of the edge's list (rules/crawlers.go has 142), enough to make
// nginx run a case-insensitive regular expression over every user agent.
var aiCrawlerTokens = strings.Fields(`
	GPTBot ChatGPT-User OAI-SearchBot ClaudeBot Claude-User Claude-SearchBot anthropic-ai
	CCBot Bytespider meta-externalagent meta-externalfetcher Amazonbot Applebot-Extended
	Google-Extended cohere-ai Diffbot PerplexityBot Perplexity-User YouBot MistralAI-User
	DuckAssistBot ImagesiftBot Omgilibot PetalBot-AI Timpibot`)

// shieldBody is the PUT /api/services/shield body of workload 1.
type shieldBody struct {
	Enabled          bool     `json:"enabled"`
	BlockedCountries []string `json:"blockedCountries"`
	DenyIPs          []string `json:"denyIps"`
	AllowIPs         []string `json:"allowIps"`
	BlockAICrawlers  bool     `json:"blockAiCrawlers"`
	LogOnly          bool     `json:"logOnly"`
}

// runShield writes, into -out:
//
//	shield.json         the Shield settings (PUT /api/services/shield)
//	addrs.env           ALLOW_IP, DENY_IP, COUNTRY_IP and their countries
//	nginx-deny.conf     the deny ranges as lines of an nginx geo block
//	nginx-country.conf  the blocked countries as lines of an nginx map block
//	nginx-ai.conf       the AI-crawler regular expression of nginx's map
//	caddy-deny.txt      the deny ranges on one line, for Caddy's remote_ip
//
// Addresses are chosen by looking them up in the same country database the
// edge and nginx read, so each one is what it claims to be.
func runShield(args []string) error {
	fs := flag.NewFlagSet("shield", flag.ContinueOnError)
	geoPath := fs.String("geoip", "", "country database (MMDB)")
	out := fs.String("out", "", "output directory")
	n := fs.Int("ranges", 10000, "deny-list entries")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *geoPath == "" || *out == "" {
		return fmt.Errorf("shield: -geoip and -out are required")
	}
	db, err := geodata.Open(geodata.Config{CountryDB: *geoPath, NoReload: true}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	defer db.Close()

	blocked := map[string]bool{}
	for _, c := range blockedCountries {
		if _, err := rules.ParseCountry(c); err != nil {
			return err
		}
		blocked[c] = true
	}
	if len(blocked) != 50 {
		return fmt.Errorf("shield: %d distinct blocked countries, want 50", len(blocked))
	}
	allowIP, allowCC, countryIP, countryCC := pickAddresses(db, blocked)
	if !allowIP.IsValid() || !countryIP.IsValid() {
		return fmt.Errorf("shield: no public address found for an allowed and a blocked country in %s", *geoPath)
	}
	deny := denyRanges(*n, allowIP, countryIP)
	denyIP := deny[0].Addr().Next() // inside the first (IPv4, at most /24) range
	if !deny[0].Contains(denyIP) {
		return fmt.Errorf("shield: %s is not inside %s", denyIP, deny[0])
	}

	body := shieldBody{Enabled: true, BlockedCountries: blockedCountries, AllowIPs: []string{}, BlockAICrawlers: true}
	for _, p := range deny {
		body.DenyIPs = append(body.DenyIPs, p.String())
	}
	// What the control plane will accept: the same decoder it runs.
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	if _, err := rules.DecodeSettingsPatch(rules.DefaultSettings(), raw); err != nil {
		return fmt.Errorf("shield: settings refused: %w", err)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	files := map[string]string{
		"shield.json": string(raw),
		"addrs.env": fmt.Sprintf("ALLOW_IP=%s\nALLOW_CC=%s\nCOUNTRY_IP=%s\nCOUNTRY_CC=%s\nDENY_IP=%s\nDENY_RANGE=%s\nDENY_COUNT=%d\nBLOCKED_COUNT=%d\n",
			allowIP, allowCC, countryIP, countryCC, denyIP, deny[0], len(deny), len(blocked)),
	}
	var ng, cd, nc strings.Builder
	for _, p := range deny {
		fmt.Fprintf(&ng, "%s 1;\n", p)
		fmt.Fprintf(&cd, "%s ", p)
	}
	for _, c := range blockedCountries {
		fmt.Fprintf(&nc, "%s 1;\n", c)
	}
	files["nginx-deny.conf"] = ng.String()
	files["caddy-deny.txt"] = strings.TrimSpace(cd.String()) + "\n"
	files["nginx-country.conf"] = nc.String()
	files["nginx-ai.conf"] = fmt.Sprintf("\"~*(^|[^A-Za-z0-9_-])(%s)($|[^A-Za-z0-9_-])\" 1;\n", strings.Join(aiCrawlerTokens, "|"))
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(*out, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// pickAddresses scans a.b.1.1 over the public IPv4 space, in a fixed order,
// for the first address in the United States (allowed) and the first in a
// blocked country.
func pickAddresses(db *geodata.DB, blocked map[string]bool) (allow netip.Addr, allowCC string, country netip.Addr, countryCC string) {
	for a := 1; a < 224; a++ {
		for b := 0; b < 256; b += 7 {
			addr := netip.AddrFrom4([4]byte{byte(a), byte(b), 1, 1})
			if !public(addr) {
				continue
			}
			cc := db.Country(addr).String()
			switch {
			case !allow.IsValid() && cc == "US":
				allow, allowCC = addr, cc
			case !country.IsValid() && blocked[cc]:
				country, countryCC = addr, cc
			}
			if allow.IsValid() && country.IsValid() {
				return
			}
		}
	}
	return
}

// denyRanges returns n distinct ranges, the same on every run: nine in ten
// IPv4 (/16 to /32), the rest IPv6 (/32 to /64) in 2000::/3, none holding
// avoid. The first is an IPv4 range of at most /24 (holds DENY_IP).
func denyRanges(n int, avoid ...netip.Addr) []netip.Prefix {
	r := rand.New(rand.NewPCG(10_000, 50))
	seen := map[netip.Prefix]bool{}
	out := make([]netip.Prefix, 0, n)
	for len(out) < n {
		var p netip.Prefix
		if len(out) == 0 || r.IntN(10) != 0 {
			var b [4]byte
			binary.BigEndian.PutUint32(b[:], r.Uint32())
			bits := 16 + r.IntN(17)
			if len(out) == 0 {
				bits = 24
			}
			p = netip.PrefixFrom(netip.AddrFrom4(b), bits).Masked()
		} else {
			var b [16]byte
			binary.BigEndian.PutUint64(b[:8], 0x2000_0000_0000_0000|r.Uint64()>>3)
			p = netip.PrefixFrom(netip.AddrFrom16(b), 32+r.IntN(33)).Masked()
		}
		if seen[p] || !public(p.Addr()) || holdsAny(p, avoid) {
			continue
		}
		seen[p] = true
		out = append(out, p)
	}
	return out
}

func holdsAny(p netip.Prefix, addrs []netip.Addr) bool {
	for _, a := range addrs {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// public reports whether addr is a global unicast address outside the
// private, shared (100.64/10) and reserved ranges.
func public(addr netip.Addr) bool {
	if !addr.IsGlobalUnicast() || addr.IsPrivate() {
		return false
	}
	if addr.Is4() {
		b := addr.As4()
		return b[0] != 0 && b[0] < 224 && !(b[0] == 100 && b[1]&0xc0 == 64)
	}
	return true
}
