package transcode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Rung is one rendition of the ladder.
type Rung struct {
	// Height is the frame height; the width keeps the source's aspect.
	Height int
	// VideoKbps and MaxKbps are the video's target and peak bitrates.
	VideoKbps, MaxKbps int
}

// Name is the rendition's directory and label, e.g. "360p".
func (r Rung) Name() string { return strconv.Itoa(r.Height) + "p" }

// LadderHeights are the standard rungs; a source smaller than a rung gets
// its own height instead of being scaled up.
var LadderHeights = []int{360, 720}

// AudioKbps is the AAC bitrate of every rendition.
const AudioKbps = 128

// Ladder returns the renditions for a source of height h: each standard
// rung below the source, plus the source height itself when it is smaller
// than the top rung (never upscaled). Heights are even (H.264 4:2:0).
func Ladder(h int) []Rung {
	if h < 2 {
		h = 2
	}
	h &^= 1
	var out []Rung
	for _, lh := range LadderHeights {
		if lh < h {
			out = append(out, rungOf(lh))
		}
	}
	top := LadderHeights[len(LadderHeights)-1]
	if h <= top {
		out = append(out, rungOf(h))
	} else if len(out) == 0 || out[len(out)-1].Height != top {
		out = append(out, rungOf(top))
	}
	return out
}

// rungOf picks bitrates in proportion to the pixel count (2,800 kbps at 720p).
func rungOf(h int) Rung {
	k := 2800 * h * h / (720 * 720)
	k = max(k, 150)
	return Rung{Height: h, VideoKbps: k, MaxKbps: k * 3 / 2}
}

// Options shape the HLS output.
type Options struct {
	// SegmentSeconds is the target segment length (DefaultSegmentSeconds
	// when 0; the spec's range is 2-6 s).
	SegmentSeconds int
	// Progress, when set, is told how far the encode has come about four
	// times a second and once at its end, from a goroutine of its own
	// (never after HLS has returned). It must not block for long.
	Progress func(Progress)
}

// progressPeriod is how often ffmpeg reports its progress (its
// -stats_period, seconds).
const progressPeriod = "0.25"

// DefaultSegmentSeconds is the segment length used when none is given.
const DefaultSegmentSeconds = 4

// MasterPlaylist is the file name of the master playlist in the output.
const MasterPlaylist = "master.m3u8"

// Output is what HLS wrote.
type Output struct {
	// Renditions are the rungs encoded, smallest first.
	Renditions []Rung
	// Bytes is the size of every file written.
	Bytes int64
}

