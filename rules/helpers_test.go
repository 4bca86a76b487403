package rules

import (
	"net/netip"

	"github.com/gaissmai/bart"

	"github.com/svcplatform/platform/geodata"
)

// tableLocator is a small in-test geodata.Locator: a prefix trie of
// countries, XX where nothing matches. It counts its calls when calls is set.
type tableLocator struct {
	t     *bart.Table[geodata.Country]
	calls *int
}

func newTableLocator(m map[string]string) tableLocator {
	t := new(bart.Table[geodata.Country])
	for p, c := range m {
		t.Insert(netip.MustParsePrefix(p), geodata.Country{c[0], c[1]})
	}
	return tableLocator{t: t}
}

func (l tableLocator) Country(a netip.Addr) geodata.Country {
	if l.calls != nil {
		*l.calls++
	}
	if c, ok := l.t.Lookup(a); ok {
		return c
	}
	return geodata.Unknown
}

var _ geodata.Locator = tableLocator{}

func cc(s string) geodata.Country { return geodata.Country{s[0], s[1]} }
