package repos

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"testing"

	"github.com/svcplatform/platform/controlplane/api"
)

// fuzzSeed builds a small archive for the corpus.
func fuzzSeed(gz bool, hs ...tar.Header) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	w := tar.NewWriter(&buf)
	if gz {
		w = tar.NewWriter(zw)
	}
	for _, h := range hs {
		body := bytes.Repeat([]byte("x"), int(h.Size))
		w.WriteHeader(&h)
		w.Write(body)
	}
	w.Close()
	if gz {
		zw.Close()
	}
	return buf.Bytes()
}

// FuzzReadArchive: whatever the body, reading an archive push never
// panics, refuses with a client error (4xx) only, and what it accepts is
// within every limit with canonical paths and the bytes its sizes say.
func FuzzReadArchive(f *testing.F) {
	f.Add(fuzzSeed(false, tar.Header{Name: "index.html", Typeflag: tar.TypeReg, Size: 3}))
	f.Add(fuzzSeed(true, tar.Header{Name: "./a/b.txt", Typeflag: tar.TypeReg, Size: 5}, tar.Header{Name: "a/", Typeflag: tar.TypeDir}))
	f.Add(fuzzSeed(true, tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}))
	f.Add(fuzzSeed(false, tar.Header{Name: "../x", Typeflag: tar.TypeReg, Size: 1}))
	f.Add(fuzzSeed(false, tar.Header{Name: "p", Typeflag: tar.TypeFifo}))
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	f.Add([]byte("not an archive"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cs, err := readArchive(bytes.NewReader(data))
		var files []pushed
		if err == nil {
			files, err = checkFiles(cs, func(i int) string { return cs[i].name })
		}
		if err != nil {
			var e *api.Error
			if !errors.As(err, &e) || e.Kind.Status() < 400 || e.Kind.Status() >= 500 {
				t.Fatalf("refusal is not a client error: %v", err)
			}
			return
		}
		var total int64
		for _, f := range files {
			if clean, err := CleanPath(f.path); err != nil || clean != f.path {
				t.Fatalf("accepted path %q is not canonical (%v)", f.path, err)
			}
			if f.data == nil || int64(len(f.data)) != f.size || f.size > MaxFileBytes {
				t.Fatalf("%s: %d bytes for size %d", f.path, len(f.data), f.size)
			}
			total += f.size
		}
		if len(files) == 0 || len(files) > MaxFilesPerPush || total > MaxPushBytes {
			t.Fatalf("accepted %d files, %d bytes", len(files), total)
		}
	})
}
