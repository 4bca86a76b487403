package transcode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLadder(t *testing.T) {
	for _, tc := range []struct {
		h    int
		want string
	}{
		{1080, "[360p 720p]"},
		{720, "[360p 720p]"},
		{400, "[360p 400p]"},
		{360, "[360p]"},
		{241, "[240p]"},
		{2160, "[360p 720p]"},
		{1, "[2p]"},
	} {
		t.Run(fmt.Sprint(tc.h), func(t *testing.T) {
			var names []string
			for _, r := range Ladder(tc.h) {
				names = append(names, r.Name())
				if r.VideoKbps <= 0 || r.MaxKbps < r.VideoKbps {
					t.Fatalf("bitrates %+v", r)
				}
			}
			if got := fmt.Sprint(names); got != tc.want {
				t.Fatalf("Ladder(%d) = %s, want %s", tc.h, got, tc.want)
			}
		})
	}
}

func TestParseProbe(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		err        error
	}{
		{"video", `{"format":{"format_name":"mov","duration":"6.5"},"streams":[{"codec_type":"video","width":640,"height":360},{"codec_type":"audio"}]}`, nil},
		{"audio only", `{"format":{"format_name":"mp3","duration":"6.5"},"streams":[{"codec_type":"audio"}]}`, ErrNotVideo},
		{"picture", `{"format":{"format_name":"png_pipe"},"streams":[{"codec_type":"video","width":64,"height":64}]}`, ErrNotVideo},
		{"cover art only", `{"format":{"format_name":"mp3","duration":"3"},"streams":[{"codec_type":"video","width":64,"height":64,"disposition":{"attached_pic":1}}]}`, ErrNotVideo},
		{"no duration", `{"format":{"format_name":"mov"},"streams":[{"codec_type":"video","width":64,"height":64}]}`, ErrCorrupt},
		{"zero size", `{"format":{"format_name":"mov","duration":"1"},"streams":[{"codec_type":"video","width":0,"height":64}]}`, ErrCorrupt},
		{"not JSON", `garbage`, ErrNotVideo},
		{"matroska", `{"format":{"format_name":"matroska,webm","duration":"6.5"},"streams":[{"codec_type":"video","width":640,"height":360},{"codec_type":"audio"}]}`, nil},
		{"HLS playlist", `{"format":{"format_name":"hls","duration":"6.5"},"streams":[{"codec_type":"video","width":640,"height":360},{"codec_type":"audio"}]}`, ErrFormat},
		{"concat list", `{"format":{"format_name":"concat","duration":"6.5"},"streams":[{"codec_type":"video","width":640,"height":360},{"codec_type":"audio"}]}`, ErrFormat},
		{"picture sequence", `{"format":{"format_name":"image2","duration":"6.5"},"streams":[{"codec_type":"video","width":640,"height":360}]}`, ErrFormat},
		{"no format", `{"streams":[{"codec_type":"video","width":640,"height":360}]}`, ErrFormat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseProbe([]byte(tc.json))
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if err == nil && (p.Height != 360 || !p.HasAudio || p.Duration.Seconds() != 6.5 || p.Demuxer != Demuxer(p.Format) || p.Demuxer == "") {
				t.Fatalf("%+v", p)
			}
		})
	}
}

func TestDemuxer(t *testing.T) {
	for _, tc := range []struct{ format, want string }{
		{"mov,mp4,m4a,3gp,3g2,mj2", "mov"},
		{"matroska,webm", "matroska"},
		{"mpegts", "mpegts"},
		{"mpeg", "mpeg"},
		{"avi", "avi"},
		{"flv", "flv"},
		{"ogg", "ogg"},
		{"gif", "gif"},
		{"wav", "wav"},
		{"mp3", "mp3"},
		{"flac", "flac"},
		{"aac", "aac"},
		{"png_pipe", "png_pipe"},
		{"jpeg_pipe", "jpeg_pipe"},
		// Demuxers that open further inputs, and anything unknown.
		{"hls", ""},
		{"applehttp", ""},
		{"concat", ""},
		{"image2", ""},
		{"dash", ""},
		{"ffmetadata", ""},
		{"tee", ""},
		{"subviewer", ""},
		{"", ""},
		{"MOV", ""},
		{"mov ", ""},
	} {
		t.Run(tc.format, func(t *testing.T) {
			if got := Demuxer(tc.format); got != tc.want {
				t.Fatalf("Demuxer(%q) = %q, want %q", tc.format, got, tc.want)
			}
		})
	}
}

// recorder is a Runner that records each command and prints out.
type recorder struct {
	dirs  []string
	argvs [][]string
	out   string
}

func (r *recorder) Run(_ context.Context, dir string, argv []string, stdout, _ io.Writer) error {
	r.dirs, r.argvs = append(r.dirs, dir), append(r.argvs, argv)
	io.WriteString(stdout, r.out)
	return os.MkdirAll(filepath.Join(dir, "out"), 0o755)
}

