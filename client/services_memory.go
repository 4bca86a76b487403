package client

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// MemoryStore is a project's key-value memory store.
type MemoryStore struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	ProjectID string `json:"projectId"`
	// Keys and Bytes are what the store holds (bytes of keys, values and
	// metadata).
	Keys      int64             `json:"keys"`
	Bytes     int64             `json:"bytes"`
	Limits    MemoryStoreLimits `json:"limits"`
	CreatedAt time.Time         `json:"createdAt"`
	UpdatedAt time.Time         `json:"updatedAt"`
}

// MemoryStoreLimits are the plan's caps (-1: none) and the fixed sizes a
// store's keys are held to.
type MemoryStoreLimits struct {
	Keys          int64 `json:"keys"`
	Bytes         int64 `json:"bytes"`
	KeyBytes      int   `json:"keyBytes"`
	ValueBytes    int   `json:"valueBytes"`
	MetadataBytes int   `json:"metadataBytes"`
	BulkKeys      int   `json:"bulkKeys"`
}

// MemoryValue is a key's value with its metadata and expiry.
type MemoryValue struct {
	Value []byte
	// Metadata is the key's metadata as JSON (nil for none).
	Metadata json.RawMessage
	// ExpiresAt is when the key expires (nil: never).
	ExpiresAt *time.Time
}

// MemoryKey is a key of a listing.
type MemoryKey struct {
	Key       string          `json:"key"`
	Bytes     int64           `json:"bytes"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	ExpiresAt *time.Time      `json:"expiresAt,omitempty"`
}

// MemoryKeyPage is a page of keys in byte order; while ListComplete is
// false, Cursor continues the listing.
type MemoryKeyPage struct {
	Keys         []MemoryKey `json:"keys"`
	Cursor       string      `json:"cursor"`
	ListComplete bool        `json:"listComplete"`
}

// MemoryListOptions select a page of keys.
type MemoryListOptions struct {
	Prefix string
	// Limit is 1 to 1000 (0: the API's default, 100).
	Limit  int
	Cursor string
}

// MemoryPutOptions are the optional parts of a put.
type MemoryPutOptions struct {
	// TTL expires the key after that long (whole seconds; 0: never).
	TTL time.Duration
	// Metadata is any JSON-encodable value kept with the key (nil: none).
	Metadata any
}

// MemoryStores lists a project's memory stores.
func (c *Client) MemoryStores(ctx context.Context, projectID string) ([]MemoryStore, error) {
	var out struct {
		Stores []MemoryStore `json:"stores"`
	}
	return out.Stores, c.get(ctx, "/api/projects/"+esc(projectID)+"/memory", &out)
}

// CreateMemoryStore makes a memory store in a project (409 for a name in
// use, 402 plan_limit past the plan's stores).
func (c *Client) CreateMemoryStore(ctx context.Context, projectID, name string) (MemoryStore, error) {
	var out struct {
		Store MemoryStore `json:"store"`
	}
	return out.Store, c.post(ctx, "/api/projects/"+esc(projectID)+"/memory", map[string]string{"name": name}, &out)
}

// DeleteMemoryStore deletes a store with all its keys.
func (c *Client) DeleteMemoryStore(ctx context.Context, storeID string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/api/memory/" + esc(storeID)}, nil)
}

// memoryKeyPath is the path of one key (every byte of the key escaped, so
// keys holding "/", "." or ".." segments reach the API as they are).
func memoryKeyPath(storeID, key string) string {
	return "/api/memory/" + esc(storeID) + "/keys/" + url.PathEscape(key)
}

// MemoryGet reads a key (an *Error with code key_not_found when it is
// absent or expired).
func (c *Client) MemoryGet(ctx context.Context, storeID, key string) (MemoryValue, error) {
	resp, err := c.sendRaw(ctx, http.MethodGet, memoryKeyPath(storeID, key), nil, nil, nil, 0)
	if err != nil {
		return MemoryValue{}, err
	}
	defer resp.Body.Close()
	v := MemoryValue{}
	if v.Value, err = io.ReadAll(resp.Body); err != nil {
		return MemoryValue{}, &TransportError{Method: http.MethodGet, URL: c.BaseURL + memoryKeyPath(storeID, key), Err: err}
	}
	if m := resp.Header.Get("X-Memory-Metadata"); m != "" {
		v.Metadata = json.RawMessage(m)
	}
	if e := resp.Header.Get("X-Memory-Expires-At"); e != "" {
		if t, err := time.Parse(time.RFC3339Nano, e); err == nil {
			v.ExpiresAt = &t
		}
	}
	return v, nil
}

// MemoryPut writes a key (at most 1 MiB), replacing what it held; it
// answers the expiry the key got.
func (c *Client) MemoryPut(ctx context.Context, storeID, key string, value []byte, o MemoryPutOptions) (*time.Time, error) {
	q := url.Values{}
	if o.TTL > 0 {
		q.Set("ttlSeconds", strconv.FormatInt(int64((o.TTL+time.Second-1)/time.Second), 10))
	}
	h := http.Header{}
	if o.Metadata != nil {
		b, err := json.Marshal(o.Metadata)
		if err != nil {
			return nil, err
		}
		h.Set("X-Memory-Metadata", string(b))
	}
	var out struct {
		ExpiresAt *time.Time `json:"expiresAt"`
	}
	return out.ExpiresAt, c.do(ctx, request{method: http.MethodPut, path: memoryKeyPath(storeID, key), query: q, header: h,
		body: bytes.NewReader(value), contentLength: int64(len(value)), contentType: "application/octet-stream"}, &out)
}

// MemoryDelete deletes a key; deleted is false when it was not there.
func (c *Client) MemoryDelete(ctx context.Context, storeID, key string) (deleted bool, err error) {
	var out struct {
		Deleted bool `json:"deleted"`
	}
	return out.Deleted, c.do(ctx, request{method: http.MethodDelete, path: memoryKeyPath(storeID, key)}, &out)
}

// MemoryKeys lists a page of a store's keys in byte order (expired keys
// left out).
func (c *Client) MemoryKeys(ctx context.Context, storeID string, o MemoryListOptions) (MemoryKeyPage, error) {
	q := url.Values{}
	if o.Prefix != "" {
		q.Set("prefix", o.Prefix)
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	var out MemoryKeyPage
	return out, c.do(ctx, request{method: http.MethodGet, path: "/api/memory/" + esc(storeID) + "/keys", query: q}, &out)
}
