package edge

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestNetpollOrderNamedByTheBuild: make build sets netpollOrder with
// -ldflags -X, which the linker ignores silently for a name that does not
// exist; build/netpollfifo must name this variable and this value.
func TestNetpollOrderNamedByTheBuild(t *testing.T) {
	src, err := os.ReadFile("../build/netpollfifo/main.go")
	if err != nil {
		t.Fatal(err)
	}
	name := reflect.TypeFor[Config]().PkgPath() + ".netpollOrder"
	for _, want := range []string{`orderVar = "` + name + `"`, `order = "` + netpollOrderEpoll + `"`} {
		if !strings.Contains(string(src), want) {
			t.Errorf("build/netpollfifo/main.go does not say %s", want)
		}
	}
	defer func(o string) { netpollOrder = o }(netpollOrder)
	for set, want := range map[string]string{"": "runtime", "epoll": "epoll", "other": "runtime"} {
		netpollOrder = set
		if got := netpollOrderName(); got != want {
			t.Errorf("netpollOrder %q: netpollOrderName() = %q, want %q", set, got, want)
		}
	}
}
