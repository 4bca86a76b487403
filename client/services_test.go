package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/client"
	"github.com/svcplatform/platform/controlplane/buckets"
	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/mail"
	"github.com/svcplatform/platform/controlplane/memory"
	"github.com/svcplatform/platform/controlplane/signin"
)

// TestServiceTypesMatchServer holds the app services' client types to the
// server's (same JSON names, same kinds of value), as TestTypesMatchServer
// does the others.
func TestServiceTypesMatchServer(t *testing.T) {
	pairs := []struct{ client, server any }{
		{client.MemoryStore{}, memory.Store{}},
		{client.MemoryKeyPage{}, memory.KeyPage{}},
		{client.Bucket{}, buckets.Bucket{}},
		{client.ObjectPage{}, buckets.ObjectPage{}},
		{client.SignedURL{}, buckets.SignedURL{}},
		{client.AuthPool{}, signin.Pool{}},
		{client.AuthUserPage{}, signin.UserPage{}},
		{client.Email{}, mail.Email{}},
		{client.EmailPage{}, mail.EmailPage{}},
		{client.EmailRequest{}, mail.SendRequest{}},
	}
	for _, p := range pairs {
		ct, st := reflect.TypeOf(p.client), reflect.TypeOf(p.server)
		t.Run(ct.Name(), func(t *testing.T) { matchType(t, ct.Name(), ct, st) })
	}
}

// servicesEnv is a control plane and an owner's client of it, with one
// project.
func servicesEnv(t *testing.T) (*cptest.Env, *client.Client, string) {
	t.Helper()
	env := cptest.New(t)
	c, err := client.New(env.Server.URL, cptest.OwnerKey)
	if err != nil {
		t.Fatal(err)
	}
	return env, c, env.CreateProject("Apps")
}

// apiError fails unless err is an *Error of status and code.
func apiError(t *testing.T, err error, status int, code string) {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) || e.Status != status || (code != "" && e.Code != code) {
		t.Fatalf("error %v, want %d %s", err, status, code)
	}
}

func TestMemoryCalls(t *testing.T) {
	_, c, prj := servicesEnv(t)
	ctx := context.Background()
	st, err := c.CreateMemoryStore(ctx, prj, "cache")
	if err != nil || st.ID == "" || st.Limits.ValueBytes == 0 {
		t.Fatalf("create %+v %v", st, err)
	}
	// Keys with slashes, dots and spaces round-trip as they are.
	keys := []string{"user/ada", "a/../b", "with space", "x"}
	for i, k := range keys {
		o := client.MemoryPutOptions{}
		if i == 0 {
			o = client.MemoryPutOptions{TTL: time.Hour, Metadata: map[string]string{"lang": "en"}}
		}
		exp, err := c.MemoryPut(ctx, st.ID, k, []byte("value of "+k), o)
		if err != nil || (i == 0) != (exp != nil) {
			t.Fatalf("put %q: %v %v", k, exp, err)
		}
	}
	for i, k := range keys {
		t.Run(k, func(t *testing.T) {
			v, err := c.MemoryGet(ctx, st.ID, k)
			if err != nil || string(v.Value) != "value of "+k {
				t.Fatalf("get: %q %v", v.Value, err)
			}
			if i == 0 && (v.ExpiresAt == nil || string(v.Metadata) != `{"lang":"en"}`) {
				t.Errorf("metadata %s expiry %v", v.Metadata, v.ExpiresAt)
			}
		})
	}
	page, err := c.MemoryKeys(ctx, st.ID, client.MemoryListOptions{Prefix: "user/", Limit: 10})
	if err != nil || len(page.Keys) != 1 || page.Keys[0].Key != "user/ada" || !page.ListComplete {
		t.Fatalf("keys %+v %v", page, err)
	}
	page, err = c.MemoryKeys(ctx, st.ID, client.MemoryListOptions{Limit: 2})
	if err != nil || len(page.Keys) != 2 || page.ListComplete || page.Cursor == "" {
		t.Fatalf("first page %+v %v", page, err)
	}
	next, err := c.MemoryKeys(ctx, st.ID, client.MemoryListOptions{Limit: 2, Cursor: page.Cursor})
	if err != nil || len(next.Keys) != 2 || next.Keys[0].Key <= page.Keys[1].Key {
		t.Fatalf("second page %+v %v", next, err)
	}
	if del, err := c.MemoryDelete(ctx, st.ID, "x"); err != nil || !del {
		t.Fatalf("delete %v %v", del, err)
	}
	if del, err := c.MemoryDelete(ctx, st.ID, "x"); err != nil || del {
		t.Fatalf("delete again %v %v", del, err)
	}
	_, err = c.MemoryGet(ctx, st.ID, "x")
	apiError(t, err, 404, "key_not_found")
	stores, err := c.MemoryStores(ctx, prj)
	if err != nil || len(stores) != 1 || stores[0].Keys != 3 {
		t.Fatalf("stores %+v %v", stores, err)
	}
	if err := c.DeleteMemoryStore(ctx, st.ID); err != nil {
		t.Fatal(err)
	}
	_, err = c.MemoryGet(ctx, st.ID, "user/ada")
	apiError(t, err, 404, "")
}

