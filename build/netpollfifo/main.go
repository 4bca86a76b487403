// Command netpollfifo writes a build overlay (go build -overlay) that makes
// the Go runtime's network poller hand out each batch of ready connections
// in the order epoll reported them, oldest first, as nginx's event loop
// does, instead of newest first.
//
//	go run ./build/netpollfifo -goroot "$(go env GOROOT)" -dir bin/_netpollfifo
//
// prints the flags for go build:
//
//	-overlay=/abs/bin/_netpollfifo/overlay.json -ldflags=-X=github.com/svcplatform/platform/edge.netpollOrder=epoll
//
// `make build` passes them on. When the toolchain's runtime is not the code
// this patch knows (another operating system, or a Go release that changed
// runtime.netpoll), it prints nothing, says why on standard error and exits
// 0: the binary is then built with the runtime as it is.
//
// Why: runtime.netpoll (runtime/netpoll_epoll.go) walks epoll's events in
// order and collects their goroutines with gList.push, which prepends, so the
// scheduler runs the connection whose request arrived last first and the one
// that has waited longest last. On a saturated core a batch is most of the
// busy connections, and that order is the edge's tail (edge/README.md,
// "Tail"). The patch walks the events backwards: one line, the same
// goroutines readied, in the kernel's order.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// order is what the patched binary reports (edge.netpollOrder).
const order = "epoll"

// orderVar is the variable -ldflags -X sets in the patched binary.
const orderVar = "github.com/svcplatform/platform/edge.netpollOrder"

// The lines the patch relies on, each of which must appear exactly once.
var (
	// netpoll_epoll.go: netpoll's walk over the events epoll returned.
	loopLine = []byte("\tfor i := int32(0); i < n; i++ {\n\t\tev := events[i]\n")
	// netpoll_epoll.go: each ready event's goroutines go on toRun.
	readyLine = []byte("delta += netpollready(&toRun, pd, mode)")
	// netpoll.go: netpollready adds them with push.
	pushLine = []byte("toRun.push(rg)")
	// proc.go: push prepends (so the walk's last event comes out first).
	prependLines = []byte("func (l *gList) push(gp *g) {\n\tgp.schedlink = l.head\n\tl.head.set(gp)\n")

	patchedLoop = []byte("\tfor i := n - 1; i >= 0; i-- { // platform (build/netpollfifo): backwards, so toRun comes out in epoll's order\n\t\tev := events[i]\n")
)

func main() {
	goroot := flag.String("goroot", "", "the toolchain's GOROOT (go env GOROOT)")
	dir := flag.String("dir", "bin/_netpollfifo", "where to write the patched file and overlay.json (a directory go ./... skips: _ or . first)")
	flag.Parse()
	flags, err := write(*goroot, *dir, runtime.GOOS)
	if err != nil {
		fmt.Fprintf(os.Stderr, "netpollfifo: building with the runtime's own netpoll order (newest first): %v\n", err)
		return
	}
	fmt.Println(flags)
}

// write patches goroot's netpoll_epoll.go into dir, writes dir/overlay.json
// and returns the go build flags that use them.
func write(goroot, dir, goos string) (string, error) {
	if goos != "linux" {
		return "", fmt.Errorf("the patch is for Linux's epoll, not %s", goos)
	}
	if goroot == "" {
		return "", errors.New("no -goroot")
	}
	rt := filepath.Join(goroot, "src", "runtime")
	src, err := os.ReadFile(filepath.Join(rt, "netpoll_epoll.go"))
	if err != nil {
		return "", err
	}
	netpoll, err := os.ReadFile(filepath.Join(rt, "netpoll.go"))
	if err != nil {
		return "", err
	}
	proc, err := os.ReadFile(filepath.Join(rt, "proc.go"))
	if err != nil {
		return "", err
	}
	out, err := patch(src, netpoll, proc)
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", err
	}
	patched := filepath.Join(abs, "netpoll_epoll.go")
	if err := writeFile(patched, out); err != nil {
		return "", err
	}
	ov, err := json.Marshal(struct{ Replace map[string]string }{map[string]string{filepath.Join(rt, "netpoll_epoll.go"): patched}})
	if err != nil {
		return "", err
	}
	overlay := filepath.Join(abs, "overlay.json")
	if err := writeFile(overlay, ov); err != nil {
		return "", err
	}
	return fmt.Sprintf("-overlay=%s -ldflags=-X=%s=%s", overlay, orderVar, order), nil
}

// writeFile replaces name only when its content changes, so that go build's
// cache keeps the patched runtime from one build to the next.
func writeFile(name string, b []byte) error {
	if old, err := os.ReadFile(name); err == nil && bytes.Equal(old, b) {
		return nil
	}
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}

// patch returns netpoll_epoll.go (src) with netpoll's walk reversed, or an
// error naming the first assumption the toolchain's runtime breaks.
func patch(src, netpoll, proc []byte) ([]byte, error) {
	for _, c := range []struct {
		file    string
		text    []byte
		line    []byte
		assumes string
	}{
		{"netpoll_epoll.go", src, loopLine, "netpoll walks epoll's events forwards"},
		{"netpoll_epoll.go", src, readyLine, "netpoll collects the ready goroutines in toRun"},
		{"netpoll.go", netpoll, pushLine, "netpollready adds a goroutine with gList.push"},
		{"proc.go", proc, prependLines, "gList.push prepends"},
	} {
		if n := bytes.Count(c.text, c.line); n != 1 {
			return nil, fmt.Errorf("runtime/%s: %q found %d times, want once (%s): this Go release is not the one the patch knows", c.file, c.line, n, c.assumes)
		}
	}
	return bytes.Replace(src, loopLine, patchedLoop, 1), nil
}
