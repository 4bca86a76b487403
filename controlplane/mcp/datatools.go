package mcp

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// MaxObjectPutBytes bounds the object put_object sends (after base64
// decoding): larger objects go through the REST API, the S3 surface or a
// multipart upload.
const MaxObjectPutBytes = 1 << 20

// dataTools are the tools of a project's app services: memory stores,
// storage buckets, sign-in pools and e-mail. Each calls the area's REST
// route with the caller's key, so the permission table (viewers read,
// developers write, full-access keys read object bytes and send mail,
// project keys stay in their project) is the API's.
func dataTools() []Tool {
	const G, P, U, A = http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch
	storePath := func(id, rest string) (string, error) {
		id, err := pathID("storeId", id)
		return "/api/memory/" + id + rest, err
	}
	bucketPath := func(id, rest string) (string, error) {
		id, err := pathID("bucketId", id)
		return "/api/buckets/" + id + rest, err
	}
	poolPath := func(id, rest string) (string, error) {
		id, err := pathID("poolId", id)
		return "/api/auth-pools/" + id + rest, err
	}
	projectPath := func(id, rest string) (string, error) {
		id, err := pathID("projectId", id)
		return "/api/projects/" + id + rest, err
	}
	page := func(q url.Values, limit int, cursor string) url.Values {
		if limit > 0 {
			q.Set("limit", strconv.Itoa(limit))
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		return q
	}
	return []Tool{
		// Memory stores.
		NewTool("list_memory_stores", "List a project's memory stores",
			"A project's key-value memory stores with their key counts, bytes and limits (store ids are needed by the other memory tools).",
			Hints{ReadOnly: true, Idempotent: true},
			func(in projectIn) (Request, error) {
				p, err := projectPath(in.ProjectID, "/memory")
				return Request{Method: G, Path: p}, err
			}),
		NewTool("list_memory_keys", "List keys of a memory store",
			"Keys of a memory store in byte order, with each value's size, metadata and expiry (expired keys left out): prefix narrows them, limit 1-1000 (default 100); while listComplete is false, pass the answer's cursor for the next page.",
			Hints{ReadOnly: true, Idempotent: true},
			func(in listKeysIn) (Request, error) {
				p, err := storePath(in.StoreID, "/keys")
				q := url.Values{}
				if in.Prefix != "" {
					q.Set("prefix", in.Prefix)
				}
				return Request{Method: G, Path: p, Query: page(q, in.Limit, in.Cursor)}, err
			}, minimum("limit", 1)),
		NewTool("get_memory", "Read keys of a memory store",
			"Read up to 100 keys at once: each value (text, or standard base64 with base64 true when it is not UTF-8), its metadata and expiry, or null when the key is absent or expired.",
			Hints{ReadOnly: true, Idempotent: true},
			func(in memoryKeysIn) (Request, error) {
				p, err := storePath(in.StoreID, "/bulk/get")
				return Request{Method: P, Path: p, Body: map[string]any{"keys": in.Keys}}, err
			}),
		NewTool("put_memory", "Write a key of a memory store",
			"Write one key: the value as text (or standard base64 of its bytes with base64 true), at most 1 MiB; ttlSeconds expires it (else it stays); metadata is any JSON value of at most 1 KB. Counts against the plan's keys and bytes. Needs a developer or above with a full-access key.",
			Hints{Idempotent: true},
			func(in putMemoryIn) (Request, error) {
				p, err := storePath(in.StoreID, "/bulk")
				in.StoreID = ""
				return Request{Method: U, Path: p, Body: map[string]any{"entries": []putMemoryIn{in}}}, err
			}, minimum("ttlSeconds", 1), required("storeId")),
		NewTool("delete_memory", "Delete keys of a memory store",
			"Delete up to 100 keys at once; keys that were not there are reported as not deleted.",
			Hints{Destructive: true, Idempotent: true},
			func(in memoryKeysIn) (Request, error) {
				p, err := storePath(in.StoreID, "/bulk/delete")
				return Request{Method: P, Path: p, Body: map[string]any{"keys": in.Keys}}, err
			}),

		// Storage buckets.
		NewTool("list_buckets", "List a project's storage buckets",
			"A project's storage buckets by name: public or private, object count, bytes and the public URL of a public one (bucket ids are needed by the other bucket tools).",
			Hints{ReadOnly: true, Idempotent: true},
			func(in projectIn) (Request, error) {
				p, err := projectPath(in.ProjectID, "/buckets")
				return Request{Method: G, Path: p}, err
			}),
		NewTool("list_objects", "List objects of a bucket",
			"Objects of a bucket in key order with size, content type, ETag and metadata: prefix narrows them, delimiter (usually /) groups keys into prefixes like folders, limit 1-1000 (default 100), cursor from the previous page's nextCursor.",
			Hints{ReadOnly: true, Idempotent: true},
			func(in listObjectsIn) (Request, error) {
				p, err := bucketPath(in.BucketID, "/objects")
				q := url.Values{}
				if in.Prefix != "" {
					q.Set("prefix", in.Prefix)
				}
				if in.Delimiter != "" {
					q.Set("delimiter", in.Delimiter)
				}
				return Request{Method: G, Path: p, Query: page(q, in.Limit, in.Cursor)}, err
			}, minimum("limit", 1)),
		NewTool("get_object_url", "Get a signed URL for an object",
			"A URL that serves one object to anyone holding it until it expires (expiresIn 1 to 604800 seconds, default 3600): the way to read or hand out an object's bytes. The object must exist. Needs a developer or above with a full-access key.",
			Hints{ReadOnly: true},
			func(in signURLIn) (Request, error) {
				p, err := bucketPath(in.BucketID, "/signed-urls")
				in.BucketID = ""
				return Request{Method: P, Path: p, Body: in}, err
			}, minimum("expiresIn", 1), required("bucketId")),
		NewTool("put_object", "Put a small object in a bucket",
			"Store an object of at most 1 MiB under a key (replacing any there): content as text, or standard base64 of its bytes with base64 true; contentType defaults to application/octet-stream. Larger objects: the REST API, S3 or a multipart upload. Counts against the plan's storage. Needs a developer or above with a full-access key.",
			Hints{Idempotent: true},
			buildPutObject),

		// Sign-in pools.
		NewTool("list_auth_pools", "List a project's sign-in pools",
			"A project's sign-in pools (end-user sign-up and sign-in for its apps) with their settings and user counts (pool ids are needed by the other sign-in tools).",
			Hints{ReadOnly: true, Idempotent: true},
			func(in projectIn) (Request, error) {
				p, err := projectPath(in.ProjectID, "/auth-pools")
				return Request{Method: G, Path: p}, err
			}),
		NewTool("list_auth_users", "List a sign-in pool's users",
			"A sign-in pool's users, oldest first: e-mail, verified, disabled, locked out, last sign-in (never a password). email narrows them to addresses containing it; limit (1-200) and cursor page through. Needs a developer or above with a full-access key (addresses are personal data).",
			Hints{ReadOnly: true, Idempotent: true},
			func(in listUsersIn) (Request, error) {
				p, err := poolPath(in.PoolID, "/users")
				q := url.Values{}
				if in.Email != "" {
					q.Set("email", in.Email)
				}
				return Request{Method: G, Path: p, Query: page(q, in.Limit, in.Cursor)}, err
			}, minimum("limit", 1)),
		NewTool("set_auth_user_disabled", "Disable or enable an app user",
			"Disable a user of a sign-in pool (their sessions end at once and sign-ins are refused) or, with disabled false, let them sign in again. Needs a developer or above with a full-access key.",
			Hints{Destructive: true, Idempotent: true},
			func(in disableUserIn) (Request, error) {
				p, err := poolPath(in.PoolID, "")
				if err != nil {
					return Request{}, err
				}
				uid, err := pathID("userId", in.UserID)
				return Request{Method: A, Path: p + "/users/" + uid, Body: map[string]bool{"disabled": in.Disabled}}, err
			}),

		// E-mail.
		NewTool("send_email", "Send an e-mail as the project",
			"Send an e-mail from the project's sender (its verified sending domain, else the platform's address with the project's reply-to): to (1-50 addresses), subject, text or html (or both). Counts against the plan's daily sending limit and as e-mails in usage; answers the queued message. Needs a developer or above with a full-access key.",
			Hints{},
			func(in sendEmailIn) (Request, error) {
				p, err := projectPath(in.ProjectID, "/emails")
				in.ProjectID = ""
				return Request{Method: P, Path: p, Body: in}, err
			}, required("projectId")),
		NewTool("list_emails", "List a project's e-mails",
			"A project's messages, newest first, each with its state (queued, sent or failed), attempts and why it failed: state narrows them, limit and cursor page through.",
			Hints{ReadOnly: true, Idempotent: true},
			func(in listEmailsIn) (Request, error) {
				p, err := projectPath(in.ProjectID, "/emails")
				q := url.Values{}
				if in.State != "" {
					q.Set("state", in.State)
				}
				return Request{Method: G, Path: p, Query: page(q, in.Limit, in.Cursor)}, err
			}, minimum("limit", 1), stateEnum),
	}
}

// buildPutObject checks put_object's size before anything is sent.
func buildPutObject(in putObjectIn) (Request, error) {
	b := []byte(in.Content)
	if in.Base64 {
		var err error
		if b, err = base64.StdEncoding.DecodeString(in.Content); err != nil {
			return Request{}, refuse(400, "invalid_request", "content is not standard base64: %v", err)
		}
	}
	if len(b) > MaxObjectPutBytes {
		r := refuse(413, "object_too_large", "put_object sends at most %d bytes, got %d: use the REST API, S3 or a multipart upload", MaxObjectPutBytes, len(b))
		r.Fields = map[string]any{"limit": MaxObjectPutBytes}
		return Request{}, r
	}
	id, err := pathID("bucketId", in.BucketID)
	if err != nil {
		return Request{}, err
	}
	if in.Key == "" {
		return Request{}, refuse(400, "invalid_key", "key is required")
	}
	ct := strings.TrimSpace(in.ContentType)
	if ct == "" {
		ct = "application/octet-stream"
	}
	if b == nil {
		b = []byte{}
	}
	return Request{Method: http.MethodPut, Path: "/api/buckets/" + id + "/objects/" + url.PathEscape(in.Key), Raw: b, ContentType: ct}, nil
}

// stateEnum limits list_emails' state to the message states.
func stateEnum(s *jsonschema.Schema) {
	s.Properties["state"].Enum = []any{"queued", "sent", "failed"}
}

type projectIn struct {
	ProjectID string `json:"projectId" jsonschema:"the project (prj_...)"`
}

type listKeysIn struct {
	StoreID string `json:"storeId" jsonschema:"the memory store's id (mem_...), from list_memory_stores"`
	Prefix  string `json:"prefix,omitempty" jsonschema:"only keys starting with this"`
	Limit   int    `json:"limit,omitempty" jsonschema:"keys per page, 1 to 1000 (default 100)"`
	Cursor  string `json:"cursor,omitempty" jsonschema:"the previous page's cursor"`
}

type memoryKeysIn struct {
	StoreID string   `json:"storeId" jsonschema:"the memory store's id (mem_...)"`
	Keys    []string `json:"keys" jsonschema:"1 to 100 keys"`
}

type putMemoryIn struct {
	StoreID    string `json:"storeId,omitempty" jsonschema:"the memory store's id (mem_...)"`
	Key        string `json:"key" jsonschema:"the key, 1 to 512 bytes of UTF-8"`
	Value      string `json:"value" jsonschema:"the value as text, or standard base64 of its bytes with base64 true (at most 1 MiB)"`
	Base64     bool   `json:"base64,omitempty" jsonschema:"value is standard base64 of the bytes to store"`
	TTLSeconds int64  `json:"ttlSeconds,omitempty" jsonschema:"expire the key this many seconds from now; omit to keep it"`
	Metadata   any    `json:"metadata,omitempty" jsonschema:"any JSON value kept with the key (at most 1 KB)"`
}

type listObjectsIn struct {
	BucketID  string `json:"bucketId" jsonschema:"the bucket's id (bkt_...), from list_buckets"`
	Prefix    string `json:"prefix,omitempty" jsonschema:"only keys starting with this"`
	Delimiter string `json:"delimiter,omitempty" jsonschema:"group keys by this (usually /) into prefixes"`
	Limit     int    `json:"limit,omitempty" jsonschema:"objects per page, 1 to 1000 (default 100)"`
	Cursor    string `json:"cursor,omitempty" jsonschema:"the previous page's nextCursor"`
}

type signURLIn struct {
	BucketID  string `json:"bucketId,omitempty" jsonschema:"the bucket's id (bkt_...)"`
	Key       string `json:"key" jsonschema:"the object's key"`
	ExpiresIn int    `json:"expiresIn,omitempty" jsonschema:"seconds the URL works, 1 to 604800 (default 3600)"`
}

type putObjectIn struct {
	BucketID    string `json:"bucketId" jsonschema:"the bucket's id (bkt_...)"`
	Key         string `json:"key" jsonschema:"the object's key, 1 to 1024 bytes of UTF-8 (slashes make folders in listings)"`
	Content     string `json:"content" jsonschema:"the object as text, or standard base64 of its bytes with base64 true (at most 1 MiB)"`
	Base64      bool   `json:"base64,omitempty" jsonschema:"content is standard base64 of the bytes to store"`
	ContentType string `json:"contentType,omitempty" jsonschema:"the object's media type, e.g. text/plain; default application/octet-stream"`
}

type listUsersIn struct {
	PoolID string `json:"poolId" jsonschema:"the sign-in pool's id (sip_...), from list_auth_pools"`
	Email  string `json:"email,omitempty" jsonschema:"only users whose address contains this"`
	Limit  int    `json:"limit,omitempty" jsonschema:"users per page"`
	Cursor string `json:"cursor,omitempty" jsonschema:"the previous page's nextCursor"`
}

type disableUserIn struct {
	PoolID   string `json:"poolId" jsonschema:"the sign-in pool's id (sip_...)"`
	UserID   string `json:"userId" jsonschema:"the user's id (usr_...), from list_auth_users"`
	Disabled bool   `json:"disabled" jsonschema:"true disables the user, false lets them sign in again"`
}

type sendEmailIn struct {
	ProjectID string   `json:"projectId,omitempty" jsonschema:"the project the message is sent as (prj_...)"`
	To        []string `json:"to" jsonschema:"1 to 50 recipient addresses"`
	Subject   string   `json:"subject" jsonschema:"one line, at most 900 bytes"`
	Text      string   `json:"text,omitempty" jsonschema:"the plain-text body"`
	HTML      string   `json:"html,omitempty" jsonschema:"the HTML body (sent with text as alternatives)"`
	ReplyTo   string   `json:"replyTo,omitempty" jsonschema:"where replies go instead of the project's reply-to address"`
}

type listEmailsIn struct {
	ProjectID string `json:"projectId" jsonschema:"the project (prj_...)"`
	State     string `json:"state,omitempty" jsonschema:"only messages in this state: queued, sent or failed"`
	Limit     int    `json:"limit,omitempty" jsonschema:"messages per page"`
	Cursor    string `json:"cursor,omitempty" jsonschema:"the previous page's nextCursor"`
}
