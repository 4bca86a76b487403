package mcp_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/mcp"
)

// dataEnv is a project with a memory store, a bucket and a sign-in pool
// with one user, made over REST by the owner.
type dataEnv struct {
	*env
	prj, store, bucket, pool, user string
}

func newDataEnv(t *testing.T) dataEnv {
	t.Helper()
	e := newEnv(t)
	d := dataEnv{env: e, prj: e.CreateProject("Data")}
	id := func(r *cptest.Response, obj string) string {
		m := restJSON(t, r)
		return m[obj].(map[string]any)["id"].(string)
	}
	d.store = id(e.Owner.Must(201, "POST", "/api/projects/"+d.prj+"/memory", map[string]any{"name": "cache"}), "store")
	d.bucket = id(e.Owner.Must(201, "POST", "/api/projects/"+d.prj+"/buckets", map[string]any{"name": "files"}), "bucket")
	d.pool = id(e.Owner.Must(201, "POST", "/api/projects/"+d.prj+"/auth-pools", map[string]any{"name": "users"}), "pool")
	e.Client("").Must(201, "POST", "/api/auth/"+d.pool+"/signup", map[string]any{"email": "ada@example.com", "password": "a long enough password 1"})
	users := restJSON(t, e.Owner.Must(200, "GET", "/api/auth-pools/"+d.pool+"/users", nil))["users"].([]any)
	d.user = users[0].(map[string]any)["id"].(string)
	return d
}