// HLS encodes src into out, both relative to dir: one directory per rung
// holding index.m3u8 and its .ts segments, and master.m3u8 naming them all
// with their bandwidth and resolution. out is emptied first. src is read
// with the demuxer p was probed with, through the file protocol only.
//
// The output plays while it is written (see Progress.Published): every
// rung is encoded at once, each segment appears under its name only once
// complete (never rewritten), and each rung's playlist is an EVENT
// playlist naming the segments so far, replaced at once as each lands.
// When the encode ends they become VOD playlists.
func (t Tools) HLS(ctx context.Context, dir, src, out string, p Probe, o Options) (Output, error) {
	seg := o.SegmentSeconds
	if seg == 0 {
		seg = DefaultSegmentSeconds
	}
	if seg < 2 || seg > 6 {
		return Output{}, fmt.Errorf("transcode: segment length %d s outside 2-6 s", seg)
	}
	in, err := p.inputArgs()
	if err != nil {
		return Output{}, err
	}
	if !filepath.IsLocal(src) || !filepath.IsLocal(out) {
		return Output{}, fmt.Errorf("transcode: hls: %q and %q must be relative to the job directory", src, out)
	}
	outDir := filepath.Join(dir, out)
	rungs := Ladder(p.Height)
	if err := os.RemoveAll(outDir); err != nil {
		return Output{}, fmt.Errorf("transcode: clear %s: %w", out, err)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return Output{}, fmt.Errorf("transcode: %w", err)
	}
	var filter strings.Builder
	fmt.Fprintf(&filter, "[0:v:0]split=%d", len(rungs))
	for i := range rungs {
		fmt.Fprintf(&filter, "[s%d]", i)
	}
	for i, r := range rungs {
		fmt.Fprintf(&filter, ";[s%d]scale=-2:%d,format=yuv420p[v%d]", i, r.Height, i)
	}
	args := []string{"-hide_banner", "-nostdin", "-nostats", "-loglevel", "error", "-y"}
	var stdout io.Writer = io.Discard
	if o.Progress != nil {
		args = append(args, "-progress", "pipe:1", "-stats_period", progressPeriod)
		done := false
		stdout = &progressWriter{fn: func(encoded time.Duration) {
			if !done {
				done = published(outDir, rungs)
			}
			o.Progress(Progress{Encoded: encoded, Published: done})
		}}
	}
	args = append(args, in...)
	args = append(args, "-i", "file:"+src, "-filter_complex", filter.String())
	var streamMap []string
	for i, r := range rungs {
		args = append(args, "-map", fmt.Sprintf("[v%d]", i))
		if p.HasAudio {
			args = append(args, "-map", "0:a:0")
		}
		args = append(args,
			fmt.Sprintf("-b:v:%d", i), fmt.Sprintf("%dk", r.VideoKbps),
			fmt.Sprintf("-maxrate:v:%d", i), fmt.Sprintf("%dk", r.MaxKbps),
			fmt.Sprintf("-bufsize:v:%d", i), fmt.Sprintf("%dk", 2*r.MaxKbps))
		m := fmt.Sprintf("v:%d", i)
		if p.HasAudio {
			m += fmt.Sprintf(",a:%d", i)
		}
		streamMap = append(streamMap, m+",name:"+r.Name())
	}
	args = append(args,
		"-c:v", "libx264", "-preset", "veryfast", "-profile:v", "main",
		"-threads", strconv.Itoa(t.threads()),
		"-force_key_frames", fmt.Sprintf("expr:gte(t,n_forced*%d)", seg), "-sc_threshold", "0")
	if p.HasAudio {
		args = append(args, "-c:a", "aac", "-b:a", fmt.Sprintf("%dk", AudioKbps), "-ac", "2", "-ar", "48000")
	}
	args = append(args,
		"-f", "hls", "-hls_time", strconv.Itoa(seg), "-hls_playlist_type", "event", "-hls_flags", "independent_segments+temp_file",
		"-hls_segment_type", "mpegts",
		"-hls_segment_filename", filepath.Join(out, "%v", "seg_%04d.ts"),
		"-master_pl_name", MasterPlaylist,
		"-var_stream_map", strings.Join(streamMap, " "),
		filepath.Join(out, "%v", "index.m3u8"))
	if _, err := t.runTo(ctx, dir, stdout, t.FFmpeg, args...); err != nil {
		if ctx.Err() != nil {
			return Output{}, fmt.Errorf("transcode: hls: %w", ctx.Err())
		}
		return Output{}, fmt.Errorf("%w: ffmpeg could not decode it (%v)", ErrCorrupt, err)
	}
	if _, err := os.Stat(filepath.Join(outDir, MasterPlaylist)); err != nil {
		return Output{}, fmt.Errorf("%w: ffmpeg wrote no master playlist", ErrCorrupt)
	}
	if err := finishPlaylists(outDir, rungs); err != nil {
		return Output{}, err
	}
	n, err := DirSize(outDir)
	return Output{Renditions: rungs, Bytes: n}, err
}

// PosterFile is the file name of the poster image.
const PosterFile = "poster.jpg"

// Poster writes a JPEG frame of src to dst, both relative to dir, taken
// at a tenth of its duration (at most 5 s in), scaled to at most 720
// lines. src is read as HLS reads it.
func (t Tools) Poster(ctx context.Context, dir, src, dst string, p Probe) error {
	in, err := p.inputArgs()
	if err != nil {
		return err
	}
	if !filepath.IsLocal(src) || !filepath.IsLocal(dst) {
		return fmt.Errorf("transcode: poster: %q and %q must be relative to the job directory", src, dst)
	}
	at := min(p.Duration/10, 5*time.Second)
	h := min(p.Height&^1, 720)
	args := append([]string{"-hide_banner", "-nostdin", "-loglevel", "error", "-y", "-ss", fmt.Sprintf("%.3f", at.Seconds())}, in...)
	args = append(args, "-i", "file:"+src,
		"-frames:v", "1", "-vf", fmt.Sprintf("scale=-2:%d", max(h, 2)), "-q:v", "4", "-threads", strconv.Itoa(t.threads()), dst)
	if _, _, err := t.run(ctx, dir, t.FFmpeg, args...); err != nil {
		return fmt.Errorf("%w: no poster frame (%v)", ErrCorrupt, err)
	}
	return nil
}

// DirSize sums the sizes of the regular files under dir.
func DirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("transcode: size of %s: %w", dir, err)
	}
	return n, nil
}
