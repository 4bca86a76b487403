package wasm

import (
	"context"
	"errors"
	"testing"
	"time"
)

// probeModule is a WASI command that checks that its memory starts zeroed
// and then dirties it: it exits 3 when the word at 1000 is not zero, else
// writes it, grows its memory by one page, exits 4 when the word at 70000
// (in the new page) is not zero, else writes it and returns (no output, so
// the call fails with ErrBadResponse). Memory: 1 page, at most 4.
func probeModule() []byte {
	sec := func(id byte, body ...byte) []byte { return append([]byte{id, byte(len(body))}, body...) }
	code := []byte{
		0,                            // no locals
		0x41, 0xe8, 0x07, 0x28, 2, 0, // i32.load (i32.const 1000)
		0x04, 0x40, 0x41, 3, 0x10, 0, 0x0b, // if: call proc_exit(3)
		0x41, 0xe8, 0x07, 0x41, 0xb4, 0x24, 0x36, 2, 0, // i32.store 1000, 0x1234
		0x41, 1, 0x40, 0, 0x1a, // drop (memory.grow 1)
		0x41, 0xf0, 0xa2, 0x04, 0x28, 2, 0, // i32.load (i32.const 70000)
		0x04, 0x40, 0x41, 4, 0x10, 0, 0x0b, // if: call proc_exit(4)
		0x41, 0xf0, 0xa2, 0x04, 0x41, 0xb4, 0x24, 0x36, 2, 0, // i32.store 70000, 0x1234
		0x0b,
	}
	imp := append([]byte{1, 22}, "wasi_snapshot_preview1"...)
	imp = append(imp, 9)
	imp = append(imp, "proc_exit"...)
	imp = append(imp, 0, 0)
	exp := append([]byte{1, 6}, "_start"...)
	exp = append(exp, 0, 1)
	mod := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	mod = append(mod, sec(1, 2, 0x60, 1, 0x7f, 0, 0x60, 0, 0)...) // types: (i32)->(), ()->()
	mod = append(mod, sec(2, imp...)...)
	mod = append(mod, sec(3, 1, 1)...)       // one function of type 1
	mod = append(mod, sec(5, 1, 1, 1, 4)...) // memory: min 1, max 4
	mod = append(mod, sec(7, exp...)...)
	return append(mod, sec(10, append([]byte{1, byte(len(code))}, code...)...)...)
}

// TestMemoryZeroedBetweenCalls: an instance never sees what an earlier one
// wrote, in its initial memory or in memory it grew, although the host
// reuses the reservations.
func TestMemoryZeroedBetweenCalls(t *testing.T) {
	h := newHost(t, Config{MaxConcurrent: 1})
	ctx := context.Background()
	if err := h.Load(ctx, Deployment{ID: "probe", Project: "p", Module: probeModule()}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		_, err := h.Call(ctx, "probe", &Request{Method: "GET", Path: "/"})
		if !errors.Is(err, ErrBadResponse) {
			t.Fatalf("call %d: %v, want ErrBadResponse (exit 3: initial memory not zeroed, exit 4: grown memory not zeroed)", i, err)
		}
	}
}

// TestCloseDuringCall: closing the host while an instance runs stops the
// instance (ErrClosed) before the runtime closes; its memory is released
// only after it stopped (the process would crash if it were unmapped under
// the running code, and wazero would release the instance's resources
// under it: the race detector sees that).
func TestCloseDuringCall(t *testing.T) {
	mod := exampleModule(t)
	h := newHost(t, Config{Timeout: 20 * time.Second, MaxConcurrent: 1})
	ctx := context.Background()
	if err := h.Load(ctx, Deployment{ID: "d", Project: "p", Module: mod}); err != nil {
		t.Fatal(err)
	}
	if err := h.Load(ctx, Deployment{ID: "e", Project: "q", Module: mod}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	// waitFor calls id and returns once project has running calls running
	// and waiting calls waiting.
	waitFor := func(id, project string, running, waiting int) {
		go func() {
			_, err := h.Call(ctx, id, &Request{Method: "GET", Path: "/loop"})
			done <- err
		}()
		for {
			r, w, changed := h.slots.state(project)
			if r == running && w == waiting {
				return
			}
			select {
			case <-changed:
			case err := <-done:
				t.Fatalf("a call ended before the close: %v", err)
			}
		}
	}
	waitFor("d", "p", 1, 0) // runs (the slot is taken before the instance starts)
	waitFor("e", "q", 0, 1) // waits for the only slot
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case err := <-done:
			if !errors.Is(err, ErrClosed) {
				t.Fatalf("call during close: %v, want ErrClosed", err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("a call was not stopped by the close")
		}
	}
}
