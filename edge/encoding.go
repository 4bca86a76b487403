package edge

import (
	"bytes"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
)

// encoding is a content coding the edge can answer with.
type encoding uint8

const (
	encIdentity encoding = iota
	encGzip
	encBrotli
	numEncodings
)

// encodingNames are the Content-Encoding values, and the cache key parts.
var encodingNames = [numEncodings]string{"", "gzip", "br"}

var encodingBytes = [numEncodings][]byte{nil, []byte("gzip"), []byte("br")}

// Compression levels: files are compressed once and cached for the
// deployment's TTL, so a little more effort than a proxy's on-the-fly level
// pays off.
const (
	gzipLevel   = 7
	brotliLevel = 6
)

// negotiate picks the best coding the client accepts (RFC 9110 §12.5.3):
// brotli, then gzip, then identity. A coding with q=0 is refused; "*"
// stands for codings not named. It does not allocate.
func negotiate(ae []byte) encoding {
	if len(ae) == 0 {
		return encIdentity
	}
	br, gz, star := -1, -1, -1 // q in thousandths; -1 when not named
	for len(ae) > 0 {
		var item []byte
		if i := bytes.IndexByte(ae, ','); i >= 0 {
			item, ae = ae[:i], ae[i+1:]
		} else {
			item, ae = ae, nil
		}
		name, q := parseCoding(item)
		switch {
		case equalFoldASCII(name, "br"):
			br = q
		case equalFoldASCII(name, "gzip"), equalFoldASCII(name, "x-gzip"):
			gz = q
		case len(name) == 1 && name[0] == '*':
			star = q
		}
	}
	if br < 0 {
		br = star
	}
	if gz < 0 {
		gz = star
	}
	switch {
	case br > 0 && br >= gz:
		return encBrotli
	case gz > 0:
		return encGzip
	}
	return encIdentity
}

// parseCoding splits "gzip;q=0.5" into the name and q in thousandths.
func parseCoding(item []byte) ([]byte, int) {
	name := item
	q := 1000
	if i := bytes.IndexByte(item, ';'); i >= 0 {
		name = item[:i]
		params := item[i+1:]
		for len(params) > 0 {
			var p []byte
			if j := bytes.IndexByte(params, ';'); j >= 0 {
				p, params = params[:j], params[j+1:]
			} else {
				p, params = params, nil
			}
			p = trimSpace(p)
			if len(p) >= 2 && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=' {
				q = parseQ(p[2:])
			}
		}
	}
	return trimSpace(name), q
}

// parseQ reads a qvalue ("0", "0.5", "1.000") in thousandths; anything
// malformed is 0.
func parseQ(b []byte) int {
	if len(b) == 0 || (b[0] != '0' && b[0] != '1') {
		return 0
	}
	q := int(b[0]-'0') * 1000
	if len(b) == 1 {
		return q
	}
	if b[1] != '.' || len(b) > 5 {
		return 0
	}
	scale := 100
	for _, c := range b[2:] {
		if c < '0' || c > '9' {
			return 0
		}
		q += int(c-'0') * scale
		scale /= 10
	}
	return min(q, 1000)
}

func equalFoldASCII(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// compress returns data compressed with enc.
func compress(data []byte, enc encoding) []byte {
	var buf bytes.Buffer
	buf.Grow(len(data)/3 + 64)
	switch enc {
	case encGzip:
		w, _ := gzip.NewWriterLevel(&buf, gzipLevel)
		w.Write(data)
		w.Close()
	case encBrotli:
		w := brotli.NewWriterLevel(&buf, brotliLevel)
		w.Write(data)
		w.Close()
	default:
		return data
	}
	return buf.Bytes()
}