// TestDataToolsMatchREST: the memory, bucket, sign-in and e-mail tools
// answer what the REST routes they name answer, and their writes are read
// back over REST.
func TestDataToolsMatchREST(t *testing.T) {
	d := newDataEnv(t)
	owner := d.Owner
	cs := d.connect(t, cptest.OwnerKey)

	// Writes, read back over REST.
	mustOK(t, cs, "put_memory", map[string]any{"storeId": d.store, "key": "greeting", "value": "hello", "ttlSeconds": 3600, "metadata": map[string]any{"lang": "en"}})
	mustOK(t, cs, "put_memory", map[string]any{"storeId": d.store, "key": "bin", "value": base64.StdEncoding.EncodeToString([]byte{0xff, 0, 1}), "base64": true})
	got := restJSON(t, owner.Must(200, "POST", "/api/memory/"+d.store+"/bulk/get", map[string]any{"keys": []string{"greeting"}}))
	if s := got["values"]; s == nil || !strings.Contains(asJSON(t, s), `"hello"`) {
		t.Errorf("put_memory not read back: %v", got)
	}
	mustOK(t, cs, "put_object", map[string]any{"bucketId": d.bucket, "key": "docs/a b.txt", "content": "hi there", "contentType": "text/plain"})
	r := owner.Must(200, "GET", "/api/buckets/"+d.bucket+"/objects/docs%2Fa%20b.txt", nil)
	if body := r.Body; string(body) != "hi there" || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
		t.Errorf("put_object read back %q (%s)", body, r.Header.Get("Content-Type"))
	}
	mustOK(t, cs, "put_object", map[string]any{"bucketId": d.bucket, "key": "b.bin", "content": base64.StdEncoding.EncodeToString([]byte{1, 2, 3}), "base64": true})

	signed := mustOK(t, cs, "get_object_url", map[string]any{"bucketId": d.bucket, "key": "docs/a b.txt", "expiresIn": 60})
	res, err := http.Get(signed["url"].(string))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || string(body) != "hi there" {
		t.Errorf("signed URL %v answered %d %q", signed["url"], res.StatusCode, body)
	}

	disabled := mustOK(t, cs, "set_auth_user_disabled", map[string]any{"poolId": d.pool, "userId": d.user, "disabled": true})
	if u := disabled["user"].(map[string]any); u["disabled"] != true {
		t.Errorf("set_auth_user_disabled: %v", u)
	}
	d.Client("").Must(403, "POST", "/api/auth/"+d.pool+"/signin", map[string]any{"email": "ada@example.com", "password": "a long enough password 1"})
	mustOK(t, cs, "set_auth_user_disabled", map[string]any{"poolId": d.pool, "userId": d.user, "disabled": false})
	d.Client("").Must(200, "POST", "/api/auth/"+d.pool+"/signin", map[string]any{"email": "ada@example.com", "password": "a long enough password 1"})

	sent := mustOK(t, cs, "send_email", map[string]any{"projectId": d.prj, "to": []any{"buyer@example.com"}, "subject": "Hello", "text": "Hi."})
	emailID := sent["email"].(map[string]any)["id"].(string)
	if e := restJSON(t, owner.Must(200, "GET", "/api/projects/"+d.prj+"/emails/"+emailID, nil))["email"].(map[string]any); e["subject"] != "Hello" {
		t.Errorf("send_email read back %v", e)
	}

	// Reads: the same request over REST answers exactly the same.
	reads := []struct {
		tool string
		args map[string]any
		rest func() *cptest.Response
	}{
		{"list_memory_stores", map[string]any{"projectId": d.prj}, func() *cptest.Response { return owner.Must(200, "GET", "/api/projects/"+d.prj+"/memory", nil) }},
		{"list_memory_keys", map[string]any{"storeId": d.store, "prefix": "gr", "limit": 5}, func() *cptest.Response {
			return owner.Must(200, "GET", "/api/memory/"+d.store+"/keys?limit=5&prefix=gr", nil)
		}},
		{"get_memory", map[string]any{"storeId": d.store, "keys": []any{"greeting", "bin", "absent"}}, func() *cptest.Response {
			return owner.Must(200, "POST", "/api/memory/"+d.store+"/bulk/get", map[string]any{"keys": []string{"greeting", "bin", "absent"}})
		}},
		{"list_buckets", map[string]any{"projectId": d.prj}, func() *cptest.Response { return owner.Must(200, "GET", "/api/projects/"+d.prj+"/buckets", nil) }},
		{"list_objects", map[string]any{"bucketId": d.bucket, "delimiter": "/"}, func() *cptest.Response {
			return owner.Must(200, "GET", "/api/buckets/"+d.bucket+"/objects?delimiter=%2F", nil)
		}},
		{"list_auth_pools", map[string]any{"projectId": d.prj}, func() *cptest.Response { return owner.Must(200, "GET", "/api/projects/"+d.prj+"/auth-pools", nil) }},
		{"list_auth_users", map[string]any{"poolId": d.pool, "email": "ada"}, func() *cptest.Response {
			return owner.Must(200, "GET", "/api/auth-pools/"+d.pool+"/users?email=ada", nil)
		}},
		{"list_emails", map[string]any{"projectId": d.prj, "limit": 10}, func() *cptest.Response {
			return owner.Must(200, "GET", "/api/projects/"+d.prj+"/emails?limit=10", nil)
		}},
	}
	for _, rd := range reads {
		t.Run(rd.tool, func(t *testing.T) {
			got := mustOK(t, cs, rd.tool, rd.args)
			want := restJSON(t, rd.rest())
			if !reflect.DeepEqual(got, want) {
				t.Errorf("tool answered\n%v\nREST answered\n%v", got, want)
			}
		})
	}

	deleted := mustOK(t, cs, "delete_memory", map[string]any{"storeId": d.store, "keys": []any{"greeting"}})
	if deleted["deleted"] != float64(1) {
		t.Errorf("delete_memory answered %v", deleted)
	}
	left := restJSON(t, owner.Must(200, "GET", "/api/memory/"+d.store+"/keys", nil))
	if strings.Contains(asJSON(t, left), "greeting") {
		t.Errorf("greeting still listed after delete_memory: %v", left)
	}
}

