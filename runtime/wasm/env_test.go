package wasm

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// environModule is a WASI command that calls environ_sizes_get with the
// two addresses given (signed LEB128 i32.const immediates) and exits with
// the errno it returns.
func environModule(countAt, sizeAt []byte) []byte {
	sec := func(id byte, body ...byte) []byte { return append([]byte{id, byte(len(body))}, body...) }
	imp := []byte{2}
	for _, f := range []struct {
		name string
		typ  byte
	}{{"proc_exit", 0}, {"environ_sizes_get", 1}} {
		imp = append(imp, 22)
		imp = append(imp, "wasi_snapshot_preview1"...)
		imp = append(imp, byte(len(f.name)))
		imp = append(imp, f.name...)
		imp = append(imp, 0, f.typ)
	}
	code := []byte{0, 0x41}
	code = append(code, countAt...)
	code = append(code, 0x41)
	code = append(code, sizeAt...)
	code = append(code, 0x10, 1, 0x10, 0, 0x0b) // call environ_sizes_get; call proc_exit
	exp := append([]byte{1, 6}, "_start"...)
	exp = append(exp, 0, 2)
	mod := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	// types: (i32)->(), (i32 i32)->(i32), ()->()
	mod = append(mod, sec(1, 3, 0x60, 1, 0x7f, 0, 0x60, 2, 0x7f, 0x7f, 1, 0x7f, 0x60, 0, 0)...)
	mod = append(mod, sec(2, imp...)...)
	mod = append(mod, sec(3, 1, 2)...)
	mod = append(mod, sec(5, 1, 0, 1)...)
	mod = append(mod, sec(7, exp...)...)
	return append(mod, sec(10, append([]byte{1, byte(len(code))}, code...)...)...)
}

// TestEnvironOutOfMemory: the host's environ_sizes_get answers errno
// "fault" for an address outside the instance's memory, and writes
// nothing.
func TestEnvironOutOfMemory(t *testing.T) {
	h := newHost(t, Config{})
	ctx := context.Background()
	tests := []struct {
		name     string
		mod      []byte
		wantExit string // "": exit 0 (no output: ErrBadResponse)
	}{
		{name: "in memory", mod: environModule([]byte{0}, []byte{4})},
		{name: "past the end", mod: environModule([]byte{0x70}, []byte{4}), wantExit: "exit status 21"},                   // -16: 0xfffffff0
		{name: "straddling the end", mod: environModule([]byte{0xfe, 0xff, 0x03}, []byte{4}), wantExit: "exit status 21"}, // 65534
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := h.Load(ctx, Deployment{ID: "env", Project: "p", Module: tc.mod}); err != nil {
				t.Fatal(err)
			}
			_, err := h.Call(ctx, "env", &Request{Method: "GET", Path: "/"})
			if tc.wantExit == "" {
				if !errors.Is(err, ErrBadResponse) {
					t.Fatalf("err = %v, want ErrBadResponse (exit 0, no output)", err)
				}
				return
			}
			if !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), tc.wantExit) {
				t.Fatalf("err = %v, want %s", err, tc.wantExit)
			}
		})
	}
}
