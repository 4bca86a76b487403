package wasm

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSlots: calls are admitted fairly across projects (slots.go).
func TestSlots(t *testing.T) {
	type step struct {
		// do is run (a slot at once), refuse (none, without waiting; want
		// is the error), queue (waits), release (frees one slot of the
		// project), granted (the project's oldest waiter got its slot),
		// waiting (the project has n waiters).
		do      string
		project string
		want    error
		n       int
	}
	tests := []struct {
		name     string
		max, per int
		steps    []step
	}{
		{"one project fills its share, another project runs at once", 4, 2, []step{
			{do: "run", project: "a"}, {do: "run", project: "a"}, {do: "refuse", project: "a", want: ErrProjectBusy},
			{do: "run", project: "b"}, {do: "run", project: "b"}, {do: "refuse", project: "b", want: ErrProjectBusy},
		}},
		{"every slot in use: a project below its share is told the host is busy", 2, 2, []step{
			{do: "run", project: "a"}, {do: "run", project: "a"}, {do: "refuse", project: "b", want: ErrBusy},
		}},
		{"a project alone may use its bound, and a freed slot goes to the project that arrived", 4, 4, []step{
			{do: "run", project: "a"}, {do: "run", project: "a"}, {do: "run", project: "a"}, {do: "run", project: "a"},
			{do: "queue", project: "b"}, {do: "queue", project: "a"},
			{do: "release", project: "a"}, {do: "granted", project: "b"}, {do: "waiting", project: "a", n: 1},
			{do: "refuse", project: "a", want: ErrProjectBusy},
		}},
		{"waiters are served in arrival order", 3, 3, []step{
			{do: "run", project: "a"}, {do: "run", project: "a"}, {do: "run", project: "a"},
			{do: "queue", project: "b"}, {do: "queue", project: "c"},
			{do: "release", project: "a"}, {do: "granted", project: "b"}, {do: "waiting", project: "c", n: 1},
			{do: "release", project: "a"}, {do: "granted", project: "c"},
		}},
		{"a waiter whose project is at its share is passed over", 2, 2, []step{
			{do: "run", project: "a"}, {do: "run", project: "a"}, {do: "queue", project: "a"}, {do: "queue", project: "b"},
			{do: "release", project: "a"}, {do: "granted", project: "b"}, {do: "waiting", project: "a", n: 1},
		}},
		{"a project that stops calling raises the others' shares", 4, 4, []step{
			{do: "run", project: "a"}, {do: "run", project: "b"}, {do: "run", project: "a"}, {do: "run", project: "b"},
			{do: "refuse", project: "a", want: ErrProjectBusy},
			{do: "release", project: "b"}, {do: "release", project: "b"},
			{do: "run", project: "a"}, {do: "run", project: "a"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newSlots(tc.max, tc.per)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			held := map[string][]func(){}
			type result struct {
				release func()
				err     error
			}
			pending := map[string][]chan result{}
			for i, st := range tc.steps {
				switch st.do {
				case "run":
					release, err := s.acquire(ctx, st.project, -1)
					if err != nil {
						t.Fatalf("step %d: %s: %v", i, st.project, err)
					}
					held[st.project] = append(held[st.project], release)
				case "refuse":
					_, err := s.acquire(ctx, st.project, -1)
					if !errors.Is(err, st.want) || (st.want == ErrBusy && errors.Is(err, ErrProjectBusy)) {
						t.Fatalf("step %d: %s: %v, want %v", i, st.project, err, st.want)
					}
				case "queue":
					_, before, _ := s.state(st.project)
					ch := make(chan result, 1)
					pending[st.project] = append(pending[st.project], ch)
					go func() {
						release, err := s.acquire(ctx, st.project, time.Hour)
						ch <- result{release, err}
					}()
					for {
						_, waiting, changed := s.state(st.project)
						if waiting > before {
							break
						}
						<-changed
					}
				case "release":
					h := held[st.project]
					h[0]()
					held[st.project] = h[1:]
				case "granted":
					ch := pending[st.project][0]
					pending[st.project] = pending[st.project][1:]
					select {
					case r := <-ch:
						if r.err != nil {
							t.Fatalf("step %d: %s: %v", i, st.project, r.err)
						}
						held[st.project] = append(held[st.project], r.release)
					case <-time.After(10 * time.Second):
						t.Fatalf("step %d: %s got no slot", i, st.project)
					}
				case "waiting":
					if _, waiting, _ := s.state(st.project); waiting != st.n {
						t.Fatalf("step %d: %s has %d waiting, want %d", i, st.project, waiting, st.n)
					}
				}
			}
		})
	}
}

// TestSleepersDoNotStarveOtherProjects: one project's calls sleeping in a
// host call try to take every slot of the host; they get the project's
// share (half), the rest are refused with 429 naming the share, and
// another project's call still runs at once.
func TestSleepersDoNotStarveOtherProjects(t *testing.T) {
	mod := exampleModule(t)
	const slots = 4
	h := newHost(t, Config{MaxConcurrent: slots, Timeout: time.Minute, QueueTimeout: -1})
	ctx := context.Background()
	for id, project := range map[string]string{"dpl_a": "prj_a", "dpl_b": "prj_b"} {
		if err := h.Load(ctx, Deployment{ID: id, Project: project, Module: mod}); err != nil {
			t.Fatal(err)
		}
	}
	sleepers, stop := context.WithCancel(ctx)
	done := make(chan error, slots)
	for range slots {
		go func() {
			_, err := h.Call(sleepers, "dpl_a", &Request{Method: "GET", Path: "/sleep", RawQuery: "d=1h"})
			done <- err
		}()
	}
	ended := 0
	t.Cleanup(func() {
		stop()
		for ; ended < slots; ended++ {
			<-done
		}
	})
	for {
		running, _, changed := h.slots.state("prj_a")
		if running > slots/2 {
			t.Fatalf("one project runs %d calls at once, above its share of %d", running, slots/2)
		}
		if running == slots/2 && ended == slots-running {
			break
		}
		select {
		case err := <-done:
			ended++
			if !errors.Is(err, ErrProjectBusy) {
				t.Fatalf("a call beyond the share: %v, want ErrProjectBusy", err)
			}
		case <-changed:
		}
	}
	fronts := map[string]string{}
	for _, id := range []string{"dpl_a", "dpl_b"} {
		f, err := h.ListenFront(id, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.Close(ctx) })
		fronts[id] = "http://" + f.Addr()
	}
	c := &http.Client{Timeout: 30 * time.Second}
	tests := []struct {
		name, id string
		status   int
		want     []string
	}{
		{"another project runs at once", "dpl_b", 200, []string{"hello from prj_b"}},
		{"the sleeping project is at its share", "dpl_a", 429, []string{"2 calls at once", "of the 4"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := c.Get(fronts[tc.id] + "/hello")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Fatalf("%d %q, want %d", resp.StatusCode, b, tc.status)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(b), w) {
					t.Fatalf("%q does not say %q", b, w)
				}
			}
			if tc.status == 429 && resp.Header.Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
		})
	}
}
