package wasm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// slots admits calls fairly across projects. At most max calls run at
// once on the whole host, and one project at most its share:
// max / (projects with calls running or waiting), at least 1 and at most
// perProject. A call that cannot run waits in arrival order; each time a
// slot frees (or a project stops calling, which raises the others'
// shares) the first waiters whose project is below its share get it. So a
// project that keeps its share busy (calls that run to their time limit)
// never holds the slots another project needs: that project's call runs
// at once while slots are free, or gets the next one to free, within one
// call's time limit.
type slots struct {
	max, perProject int

	mu       sync.Mutex
	running  int
	projects map[string]*projectCalls // projects with calls running or waiting
	queue    []*slotWaiter            // arrival order
	changed  chan struct{}            // closed at the next change
}

type projectCalls struct{ running, waiting int }

type slotWaiter struct {
	project string
	granted chan struct{} // closed when the waiter got its slot
}

func newSlots(max, perProject int) *slots {
	return &slots{max: max, perProject: perProject, projects: map[string]*projectCalls{}, changed: make(chan struct{})}
}

// share is what one project may run now. Called with mu held.
func (s *slots) share() int {
	n := s.max / max(1, len(s.projects))
	return min(max(n, 1), s.perProject)
}

// acquire takes a slot for project, waiting up to wait (none when wait is
// negative) or until ctx ends. It returns the function that frees the
// slot, or a *SlotError.
func (s *slots) acquire(ctx context.Context, project string, wait time.Duration) (func(), error) {
	s.mu.Lock()
	p := s.projects[project]
	if p == nil {
		p = &projectCalls{}
		s.projects[project] = p
	}
	if s.running < s.max && p.running < s.share() {
		p.running++
		s.running++
		s.notify()
		s.mu.Unlock()
		return s.releaser(project), nil
	}
	if wait < 0 {
		err := s.refusal(p, nil)
		s.forget(project, p)
		s.mu.Unlock()
		return nil, err
	}
	w := &slotWaiter{project: project, granted: make(chan struct{})}
	s.queue = append(s.queue, w)
	p.waiting++
	s.notify()
	s.mu.Unlock()

	timer := time.NewTimer(wait)
	defer timer.Stop()
	var cause error
	select {
	case <-w.granted:
		return s.releaser(project), nil
	case <-ctx.Done():
		cause = ctx.Err()
	case <-timer.C:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-w.granted: // granted while giving up: take it
		return s.releaser(project), nil
	default:
	}
	for i, q := range s.queue {
		if q == w {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			break
		}
	}
	p.waiting--
	err := s.refusal(p, cause)
	s.forget(project, p)
	s.grant()
	s.notify()
	return nil, err
}

// refusal is the error of a call of p that got no slot. Called with mu held.
func (s *slots) refusal(p *projectCalls, cause error) error {
	if share := s.share(); p.running >= share {
		return &SlotError{Project: true, Limit: share, Max: s.max, Cause: cause}
	}
	return &SlotError{Limit: s.max, Max: s.max, Cause: cause}
}

// forget drops a project with nothing running or waiting: it no longer
// counts in the shares. Called with mu held.
func (s *slots) forget(project string, p *projectCalls) {
	if p.running == 0 && p.waiting == 0 {
		delete(s.projects, project)
	}
}

func (s *slots) releaser(project string) func() {
	var once sync.Once
	return func() { once.Do(func() { s.release(project) }) }
}

func (s *slots) release(project string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[project]
	p.running--
	s.running--
	s.forget(project, p)
	s.grant()
	s.notify()
}

// grant hands free slots to the waiters, in arrival order, whose project
// is below its share. Called with mu held.
func (s *slots) grant() {
	share := s.share() // granting changes no project's presence
	kept := s.queue[:0]
	for _, w := range s.queue {
		p := s.projects[w.project]
		if s.running < s.max && p.running < share {
			p.running++
			p.waiting--
			s.running++
			close(w.granted)
			continue
		}
		kept = append(kept, w)
	}
	clear(s.queue[len(kept):])
	s.queue = kept
}

func (s *slots) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// state reports project's running and waiting calls, and a channel closed
// at the next change (tests wait on it instead of sleeping).
func (s *slots) state(project string) (running, waiting int, changed <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.projects[project]; p != nil {
		running, waiting = p.running, p.waiting
	}
	return running, waiting, s.changed
}

// SlotError is the error of a call that got no slot to run in: its project
// already ran its share of the host's calls (Project, wrapping
// ErrProjectBusy: 429), or every slot was in use (wrapping ErrBusy: 503).
type SlotError struct {
	// Project is set when the project's own share was the limit.
	Project bool
	// Limit is the limit met: the project's share, or Max.
	Limit int
	// Max is Config.MaxConcurrent, the calls the host runs at once.
	Max int
	// Cause is the caller's context error when it gave up first, else nil.
	Cause error
}

func (e *SlotError) Error() string {
	msg := fmt.Sprintf("all %d slots in use", e.Max)
	if e.Project {
		msg = fmt.Sprintf("the project runs its share of %d calls at once (of %d)", e.Limit, e.Max)
	}
	if e.Cause != nil {
		msg += ": " + e.Cause.Error()
	}
	return msg
}

// Unwrap returns ErrProjectBusy or ErrBusy.
func (e *SlotError) Unwrap() error {
	if e.Project {
		return ErrProjectBusy
	}
	return ErrBusy
}

var _ error = (*SlotError)(nil)

// errSlot reports whether err is a *SlotError, and returns it.
func errSlot(err error) (*SlotError, bool) {
	var se *SlotError
	ok := errors.As(err, &se)
	return se, ok
}
