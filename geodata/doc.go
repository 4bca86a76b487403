// Package geodata finds the country of an IP address, for Shield's country
// rules: an ISO 3166-1 alpha-2 code, XX when unknown, or T1 for an
// anonymizing network.
//
// A DB (see Open and Config) reads a country database in either MMDB layout
// (GeoIP2/GeoLite2 Country, or the flat country_code layout of the
// ip-location-db package the project fetches by default), a GeoIP2
// Anonymous-IP database, an operator's list of anonymizing networks and an
// operator's overrides file, each optional. Precedence: overrides > T1 >
// country > XX. Files are reloaded when they change and swapped in
// atomically; a broken file is refused and the previous data stays.
//
// Lookups allocate nothing: every file is turned into an in-memory routing
// table when it is loaded, so the hot path never decodes MMDB data. The
// tables are made of pointer-free slices (sorted address ranges and an
// index over them, see rangeTable), so a loaded country database adds
// nothing to the work of a garbage collection cycle.
//
// The package does no HTTP; the edge and the control plane build on it.
package geodata

//go:generate go run ./testdata/gen