func TestBucketCalls(t *testing.T) {
	_, c, prj := servicesEnv(t)
	ctx := context.Background()
	b, err := c.CreateBucket(ctx, prj, "files", false)
	if err != nil || b.Public || b.PublicURL != nil {
		t.Fatalf("create %+v %v", b, err)
	}
	_, err = c.CreateBucket(ctx, prj, "files", false)
	apiError(t, err, 409, "bucket_exists")
	body := []byte("<h1>hello</h1>")
	o, err := c.PutObject(ctx, b.ID, "site/index.html", bytes.NewReader(body), int64(len(body)),
		client.PutObjectOptions{ContentType: "text/html", CacheControl: "max-age=5", Metadata: map[string]string{"owner": "ada"}})
	if err != nil || o.Size != int64(len(body)) || o.ContentType != "text/html" || o.Metadata["owner"] != "ada" {
		t.Fatalf("put %+v %v", o, err)
	}
	if _, err := c.PutObject(ctx, b.ID, "empty", nil, 0, client.PutObjectOptions{}); err != nil {
		t.Fatalf("put empty: %v", err)
	}
	r, err := c.GetObject(ctx, b.ID, "site/index.html")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(r)
	r.Close()
	if !bytes.Equal(got, body) || r.ETag != o.ETag || r.Metadata["owner"] != "ada" || !strings.HasPrefix(r.ContentType, "text/html") {
		t.Fatalf("get %q %+v", got, r)
	}
	page, err := c.Objects(ctx, b.ID, client.ObjectListOptions{Delimiter: "/"})
	if err != nil || len(page.Objects) != 1 || page.Objects[0].Key != "empty" || len(page.Prefixes) != 1 || page.Prefixes[0] != "site/" || page.NextCursor != nil {
		t.Fatalf("list %+v %v", page, err)
	}
	u, err := c.SignObjectURL(ctx, b.ID, "site/index.html", time.Minute)
	if err != nil || u.ExpiresAt.IsZero() || !strings.Contains(u.URL, "signature=") {
		t.Fatalf("sign %+v %v", u, err)
	}
	res, err := http.Get(u.URL)
	if err != nil {
		t.Fatal(err)
	}
	signed, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !bytes.Equal(signed, body) {
		t.Fatalf("signed URL: %d %q", res.StatusCode, signed)
	}
	_, err = c.SignObjectURL(ctx, b.ID, "missing", 0)
	apiError(t, err, 404, "")
	b, err = c.SetBucketPublic(ctx, b.ID, true)
	if err != nil || !b.Public || b.PublicURL == nil {
		t.Fatalf("public %+v %v", b, err)
	}
	if err := c.DeleteObject(ctx, b.ID, "empty"); err != nil {
		t.Fatal(err)
	}
	apiError(t, c.DeleteObject(ctx, b.ID, "empty"), 404, "")
	_, err = c.GetObject(ctx, b.ID, "empty")
	apiError(t, err, 404, "")
	apiError(t, c.DeleteBucket(ctx, b.ID, false), 409, "bucket_not_empty")
	if err := c.DeleteBucket(ctx, b.ID, true); err != nil {
		t.Fatal(err)
	}
	if bs, err := c.Buckets(ctx, prj); err != nil || len(bs) != 0 {
		t.Fatalf("buckets %+v %v", bs, err)
	}
}

