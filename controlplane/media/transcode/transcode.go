// Package transcode turns an uploaded video into HLS with Debian's ffmpeg:
// it measures a file with ffprobe, encodes an adaptive ladder of H.264 +
// AAC renditions with a master playlist, and takes a poster frame. Every
// program runs at low CPU priority so the edge stays responsive.
package transcode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// Sentinel errors; each is wrapped with the program's own words.
var (
	// ErrMissing means ffmpeg or ffprobe is not installed (Debian package ffmpeg).
	ErrMissing = errors.New("transcode: ffmpeg/ffprobe not installed (Debian package ffmpeg)")
	// ErrNotVideo means the file holds no video stream ffprobe can read.
	ErrNotVideo = errors.New("transcode: not a video")
	// ErrCorrupt means the file looks like a video but cannot be decoded.
	ErrCorrupt = errors.New("transcode: corrupt video")
)

// Tools locates the programs.
type Tools struct {
	// FFmpeg and FFprobe are the program paths ("ffmpeg", "ffprobe" on PATH when empty).
	FFmpeg, FFprobe string
	// Nice is the niceness the programs run at (DefaultNice when 0; negative for none).
	Nice int
	// Threads bounds the encoder's threads per job (DefaultThreads when 0).
	Threads int
}

// Defaults of Tools.
const (
	DefaultNice    = 10
	DefaultThreads = 2
)

// Find resolves the programs on PATH, returning ErrMissing when absent.
func Find() (Tools, error) {
	ff, err := exec.LookPath("ffmpeg")
	if err != nil {
		return Tools{}, ErrMissing
	}
	fp, err := exec.LookPath("ffprobe")
	if err != nil {
		return Tools{}, ErrMissing
	}
	return Tools{FFmpeg: ff, FFprobe: fp}, nil
}

func (t Tools) threads() int {
	if t.Threads <= 0 {
		return DefaultThreads
	}
	return t.Threads
}

// command builds prog args, under nice when it is available.
func (t Tools) command(ctx context.Context, prog string, args ...string) *exec.Cmd {
	nice := t.Nice
	if nice == 0 {
		nice = DefaultNice
	}
	if nice > 0 {
		if n, err := exec.LookPath("nice"); err == nil {
			return exec.CommandContext(ctx, n, append([]string{"-n", fmt.Sprint(nice), prog}, args...)...)
		}
	}
	return exec.CommandContext(ctx, prog, args...)
}

// run runs a command and returns its stdout; a failure carries the last
// lines of stderr.
func run(cmd *exec.Cmd) ([]byte, error) {
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("%w: %s", err, lastLines(errb.String(), 3))
	}
	return out.Bytes(), nil
}

// lastLines returns the last n non-empty lines of s, joined by "; ".
func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	msg := strings.Join(lines, "; ")
	if len(msg) > 500 {
		msg = msg[len(msg)-500:]
	}
	return msg
}
