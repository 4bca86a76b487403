package buckets

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7/pkg/signer"
)

// The example credentials of AWS's Signature Version 4 documentation.
const (
	awsExampleKey    = "AKIAIOSFODNN7EXAMPLE"
	awsExampleSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
)

// TestSigV4KnownAnswer: the signature of AWS's documented GET Object
// example (Range, empty payload) and the seed and chunk signatures of its
// documented aws-chunked upload (64 KiB + 1 KiB of 'a').
func TestSigV4KnownAnswer(t *testing.T) {
	req, _ := http.NewRequest("GET", "http://examplebucket.s3.amazonaws.com/test.txt", nil)
	req.Header.Set("Range", "bytes=0-9")
	req.Header.Set("X-Amz-Content-Sha256", emptySHA256)
	req.Header.Set("X-Amz-Date", "20130524T000000Z")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+awsExampleKey+"/20130524/us-east-1/s3/aws4_request,"+
		"SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
	v, err := parseSigV4(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.verify(req, awsExampleSecret); err != nil {
		t.Fatalf("GET example: %v\n%s", err, canonicalRequest(req, v.SignedHeaders, v.Payload, false))
	}

	body := append(bytes.Repeat([]byte("a"), 65536), bytes.Repeat([]byte("a"), 1024)...)
	req, _ = http.NewRequest("PUT", "http://s3.amazonaws.com/examplebucket/chunkObject.txt", nil)
	req.Header.Set("X-Amz-Date", "20130524T000000Z")
	req.Header.Set("X-Amz-Storage-Class", "REDUCED_REDUNDANCY")
	req.Header.Set("X-Amz-Content-Sha256", streamingPayload)
	req.Header.Set("Content-Encoding", "aws-chunked")
	req.Header.Set("X-Amz-Decoded-Content-Length", "66560")
	req.Header.Set("Content-Length", "66824")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+awsExampleKey+"/20130524/us-east-1/s3/aws4_request,"+
		"SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class,"+
		"Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9")
	v, err = parseSigV4(req)
	if err != nil {
		t.Fatal(err)
	}
	key, err := v.verify(req, awsExampleSecret)
	if err != nil {
		t.Fatalf("seed signature: %v", err)
	}
	var wire bytes.Buffer
	wire.WriteString("10000;chunk-signature=ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648\r\n")
	wire.Write(body[:65536])
	wire.WriteString("\r\n400;chunk-signature=0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497\r\n")
	wire.Write(body[65536:])
	wire.WriteString("\r\n0;chunk-signature=b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9\r\n\r\n")
	if wire.Len() != 66824 {
		t.Fatalf("example body is %d bytes", wire.Len())
	}
	got, err := io.ReadAll(newChunkedReader(&wire, key, v, nil, 66560))
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("chunked example: %d bytes, %v", len(got), err)
	}
}

// signedChunkedBody makes an aws-chunked body of data with minio-go's
// streaming signer (with a trailer checksum when trailer is set) and
// returns the request's parsed signature, the signing key and the wire
// bytes.
func signedChunkedBody(t *testing.T, data []byte, trailer http.Header) (sigRequest, []byte, []byte) {
	t.Helper()
	req, _ := http.NewRequest("PUT", "http://s3.test/b/k", bytes.NewReader(data))
	req.Trailer = trailer
	req = signer.StreamingSignV4(req, "SVCKEY", "secret", "", "us-east-1", int64(len(data)), time.Now().UTC(), sha256Hasher{sha256.New()})
	wire, err := io.ReadAll(req.Body)
	if err != nil {
		t.Fatal(err)
	}
	v, err := parseSigV4(req)
	if err != nil {
		t.Fatal(err)
	}
	key, err := v.verify(req, "secret")
	if err != nil {
		t.Fatal(err)
	}
	return v, key, wire
}

