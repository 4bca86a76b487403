package buckets

import (
	"bytes"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/svcplatform/platform/controlplane/api"
)

// S3Handler returns the S3-compatible surface: path-style requests
// (PREFIX/bucket/key) signed with AWS Signature Version 4 by an access key
// of the bucket's project. prefix is the path it is mounted at ("" at the
// root of a host of its own, which clients that take no path in their
// endpoint, such as minio-go, need). Mount it outside http.ServeMux, which
// would redirect keys holding "//", "." or ".." segments to other paths.
//
// Calls: ListBuckets, HeadBucket, GetBucketLocation, ListObjectsV2,
// PutObject, CopyObject, GetObject (Range, conditions, response-*
// overrides), HeadObject, DeleteObject, DeleteObjects,
// CreateMultipartUpload, UploadPart, CompleteMultipartUpload,
// AbortMultipartUpload, ListParts. Everything else answers NotImplemented.
func (s *Service) S3Handler(prefix string) http.Handler {
	return &s3Handler{s: s, prefix: strings.TrimRight(prefix, "/")}
}

type s3Handler struct {
	s      *Service
	prefix string
}

// s3Request is one request on the S3 surface as it is served.
type s3Request struct {
	w          http.ResponseWriter
	r          *http.Request
	q          url.Values
	op         string
	bucketName string
	key        string
	sig        sigRequest
	signingKey []byte
	caller     s3Caller
}

// Operations, as named in metrics and in S3's documentation.
const (
	opListBuckets       = "ListBuckets"
	opHeadBucket        = "HeadBucket"
	opGetBucketLocation = "GetBucketLocation"
	opListObjectsV2     = "ListObjectsV2"
	opDeleteObjects     = "DeleteObjects"
	opPutObject         = "PutObject"
	opCopyObject        = "CopyObject"
	opGetObject         = "GetObject"
	opHeadObject        = "HeadObject"
	opDeleteObject      = "DeleteObject"
	opCreateUpload      = "CreateMultipartUpload"
	opUploadPart        = "UploadPart"
	opCompleteUpload    = "CompleteMultipartUpload"
	opAbortUpload       = "AbortMultipartUpload"
	opListParts         = "ListParts"
)

// writeOps change something: read-only access keys are refused them.
var writeOps = map[string]bool{opDeleteObjects: true, opPutObject: true, opCopyObject: true, opDeleteObject: true,
	opCreateUpload: true, opUploadPart: true, opCompleteUpload: true, opAbortUpload: true}

// unsupported are S3 sub-resources this surface does not offer.
var unsupported = []string{"acl", "tagging", "versioning", "versions", "policy", "policyStatus", "cors", "lifecycle", "website",
	"logging", "notification", "replication", "encryption", "object-lock", "retention", "legal-hold", "restore", "select",
	"torrent", "attributes", "requestPayment", "accelerate", "analytics", "inventory", "metrics", "intelligent-tiering",
	"ownershipControls", "publicAccessBlock", "uploads-list", "append", "renameObject"}

func errNotImplemented(format string, args ...any) *opError {
	return refuse("NotImplemented", http.StatusNotImplemented, api.KindNotImplemented, "", format, args...)
}

func errMethod() *opError {
	return refuse("MethodNotAllowed", http.StatusMethodNotAllowed, api.KindMethodNotAllowed, "", "the method is not allowed on this resource")
}

