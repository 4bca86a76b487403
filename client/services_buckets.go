package client

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Bucket is a project's storage bucket.
type Bucket struct {
	ID        string `json:"id"`
	ProjectID string `json:"projectId"`
	Name      string `json:"name"`
	// Public buckets serve every object to anyone at PublicURL + key.
	Public bool `json:"public"`
	// PublicURL is nil while the bucket is private.
	PublicURL   *string   `json:"publicUrl"`
	Objects     int64     `json:"objects"`
	Bytes       int64     `json:"bytes"`
	UploadBytes int64     `json:"uploadBytes"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

// StorageObject is an object of a bucket.
type StorageObject struct {
	Key                string            `json:"key"`
	Size               int64             `json:"size"`
	ETag               string            `json:"etag"`
	ContentType        string            `json:"contentType"`
	CacheControl       string            `json:"cacheControl,omitempty"`
	ContentDisposition string            `json:"contentDisposition,omitempty"`
	ContentEncoding    string            `json:"contentEncoding,omitempty"`
	Metadata           map[string]string `json:"metadata"`
	Parts              int               `json:"parts,omitempty"`
	LastModified       time.Time         `json:"lastModified"`
	// URL is where a public bucket serves the object.
	URL string `json:"url,omitempty"`
}

// ObjectPage is a page of a listing in key order; NextCursor (nil on the
// last page) continues it.
type ObjectPage struct {
	Objects []StorageObject `json:"objects"`
	// Prefixes are, with a delimiter, the key parts up to and including
	// it, each listed once instead of its objects.
	Prefixes   []string `json:"prefixes"`
	NextCursor *string  `json:"nextCursor"`
}

// ObjectListOptions select a page of objects.
type ObjectListOptions struct {
	Prefix    string
	Delimiter string
	// Limit is 1 to 1000 (0: the API's default, 100).
	Limit  int
	Cursor string
}

// PutObjectOptions are an object's stored headers.
type PutObjectOptions struct {
	// ContentType defaults to application/octet-stream.
	ContentType        string
	CacheControl       string
	ContentDisposition string
	ContentEncoding    string
	// Metadata is sent as X-Meta-<name> headers.
	Metadata map[string]string
}

// SignedURL serves one object to anyone holding it until ExpiresAt.
type SignedURL struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// ObjectReader is an object's bytes being read, with its headers. Close it.
type ObjectReader struct {
	io.ReadCloser
	Size        int64
	ContentType string
	ETag        string
	// Metadata are the X-Meta-* headers, names in lower case.
	Metadata map[string]string
}

// Buckets lists a project's buckets by name.
func (c *Client) Buckets(ctx context.Context, projectID string) ([]Bucket, error) {
	var out struct {
		Buckets []Bucket `json:"buckets"`
	}
	return out.Buckets, c.get(ctx, "/api/projects/"+esc(projectID)+"/buckets", &out)
}

// CreateBucket makes a bucket (409 bucket_exists for a name in use).
func (c *Client) CreateBucket(ctx context.Context, projectID, name string, public bool) (Bucket, error) {
	var out struct {
		Bucket Bucket `json:"bucket"`
	}
	return out.Bucket, c.post(ctx, "/api/projects/"+esc(projectID)+"/buckets", map[string]any{"name": name, "public": public}, &out)
}

// SetBucketPublic makes a bucket public or private.
func (c *Client) SetBucketPublic(ctx context.Context, bucketID string, public bool) (Bucket, error) {
	var out struct {
		Bucket Bucket `json:"bucket"`
	}
	return out.Bucket, c.do(ctx, request{method: http.MethodPatch, path: "/api/buckets/" + esc(bucketID), json: map[string]bool{"public": public}}, &out)
}

// DeleteBucket deletes an empty bucket; with force, what it holds too.
func (c *Client) DeleteBucket(ctx context.Context, bucketID string, force bool) error {
	q := url.Values{}
	if force {
		q.Set("force", "true")
	}
	return c.do(ctx, request{method: http.MethodDelete, path: "/api/buckets/" + esc(bucketID), query: q}, nil)
}

// objectPath is the path of one object: the key as one escaped segment
// (every "/" as %2F), as the API's own URLs send it.
func objectPath(bucketID, key string) string {
	return "/api/buckets/" + esc(bucketID) + "/objects/" + url.PathEscape(key)
}

// Objects lists a page of a bucket's objects.
func (c *Client) Objects(ctx context.Context, bucketID string, o ObjectListOptions) (ObjectPage, error) {
	q := url.Values{}
	for k, v := range map[string]string{"prefix": o.Prefix, "delimiter": o.Delimiter, "cursor": o.Cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	var out ObjectPage
	return out, c.do(ctx, request{method: http.MethodGet, path: "/api/buckets/" + esc(bucketID) + "/objects", query: q}, &out)
}

// PutObject stores size bytes read from body under key, replacing any
// object there (up to 5 GiB; larger objects need a multipart upload).
func (c *Client) PutObject(ctx context.Context, bucketID, key string, body io.Reader, size int64, o PutObjectOptions) (StorageObject, error) {
	h := http.Header{}
	for k, v := range map[string]string{"Cache-Control": o.CacheControl, "Content-Disposition": o.ContentDisposition, "Content-Encoding": o.ContentEncoding} {
		if v != "" {
			h.Set(k, v)
		}
	}
	for k, v := range o.Metadata {
		h.Set("X-Meta-"+k, v)
	}
	ct := o.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	if size == 0 {
		body = http.NoBody
	}
	var out struct {
		Object StorageObject `json:"object"`
	}
	return out.Object, c.do(ctx, request{method: http.MethodPut, path: objectPath(bucketID, key), header: h, body: body,
		contentLength: size, contentType: ct}, &out)
}

// GetObject reads an object's bytes (an *Error with status 404 when it is
// absent). Close the answer.
func (c *Client) GetObject(ctx context.Context, bucketID, key string) (*ObjectReader, error) {
	resp, err := c.sendRaw(ctx, http.MethodGet, objectPath(bucketID, key), nil, nil, nil, 0)
	if err != nil {
		return nil, err
	}
	r := &ObjectReader{ReadCloser: resp.Body, Size: resp.ContentLength, ContentType: resp.Header.Get("Content-Type"),
		ETag: strings.Trim(resp.Header.Get("ETag"), `"`), Metadata: map[string]string{}}
	for k, v := range resp.Header {
		if name, ok := strings.CutPrefix(strings.ToLower(k), "x-meta-"); ok && len(v) > 0 {
			r.Metadata[name] = v[0]
		}
	}
	return r, nil
}

