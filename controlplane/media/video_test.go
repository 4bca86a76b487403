package media

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/plans"
)

// playlist lists the URIs of an m3u8 and, for a media playlist, the
// segment durations.
func playlist(t *testing.T, body []byte) (uris []string, durs []float64, tags []string) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(body))
	first := true
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if first {
			if l != "#EXTM3U" {
				t.Fatalf("playlist starts %q", l)
			}
			first = false
			continue
		}
		switch {
		case l == "":
		case strings.HasPrefix(l, "#EXTINF:"):
			d, err := strconv.ParseFloat(strings.TrimSuffix(strings.SplitN(l[8:], ",", 2)[0], ","), 64)
			if err != nil {
				t.Fatalf("EXTINF %q", l)
			}
			durs = append(durs, d)
		case strings.HasPrefix(l, "#"):
			tags = append(tags, l)
		default:
			uris = append(uris, l)
		}
	}
	return
}

func TestVideoUploadToPlayback(t *testing.T) {
	needTools(t, "ffmpeg", "ffprobe")
	e := newEnv(t, plans.Pro, Config{NoWorkers: true})
	src := clip(t, t.TempDir())
	id, up := e.createVideo("Clip")

	if r := e.upload(up, "file", src); r.Status != 201 {
		t.Fatalf("upload: %d %s", r.Status, r.Body)
	}
	if a := e.asset(id); a.Status != StatusProcessing || a.Size == 0 || a.PlaybackURL != "" {
		t.Fatalf("after upload: %+v", a)
	}
	// A used URL is refused; no new URL once the file has arrived.
	if r := e.upload(up, "file", src); r.Status != 410 || r.Code() != "upload_url_used" {
		t.Fatalf("second upload: %d %s", r.Status, r.Body)
	}
	if r := e.do(ownerKey, "POST", "/api/media/"+id+"/upload", nil); r.Status != 409 || r.Code() != "file_received" {
		t.Fatalf("fresh URL after file: %d %s", r.Status, r.Body)
	}
	if err := e.svc.Process(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	a := e.asset(id)
	if a.Status != StatusReady || a.Duration < 5.5 || a.Duration > 6.5 || a.Height != 400 || a.StoredBytes == 0 ||
		strings.Join(a.Renditions, ",") != "360p,400p" || !strings.HasSuffix(a.PlaybackURL, "/media/"+id+"/master.m3u8") {
		t.Fatalf("ready: %+v", a)
	}

	// The master playlist names every rendition with bandwidth and size;
	// each rendition parses, holds 2-6 s segments, and ffprobe reads them.
	r := e.must(200, "", "GET", a.PlaybackURL, nil)
	if ct := r.Header.Get("Content-Type"); ct != "application/vnd.apple.mpegurl" || r.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("master headers: %v", r.Header)
	}
	uris, _, tags := playlist(t, r.Body)
	if len(uris) != 2 || strings.Count(strings.Join(tags, "\n"), "#EXT-X-STREAM-INF:") != 2 || !strings.Contains(string(r.Body), "RESOLUTION=") {
		t.Fatalf("master:\n%s", r.Body)
	}
	base, _ := url.Parse(a.PlaybackURL)
	for _, u := range uris {
		ru, _ := base.Parse(u)
		rr := e.must(200, "", "GET", ru.String(), nil)
		segs, durs, tags := playlist(t, rr.Body)
		if len(segs) < 2 || !strings.Contains(strings.Join(tags, " "), "#EXT-X-ENDLIST") {
			t.Fatalf("rendition %s:\n%s", u, rr.Body)
		}
		for i, d := range durs {
			if d > 6.1 || (d < 1.9 && i < len(durs)-1) {
				t.Fatalf("rendition %s: segment %d lasts %v s", u, i, d)
			}
		}
		su, _ := ru.Parse(segs[0])
		sr := e.must(200, "", "GET", su.String(), nil)
		if sr.Header.Get("Content-Type") != "video/mp2t" || !strings.Contains(sr.Header.Get("Cache-Control"), "immutable") {
			t.Fatalf("segment headers: %v", sr.Header)
		}
		f := filepath.Join(t.TempDir(), "seg.ts")
		os.WriteFile(f, sr.Body, 0o644)
		out, err := exec.Command("ffprobe", "-v", "error", "-print_format", "json", "-show_streams", f).Output()
		if err != nil {
			t.Fatalf("ffprobe segment: %v", err)
		}
		var pj probeStreams
		json.Unmarshal(out, &pj)
		if codecs := pj.codecs(); codecs != "h264,aac" {
			t.Fatalf("segment codecs %q", codecs)
		}
	}
	if r := e.must(200, "", "GET", a.PosterURL, nil); r.Header.Get("Content-Type") != "image/jpeg" || len(r.Body) < 100 {
		t.Fatalf("poster: %v %d", r.Header, len(r.Body))
	}
	// The source is gone once processed; only HLS is stored.
	if _, err := os.Stat(filepath.Join(e.svc.assetDir(id), "source")); !os.IsNotExist(err) {
		t.Fatalf("source kept: %v", err)
	}
	// Metered: minutes processed and stored bytes.
	ws, from, to := e.Owner.WorkspaceID, e.Clock.Now().Add(-time.Hour), e.Clock.Now().Add(time.Hour)
	if m, _ := e.Meter.Total(context.Background(), ws, e.project, MetricMinutesProcessed, from, to); m < 0.09 || m > 0.11 {
		t.Fatalf("minutes processed %v", m)
	}
	if b, _ := e.Meter.Total(context.Background(), ws, e.project, MetricStoredBytes, from, to); int64(b) != a.StoredBytes {
		t.Fatalf("stored bytes metered %v, want %d", b, a.StoredBytes)
	}
	// The next day's storage is recorded once.
	e.Clock.Advance(24 * time.Hour)
	for want := 1; want >= 0; want-- {
		if n, err := e.svc.RecordStorage(context.Background()); err != nil || n != want {
			t.Fatalf("RecordStorage = %d, %v; want %d", n, err, want)
		}
	}
}