func TestSigninCalls(t *testing.T) {
	env, c, prj := servicesEnv(t)
	ctx := context.Background()
	p, err := c.CreateAuthPool(ctx, prj, "users")
	if err != nil || p.ID == "" || p.Endpoints.JWKS == "" || len(p.Settings) == 0 {
		t.Fatalf("create %+v %v", p, err)
	}
	for _, email := range []string{"ada@example.com", "bob@example.com"} {
		env.Client("").Must(201, "POST", "/api/auth/"+p.ID+"/signup", map[string]any{"email": email, "password": "a long enough password 1"})
	}
	page, err := c.AuthUsers(ctx, p.ID, client.AuthUserListOptions{Limit: 1})
	if err != nil || len(page.Users) != 1 || page.NextCursor == "" {
		t.Fatalf("first page %+v %v", page, err)
	}
	page, err = c.AuthUsers(ctx, p.ID, client.AuthUserListOptions{Email: "bob"})
	if err != nil || len(page.Users) != 1 || page.Users[0].Email != "bob@example.com" {
		t.Fatalf("by email %+v %v", page, err)
	}
	bob := page.Users[0]
	u, err := c.SetAuthUserDisabled(ctx, p.ID, bob.ID, true)
	if err != nil || !u.Disabled {
		t.Fatalf("disable %+v %v", u, err)
	}
	env.Client("").Must(403, "POST", "/api/auth/"+p.ID+"/signin", map[string]any{"email": "bob@example.com", "password": "a long enough password 1"})
	if err := c.DeleteAuthUser(ctx, p.ID, bob.ID); err != nil {
		t.Fatal(err)
	}
	pools, err := c.AuthPools(ctx, prj)
	if err != nil || len(pools) != 1 || pools[0].UserCount != 1 {
		t.Fatalf("pools %+v %v", pools, err)
	}
	// A read-only key cannot read app users' addresses.
	var key struct {
		Secret string `json:"secret"`
	}
	env.Owner.Must(201, "POST", "/api/keys", map[string]any{"name": "ro", "access": "read_only"}).JSON(t, &key)
	ro, _ := client.New(env.Server.URL, key.Secret)
	_, err = ro.AuthUsers(ctx, p.ID, client.AuthUserListOptions{})
	apiError(t, err, 403, "full_access_required")
	if err := c.DeleteAuthPool(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
}

func TestMailCalls(t *testing.T) {
	_, c, prj := servicesEnv(t)
	ctx := context.Background()
	m, err := c.SendEmail(ctx, prj, client.EmailRequest{To: []string{"ada@example.com"}, Subject: "Hello", Text: "Hi."}, "order-1")
	if err != nil || m.ID == "" || m.Subject != "Hello" || len(m.To) != 1 {
		t.Fatalf("send %+v %v", m, err)
	}
	again, err := c.SendEmail(ctx, prj, client.EmailRequest{To: []string{"ada@example.com"}, Subject: "Hello", Text: "Hi."}, "order-1")
	if err != nil || again.ID != m.ID {
		t.Fatalf("idempotent send %+v %v", again, err)
	}
	_, err = c.SendEmail(ctx, prj, client.EmailRequest{To: []string{"ada@example.com"}, Subject: "No body"}, "")
	apiError(t, err, 400, "")
	page, err := c.Emails(ctx, prj, client.EmailListOptions{Limit: 10})
	if err != nil || len(page.Emails) != 1 || page.Emails[0].ID != m.ID {
		t.Fatalf("list %+v %v", page, err)
	}
	got, err := c.Email(ctx, prj, m.ID)
	if err != nil || got.ID != m.ID {
		b, _ := json.Marshal(got)
		t.Fatalf("get %s %v", b, err)
	}
}
