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

// Probe is what ffprobe tells of a file.
type Probe struct {
	// Format is the container's short name(s), e.g. "mov,mp4,m4a,3gp,3g2,mj2".
	Format string
	// Duration is the container's duration.
	Duration time.Duration
	// Width and Height are the first video stream's frame size.
	Width, Height int
	// HasAudio tells whether the file has an audio stream.
	HasAudio bool
}

// Probe measures the file at path. A file ffprobe cannot read, or one
// without a video stream, is ErrNotVideo.
func (t Tools) Probe(ctx context.Context, path string) (Probe, error) {
	out, err := run(t.command(ctx, t.FFprobe, "-v", "error", "-print_format", "json", "-show_format", "-show_streams", "-i", path))
	if err != nil {
		if ctx.Err() != nil {
			return Probe{}, fmt.Errorf("transcode: probe: %w", ctx.Err())
		}
		return Probe{}, fmt.Errorf("%w: ffprobe could not read it (%v)", ErrNotVideo, err)
	}
	return ParseProbe(out)
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

// ParseProbe reads ffprobe's JSON (-show_format -show_streams). Images
// (a single-frame codec or an attached picture) are not videos.
func ParseProbe(data []byte) (Probe, error) {
	var j probeJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return Probe{}, fmt.Errorf("%w: unreadable probe output: %v", ErrNotVideo, err)
	}
	p := Probe{Format: j.Format.Name}
	video := false
	// A picture (image2, png_pipe, jpeg_pipe, ...) has a one-frame "video" stream.
	image := p.Format == "image2" || strings.HasSuffix(p.Format, "_pipe")
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