// s3Operation names the call a request makes.
func s3Operation(r *http.Request, q url.Values, bucket, key string) (string, error) {
	for _, sub := range unsupported {
		if q.Has(sub) {
			return "", errNotImplemented("the %s sub-resource is not offered here", sub)
		}
	}
	if v := q.Get("versionId"); v != "" && v != "null" {
		return "", errNotImplemented("objects have no versions here")
	}
	m := r.Method
	switch {
	case bucket == "":
		if m == http.MethodGet {
			return opListBuckets, nil
		}
		return "", errMethod()
	case key == "":
		switch {
		case m == http.MethodHead:
			return opHeadBucket, nil
		case m == http.MethodGet && q.Has("location"):
			return opGetBucketLocation, nil
		case m == http.MethodGet && q.Has("uploads"):
			return "", errNotImplemented("ListMultipartUploads is not offered: keep the upload id CreateMultipartUpload answers")
		case m == http.MethodGet && q.Get("list-type") == "2":
			return opListObjectsV2, nil
		case m == http.MethodGet:
			return "", errNotImplemented("ListObjects (version 1) is not offered: use ListObjectsV2 (list-type=2)")
		case m == http.MethodPost && q.Has("delete"):
			return opDeleteObjects, nil
		case m == http.MethodPut || m == http.MethodDelete:
			return "", errNotImplemented("buckets are created and deleted through the platform's API (POST /api/projects/{id}/buckets)")
		}
		return "", errMethod()
	}
	switch m {
	case http.MethodPut:
		switch {
		case q.Has("uploadId") || q.Has("partNumber"):
			if r.Header.Get("X-Amz-Copy-Source") != "" {
				return "", errNotImplemented("UploadPartCopy is not offered: upload the part's bytes")
			}
			return opUploadPart, nil
		case r.Header.Get("X-Amz-Copy-Source") != "":
			return opCopyObject, nil
		}
		return opPutObject, nil
	case http.MethodGet:
		if q.Has("uploadId") {
			return opListParts, nil
		}
		return opGetObject, nil
	case http.MethodHead:
		return opHeadObject, nil
	case http.MethodDelete:
		if q.Has("uploadId") {
			return opAbortUpload, nil
		}
		return opDeleteObject, nil
	case http.MethodPost:
		switch {
		case q.Has("uploads"):
			return opCreateUpload, nil
		case q.Has("uploadId"):
			return opCompleteUpload, nil
		}
	}
	return "", errMethod()
}

func newRequestID() string {
	var b [8]byte
	rand.Read(b[:])
	return strings.ToUpper(hex.EncodeToString(b[:]))
}

func (h *s3Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := newRequestID()
	w.Header().Set("X-Amz-Request-Id", id)
	rq := &s3Request{w: w, r: r, op: "unknown"}
	code := "OK"
	if err := h.serve(rq); err != nil {
		code = h.writeError(rq, err, id)
	}
	h.s.m.s3Requests.WithLabelValues(rq.op, code).Inc()
}

