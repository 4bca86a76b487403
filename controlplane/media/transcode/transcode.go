// Package transcode turns an uploaded video into HLS with Debian's ffmpeg:
// it measures a file with ffprobe, encodes an adaptive ladder of H.264 +
// AAC renditions with a master playlist, and takes a poster frame. Only
// containers that hold their own media are read (Demuxers): ffprobe refuses
// any other, every later run forces the probed demuxer, and every run opens
// inputs through the file protocol only. Programs run at low CPU priority
// through a Runner (a sandbox in production) with their working directory
// as the only directory they are told about.
package transcode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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
	// ErrFormat means the file's container is not one of Demuxers: a
	// playlist, a list of other files, or a format that opens further
	// inputs. Nothing else of the file is read.
	ErrFormat = errors.New("transcode: container not accepted")
)

// Runner runs one program. argv[0] is the program's absolute path; every
// path in argv is relative to dir, the program's working directory and the
// only directory it needs to read or write.
type Runner interface {
	Run(ctx context.Context, dir string, argv []string, stdout, stderr io.Writer) error
}

// Direct runs programs as children of the platform, with its uid and view
// of the machine (development, and the none sandbox).
type Direct struct{}

var _ Runner = Direct{}

// Env is the whole environment the programs get: nothing of the
// platform's own.
var Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C"}

// Run implements Runner. Cancelling ctx kills the program.
func (Direct) Run(ctx context.Context, dir string, argv []string, stdout, stderr io.Writer) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = Env
	cmd.Stdout, cmd.Stderr = stdout, stderr
	return cmd.Run()
}

// Tools locates the programs and says how they run.
type Tools struct {
	// FFmpeg and FFprobe are the program paths (absolute; Find resolves them).
	FFmpeg, FFprobe string
	// Nice is the niceness the programs run at (DefaultNice when 0; negative for none).
	Nice int
	// Threads bounds the encoder's threads per job (DefaultThreads when 0).
	Threads int
	// Runner runs the programs (Direct when nil).
	Runner Runner
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

// argv is prog args, under nice when it is available.
func (t Tools) argv(prog string, args ...string) []string {
	nice := t.Nice
	if nice == 0 {
		nice = DefaultNice
	}
	if nice > 0 {
		if n, err := exec.LookPath("nice"); err == nil {
			return append([]string{n, "-n", fmt.Sprint(nice), prog}, args...)
		}
	}
	return append([]string{prog}, args...)
}

// run runs prog in dir and returns its stdout; a failure carries the last
// lines of stderr, which is returned too.
func (t Tools) run(ctx context.Context, dir, prog string, args ...string) ([]byte, string, error) {
	var out bytes.Buffer
	stderr, err := t.runTo(ctx, dir, &out, prog, args...)
	return out.Bytes(), stderr, err
}

// runTo is run writing prog's stdout to stdout as it comes.
func (t Tools) runTo(ctx context.Context, dir string, stdout io.Writer, prog string, args ...string) (string, error) {
	r := t.Runner
	if r == nil {
		r = Direct{}
	}
	var errb bytes.Buffer
	if err := r.Run(ctx, dir, t.argv(prog, args...), stdout, &errb); err != nil {
		return errb.String(), fmt.Errorf("%w: %s", err, lastLines(errb.String(), 3))
	}
	return errb.String(), nil
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
