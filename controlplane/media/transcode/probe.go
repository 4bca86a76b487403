package transcode

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Demuxers are the containers (ffmpeg demuxer names) a file may be in:
// each holds its own media and opens no other input. Videos: MP4/MOV,
// Matroska/WebM, MPEG-TS, MPEG-PS, AVI, FLV, Ogg and GIF; audio files and
// single pictures are read only to be refused as not videos. Everything
// else is refused unread, above all hls (an m3u8 playlist), concat (a list
// of files), image2 (numbered file sequences), and every demuxer that
// follows references to other files or URLs (dash, mpd, ffmetadata,
// tee, ...).
var Demuxers = []string{
	"mov", "matroska", "mpegts", "mpeg", "avi", "flv", "ogg", "gif",
	"wav", "mp3", "flac", "aac",
	"png_pipe", "jpeg_pipe", "webp_pipe", "bmp_pipe",
}

// Demuxer returns the entry of Demuxers that ffprobe's format_name (a
// comma-separated list, e.g. "mov,mp4,m4a,3gp,3g2,mj2") names, or "".
func Demuxer(formatName string) string {
	for _, n := range strings.Split(formatName, ",") {
		for _, d := range Demuxers {
			if n == d {
				return d
			}
		}
	}
	return ""
}

// Probe is what ffprobe tells of a file.
type Probe struct {
	// Format is the container's short name(s), e.g. "mov,mp4,m4a,3gp,3g2,mj2".
	Format string
	// Demuxer is the accepted demuxer reading it (an entry of Demuxers):
	// every later run forces it.
	Demuxer string
	// Duration is the container's duration.
	Duration time.Duration
	// Width and Height are the first video stream's frame size.
	Width, Height int
	// HasAudio tells whether the file has an audio stream.
	HasAudio bool
}

// inputArgs are the options before a probed input: the file protocol
// only, and the demuxer forced (no format is guessed again).
func (p Probe) inputArgs() ([]string, error) {
	if p.Demuxer == "" || Demuxer(p.Demuxer) != p.Demuxer {
		return nil, fmt.Errorf("%w: demuxer %q is not accepted", ErrFormat, p.Demuxer)
	}
	return []string{"-protocol_whitelist", "file", "-f", p.Demuxer}, nil
}

// Probe measures the file name in dir. ffprobe only opens it through the
// file protocol and only with a demuxer of Demuxers: any other container
// is ErrFormat, unread. A file ffprobe cannot read, or one without a video
// stream, is ErrNotVideo.
func (t Tools) Probe(ctx context.Context, dir, name string) (Probe, error) {
	out, stderr, err := t.run(ctx, dir, t.FFprobe, "-v", "error", "-protocol_whitelist", "file",
		"-format_whitelist", strings.Join(Demuxers, ","),
		"-print_format", "json", "-show_format", "-show_streams", "-i", "file:"+name)
	if err != nil {
		if ctx.Err() != nil {
			return Probe{}, fmt.Errorf("transcode: probe: %w", ctx.Err())
		}
		if d, ok := refusedDemuxer(stderr); ok {
			return Probe{}, fmt.Errorf("%w: the file is %s", ErrFormat, describe(d))
		}
		return Probe{}, fmt.Errorf("%w: ffprobe could not read it (%v)", ErrNotVideo, err)
	}
	return ParseProbe(out)
}

// refusedDemuxer finds ffmpeg's refusal of a format not on the whitelist
// ("[hls @ 0x55d0] Format not on whitelist ...") and the demuxer it names.
func refusedDemuxer(stderr string) (string, bool) {
	for _, l := range strings.Split(stderr, "\n") {
		if !strings.Contains(l, "Format not on whitelist") {
			continue
		}
		name := ""
		if strings.HasPrefix(l, "[") {
			if i := strings.Index(l, " @ "); i > 1 {
				name = l[1:i]
			}
		}
		return name, true
	}
	return "", false
}

// describe names a refused demuxer for people.
func describe(demuxer string) string {
	switch demuxer {
	case "hls", "applehttp":
		return "an HLS playlist (m3u8), which lists other files"
	case "concat":
		return "a concat list, which names other files"
	case "image2":
		return "read as a numbered picture sequence"
	case "":
		return "in a container that is not accepted"
	}
	return "in the " + demuxer + " format, which is not accepted"
}

// probeJSON is the part of ffprobe's JSON the platform reads.
type probeJSON struct {
	Format struct {
		Name     string `json:"format_name"`
		Duration string `json:"duration"`
	} `json:"format"`
	Streams []struct {
		Type        string `json:"codec_type"`
		Width       int    `json:"width"`
		Height      int    `json:"height"`
		Duration    string `json:"duration"`
		Disposition struct {
			AttachedPic int `json:"attached_pic"`
		} `json:"disposition"`
	} `json:"streams"`
}

// maxDimension bounds a frame side ffprobe may report.
const maxDimension = 16384

// ParseProbe reads ffprobe's JSON (-show_format -show_streams). A
// container not in Demuxers is ErrFormat; images (a single-frame codec or
// an attached picture) are not videos.
func ParseProbe(data []byte) (Probe, error) {
	var j probeJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return Probe{}, fmt.Errorf("%w: unreadable probe output: %v", ErrNotVideo, err)
	}
	p := Probe{Format: j.Format.Name, Demuxer: Demuxer(j.Format.Name)}
	if p.Demuxer == "" {
		return Probe{}, fmt.Errorf("%w: the file is %s", ErrFormat, describe(p.Format))
	}
	video := false
	// A picture (png_pipe, jpeg_pipe, ...) has a one-frame "video" stream.
	image := strings.HasSuffix(p.Demuxer, "_pipe")
	for _, s := range j.Streams {
		switch s.Type {
		case "audio":
			p.HasAudio = true
		case "video":
			if video || s.Disposition.AttachedPic == 1 || image {
				continue
			}
			if s.Width <= 0 || s.Height <= 0 || s.Width > maxDimension || s.Height > maxDimension {
				return Probe{}, fmt.Errorf("%w: video stream has an impossible frame size %dx%d", ErrCorrupt, s.Width, s.Height)
			}
			video = true
			p.Width, p.Height = s.Width, s.Height
			if j.Format.Duration == "" {
				j.Format.Duration = s.Duration
			}
		}
	}
	if !video {
		return Probe{}, fmt.Errorf("%w: no video stream (format %q)", ErrNotVideo, p.Format)
	}
	d, err := strconv.ParseFloat(j.Format.Duration, 64)
	if err != nil || math.IsNaN(d) || d <= 0 || d > 1e7 {
		return Probe{}, fmt.Errorf("%w: no usable duration (%q)", ErrCorrupt, j.Format.Duration)
	}
	p.Duration = time.Duration(d * float64(time.Second))
	return p, nil
}