// serve authenticates the request and runs its call.
func (h *s3Handler) serve(rq *s3Request) error {
	r := rq.r
	path := r.URL.Path
	if h.prefix != "" {
		rest, ok := strings.CutPrefix(path, h.prefix)
		if !ok || (rest != "" && rest[0] != '/') {
			return errNoSuchBucket()
		}
		path = rest
	}
	rq.bucketName, rq.key, _ = strings.Cut(strings.TrimPrefix(path, "/"), "/")
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return errInvalidArgument("the query string is malformed")
	}
	rq.q = q
	if rq.op, err = s3Operation(r, q, rq.bucketName, rq.key); err != nil {
		rq.op = "unsupported"
		return err
	}
	if isAnonymous(r) {
		return errAccessDenied("sign requests with a storage access key (AWS Signature Version 4); public buckets are served at /storage/{bucketId}/{key}")
	}
	if r.Header.Get("X-Amz-Security-Token") != "" || q.Has("X-Amz-Security-Token") {
		return refuse("InvalidToken", http.StatusBadRequest, api.KindInvalid, "", "session tokens are not issued here: sign with an access key and its secret only")
	}
	if rq.sig, err = parseSigV4(r); err != nil {
		return err
	}
	if rq.caller, err = h.s.lookupKey(r.Context(), rq.sig.Cred.AccessKey); err != nil {
		return err
	}
	if rq.signingKey, err = rq.sig.verify(r, rq.caller.secret); err != nil {
		return err
	}
	if err := rq.sig.checkTime(h.s.now(), h.s.cfg.MaxClockSkew); err != nil {
		return err
	}
	h.s.touchKey(r.Context(), rq.caller.key)
	if writeOps[rq.op] && rq.caller.key.ReadOnly {
		return errAccessDenied("this access key is read-only")
	}
	if rq.op == opListBuckets {
		return h.listBuckets(rq)
	}
	b, err := h.bucket(rq, rq.bucketName)
	if err != nil {
		return err
	}
	if rq.key != "" {
		if err := ValidateKey(rq.key); err != nil {
			return errKey(err)
		}
	}
	switch rq.op {
	case opHeadBucket:
		rq.w.Header().Set("X-Amz-Bucket-Region", h.s.cfg.Region)
		rq.w.WriteHeader(http.StatusOK)
		return nil
	case opGetBucketLocation:
		region := h.s.cfg.Region
		if region == "us-east-1" {
			region = "" // S3 answers us-east-1 as the empty constraint
		}
		writeXML(rq.w, http.StatusOK, locationConstraint{NS: s3NS, Region: region})
		return nil
	case opListObjectsV2:
		return h.listObjects(rq, b)
	case opDeleteObjects:
		return h.deleteObjects(rq, b)
	case opPutObject:
		return h.putObject(rq, b)
	case opCopyObject:
		return h.copyObject(rq, b)
	case opGetObject, opHeadObject:
		return h.getObject(rq, b)
	case opDeleteObject:
		err := h.s.deleteObjectKey(r.Context(), b, rq.key)
		var oe *opError
		if err != nil && !(errors.As(err, &oe) && oe.s3Code == "NoSuchKey") {
			return err
		}
		rq.w.WriteHeader(http.StatusNoContent)
		return nil
	case opCreateUpload:
		hd, err := objectHeaders(r.Header)
		if err != nil {
			return err
		}
		u, err := h.s.createUpload(r.Context(), b, rq.key, hd)
		if err != nil {
			return err
		}
		writeXML(rq.w, http.StatusOK, initiateMultipartUploadResult{NS: s3NS, Bucket: b.Name, Key: u.Key, UploadID: u.ID})
		return nil
	case opUploadPart:
		return h.uploadPart(rq, b)
	case opCompleteUpload:
		return h.completeUpload(rq, b)
	case opAbortUpload:
		if err := h.s.abortUpload(r.Context(), b, q.Get("uploadId"), rq.key); err != nil {
			return err
		}
		rq.w.WriteHeader(http.StatusNoContent)
		return nil
	case opListParts:
		return h.listParts(rq, b)
	}
	return errMethod()
}

// bucket resolves a bucket name in the caller's project.
func (h *s3Handler) bucket(rq *s3Request, name string) (bucketRow, error) {
	if err := ValidateBucketName(name); err != nil {
		return bucketRow{}, refuse("InvalidBucketName", http.StatusBadRequest, api.KindInvalid, "invalid_bucket_name", "%s", trimScope(err))
	}
	if !rq.caller.reaches(name) {
		return bucketRow{}, errAccessDenied("this access key does not reach bucket %s", name)
	}
	b, err := bucketByName(rq.r.Context(), h.s.d.DB, rq.caller.key.Project, name)
	if err != nil {
		if isNotFound(err) {
			return bucketRow{}, errNoSuchBucket()
		}
		return bucketRow{}, errInternal(err)
	}
	return b, nil
}

// objectHeaders reads the stored headers of an object from a request:
// Content-Type, Cache-Control, Content-Disposition, Content-Encoding
// (without aws-chunked, the transfer's own) and x-amz-meta-*.
func objectHeaders(h http.Header) (headers, error) {
	var enc []string
	for _, e := range strings.Split(h.Get("Content-Encoding"), ",") {
		if e = strings.TrimSpace(e); e != "" && !strings.EqualFold(e, "aws-chunked") {
			enc = append(enc, e)
		}
	}
	md, err := metadataFromHeader(h, "X-Amz-Meta-")
	if err != nil {
		return headers{}, errMetadata(err)
	}
	return headers{ContentType: h.Get("Content-Type"), CacheControl: h.Get("Cache-Control"), Disposition: h.Get("Content-Disposition"),
		Encoding: strings.Join(enc, ","), Metadata: md}, nil
}

