package transcode

import (
	"bytes"
	"testing"
	"time"
)

// The playlists read back are written by ffmpeg, in a sandbox: whatever
// they hold, the rewrites keep every line but the ones they own and never
// fail open.
func FuzzPlaylist(f *testing.F) {
	f.Add([]byte("#EXTM3U\n#EXT-X-VERSION:6\n#EXT-X-TARGETDURATION:4\n#EXT-X-MEDIA-SEQUENCE:0\n#EXT-X-PLAYLIST-TYPE:EVENT\n#EXT-X-INDEPENDENT-SEGMENTS\n#EXTINF:4.000000,\nseg_0000.ts\n"))
	f.Add([]byte("#EXTM3U\n#EXT-X-PLAYLIST-TYPE:EVENT\n#EXTINF:4,\nseg_0000.ts\n#EXT-X-ENDLIST\n"))
	f.Add([]byte("#EXTM3U\r\n#EXT-X-START:TIME-OFFSET=3\r\n"))
	f.Add([]byte("not a playlist"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, pl []byte) {
		s := StartAtBeginning(pl)
		if !bytes.Equal(s, pl) {
			_, rest, _ := bytes.Cut(pl, []byte("\n"))
			if want := append([]byte(tagM3U+"\n"+tagStartAt0+"\n"), rest...); !bytes.Equal(s, want) || bytes.Contains(pl, []byte(tagStart)) {
				t.Fatalf("StartAtBeginning(%q) = %q", pl, s)
			}
		}
		v, err := VOD(pl)
		if err != nil {
			return
		}
		if !bytes.HasPrefix(v, []byte(tagM3U+"\n")) || !bytes.HasSuffix(v, []byte("\n"+tagEndList+"\n")) ||
			bytes.Count(v, []byte(tagEndList)) < 1 || !bytes.Contains(v, []byte("\n"+tagVOD+"\n")) ||
			bytes.Contains(v, []byte("\n"+tagEvent+"\n")) {
			t.Fatalf("VOD(%q) = %q", pl, v)
		}
	})
}

// ffmpeg's -progress output: any bytes, split anywhere, give a
// non-negative time at each progress line and nothing else.
func FuzzProgress(f *testing.F) {
	f.Add([]byte("frame=10\nout_time_us=400000\nprogress=continue\nout_time_us=N/A\nprogress=end\n"), 7)
	f.Add([]byte("out_time_us=-5\nprogress=continue\n"), 1)
	f.Add([]byte("out_time_us=99999999999999999999\nprogress=continue\n"), 3)
	f.Fuzz(func(t *testing.T, out []byte, cut int) {
		var whole, split []time.Duration
		w := &progressWriter{fn: func(d time.Duration) { whole = append(whole, d) }}
		w.Write(out)
		w2 := &progressWriter{fn: func(d time.Duration) { split = append(split, d) }}
		if cut < 0 {
			cut = -cut
		}
		if len(out) > 0 {
			cut %= len(out) + 1
		} else {
			cut = 0
		}
		w2.Write(out[:cut])
		w2.Write(out[cut:])
		if len(whole) != len(split) {
			t.Fatalf("%d reports whole, %d split", len(whole), len(split))
		}
		for i, d := range whole {
			if d < 0 || d != split[i] {
				t.Fatalf("report %d: %v whole, %v split", i, d, split[i])
			}
		}
	})
}
