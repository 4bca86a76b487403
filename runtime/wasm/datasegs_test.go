package wasm

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"

	"github.com/tetratelabs/wazero"
)

// wasmModule is a module with one memory of minPages and a data section
// of segs (an empty segs: no data section), followed by extra raw sections.
func wasmModule(minPages byte, segs []dataSegment, extra ...[]byte) []byte {
	mod := []byte{0, 'a', 's', 'm', 1, 0, 0, 0, 5, 3, 1, 0, minPages}
	for _, s := range extra {
		mod = append(mod, s...)
	}
	if len(segs) == 0 {
		return mod
	}
	var body []byte
	body = binary.AppendUvarint(body, uint64(len(segs)))
	for _, s := range segs {
		body = append(body, 0, opI32Const)
		body = appendVarint32(body, int32(s.offset))
		body = append(body, opEnd)
		body = binary.AppendUvarint(body, uint64(len(s.init)))
		body = append(body, s.init...)
	}
	mod = append(mod, sectionData)
	mod = binary.AppendUvarint(mod, uint64(len(body)))
	return append(mod, body...)
}

// memoryImage is what the active segments of segs write, applied in
// order: the non-zero bytes by address, and the end of the furthest segment
// (which decides whether instantiation fails).
func memoryImage(segs []dataSegment) (map[uint64]byte, uint64) {
	img := map[uint64]byte{}
	var end uint64
	for _, s := range segs {
		if s.passive {
			continue
		}
		for i, c := range s.init {
			if c != 0 {
				img[uint64(s.offset)+uint64(i)] = c
			} else {
				delete(img, uint64(s.offset)+uint64(i))
			}
		}
		end = max(end, s.end())
	}
	return img, end
}

// withoutData is mod without its data and data count sections.
func withoutData(mod []byte, data, count span) []byte {
	var out []byte
	p := 0
	if count.start >= 0 {
		out = append(out, mod[:count.start]...)
		p = count.end
	}
	out = append(out, mod[p:data.start]...)
	return append(out, mod[data.end:]...)
}

// sameImage fails t unless out (compactData's answer to in) is in itself,
// or a module that differs only in its data (and data count) section, fills
// memory the same, and, with a data count section, keeps every segment's
// bytes at its index.
func sameImage(t *testing.T, in, out []byte) {
	t.Helper()
	if bytes.Equal(in, out) {
		return
	}
	d1, c1, segs1, ok1 := dataSection(in)
	d2, c2, segs2, ok2 := dataSection(out)
	if !ok1 || !ok2 {
		t.Fatalf("rewrote a module it cannot parse (in %v, out %v)", ok1, ok2)
	}
	if !bytes.Equal(withoutData(in, d1, c1), withoutData(out, d2, c2)) {
		t.Fatal("rewrote more than the data sections")
	}
	if (c1.start >= 0) != (c2.start >= 0) {
		t.Fatal("added or dropped the data count section")
	}
	if c1.start >= 0 {
		if len(segs2) < len(segs1) {
			t.Fatalf("%d segments, rewritten %d", len(segs1), len(segs2))
		}
		for i, s := range segs1 {
			if !segs2[i].passive || !bytes.Equal(segs2[i].init, s.init) {
				t.Fatalf("segment %d: not kept as passive with its bytes", i)
			}
		}
	}
	img1, end1 := memoryImage(segs1)
	img2, end2 := memoryImage(segs2)
	if end1 != end2 || len(img1) != len(img2) {
		t.Fatalf("image: end %d, %d bytes; rewritten: end %d, %d bytes", end1, len(img1), end2, len(img2))
	}
	for k, v := range img1 {
		if img2[k] != v {
			t.Fatalf("byte %d: %#x, rewritten %#x", k, v, img2[k])
		}
	}
}