// body reads the request's payload as x-amz-content-sha256 says: raw (its
// SHA-256 checked after, or unsigned), or aws-chunked, signed or not.
func (h *s3Handler) body(rq *s3Request) (putInput, error) {
	r := rq.r
	in := putInput{Body: r.Body, Size: r.ContentLength}
	var err error
	if in.Checksum, err = announcedChecksum(r.Header); err != nil {
		return putInput{}, err
	}
	if md := r.Header.Get("Content-Md5"); md != "" {
		raw, err := base64.StdEncoding.DecodeString(md)
		if err != nil || len(raw) != md5.Size {
			return putInput{}, refuse("InvalidDigest", http.StatusBadRequest, api.KindInvalid, "bad_digest", "Content-MD5 must be the base64 of 16 bytes")
		}
		in.ContentMD5 = raw
	}
	trailer := r.Header.Get("X-Amz-Trailer") != ""
	switch p := rq.sig.Payload; {
	case p == unsignedPayload:
	case isHex64(p):
		in.SHA256 = p
	case p == streamingPayload, p == streamingPayloadTrailer, p == streamingUnsignedTrailer:
		if trailer != (p != streamingPayload) {
			return putInput{}, errInvalidArgument("%s goes with x-amz-trailer only when it ends in TRAILER", p)
		}
		var tc *checksum
		if trailer {
			tc = in.Checksum
		}
		decoded := int64(-1)
		if v := r.Header.Get("X-Amz-Decoded-Content-Length"); v != "" {
			if decoded, err = strconv.ParseInt(v, 10, 64); err != nil || decoded < 0 {
				return putInput{}, errInvalidArgument("x-amz-decoded-content-length must be a length")
			}
		}
		key := rq.signingKey
		if p == streamingUnsignedTrailer {
			key = nil
		}
		in.Body, in.Size = newChunkedReader(r.Body, key, rq.sig, tc, decoded), decoded
	default:
		return putInput{}, errInvalidArgument("x-amz-content-sha256 must be the body's SHA-256 in hex, UNSIGNED-PAYLOAD or a STREAMING-* mode")
	}
	if in.Size < 0 {
		return putInput{}, refuse("MissingContentLength", http.StatusLengthRequired, api.KindInvalid, "", "send Content-Length (or x-amz-decoded-content-length)")
	}
	return in, nil
}

// smallBody reads a request body of at most limit bytes (an XML
// document), checking the digests it announced.
func (h *s3Handler) smallBody(rq *s3Request, limit int64) ([]byte, error) {
	in, err := h.body(rq)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(in.Body, limit+1))
	if err != nil {
		var oe *opError
		if errors.As(err, &oe) {
			return nil, oe
		}
		return nil, errIncomplete(-1, in.Size)
	}
	if int64(len(data)) > limit {
		return nil, errMalformed("the document is larger than %d bytes", limit)
	}
	sum := sha256.Sum256(data)
	if in.SHA256 != "" && in.SHA256 != hex.EncodeToString(sum[:]) {
		return nil, errSHA256Mismatch()
	}
	if in.ContentMD5 != nil {
		m := md5.Sum(data)
		if !bytes.Equal(m[:], in.ContentMD5) {
			return nil, errBadDigest("Content-MD5")
		}
	}
	return data, nil
}

func (h *s3Handler) putObject(rq *s3Request, b bucketRow) error {
	hd, err := objectHeaders(rq.r.Header)
	if err != nil {
		return err
	}
	in, err := h.body(rq)
	if err != nil {
		return err
	}
	in.Key, in.headers = rq.key, hd
	o, err := h.s.putObject(rq.r.Context(), b, in)
	if err != nil {
		return err
	}
	rq.w.Header().Set("ETag", `"`+o.ETag+`"`)
	if in.Checksum != nil {
		rq.w.Header().Set(checksumHeader+in.Checksum.name, in.Checksum.encoded())
	}
	rq.w.WriteHeader(http.StatusOK)
	return nil
}

