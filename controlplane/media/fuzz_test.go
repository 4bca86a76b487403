package media

import (
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/media/transcode"
)

func FuzzPlaybackPath(f *testing.F) {
	for _, s := range []string{"master.m3u8", "360p/index.m3u8", "360p/seg_0001.ts", "poster.jpg", "../x.ts", "a/b/c.ts", ".hidden.ts", "a//b.ts", "x.txt", "/etc/passwd"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		ct, ok := cleanPlaybackPath(p)
		if !ok {
			return
		}
		escapes := slices.Contains(strings.Split(p, "/"), "..") || path.Clean(p) != p
		if ct == "" || escapes || strings.HasPrefix(p, "/") || strings.Count(p, "/") > 1 || strings.Contains(p, "\\") {
			t.Fatalf("accepted %q", p)
		}
	})
}

func FuzzUploadToken(f *testing.F) {
	f.Add(newToken())
	f.Add("short")
	f.Add(strings.Repeat("é", 22))
	f.Fuzz(func(t *testing.T, tok string) {
		if validToken(tok) && (len(tok) != 43 || strings.ContainsAny(tok, "/.?%")) {
			t.Fatalf("accepted %q", tok)
		}
	})
}

func FuzzParseProbe(f *testing.F) {
	f.Add([]byte(`{"format":{"format_name":"mov,mp4","duration":"6.0"},"streams":[{"codec_type":"video","width":256,"height":400},{"codec_type":"audio"}]}`))
	f.Add([]byte(`{"format":{"format_name":"png_pipe"},"streams":[{"codec_type":"video","width":64,"height":64}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := transcode.ParseProbe(data)
		if err != nil {
			return
		}
		if p.Width <= 0 || p.Height <= 0 || p.Duration <= 0 {
			t.Fatalf("accepted %+v from %s", p, data)
		}
	})
}