func TestCompactData(t *testing.T) {
	seg := func(off uint32, s string) dataSegment { return dataSegment{offset: off, init: []byte(s)} }
	spread := []dataSegment{seg(300, "c"), seg(16, "ab"), seg(40, "xyz"), seg(40+3+mergeGap+1, "far")}
	// Two segments: active "a" at 0, passive "b" (flags 1, no offset).
	passive := append(wasmModule(1, nil), sectionData, 10, 2, 0, opI32Const, 0, opEnd, 1, 'a', 1, 1, 'b')
	tests := []struct {
		name     string
		mod      []byte
		wantSegs int // 0: left as it is
	}{
		{name: "sorted and joined across small gaps", mod: wasmModule(1, spread), wantSegs: 2},
		{name: "one segment", mod: wasmModule(1, []dataSegment{seg(0, "a")})},
		{name: "gaps too large", mod: wasmModule(1, []dataSegment{seg(0, "a"), seg(2*mergeGap, "b")})},
		{name: "overlapping segments keep their order", mod: wasmModule(1, []dataSegment{seg(0, "abc"), seg(1, "z")})},
		{name: "data count section: kept as passive, merged appended", mod: wasmModule(1, spread, []byte{sectionDataCount, 1, 4}), wantSegs: 4 + 2},
		{name: "data count section that does not match", mod: wasmModule(1, spread, []byte{sectionDataCount, 1, 3})},
		{name: "data count section, little to gain", mod: wasmModule(1, []dataSegment{seg(0, "a"), seg(8, "b"), seg(4000, "c")}, []byte{sectionDataCount, 1, 3})},
		{name: "passive segment without data count", mod: passive},
		{name: "passive segment with data count", mod: append(wasmModule(1, nil, []byte{sectionDataCount, 1, 3}), sectionData, 16, 3, 0, opI32Const, 0, opEnd, 1, 'a', 1, 1, 'b', 0, opI32Const, 4, opEnd, 1, 'c'), wantSegs: 3 + 1},
		{name: "no data section", mod: wasmModule(1, nil)},
		{name: "not a module", mod: []byte("\x00asm\x02\x00\x00\x00")},
		{name: "truncated", mod: wasmModule(1, spread)[:30]},
		{name: "negative offset (the top of the address space)", mod: wasmModule(1, []dataSegment{seg(0xfffffff0, "a"), seg(0xfffffff8, "b")}), wantSegs: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := compactData(tc.mod)
			sameImage(t, tc.mod, out)
			if tc.wantSegs == 0 {
				if !bytes.Equal(out, tc.mod) {
					t.Fatal("rewrote a module it should leave alone")
				}
				return
			}
			_, _, segs, ok := dataSection(out)
			if !ok || len(segs) != tc.wantSegs {
				t.Fatalf("segments %d (ok %v), want %d", len(segs), ok, tc.wantSegs)
			}
		})
	}
}

// TestCompactDataExample: the Go example's tens of thousands of segments
// become a few, with the same image.
func TestCompactDataExample(t *testing.T) {
	mod := exampleModule(t)
	out := compactData(mod)
	sameImage(t, mod, out)
	_, _, before, _ := dataSection(mod)
	_, _, after, _ := dataSection(out)
	if len(before) < 1000 || len(after) > 16 {
		t.Fatalf("segments %d -> %d, want thousands -> a few", len(before), len(after))
	}
	t.Logf("segments %d -> %d, module %d -> %d bytes", len(before), len(after), len(mod), len(out))
}

// TestCompactDataAssemblyScript: the AssemblyScript example has a data
// count section: its segments stay, passive, and a few active ones follow.
func TestCompactDataAssemblyScript(t *testing.T) {
	mod := asModule(t)
	out := compactData(mod)
	sameImage(t, mod, out)
	_, _, before, _ := dataSection(mod)
	_, _, after, _ := dataSection(out)
	active := 0
	for _, s := range after {
		if !s.passive {
			active++
		}
	}
	if len(before) < 100 || active > 8 {
		t.Fatalf("active segments %d -> %d, want a hundred or more -> a few", len(before), active)
	}
	h := newHost(t, Config{})
	ctx := context.Background()
	if err := h.Load(ctx, Deployment{ID: "d", Project: "prj_as", Module: mod}); err != nil {
		t.Fatal(err)
	}
	res, err := h.Call(ctx, "d", &Request{Method: "GET", Path: "/hello"})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res.Response.Body); got != "hello from prj_as\n" {
		t.Fatalf("body %q", got)
	}
}

// TestCompactDataOutOfBounds: a segment past the memory's end still fails
// instantiation once merged with its neighbours.
func TestCompactDataOutOfBounds(t *testing.T) {
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	mod := wasmModule(1, []dataSegment{{offset: 100, init: []byte("a")}, {offset: 65536 - 2, init: []byte("abcd")}, {offset: 10, init: []byte("b")}})
	out := compactData(mod)
	if bytes.Equal(out, mod) {
		t.Fatal("not rewritten")
	}
	for name, m := range map[string][]byte{"original": mod, "rewritten": out} {
		if _, err := rt.InstantiateWithConfig(ctx, m, wazero.NewModuleConfig().WithName("")); err == nil {
			t.Fatalf("%s: instantiated a segment past the memory's end", name)
		}
	}
	ok := compactData(wasmModule(1, []dataSegment{{offset: 100, init: []byte("a")}, {offset: 65536 - 4, init: []byte("abcd")}}))
	if _, err := rt.InstantiateWithConfig(ctx, ok, wazero.NewModuleConfig().WithName("")); err != nil {
		t.Fatalf("rewritten module in bounds: %v", err)
	}
}

func FuzzCompactData(f *testing.F) {
	f.Add(wasmModule(1, []dataSegment{{offset: 300, init: []byte("c")}, {offset: 16, init: []byte("ab")}, {offset: 40, init: []byte("xyz")}}))
	f.Add(wasmModule(1, []dataSegment{{offset: 0, init: []byte("abc")}, {offset: 1, init: []byte("z")}}))
	f.Add(wasmModule(1, []dataSegment{{offset: 0xfffffff0, init: []byte("a")}, {offset: 0xfffffffe, init: []byte("bcd")}}))
	f.Add(wasmModule(1, []dataSegment{{offset: 300, init: []byte("c")}, {offset: 16, init: []byte("ab")}, {offset: 40, init: []byte("xyz")}}, []byte{sectionDataCount, 1, 3}))
	f.Fuzz(func(t *testing.T, mod []byte) {
		sameImage(t, mod, compactData(mod))
	})
}
