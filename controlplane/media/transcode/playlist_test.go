package transcode

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestPlaylistRewrites(t *testing.T) {
	const event = "#EXTM3U\n#EXT-X-VERSION:6\n#EXT-X-TARGETDURATION:4\n#EXT-X-PLAYLIST-TYPE:EVENT\n#EXTINF:4.000000,\nseg_0000.ts\n"
	for _, tc := range []struct {
		name, in, start, vod string
	}{
		{"growing", event,
			"#EXTM3U\n#EXT-X-START:TIME-OFFSET=0\n#EXT-X-VERSION:6\n#EXT-X-TARGETDURATION:4\n#EXT-X-PLAYLIST-TYPE:EVENT\n#EXTINF:4.000000,\nseg_0000.ts\n",
			"#EXTM3U\n#EXT-X-VERSION:6\n#EXT-X-TARGETDURATION:4\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXTINF:4.000000,\nseg_0000.ts\n#EXT-X-ENDLIST\n"},
		{"finished", event + "#EXT-X-ENDLIST\n", "",
			"#EXTM3U\n#EXT-X-VERSION:6\n#EXT-X-TARGETDURATION:4\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXTINF:4.000000,\nseg_0000.ts\n#EXT-X-ENDLIST\n"},
		{"CRLF", "#EXTM3U\r\n#EXT-X-PLAYLIST-TYPE:EVENT\r\n", "#EXTM3U\n#EXT-X-START:TIME-OFFSET=0\n#EXT-X-PLAYLIST-TYPE:EVENT\r\n",
			"#EXTM3U\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXT-X-ENDLIST\n"},
		{"start named already", "#EXTM3U\n#EXT-X-START:TIME-OFFSET=2\n#EXT-X-PLAYLIST-TYPE:EVENT\n", "#EXTM3U\n#EXT-X-START:TIME-OFFSET=2\n#EXT-X-PLAYLIST-TYPE:EVENT\n",
			"#EXTM3U\n#EXT-X-START:TIME-OFFSET=2\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXT-X-ENDLIST\n"},
		{"no playlist type", "#EXTM3U\n#EXTINF:4,\nseg_0000.ts\n", "#EXTM3U\n#EXT-X-START:TIME-OFFSET=0\n#EXTINF:4,\nseg_0000.ts\n", ""},
		{"not a playlist", "seg_0000.ts\n", "seg_0000.ts\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.start
			if want == "" {
				want = "#EXTM3U\n#EXT-X-START:TIME-OFFSET=0\n" + tc.in[len("#EXTM3U\n"):]
			}
			if got := string(StartAtBeginning([]byte(tc.in))); got != want {
				t.Errorf("StartAtBeginning = %q, want %q", got, want)
			}
			got, err := VOD([]byte(tc.in))
			if tc.vod == "" {
				if err == nil {
					t.Errorf("VOD = %q, want an error", got)
				}
				return
			}
			if err != nil || string(got) != tc.vod {
				t.Errorf("VOD = %q, %v; want %q", got, err, tc.vod)
			}
		})
	}
}

// Files read back from a directory a sandboxed program writes: a symbolic
// link out of it, a pipe and a file over the limit are refused.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "index.m3u8"), []byte("#EXTM3U\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "big.m3u8"), make([]byte, 100), 0o644)
	os.Symlink("/etc/passwd", filepath.Join(dir, "passwd.m3u8"))
	os.Symlink("/etc", filepath.Join(dir, "etc"))
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.m3u8"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"index.m3u8", true},
		{"big.m3u8", false},
		{"passwd.m3u8", false},
		{"etc/passwd", false},
		{"fifo.m3u8", false},
		{"../x", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _, err := ReadFile(root, tc.name, 50)
			if (err == nil) != tc.ok {
				t.Fatalf("ReadFile = %q, %v; want ok %v", b, err, tc.ok)
			}
		})
	}
}
