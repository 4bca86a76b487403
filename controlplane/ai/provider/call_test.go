package provider

import (
	"bytes"
	"context"
	"io"
	"net/http"
)

// fakeCall is a finished call whose body is in.
func fakeCall(in []byte) *call {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &call{ctx: ctx, cancel: cancel, resp: &http.Response{Body: io.NopCloser(bytes.NewReader(in))}}
}