// DeleteObject deletes an object (an *Error with status 404 when it is
// absent).
func (c *Client) DeleteObject(ctx context.Context, bucketID, key string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: objectPath(bucketID, key)}, nil)
}

// SignObjectURL makes a URL serving one existing object to anyone holding
// it for expiresIn (whole seconds, 1 s to 7 days; 0: the API's default,
// one hour).
func (c *Client) SignObjectURL(ctx context.Context, bucketID, key string, expiresIn time.Duration) (SignedURL, error) {
	body := map[string]any{"key": key}
	if expiresIn > 0 {
		body["expiresIn"] = int64((expiresIn + time.Second - 1) / time.Second)
	}
	var out SignedURL
	return out, c.post(ctx, "/api/buckets/"+esc(bucketID)+"/signed-urls", body, &out)
}

// sendRaw sends a request whose answer is not JSON and returns the 2xx
// response for the caller to read and close; any other answer is an
// *Error.
func (c *Client) sendRaw(ctx context.Context, method, path string, query url.Values, header http.Header, body io.Reader, size int64) (*http.Response, error) {
	u := c.BaseURL + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	if size > 0 {
		req.ContentLength = size
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if c.Key != "" {
		req.Header.Set("Authorization", "Bearer "+c.Key)
	}
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return nil, &TransportError{Method: method, URL: c.BaseURL + path, Err: err}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, decodeError(resp.StatusCode, data)
	}
	return resp, nil
}
