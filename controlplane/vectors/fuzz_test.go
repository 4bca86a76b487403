package vectors

import (
	"errors"
	"testing"

	"github.com/svcplatform/platform/controlplane/api"
)

// FuzzDecodeUpsert: any body either decodes into vectors that meet every
// rule or is refused with a client error, never a panic.
func FuzzDecodeUpsert(f *testing.F) {
	for _, s := range []string{
		`{"vectors":[{"id":"a","values":[1,2,3,4]}]}`,
		`{"vectors":[{"id":"a","text":"hi","metadata":{"k":"v"},"namespace":"n"}]}`,
		`{"vectors":[{"id":"a","values":[1e39,2,3,4]}]}`,
		`{"vectors":[{"id":"a","values":[1,2,3]},{"id":"a","values":[1,2,3,4]}]}`,
		`{"vectors":[]}`, `{"vectors":[{"id":"a","values":[1,2,3,4],"metadata":[1]}]}`, `[`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		vs, err := decodeUpsert(body, 4)
		if err != nil {
			var ae *api.Error
			if !errors.As(err, &ae) || ae.Kind.Status() >= 500 {
				t.Fatalf("not a client error: %v", err)
			}
			return
		}
		if len(vs) == 0 || len(vs) > MaxUpsert {
			t.Fatalf("%d vectors accepted", len(vs))
		}
		seen := map[string]bool{}
		for _, v := range vs {
			if v.ID == "" || len(v.ID) > MaxIDLen || seen[v.ID] || len(v.Metadata) > MaxMetadataBytes || len(v.Namespace) > MaxNamespaceLen {
				t.Fatalf("accepted a bad vector %+v", v.row)
			}
			seen[v.ID] = true
			if (v.text == nil) == (v.Values == nil) || v.Values != nil && len(v.Values) != 4 {
				t.Fatalf("accepted values %v text %v", v.Values, v.text)
			}
		}
	})
}
