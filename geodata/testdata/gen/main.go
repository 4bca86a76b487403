// Command gen writes the MMDB fixtures of package geodata with
// maxmind/mmdbwriter. Run it from the module root:
//
//	go run ./geodata/testdata/gen
//
// The go tool ignores testdata directories in ./... patterns, so this program
// needs no build tag and is never part of the library.
//
// It writes, in geodata/testdata:
//
//   - country-geoip2.mmdb: the GeoIP2/GeoLite2 Country layout (country,
//     registered_country, represented_country), IPv4 and IPv6;
//   - country-flat.mmdb: the flat country_code layout of the
//     @ip-location-db/geo-whois-asn-country-mmdb package, IPv4 and IPv6;
//   - country-flat-ipv4.mmdb: the same, as an IPv4-only database;
//   - anonymous.mmdb: the GeoIP2 Anonymous-IP layout (is_* flags);
//   - reload-a.mmdb, reload-b.mmdb: two flat databases that differ only in
//     192.0.2.0/24 and 2001:db8::/32 (NL and SE), for the hot-reload test.
//
// Both country layouts give the same country for every address, so the tests
// share one table of expectations. Some records are deliberately wrong (a
// country for private and loopback ranges, a lower-case code, a withdrawn
// code) to show that the reader does not trust them.
package main

import (
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
)

// buildEpoch is fixed so that regenerating gives identical files.
const buildEpoch = 1767225600 // 2026-01-01T00:00:00Z

// geoname IDs of the countries used, as in GeoNames.
var geonameID = map[string]uint32{
	"AU": 2077456, "DE": 2921044, "FR": 3017382, "GB": 2635167, "IE": 2963597,
	"JP": 1861060, "NL": 2750405, "SE": 2661886, "US": 6252001,
}

// network is one entry of the country fixtures.
type network struct {
	cidr string
	// code is the value written to country.iso_code (GeoIP2 layout) and
	// country_code (flat layout).
	code string
	// registeredOnly writes only registered_country in the GeoIP2 layout, as
	// MaxMind does for some anycast and satellite networks.
	registeredOnly bool
	// represented adds a represented_country (an overseas military base).
	represented string
}

var countries = []network{
	// Real-looking public networks.
	{cidr: "8.8.8.0/24", code: "US"},
	{cidr: "8.8.4.0/24", code: "US"},
	{cidr: "1.1.1.0/24", code: "AU"},
	{cidr: "81.2.69.0/24", code: "GB"},
	{cidr: "193.99.144.0/20", code: "DE"},
	{cidr: "133.0.0.0/8", code: "JP"},
	{cidr: "185.220.101.0/24", code: "DE"},
	{cidr: "2001:4860::/32", code: "US"},
	{cidr: "2606:4700::/32", code: "US"},
	{cidr: "2a00:1450:4000::/37", code: "IE"},
	{cidr: "2a01:4f8::/32", code: "DE"},
	{cidr: "2001:200::/23", code: "JP"},

	// Documentation ranges (RFC 5737, RFC 3849).
	{cidr: "192.0.2.0/24", code: "NL"},
	{cidr: "198.51.100.0/25", code: "FR", registeredOnly: true},
	{cidr: "198.51.100.128/25", code: "DE", represented: "US"},
	{cidr: "203.0.113.0/26", code: "se"},  // lower case: read as SE
	{cidr: "203.0.113.64/26", code: "AN"}, // withdrawn in 2010: read as XX
	{cidr: "2001:db8::/48", code: "NL"},
	{cidr: "2001:db8:1::/48", code: "FR", registeredOnly: true},
	{cidr: "2001:db8:2::/48", code: "se"},
	{cidr: "2001:db8:3::/48", code: "DE", represented: "US"},

	// Wrong on purpose: private, loopback, link-local and unique-local
	// ranges are XX whatever a database says.
	{cidr: "10.0.0.0/8", code: "US"},
	{cidr: "127.0.0.0/8", code: "US"},
	{cidr: "169.254.0.0/16", code: "US"},
	{cidr: "fc00::/7", code: "US"},
	{cidr: "fe80::/10", code: "US"},
}

// anonymous is the Anonymous-IP fixture: network -> the flags set on it.
var anonymous = []struct {
	cidr  string
	flags []string
}{
	{"185.220.101.0/24", []string{"is_anonymous", "is_tor_exit_node"}},
	{"198.51.100.0/26", []string{"is_anonymous", "is_anonymous_vpn"}},
	{"203.0.113.128/26", []string{"is_anonymous", "is_public_proxy"}},
	{"192.0.2.128/25", []string{"is_anonymous"}},
	{"8.8.4.0/24", []string{"is_anonymous", "is_hosting_provider"}},
	{"10.8.0.0/16", []string{"is_anonymous", "is_anonymous_vpn"}},
	{"2001:db8:ffff::/48", []string{"is_anonymous", "is_residential_proxy"}},
	{"2a01:4f8:c0c::/48", []string{"is_anonymous", "is_tor_exit_node"}},
	{"2606:4700:10::/44", []string{"is_anonymous", "is_hosting_provider"}},
}