func (h *s3Handler) uploadPart(rq *s3Request, b bucketRow) error {
	n, err := strconv.Atoi(rq.q.Get("partNumber"))
	if err != nil || !rq.q.Has("uploadId") {
		return errInvalidArgument("UploadPart takes partNumber (1 to %d) and uploadId", MaxParts)
	}
	in, err := h.body(rq)
	if err != nil {
		return err
	}
	p, err := h.s.uploadPartBody(rq.r.Context(), b, rq.q.Get("uploadId"), rq.key, n, in)
	if err != nil {
		return err
	}
	rq.w.Header().Set("ETag", `"`+p.ETag+`"`)
	if in.Checksum != nil {
		rq.w.Header().Set(checksumHeader+in.Checksum.name, in.Checksum.encoded())
	}
	rq.w.WriteHeader(http.StatusOK)
	return nil
}

// maxXMLBody bounds CompleteMultipartUpload and DeleteObjects documents.
const maxXMLBody = 2 << 20

func (h *s3Handler) completeUpload(rq *s3Request, b bucketRow) error {
	data, err := h.smallBody(rq, maxXMLBody)
	if err != nil {
		return err
	}
	var doc completeMultipartUpload
	if err := xml.Unmarshal(data, &doc); err != nil {
		return errMalformed("the CompleteMultipartUpload document is not well-formed")
	}
	named := make([]CompletePart, len(doc.Parts))
	for i, p := range doc.Parts {
		named[i] = CompletePart{PartNumber: p.PartNumber, ETag: p.ETag}
	}
	o, err := h.s.completeUpload(rq.r.Context(), b, rq.q.Get("uploadId"), rq.key, named)
	if err != nil {
		return err
	}
	loc := h.s.requestOrigin(rq.r) + h.prefix + "/" + b.Name + "/" + awsEncode(o.Key, true)
	writeXML(rq.w, http.StatusOK, completeMultipartUploadResult{NS: s3NS, Location: loc, Bucket: b.Name, Key: o.Key, ETag: `"` + o.ETag + `"`})
	return nil
}

func (h *s3Handler) listParts(rq *s3Request, b bucketRow) error {
	marker, max := 0, 1000
	if v := rq.q.Get("part-number-marker"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return errInvalidArgument("part-number-marker must be a whole number")
		}
		marker = n
	}
	if v := rq.q.Get("max-parts"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return errInvalidArgument("max-parts must be a whole number")
		}
		max = min(n, 1000)
	}
	u, parts, err := h.s.listUploadParts(rq.r.Context(), b, rq.q.Get("uploadId"), rq.key)
	if err != nil {
		return err
	}
	out := listPartsResult{NS: s3NS, Bucket: b.Name, Key: u.Key, UploadID: u.ID, PartNumberMarker: marker, MaxParts: max, StorageClass: "STANDARD"}
	for _, p := range parts {
		if p.Number <= marker {
			continue
		}
		if len(out.Parts) == max {
			out.IsTruncated = true
			break
		}
		out.Parts = append(out.Parts, s3Part{PartNumber: p.Number, LastModified: s3Timestamp(p.CreatedAt), ETag: `"` + p.ETag + `"`, Size: p.Size})
		out.NextPartNumberMarker = p.Number
	}
	writeXML(rq.w, http.StatusOK, out)
	return nil
}

// responseOverrides are GetObject's response-* parameters and the headers
// they set.
var responseOverrides = map[string]string{
	"response-content-type":        "Content-Type",
	"response-content-disposition": "Content-Disposition",
	"response-cache-control":       "Cache-Control",
	"response-content-encoding":    "Content-Encoding",
	"response-content-language":    "Content-Language",
	"response-expires":             "Expires",
}

func (h *s3Handler) getObject(rq *s3Request, b bucketRow) error {
	o, err := h.s.headObject(rq.r.Context(), b, rq.key)
	if err != nil {
		return err
	}
	overrides := map[string]string{}
	for p, header := range responseOverrides {
		if rq.q.Has(p) {
			v := rq.q.Get(p)
			if !headerValue(v) {
				return errInvalidArgument("%s must be printable ASCII of at most %d bytes", p, MaxHeaderValue)
			}
			overrides[header] = v
		}
	}
	return h.s.writeObject(rq.w, rq.r, o, "", "X-Amz-Meta-", overrides)
}