type probeStreams struct {
	Streams []struct {
		Codec string `json:"codec_name"`
	} `json:"streams"`
}

func (p probeStreams) codecs() string {
	var s []string
	for _, st := range p.Streams {
		s = append(s, st.Codec)
	}
	return strings.Join(s, ",")
}

func TestVideoFailures(t *testing.T) {
	needTools(t, "ffmpeg", "ffprobe")
	e := newEnv(t, plans.Pro, Config{NoWorkers: true})
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte(strings.Repeat("this is not a video\n", 100)), 0o644)
	corrupt := filepath.Join(dir, "broken.mp4")
	good, _ := os.ReadFile(clip(t, dir))
	os.WriteFile(corrupt, good[:len(good)/3], 0o644) // moov atom at the end: cut off
	long := genMedia(t, dir, "long.mp4", "-f", "lavfi", "-i", "color=c=blue:size=32x32:rate=1:duration=3660",
		"-c:v", "libx264", "-preset", "ultrafast", "-g", "600", "-pix_fmt", "yuv420p")
	image := genMedia(t, dir, "still.png", "-f", "lavfi", "-i", "testsrc=size=64x64", "-frames:v", "1")
	// Containers that make ffmpeg read other files of the host: without
	// the container check the first became a ready video of the host's.
	hostVideo := clip(t, dir)
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	playlistOfVideo := write("video.m3u8", "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\n"+hostVideo+"\n#EXT-X-ENDLIST\n")
	playlistOfPasswd := write("passwd.m3u8", "#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\n/etc/passwd\n#EXT-X-ENDLIST\n")
	concat := write("list.ffconcat", "ffconcat version 1.0\nfile "+hostVideo+"\n")
	for _, tc := range []struct {
		name, file, code string
	}{
		{"text file", text, FailNotVideo},
		{"image", image, FailNotVideo},
		{"truncated", corrupt, ""},
		{"61 minutes", long, FailTooLong},
		{"playlist of a host video", playlistOfVideo, FailFormat},
		{"playlist of /etc/passwd", playlistOfPasswd, FailFormat},
		{"concat list of a host video", concat, FailFormat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, up := e.createVideo(tc.name)
			if r := e.upload(up, "file", tc.file); r.Status != 201 {
				t.Fatalf("upload: %d %s", r.Status, r.Body)
			}
			if err := e.svc.Process(context.Background(), id); err != nil {
				t.Fatal(err)
			}
			a := e.asset(id)
			if a.Status != StatusFailed || a.Failure == nil || a.Failure.Message == "" || a.PlaybackURL != "" {
				t.Fatalf("asset: %+v", a)
			}
			if tc.code != "" && a.Failure.Code != tc.code {
				t.Fatalf("failure %+v, want %s", a.Failure, tc.code)
			}
			if tc.code == "" && a.Failure.Code != FailNotVideo && a.Failure.Code != FailCorrupt {
				t.Fatalf("failure %+v", a.Failure)
			}
			// The answer names no host path.
			if r := e.must(200, ownerKey, "GET", "/api/media/"+id, nil); strings.Contains(string(r.Body), e.Dir) || strings.Contains(string(r.Body), dir) {
				t.Fatalf("asset names a host path: %s", r.Body)
			}
			if _, err := os.Stat(e.svc.assetDir(id)); !os.IsNotExist(err) {
				t.Fatalf("files kept after failure: %v", err)
			}
			if r := e.must(404, "", "GET", "/media/"+id+"/master.m3u8", nil); r.Status != 404 {
				t.Fatal("playback of a failed video")
			}
		})
	}
}