// TestDataToolRefusals: each data tool is refused exactly when its REST
// route's row of the permission table refuses the caller, with the REST
// code and status; nothing refused is stored.
func TestDataToolRefusals(t *testing.T) {
	d := newDataEnv(t)
	other := d.CreateProject("Other")
	readOnly := d.NewKey("read_only", "")
	otherKey := d.NewKey("full", other)
	viewer := d.Member("viewer@example.com", "viewer")

	put := map[string]any{"storeId": d.store, "key": "k", "value": "v"}
	obj := map[string]any{"bucketId": d.bucket, "key": "x.txt", "content": "x"}
	disable := map[string]any{"poolId": d.pool, "userId": d.user, "disabled": true}
	send := map[string]any{"projectId": d.prj, "to": []any{"a@example.com"}, "subject": "s", "text": "t"}
	cases := []struct {
		name   string
		key    string
		tool   string
		args   map[string]any
		code   string
		status float64
	}{
		{"read-only key cannot put a key", readOnly.Key, "put_memory", put, "read_only_key", 403},
		{"viewer cannot put a key", viewer.Key, "put_memory", put, "insufficient_role", 403},
		{"viewer cannot delete keys", viewer.Key, "delete_memory", map[string]any{"storeId": d.store, "keys": []any{"k"}}, "insufficient_role", 403},
		{"another project's key cannot read the store", otherKey.Key, "get_memory", map[string]any{"storeId": d.store, "keys": []any{"k"}}, "", 403},
		{"another project's key cannot list its stores", otherKey.Key, "list_memory_stores", map[string]any{"projectId": d.prj}, "", 403},
		{"read-only key cannot put an object", readOnly.Key, "put_object", obj, "read_only_key", 403},
		{"viewer cannot put an object", viewer.Key, "put_object", obj, "insufficient_role", 403},
		{"read-only key cannot sign a URL", readOnly.Key, "get_object_url", map[string]any{"bucketId": d.bucket, "key": "x.txt"}, "full_access_required", 403},
		{"viewer cannot sign a URL", viewer.Key, "get_object_url", map[string]any{"bucketId": d.bucket, "key": "x.txt"}, "insufficient_role", 403},
		{"another project's key cannot list objects", otherKey.Key, "list_objects", map[string]any{"bucketId": d.bucket}, "", 403},
		{"a signed URL needs the object", cptest.OwnerKey, "get_object_url", map[string]any{"bucketId": d.bucket, "key": "missing.txt"}, "not_found", 404},
		{"an object over the connector's limit", cptest.OwnerKey, "put_object", map[string]any{"bucketId": d.bucket, "key": "big",
			"content": strings.Repeat("a", mcp.MaxObjectPutBytes+1)}, "object_too_large", 413},
		{"bad base64", cptest.OwnerKey, "put_object", map[string]any{"bucketId": d.bucket, "key": "b", "content": "!!", "base64": true}, "invalid_request", 400},
		{"viewer cannot list app users", viewer.Key, "list_auth_users", map[string]any{"poolId": d.pool}, "insufficient_role", 403},
		{"read-only key cannot list app users", readOnly.Key, "list_auth_users", map[string]any{"poolId": d.pool}, "full_access_required", 403},
		{"read-only key cannot disable a user", readOnly.Key, "set_auth_user_disabled", disable, "read_only_key", 403},
		{"viewer cannot disable a user", viewer.Key, "set_auth_user_disabled", disable, "insufficient_role", 403},
		{"read-only key cannot send mail", readOnly.Key, "send_email", send, "read_only_key", 403},
		{"viewer cannot send mail", viewer.Key, "send_email", send, "insufficient_role", 403},
		{"another project's key cannot send as the project", otherKey.Key, "send_email", send, "", 403},
		{"another project's key cannot list its mail", otherKey.Key, "list_emails", map[string]any{"projectId": d.prj}, "", 403},
		{"mail refusals are the API's", cptest.OwnerKey, "send_email", map[string]any{"projectId": d.prj, "to": []any{"not an address"}, "subject": "s", "text": "t"}, "", 400},
		{"an unknown state", cptest.OwnerKey, "list_emails", map[string]any{"projectId": d.prj, "state": "lost"}, "", 0},
	}
	cs := d.connect(t, cptest.OwnerKey)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := cs
			if c.key != cptest.OwnerKey {
				s = d.connect(t, c.key)
			}
			res := call(t, s, c.tool, c.args)
			if !res.IsError {
				t.Fatalf("want a refusal, got %s", text(res))
			}
			if c.status == 0 {
				return // refused by the input schema
			}
			code, status := errorCode(t, res)
			if status != c.status || (c.code != "" && code != c.code) {
				t.Errorf("got %s %v (%s), want %s %v", code, status, text(res), c.code, c.status)
			}
		})
	}
	// Nothing refused was stored.
	if keys := restJSON(t, d.Owner.Must(200, "GET", "/api/memory/"+d.store+"/keys", nil)); strings.Contains(asJSON(t, keys), `"k"`) {
		t.Errorf("a refused put was stored: %v", keys)
	}
	if objs := restJSON(t, d.Owner.Must(200, "GET", "/api/buckets/"+d.bucket+"/objects", nil)); len(objs["objects"].([]any)) != 0 {
		t.Errorf("a refused put_object was stored: %v", objs)
	}
	if mails := restJSON(t, d.Owner.Must(200, "GET", "/api/projects/"+d.prj+"/emails", nil)); len(mails["emails"].([]any)) != 0 {
		t.Errorf("a refused send was queued: %v", mails)
	}
	if u := restJSON(t, d.Owner.Must(200, "GET", "/api/auth-pools/"+d.pool+"/users/"+d.user, nil))["user"].(map[string]any); u["disabled"] == true {
		t.Errorf("a refused disable was stored: %v", u)
	}
}

// asJSON is v as JSON text.
func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