func (h *s3Handler) copyObject(rq *s3Request, dst bucketRow) error {
	r := rq.r
	src, err := url.PathUnescape(r.Header.Get("X-Amz-Copy-Source"))
	if err != nil {
		return errInvalidArgument("x-amz-copy-source must be /bucket/key, URL-encoded")
	}
	src, version, _ := strings.Cut(strings.TrimPrefix(src, "/"), "?versionId=")
	if version != "" && version != "null" {
		return errNotImplemented("objects have no versions here")
	}
	for k := range r.Header {
		if strings.HasPrefix(strings.ToLower(k), "x-amz-copy-source-if") {
			return errNotImplemented("conditional copies are not offered")
		}
	}
	srcName, srcKey, ok := strings.Cut(src, "/")
	if !ok || srcKey == "" {
		return errInvalidArgument("x-amz-copy-source must be /bucket/key")
	}
	if err := ValidateKey(srcKey); err != nil {
		return errKey(err)
	}
	srcBucket, err := h.bucket(rq, srcName)
	if err != nil {
		return err
	}
	var replace *headers
	switch d := strings.ToUpper(r.Header.Get("X-Amz-Metadata-Directive")); d {
	case "", "COPY":
		if srcBucket.ID == dst.ID && srcKey == rq.key {
			return refuse("InvalidRequest", http.StatusBadRequest, api.KindInvalid, "",
				"this copy request is illegal because it is trying to copy an object to itself without changing the object's metadata")
		}
	case "REPLACE":
		hd, err := objectHeaders(r.Header)
		if err != nil {
			return err
		}
		replace = &hd
	default:
		return errInvalidArgument("x-amz-metadata-directive must be COPY or REPLACE")
	}
	o, err := h.s.copyObject(r.Context(), srcBucket, srcKey, dst, rq.key, replace)
	if err != nil {
		return err
	}
	writeXML(rq.w, http.StatusOK, copyObjectResult{NS: s3NS, LastModified: s3Timestamp(o.CreatedAt), ETag: `"` + o.ETag + `"`})
	return nil
}

func (h *s3Handler) listBuckets(rq *s3Request) error {
	rows, err := queryBuckets(rq.r.Context(), h.s.d.DB, `project_id = ?`, rq.caller.key.Project)
	if err != nil {
		return errInternal(err)
	}
	out := listAllMyBucketsResult{NS: s3NS, Owner: s3Owner{ID: rq.caller.key.Project, DisplayName: rq.caller.key.Project}}
	for _, b := range rows {
		if rq.caller.reaches(b.Name) {
			out.Buckets = append(out.Buckets, s3Bucket{Name: b.Name, CreationDate: s3Timestamp(b.CreatedAt)})
		}
	}
	writeXML(rq.w, http.StatusOK, out)
	return nil
}

func (h *s3Handler) listObjects(rq *s3Request, b bucketRow) error {
	q := rq.q
	max := MaxListKeys
	if v := q.Get("max-keys"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return errInvalidArgument("max-keys must be a whole number")
		}
		max = min(n, MaxListKeys)
	}
	enc := q.Get("encoding-type")
	if enc != "" && enc != "url" {
		return errInvalidArgument("encoding-type must be url")
	}
	l, err := h.s.list(rq.r.Context(), b, listQuery{Prefix: q.Get("prefix"), Delimiter: q.Get("delimiter"),
		Token: q.Get("continuation-token"), StartAfter: q.Get("start-after"), Max: max})
	if err != nil {
		return err
	}
	name := func(s string) string {
		if enc == "url" {
			return awsEncode(s, true)
		}
		return s
	}
	out := listBucketResultV2{NS: s3NS, Name: b.Name, Prefix: name(q.Get("prefix")), Delimiter: name(q.Get("delimiter")), MaxKeys: max,
		KeyCount: len(l.Objects) + len(l.Prefixes), IsTruncated: l.Truncated, ContinuationToken: q.Get("continuation-token"),
		NextContinuationToken: l.Next, StartAfter: name(q.Get("start-after")), EncodingType: enc}
	var owner *s3Owner
	if q.Get("fetch-owner") == "true" {
		owner = &s3Owner{ID: b.Project, DisplayName: b.Project}
	}
	for _, o := range l.Objects {
		out.Contents = append(out.Contents, s3Content{Key: name(o.Key), LastModified: s3Timestamp(o.CreatedAt), ETag: `"` + o.ETag + `"`,
			Size: o.Size, StorageClass: "STANDARD", Owner: owner})
	}
	for _, p := range l.Prefixes {
		out.CommonPrefixes = append(out.CommonPrefixes, s3Prefix{Prefix: name(p)})
	}
	writeXML(rq.w, http.StatusOK, out)
	return nil
}

