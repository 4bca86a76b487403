package databases

import (
	"errors"
	"sync"
	"time"
)

// handles keeps the open databases, closing the least recently used idle
// ones beyond max.
type handles struct {
	mu  sync.Mutex
	m   map[string]*handle
	max int
}

func newHandles(max int) *handles { return &handles{m: map[string]*handle{}, max: max} }

// get returns the open handle of id, opening it with open when there is
// none. Opening happens under the lock, so a database never has two
// writers in this process.
func (hs *handles) get(id string, open func() (*handle, error)) (*handle, error) {
	hs.mu.Lock()
	if h, ok := hs.m[id]; ok {
		hs.mu.Unlock()
		return h, nil
	}
	h, err := open()
	if err != nil {
		hs.mu.Unlock()
		return nil, err
	}
	hs.m[id] = h
	victims := hs.evictLocked(id)
	hs.mu.Unlock()
	for _, v := range victims {
		v.close()
	}
	return h, nil
}

// evictLocked takes idle handles other than keep out of the map, oldest
// first, until at most max remain (or none is idle).
func (hs *handles) evictLocked(keep string) []*handle {
	var victims []*handle
	for len(hs.m) > hs.max {
		var oldest *handle
		var oldestUse time.Time
		for _, h := range hs.m {
			used, idle := h.idleSince()
			if !idle || h.id == keep {
				continue
			}
			if oldest == nil || used.Before(oldestUse) {
				oldest, oldestUse = h, used
			}
		}
		if oldest == nil {
			break
		}
		delete(hs.m, oldest.id)
		victims = append(victims, oldest)
	}
	return victims
}

// remove closes the handle of id, if open, waiting for what runs on it.
func (hs *handles) remove(id string) error {
	hs.mu.Lock()
	h, ok := hs.m[id]
	delete(hs.m, id)
	hs.mu.Unlock()
	if !ok {
		return nil
	}
	return h.close()
}

// closeAll closes every handle.
func (hs *handles) closeAll() error {
	hs.mu.Lock()
	all := hs.m
	hs.m = map[string]*handle{}
	hs.mu.Unlock()
	var errs []error
	for _, h := range all {
		errs = append(errs, h.close())
	}
	return errors.Join(errs...)
}
