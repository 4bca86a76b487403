package h2

// openedIDs remembers which of the last openedWindow odd stream
// identifiers up to the highest the client used it opened, to tell a
// HEADERS on a closed stream (STREAM_CLOSED) from one on an identifier it
// skipped (PROTOCOL_ERROR, RFC 9113 §5.1.1).
type openedIDs struct {
	bits [openedWindow / 64]uint64
	max  uint32
}

const openedWindow = 4096

func (o *openedIDs) bit(id uint32) (word int, mask uint64) {
	i := (id >> 1) % openedWindow
	return int(i / 64), 1 << (i % 64)
}

// open records id, higher than every identifier recorded before.
func (o *openedIDs) open(id uint32) {
	first := (o.max + 1) | 1 // the first odd identifier skipped
	if n := (id - first) / 2; id > first && n >= openedWindow {
		o.bits = [openedWindow / 64]uint64{}
	} else if id > first {
		// Clear the skipped identifiers' bits, a word at a time.
		for i := (first >> 1) % openedWindow; n > 0; {
			k := min(n, 64-i%64)
			o.bits[i/64] &^= (1<<k - 1) << (i % 64)
			n -= k
			i = (i + k) % openedWindow
		}
	}
	w, m := o.bit(id)
	o.bits[w] |= m
	o.max = id
}

// wasOpened reports whether id (at most the highest recorded) was opened;
// true when it is too far back to know.
func (o *openedIDs) wasOpened(id uint32) bool {
	if (o.max-id)/2 >= openedWindow {
		return true
	}
	w, m := o.bit(id)
	return o.bits[w]&m != 0
}

// recentlyReset reports whether the client reset stream id lately.
func (c *conn) recentlyReset(id uint32) bool {
	for _, r := range c.resets {
		if r == id {
			return true
		}
	}
	return false
}
