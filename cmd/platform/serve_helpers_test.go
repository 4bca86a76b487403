package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// serving is a `platform serve` a test started with startServe.
type serving struct {
	o    options
	out  *syncBuffer
	stop func()
}

// startServe runs serve with o until the test ends (or stop), and returns
// once its start is printed (the admin listener serves by then).
func startServe(t *testing.T, o options) *serving {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	s := &serving{o: o, out: &syncBuffer{}}
	go func() { done <- runTest(t, ctx, "serve", o, quiet, s.out) }()
	stopped := false
	s.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}
	t.Cleanup(s.stop)
	waitReady(t, o.adminAddr)
	return s
}

// api calls the served API with the bootstrap key: it decodes a JSON
// answer into v (when not nil) and returns the status.
func (s *serving) api(t *testing.T, method, path string, body, v any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+s.o.apiAddr+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.o.bootstrapKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if v != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s %s: %v: %.300s", method, path, err, b)
		}
	}
	if resp.StatusCode >= 300 {
		t.Logf("%s %s: %d %.300s", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode
}
