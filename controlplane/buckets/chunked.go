package buckets

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/svcplatform/platform/controlplane/api"
)

// aws-chunked bodies (x-amz-content-sha256 STREAMING-*): the body is a run
// of chunks "<hex size>[;chunk-signature=<sig>]\r\n<bytes>\r\n" ending with
// a chunk of size 0, then, when x-amz-trailer names one, trailing headers
// (a checksum) and, signed, x-amz-trailer-signature. Each chunk's
// signature chains from the previous one, the first from the request's.
// The reader checks each chunk's signature when its last byte is read and
// the trailer's at the end, so a consumer that stops at the first error
// (the blob store) never keeps bytes that were not signed.
const (
	maxChunkLine    = 4096
	maxChunkSize    = 1 << 30
	maxTrailerBytes = 4096
	trailerSigName  = "x-amz-trailer-signature"
)

func errChunk(format string, args ...any) *opError {
	return refuse("InvalidRequest", http.StatusBadRequest, api.KindInvalid, "invalid_body", "aws-chunked body: "+format, args...)
}

// chunkedReader decodes an aws-chunked body.
type chunkedReader struct {
	br     *bufio.Reader
	signed bool
	// key, amzDate and scope sign the chunks; prev is the last signature.
	key            []byte
	amzDate, scope string
	prev           string
	// trailer is the checksum the trailer carries (nil: no trailer).
	trailer *checksum
	// decoded is x-amz-decoded-content-length (-1: not given).
	decoded int64

	n      int64 // decoded bytes so far
	left   int64 // bytes left in the current chunk
	chunk  hash.Hash
	chkSig string
	err    error
	done   bool
}

// newChunkedReader reads body as aws-chunked: signed with key (seed the
// request's signature) unless key is nil (STREAMING-UNSIGNED-PAYLOAD-TRAILER).
func newChunkedReader(body io.Reader, key []byte, v sigRequest, trailer *checksum, decoded int64) *chunkedReader {
	return &chunkedReader{br: bufio.NewReaderSize(body, 64<<10), signed: key != nil, key: key, amzDate: v.AmzDate,
		scope: v.Cred.scope(), prev: v.Signature, trailer: trailer, decoded: decoded, chunk: sha256.New()}
}

func (c *chunkedReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if c.done {
		return 0, io.EOF
	}
	if c.left == 0 {
		if err := c.next(); err != nil {
			c.err = err
			return 0, err
		}
		if c.done {
			return 0, io.EOF
		}
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.br.Read(p)
	c.chunk.Write(p[:n])
	c.left -= int64(n)
	c.n += int64(n)
	if c.decoded >= 0 && c.n > c.decoded {
		c.err = errChunk("more bytes than x-amz-decoded-content-length (%d)", c.decoded)
		return 0, c.err
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = errChunk("the body ends inside a chunk")
		}
		c.err = err
		return n, err
	}
	if c.left == 0 {
		if err := c.endChunk(); err != nil {
			c.err = err
			return n, err
		}
	}
	return n, nil
}

// line reads one line without its CR LF.
func (c *chunkedReader) line() (string, error) {
	var b []byte
	for {
		frag, err := c.br.ReadSlice('\n')
		b = append(b, frag...)
		if len(b) > maxChunkLine {
			return "", errChunk("a chunk header is longer than %d bytes", maxChunkLine)
		}
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) {
			return string(b), io.EOF
		}
		return "", err
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// next reads a chunk header; at the last chunk it checks the end.
func (c *chunkedReader) next() error {
	l, err := c.line()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return errChunk("the body ends before its last chunk")
		}
		return err
	}
	sizeHex, ext, hasExt := strings.Cut(l, ";")
	if sizeHex == "" || len(sizeHex) > 16 {
		return errChunk("bad chunk size %q", sizeHex)
	}
	size, err := strconv.ParseInt(sizeHex, 16, 64)
	if err != nil || size < 0 || size > maxChunkSize {
		return errChunk("bad chunk size %q", sizeHex)
	}
	c.chkSig = ""
	if c.signed {
		sig, ok := strings.CutPrefix(ext, "chunk-signature=")
		if !hasExt || !ok || !isHex64(sig) {
			return errChunk("every chunk carries chunk-signature=<64 hex digits>")
		}
		c.chkSig = sig
	} else if hasExt {
		return errChunk("an unsigned chunk carries no extension")
	}
	c.chunk.Reset()
	c.left = size
	if size > 0 {
		return nil
	}
	if err := c.checkChunk(); err != nil {
		return err
	}
	if err := c.trailers(); err != nil {
		return err
	}
	if c.decoded >= 0 && c.n != c.decoded {
		return errIncomplete(c.n, c.decoded)
	}
	c.done = true
	return nil
}