// TestInputOptions checks what every program is told about its input:
// ffprobe only accepts Demuxers, ffmpeg is forced to the probed one, both
// open through the file protocol only, with names relative to the job
// directory.
func TestInputOptions(t *testing.T) {
	dir := t.TempDir()
	rec := &recorder{out: `{"format":{"format_name":"mov,mp4,m4a,3gp,3g2,mj2","duration":"6"},"streams":[{"codec_type":"video","width":64,"height":64}]}`}
	tools := Tools{FFmpeg: "/usr/bin/ffmpeg", FFprobe: "/usr/bin/ffprobe", Nice: -1, Runner: rec}
	ctx := context.Background()
	p, err := tools.Probe(ctx, dir, "source")
	if err != nil {
		t.Fatal(err)
	}
	tools.HLS(ctx, dir, "source", "out", p, Options{})
	tools.Poster(ctx, dir, "source", "out/poster.jpg", p)
	for i, tc := range []struct{ name, want string }{
		{"probe", "-protocol_whitelist file -format_whitelist " + strings.Join(Demuxers, ",") + " -print_format json -show_format -show_streams -i file:source"},
		{"hls", "-protocol_whitelist file -f mov -i file:source"},
		{"poster", "-protocol_whitelist file -f mov -i file:source"},
	} {
		want := tc.want
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Join(rec.argvs[i], " "); !strings.Contains(got, want) {
				t.Fatalf("command %q lacks %q", got, want)
			}
			if rec.dirs[i] != dir {
				t.Fatalf("ran in %q", rec.dirs[i])
			}
			for _, a := range rec.argvs[i][1:] {
				if strings.Contains(a, dir) {
					t.Fatalf("command %q names the host path %s", rec.argvs[i], dir)
				}
			}
		})
	}
	// An input without an accepted probed demuxer is never run.
	n := len(rec.argvs)
	for _, d := range []string{"", "concat", "hls", "mov,concat"} {
		bad := p
		bad.Demuxer = d
		if _, err := tools.HLS(ctx, dir, "source", "out", bad, Options{}); !errors.Is(err, ErrFormat) {
			t.Fatalf("HLS with demuxer %q: %v", d, err)
		}
		if err := tools.Poster(ctx, dir, "source", "out/poster.jpg", bad); !errors.Is(err, ErrFormat) {
			t.Fatalf("Poster with demuxer %q: %v", d, err)
		}
	}
	if len(rec.argvs) != n {
		t.Fatalf("ran %v", rec.argvs[n:])
	}
}

// needFFmpeg skips a test without ffmpeg, naming its Debian package (and
// fails it when CI is set).
func needFFmpeg(t *testing.T) Tools {
	t.Helper()
	tools, err := Find()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI: %v", err)
		}
		t.Skipf("%v: apt-get install ffmpeg", err)
	}
	return tools
}

// TestContainersThatOpenOtherFiles feeds ffprobe and ffmpeg files that make
// a demuxer read other files of the host: a playlist and a concat list
// naming a real video elsewhere (which they would otherwise read as
// theirs), and a playlist naming /etc/passwd. ffprobe refuses each unread;
// ffmpeg forced to the probed demuxer cannot be turned into another.
func TestContainersThatOpenOtherFiles(t *testing.T) {
	tools := needFFmpeg(t)
	ctx := context.Background()
	host := t.TempDir()
	secret := filepath.Join(host, "secret.mp4")
	if b, err := exec.Command(tools.FFmpeg, "-hide_banner", "-loglevel", "error", "-nostdin", "-y", "-f", "lavfi",
		"-i", "testsrc=size=64x64:rate=10:duration=2", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", secret).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v: %s", err, b)
	}
	job := t.TempDir()
	for _, tc := range []struct{ name, body string }{
		{"HLS playlist of a host video", "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n" + secret + "\n#EXT-X-ENDLIST\n"},
		{"HLS playlist of a host file", "#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\n/etc/passwd\n#EXT-X-ENDLIST\n"},
		{"concat list of a host video", "ffconcat version 1.0\nfile " + secret + "\n"},
		{"concat list beside a video", "ffconcat version 1.0\nfile secret.mp4\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := job
			if strings.Contains(tc.name, "beside") {
				dir = host
			}
			if err := os.WriteFile(filepath.Join(dir, "source"), []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			p, err := tools.Probe(ctx, dir, "source")
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("probe = %+v, %v; want ErrFormat", p, err)
			}
			// ffmpeg told the container is MP4, as a probe of the video
			// said, reads the list as MP4 and fails.
			mp4 := Probe{Format: "mov,mp4,m4a,3gp,3g2,mj2", Demuxer: "mov", Duration: 2 * time.Second, Width: 64, Height: 64}
			if _, err := tools.HLS(ctx, dir, "source", "out", mp4, Options{}); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("HLS of the list forced to mov: %v", err)
			}
			if err := tools.Poster(ctx, dir, "source", "poster.jpg", mp4); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("poster of the list forced to mov: %v", err)
			}
		})
	}
	t.Run("the video itself", func(t *testing.T) {
		p, err := tools.Probe(ctx, host, "secret.mp4")
		if err != nil || p.Demuxer != "mov" || p.Height != 64 {
			t.Fatalf("%+v, %v", p, err)
		}
		if _, err := tools.HLS(ctx, host, "secret.mp4", "out", p, Options{}); err != nil {
			t.Fatal(err)
		}
	})
}
