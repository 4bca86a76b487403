package transcode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"syscall"
	"time"
)

// Progress is how far an HLS encode has come.
type Progress struct {
	// Encoded is the length of the video encoded so far.
	Encoded time.Duration
	// Published tells that the output plays already: the master playlist
	// is written and every rendition's playlist names its first segments.
	// The renditions' playlists are EVENT playlists that grow as segments
	// land (every segment is complete when it is named) until the encode
	// ends; then they become VOD playlists.
	Published bool
}

// Tags of the playlists HLS writes.
const (
	tagM3U      = "#EXTM3U"
	tagEvent    = "#EXT-X-PLAYLIST-TYPE:EVENT"
	tagVOD      = "#EXT-X-PLAYLIST-TYPE:VOD"
	tagEndList  = "#EXT-X-ENDLIST"
	tagStart    = "#EXT-X-START:"
	tagStartAt0 = "#EXT-X-START:TIME-OFFSET=0"
)

// StartAtBeginning returns the playlist pl telling players to start at
// its beginning (#EXT-X-START:TIME-OFFSET=0 after #EXTM3U): a playlist
// without #EXT-X-ENDLIST is otherwise played from near its end, as live.
// A playlist that names a start already, or that does not begin with
// #EXTM3U, is returned as it is.
func StartAtBeginning(pl []byte) []byte {
	first, rest, _ := bytes.Cut(pl, []byte("\n"))
	if string(bytes.TrimRight(first, "\r")) != tagM3U || bytes.Contains(pl, []byte(tagStart)) {
		return pl
	}
	out := make([]byte, 0, len(pl)+len(tagStartAt0)+2)
	out = append(out, tagM3U...)
	out = append(out, '\n')
	out = append(out, tagStartAt0...)
	out = append(out, '\n')
	return append(out, rest...)
}

// VOD returns the finished EVENT playlist pl as a VOD playlist: its
// playlist type VOD and #EXT-X-ENDLIST at its end. It refuses anything
// that is not a media playlist.
func VOD(pl []byte) ([]byte, error) {
	lines := bytes.Split(bytes.TrimRight(pl, "\r\n"), []byte("\n"))
	if len(lines) == 0 || string(bytes.TrimRight(lines[0], "\r")) != tagM3U {
		return nil, errors.New("transcode: not a playlist")
	}
	var b bytes.Buffer
	b.Grow(len(pl) + len(tagEndList) + 2)
	typed := false
	for _, l := range lines {
		l = bytes.TrimRight(l, "\r")
		switch s := string(l); {
		case s == tagEvent || s == tagVOD:
			if typed {
				continue
			}
			typed = true
			l = []byte(tagVOD)
		case s == tagEndList:
			continue
		}
		b.Write(l)
		b.WriteByte('\n')
	}
	if !typed {
		return nil, errors.New("transcode: the playlist has no playlist type")
	}
	b.WriteString(tagEndList + "\n")
	return b.Bytes(), nil
}

// maxPlaylist bounds a playlist read back (an hour of 2-s segments is
// about 60 KB).
const maxPlaylist = 4 << 20

// ReadFile reads the regular file name under root without following a
// symbolic link out of it, without blocking on a pipe, and at most limit
// bytes: a program writing the directory (ffmpeg in the sandbox) cannot
// make the platform read anything else.
func ReadFile(root *os.Root, name string, limit int64) ([]byte, fs.FileInfo, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("transcode: %s is not a regular file", name)
	}
	if fi.Size() > limit {
		return nil, nil, fmt.Errorf("transcode: %s is larger than %d bytes", name, limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, nil, err
	}
	if int64(len(b)) > limit {
		return nil, nil, fmt.Errorf("transcode: %s is larger than %d bytes", name, limit)
	}
	return b, fi, nil
}

// finishPlaylists turns the renditions' EVENT playlists under outDir into
// VOD playlists, each replaced at once (a reader sees the old or the new).
func finishPlaylists(outDir string, rungs []Rung) error {
	root, err := os.OpenRoot(outDir)
	if err != nil {
		return fmt.Errorf("transcode: %w", err)
	}
	defer root.Close()
	for _, r := range rungs {
		name := path.Join(r.Name(), "index.m3u8")
		pl, _, err := ReadFile(root, name, maxPlaylist)
		if err != nil {
			return fmt.Errorf("%w: rendition %s: %v", ErrCorrupt, r.Name(), err)
		}
		vod, err := VOD(pl)
		if err != nil {
			return fmt.Errorf("%w: rendition %s: %v", ErrCorrupt, r.Name(), err)
		}
		tmp := name + ".vod"
		if err := root.WriteFile(tmp, vod, 0o644); err != nil {
			return fmt.Errorf("transcode: %w", err)
		}
		if err := root.Rename(tmp, name); err != nil {
			return fmt.Errorf("transcode: %w", err)
		}
	}
	return nil
}

// published tells whether the master playlist and every rendition's
// playlist are in outDir (ffmpeg writes the master once every rendition
// has its first segment).
func published(outDir string, rungs []Rung) bool {
	root, err := os.OpenRoot(outDir)
	if err != nil {
		return false
	}
	defer root.Close()
	for _, name := range append([]string{MasterPlaylist}, rungPlaylists(rungs)...) {
		if fi, err := root.Lstat(name); err != nil || !fi.Mode().IsRegular() {
			return false
		}
	}
	return true
}

func rungPlaylists(rungs []Rung) []string {
	out := make([]string, len(rungs))
	for i, r := range rungs {
		out[i] = path.Join(r.Name(), "index.m3u8")
	}
	return out
}

// progressWriter reads ffmpeg's -progress output (blocks of key=value
// lines, each ended by progress=continue or progress=end) and calls fn
// with out_time at the end of each block. Lines longer than maxProgressLine are
// dropped.
type progressWriter struct {
	fn   func(time.Duration)
	line []byte
	long bool
	out  time.Duration
}

const maxProgressLine = 256

// Write implements io.Writer; it never fails.
func (w *progressWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.add(p)
			break
		}
		w.add(p[:i])
		if !w.long {
			w.handle(w.line)
		}
		w.line, w.long = w.line[:0], false
		p = p[i+1:]
	}
	return n, nil
}

func (w *progressWriter) add(p []byte) {
	if w.long || len(w.line)+len(p) > maxProgressLine {
		w.long = true
		return
	}
	w.line = append(w.line, p...)
}

func (w *progressWriter) handle(l []byte) {
	k, v, ok := bytes.Cut(bytes.TrimSpace(l), []byte("="))
	if !ok {
		return
	}
	switch string(k) {
	case "out_time_us":
		if us, err := strconv.ParseInt(string(v), 10, 64); err == nil && us >= 0 && us < int64(1<<62)/1000 {
			w.out = time.Duration(us) * time.Microsecond
		}
	case "progress":
		w.fn(w.out)
	}
}
