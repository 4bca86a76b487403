package buckets

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"net/http"
	"strings"
)

// crc64NVME is CRC-64/NVME (the reflected polynomial 0x9a6c9329ac4bc9b5),
// the checksum S3 calls CRC64NVME.
var crc64NVME = crc64.MakeTable(0x9a6c9329ac4bc9b5)

// checksumAlgos are the S3 additional checksums checked here, by the
// lower-case suffix of their header (x-amz-checksum-<name>).
var checksumAlgos = map[string]func() hash.Hash{
	"crc32":     func() hash.Hash { return crc32.NewIEEE() },
	"crc32c":    func() hash.Hash { return crc32.New(crc32.MakeTable(crc32.Castagnoli)) },
	"crc64nvme": func() hash.Hash { return crc64.New(crc64NVME) },
	"sha1":      sha1.New,
	"sha256":    sha256.New,
}

// checksumHeader is the header prefix of an additional checksum.
const checksumHeader = "x-amz-checksum-"

// checksum is an additional checksum a request announced: its algorithm and
// (unless it arrives in a trailer) its base64 value.
type checksum struct {
	name  string
	value string
	h     hash.Hash
}

// announcedChecksum finds the additional checksum of a request: a header
// x-amz-checksum-<name> with its value, or a trailer it names in
// x-amz-trailer (value filled in when the trailer arrives). At most one
// may be given. An unknown algorithm is refused.
func announcedChecksum(h http.Header) (*checksum, error) {
	var found *checksum
	add := func(name, value string) error {
		name = strings.ToLower(name)
		mk, ok := checksumAlgos[name]
		if !ok {
			return errInvalidArgument("checksum algorithm %q is not supported: use crc32, crc32c, crc64nvme, sha1 or sha256", name)
		}
		if found != nil && found.name != name {
			return errInvalidArgument("send at most one additional checksum")
		}
		found = &checksum{name: name, value: value, h: mk()}
		return nil
	}
	for k, vs := range h {
		lk := strings.ToLower(k)
		if !strings.HasPrefix(lk, checksumHeader) || lk == "x-amz-checksum-algorithm" || lk == "x-amz-checksum-type" || lk == "x-amz-checksum-mode" {
			continue
		}
		if err := add(strings.TrimPrefix(lk, checksumHeader), strings.Join(vs, "")); err != nil {
			return nil, err
		}
	}
	for _, t := range h.Values("X-Amz-Trailer") {
		for _, name := range strings.Split(t, ",") {
			name = strings.ToLower(strings.TrimSpace(name))
			if name == "" {
				continue
			}
			if !strings.HasPrefix(name, checksumHeader) {
				return nil, errInvalidArgument("trailer %q is not supported: only %s<algorithm>", name, checksumHeader)
			}
			if err := add(strings.TrimPrefix(name, checksumHeader), ""); err != nil {
				return nil, err
			}
		}
	}
	return found, nil
}

// verify compares the body's checksum with the announced value.
func (c *checksum) verify() error {
	got := base64.StdEncoding.EncodeToString(c.h.Sum(nil))
	if c.value == "" || got != strings.TrimSpace(c.value) {
		return errBadDigest(checksumHeader + c.name)
	}
	return nil
}

// encoded is the body's checksum in base64, for the answer's header.
func (c *checksum) encoded() string { return base64.StdEncoding.EncodeToString(c.h.Sum(nil)) }
