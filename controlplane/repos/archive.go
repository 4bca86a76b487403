package repos

import (
	"archive/tar"
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/klauspost/compress/gzip"

	"github.com/svcplatform/platform/controlplane/api"
)

// MaxArchiveBytes bounds what an archive unpacks to (tar headers and every
// file's bytes): a gzip body is at most MaxPushBody, and this keeps a small
// body that inflates without end from costing more than reading 64 MB.
const MaxArchiveBytes = 64 << 20

// errUnpacksTooLarge ends reading an archive past MaxArchiveBytes.
var errUnpacksTooLarge = errors.New("repos: archive unpacks past the limit")

// cappedReader reads at most n bytes from r and then fails.
type cappedReader struct {
	r io.Reader
	n int64
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.n <= 0 {
		return 0, errUnpacksTooLarge
	}
	if int64(len(p)) > c.n {
		p = p[:c.n]
	}
	n, err := c.r.Read(p)
	c.n -= int64(n)
	return n, err
}

// entryKind names a tar entry type that a push refuses, for messages.
func entryKind(flag byte) string {
	switch flag {
	case tar.TypeSymlink:
		return "a symbolic link"
	case tar.TypeLink:
		return "a hard link"
	case tar.TypeChar:
		return "a character device"
	case tar.TypeBlock:
		return "a block device"
	case tar.TypeFifo:
		return "a named pipe"
	}
	return fmt.Sprintf("an entry of type %q", flag)
}

// readArchive reads a tar archive, gzip-compressed or not (told apart by
// its first bytes), into the files of a push. Regular files are kept with
// their bytes; directories and global headers are skipped; links, devices,
// pipes and every other kind of entry are refused (400
// unsupported_entry), as is a directory whose path CleanPath refuses.
// File paths are checked by checkFiles.
//
// Memory stays bounded: a file over MaxFileBytes is refused from its
// header, bytes past MaxPushBytes in all are not kept, and past
// MaxFilesPerPush files only the count goes on, so the refusal can say by
// how much the push passes each limit. The whole archive unpacks to
// at most MaxArchiveBytes (413 archive_too_large).
func readArchive(body io.Reader) ([]candidate, error) {
	br := bufio.NewReader(body)
	var src io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, archiveError(err)
		}
		defer zr.Close()
		src = zr
	}
	tr := tar.NewReader(&cappedReader{r: src, n: MaxArchiveBytes})
	var out []candidate
	var count int
	var kept int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, archiveError(err)
		}
		switch h.Typeflag {
		case tar.TypeReg, '\x00': // '\x00' is the pre-POSIX regular file
		case tar.TypeDir:
			if d := strings.TrimRight(h.Name, "/"); d != "" && d != "." {
				if _, err := CleanPath(d); err != nil {
					return nil, api.E(api.KindInvalid, "invalid_path", "archive directory %s", err)
				}
			}
			continue
		case tar.TypeXGlobalHeader:
			continue
		default:
			return nil, api.E(api.KindInvalid, "unsupported_entry", "archive entry %s is %s: an archive holds regular files and directories only (put the file itself in)",
				quote(h.Name), entryKind(h.Typeflag)).With("path", h.Name)
		}
		if h.Size > MaxFileBytes {
			// Known from the header: refused before its bytes are read.
			return nil, fileTooLarge("archive entry "+quote(h.Name), h.Name, h.Size)
		}
		count++
		if count > MaxFilesPerPush {
			continue // counted for the refusal's message, never kept
		}
		c := candidate{name: h.Name, size: h.Size}
		if kept+h.Size <= MaxPushBytes {
			c.data = make([]byte, h.Size)
			if _, err := io.ReadFull(tr, c.data); err != nil {
				return nil, archiveError(err)
			}
			kept += h.Size
		}
		out = append(out, c)
	}
	if count > MaxFilesPerPush {
		return nil, tooManyFiles(count)
	}
	return out, nil
}

// archiveError turns a read failure into the refusal the client sees.
func archiveError(err error) error {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return api.E(api.KindTooLarge, "body_too_large", "request body is larger than %d bytes", mbe.Limit)
	case errors.Is(err, errUnpacksTooLarge):
		return api.E(api.KindTooLarge, "archive_too_large", "the archive unpacks to more than %d bytes (64 MB); a push carries at most %d bytes of files (25 MB)",
			MaxArchiveBytes, MaxPushBytes).With("limit", MaxArchiveBytes)
	}
	return api.E(api.KindInvalid, "invalid_archive", "the body is not a readable tar or tar.gz archive: %v", err)
}