// endChunk reads the CR LF after a chunk's bytes and checks its signature.
func (c *chunkedReader) endChunk() error {
	l, err := c.line()
	if err != nil || l != "" {
		return errChunk("a chunk's bytes must be followed by CR LF")
	}
	return c.checkChunk()
}

// checkChunk compares the chunk's signature with the one computed over
// its bytes, in constant time.
func (c *chunkedReader) checkChunk() error {
	if !c.signed {
		return nil
	}
	sts := "AWS4-HMAC-SHA256-PAYLOAD\n" + c.amzDate + "\n" + c.scope + "\n" + c.prev + "\n" + emptySHA256 + "\n" + hex.EncodeToString(c.chunk.Sum(nil))
	return c.checkSig(sts, c.chkSig)
}

func (c *chunkedReader) checkSig(stringToSign, sig string) error {
	want := hex.EncodeToString(hmacSHA256(c.key, []byte(stringToSign)))
	if subtle.ConstantTimeCompare([]byte(want), []byte(sig)) != 1 {
		return errSignature()
	}
	c.prev = sig
	return nil
}

// trailers reads what follows the last chunk: nothing but CR LF without a
// trailer; else "name:value" lines (a bare LF or CR LF ends each; blank
// lines are skipped), the checksum the request announced and, signed,
// x-amz-trailer-signature over the other lines.
func (c *chunkedReader) trailers() error {
	rest, err := io.ReadAll(io.LimitReader(c.br, maxTrailerBytes+1))
	if err != nil {
		return err
	}
	if len(rest) > maxTrailerBytes {
		return errChunk("the trailer is longer than %d bytes", maxTrailerBytes)
	}
	if c.trailer == nil {
		if s := strings.TrimLeft(string(rest), "\r\n"); s != "" {
			return errChunk("data after the last chunk")
		}
		return nil
	}
	var canon strings.Builder
	sig := ""
	for _, l := range strings.Split(string(rest), "\n") {
		l = strings.TrimRight(l, "\r")
		if l == "" {
			continue
		}
		name, value, ok := strings.Cut(l, ":")
		if !ok {
			return errChunk("a trailer line must be name:value")
		}
		name, value = strings.ToLower(strings.TrimSpace(name)), strings.TrimSpace(value)
		switch {
		case name == trailerSigName:
			sig = value
		case name == checksumHeader+c.trailer.name:
			if sig != "" {
				return errChunk("the trailer signature must come last")
			}
			c.trailer.value = value
			canon.WriteString(name + ":" + value + "\n")
		default:
			return errChunk("trailer %q was not announced in x-amz-trailer", name)
		}
	}
	if c.trailer.value == "" {
		return errChunk("the trailer lacks %s%s", checksumHeader, c.trailer.name)
	}
	if !c.signed {
		return nil
	}
	if !isHex64(sig) {
		return errChunk("a signed trailer ends with %s:<64 hex digits>", trailerSigName)
	}
	h := sha256.Sum256([]byte(canon.String()))
	sts := "AWS4-HMAC-SHA256-TRAILER\n" + c.amzDate + "\n" + c.scope + "\n" + c.prev + "\n" + hex.EncodeToString(h[:])
	return c.checkSig(sts, sig)
}