func (h *s3Handler) deleteObjects(rq *s3Request, b bucketRow) error {
	data, err := h.smallBody(rq, maxXMLBody)
	if err != nil {
		return err
	}
	var doc deleteRequest
	if err := xml.Unmarshal(data, &doc); err != nil {
		return errMalformed("the Delete document is not well-formed")
	}
	if len(doc.Objects) == 0 || len(doc.Objects) > 1000 {
		return errMalformed("a Delete document names 1 to 1000 objects")
	}
	out := deleteResult{NS: s3NS}
	for _, o := range doc.Objects {
		err := h.s.deleteObjectKey(rq.r.Context(), b, o.Key)
		var oe *opError
		switch {
		case err == nil, errors.As(err, &oe) && oe.s3Code == "NoSuchKey":
			if !doc.Quiet {
				out.Deleted = append(out.Deleted, deletedObject{Key: o.Key})
			}
		case errors.As(err, &oe):
			out.Errors = append(out.Errors, deleteError{Key: o.Key, Code: oe.s3Code, Message: oe.rest.Message})
		default:
			h.s.d.Logger.Error("buckets: s3 delete objects", "bucket", b.ID, "err", err)
			out.Errors = append(out.Errors, deleteError{Key: o.Key, Code: "InternalError", Message: "internal error: try again"})
		}
	}
	writeXML(rq.w, http.StatusOK, out)
	return nil
}

// writeError answers err in S3's shape and returns its code. Errors from
// other areas (a project in teardown) map by kind; anything else is an
// internal error, logged and answered without detail.
func (h *s3Handler) writeError(rq *s3Request, err error, requestID string) string {
	code, status, msg := "InternalError", http.StatusInternalServerError, "We encountered an internal error. Please try again."
	var oe *opError
	var ae *api.Error
	switch {
	case errors.As(err, &oe):
		code, status, msg = oe.s3Code, oe.s3Status, oe.rest.Message
	case errors.As(err, &ae) && ae.Kind != api.KindInternal:
		msg = ae.Message
		switch ae.Kind {
		case api.KindNotFound:
			code, status = "NoSuchBucket", http.StatusNotFound
		case api.KindConflict:
			code, status = "OperationAborted", http.StatusConflict
		case api.KindForbidden, api.KindUnauthenticated:
			code, status = "AccessDenied", http.StatusForbidden
		case api.KindPaymentRequired:
			code, status = "QuotaExceeded", http.StatusForbidden
		case api.KindTooLarge:
			code, status = "EntityTooLarge", http.StatusBadRequest
		default:
			code, status = "InvalidArgument", http.StatusBadRequest
		}
	default:
		msg = "We encountered an internal error. Please try again."
	}
	if status >= 500 {
		h.s.d.Logger.Error("buckets: s3 request failed", "operation", rq.op, "status", status, "err", err)
	}
	if rq.r.Method == http.MethodHead {
		rq.w.WriteHeader(status)
		return code
	}
	writeXML(rq.w, status, s3Error{Code: code, Message: msg, Resource: rq.r.URL.Path, RequestID: requestID})
	return code
}