func main() {
	// From the module root (go run) or from geodata/ (go generate).
	dir := "geodata/testdata"
	if _, err := os.Stat(filepath.Join(dir, "gen")); err != nil {
		dir = "testdata"
		if _, err := os.Stat(filepath.Join(dir, "gen")); err != nil {
			log.Fatalf("run from the module root: go run ./geodata/testdata/gen")
		}
	}
	write := func(name string, t *mmdbwriter.Tree) {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			log.Fatal(err)
		}
		if _, err := t.WriteTo(f); err != nil {
			log.Fatal(err)
		}
		if err := f.Close(); err != nil {
			log.Fatal(err)
		}
		fmt.Println("wrote", filepath.Join(dir, name))
	}

	write("country-geoip2.mmdb", countryTree("GeoLite2-Country", 6, geoip2Record, countries))
	write("country-flat.mmdb", countryTree("country ipvAll", 6, flatRecord, countries))
	var v4 []network
	for _, n := range countries {
		if ip, _, _ := net.ParseCIDR(n.cidr); ip.To4() != nil {
			v4 = append(v4, n)
		}
	}
	write("country-flat-ipv4.mmdb", countryTree("country ipv4", 4, flatRecord, v4))
	write("anonymous.mmdb", anonymousTree())

	reload := func(code string) []network {
		return []network{
			{cidr: "8.8.8.0/24", code: "US"},
			{cidr: "2001:4860::/32", code: "US"},
			{cidr: "192.0.2.0/24", code: code},
			{cidr: "2001:db8::/32", code: code},
		}
	}
	write("reload-a.mmdb", countryTree("country ipvAll", 6, flatRecord, reload("NL")))
	write("reload-b.mmdb", countryTree("country ipvAll", 6, flatRecord, reload("SE")))
}

func newTree(dbType string, ipVersion int) *mmdbwriter.Tree {
	t, err := mmdbwriter.New(mmdbwriter.Options{
		BuildEpoch:              buildEpoch,
		DatabaseType:            dbType,
		Description:             map[string]string{"en": "geodata test fixture"},
		IncludeReservedNetworks: true,
		IPVersion:               ipVersion,
		Languages:               []string{"en"},
		RecordSize:              24,
	})
	if err != nil {
		log.Fatal(err)
	}
	return t
}

func countryTree(dbType string, ipVersion int, record func(network) mmdbtype.Map, nets []network) *mmdbwriter.Tree {
	t := newTree(dbType, ipVersion)
	for _, n := range nets {
		insert(t, n.cidr, record(n))
	}
	return t
}

func insert(t *mmdbwriter.Tree, cidr string, rec mmdbtype.Map) {
	_, ipnet, err := net.ParseCIDR(cidr)
	if err != nil {
		log.Fatal(err)
	}
	if err := t.Insert(ipnet, rec); err != nil {
		log.Fatalf("insert %s: %v", cidr, err)
	}
}

// geoip2Country is a country object of the GeoIP2 layout.
func geoip2Country(code string) mmdbtype.Map {
	return mmdbtype.Map{
		"geoname_id": mmdbtype.Uint32(geonameID[code]),
		"iso_code":   mmdbtype.String(code),
		"names":      mmdbtype.Map{"en": mmdbtype.String("Country " + code)},
	}
}

func geoip2Record(n network) mmdbtype.Map {
	rec := mmdbtype.Map{
		"continent":          mmdbtype.Map{"code": mmdbtype.String("XX")},
		"registered_country": geoip2Country(n.code),
	}
	if !n.registeredOnly {
		rec["country"] = geoip2Country(n.code)
	}
	if n.represented != "" {
		rep := geoip2Country(n.represented)
		rep["type"] = mmdbtype.String("military")
		rec["represented_country"] = rep
	}
	return rec
}

func flatRecord(n network) mmdbtype.Map {
	return mmdbtype.Map{"country_code": mmdbtype.String(n.code)}
}

func anonymousTree() *mmdbwriter.Tree {
	t := newTree("GeoIP2-Anonymous-IP", 6)
	for _, a := range anonymous {
		rec := mmdbtype.Map{}
		for _, f := range a.flags {
			rec[mmdbtype.String(f)] = mmdbtype.Bool(true)
		}
		insert(t, a.cidr, rec)
	}
	return t
}