// TestChunkedReader: aws-chunked bodies are decoded only when every chunk,
// the final chunk and the trailer are as signed and framed; each change is
// refused (the reader's error stops the blob write).
func TestChunkedReader(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 7000) // two chunks
	crc := http.Header{"x-amz-checksum-crc32c": {"/U4OUQ=="}}
	v, key, wire := signedChunkedBody(t, data, nil)
	vt, keyt, wiret := signedChunkedBody(t, data, crc)
	replace := func(b []byte, old, new string) []byte {
		if !bytes.Contains(b, []byte(old)) {
			t.Fatalf("%q not in the body", old)
		}
		return bytes.Replace(b, []byte(old), []byte(new), 1)
	}
	for _, c := range []struct {
		name    string
		sig     sigRequest
		key     []byte
		body    []byte
		trailer bool
		decoded int64
		ok      bool
	}{
		{"as signed", v, key, wire, false, int64(len(data)), true},
		{"as signed, length unknown", v, key, wire, false, -1, true},
		{"with a trailer", vt, keyt, wiret, true, int64(len(data)), true},
		{"byte changed", v, key, replace(wire, "3456", "3457"), false, int64(len(data)), false},
		{"truncated", v, key, wire[:len(wire)/2], false, int64(len(data)), false},
		{"final chunk gone", v, key, wire[:bytes.LastIndex(wire, []byte("0;chunk"))], false, int64(len(data)), false},
		{"data after the end", v, key, append(bytes.Clone(wire), "junk"...), false, int64(len(data)), false},
		{"decoded length larger", v, key, wire, false, int64(len(data)) + 1, false},
		{"decoded length smaller", v, key, wire, false, int64(len(data)) - 1, false},
		{"chunk size not hex", v, key, replace(wire, "10000;", "1000g;"), false, int64(len(data)), false},
		{"no chunk signature", v, key, replace(wire, ";chunk-signature=", ";chunk-sig="), false, int64(len(data)), false},
		{"no CR LF after a chunk", v, key, replace(wire, "89\r\n", "89xx"), false, int64(len(data)), false},
		{"trailer value changed", vt, keyt, replace(wiret, "/U4OUQ==", "AAAAAA=="), true, int64(len(data)), false},
		{"trailer not announced", vt, keyt, wiret, false, int64(len(data)), false},
		{"trailer signature changed", vt, keyt, replace(wiret, "x-amz-trailer-signature:", "x-amz-trailer-signature:0"), true, int64(len(data)), false},
		{"unsigned reader, signed chunks", v, nil, wire, false, int64(len(data)), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var tc *checksum
			if c.trailer {
				tc, _ = announcedChecksum(http.Header{"X-Amz-Trailer": {"x-amz-checksum-crc32c"}})
			}
			got, err := io.ReadAll(newChunkedReader(bytes.NewReader(c.body), c.key, c.sig, tc, c.decoded))
			if c.ok != (err == nil) {
				t.Fatalf("err = %v, want ok %v", err, c.ok)
			}
			if c.ok && !bytes.Equal(got, data) {
				t.Fatalf("decoded %d bytes", len(got))
			}
			var oe *opError
			if err != nil && !errors.As(err, &oe) {
				t.Fatalf("error %v is not an S3 refusal", err)
			}
			if c.trailer && c.ok && tc.value != "/U4OUQ==" {
				t.Fatalf("trailer value = %q", tc.value)
			}
		})
	}
}

// TestParseAuthorization: malformed Authorization headers are refused
// before any key is looked up.
func TestParseAuthorization(t *testing.T) {
	good := "AWS4-HMAC-SHA256 Credential=AK/20260102/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=" + strings.Repeat("a", 64)
	if _, _, _, err := parseAuthorization(good); err != nil {
		t.Fatalf("good header: %v", err)
	}
	for _, h := range []string{
		"",
		"AWS AK:sig",
		strings.Replace(good, "Credential=AK/20260102", "Credential=AK/2026-01-02", 1),
		strings.Replace(good, "/s3/", "/ec2/", 1),
		strings.Replace(good, "aws4_request", "aws4", 1),
		strings.Replace(good, "us-east-1", "US EAST", 1),
		strings.Replace(good, "host;x-amz-date", "x-amz-date;host", 1),
		strings.Replace(good, "host;x-amz-date", "x-amz-date", 1),
		strings.Replace(good, "host;x-amz-date", "host;host", 1),
		strings.Replace(good, "host;x-amz-date", "Host", 1),
		strings.Replace(good, strings.Repeat("a", 64), strings.Repeat("A", 64), 1),
		strings.Replace(good, strings.Repeat("a", 64), "abc", 1),
		good + ", Signature=" + strings.Repeat("b", 64),
		good + ", Extra=1",
		strings.Replace(good, "Credential=AK", "Credential=", 1),
		"AWS4-HMAC-SHA256 " + strings.Repeat("x", maxAuthorization),
	} {
		if _, _, _, err := parseAuthorization(h); err == nil {
			t.Errorf("accepted %q", h)
		}
	}
}
