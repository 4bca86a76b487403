package h2

import "golang.org/x/net/http2/hpack"

// fieldSink receives the decoded fields of a header block, in order. name
// and value are valid only during the call.
type fieldSink interface {
	field(name, value []byte)
}

// decoder decodes header blocks (RFC 7541 §3) with one connection's
// dynamic table.
type decoder struct {
	t   dynTable
	buf []byte // the current literal's name and value
	hw  huffWriter
}

// huffWriter appends what hpack.HuffmanDecode writes to its decoder's buf.
type huffWriter struct{ d *decoder }

func (w *huffWriter) Write(p []byte) (int, error) {
	w.d.buf = append(w.d.buf, p...)
	return len(p), nil
}

func (d *decoder) init() {
	d.t.init(maxTableSize)
	d.buf = make([]byte, 0, 256)
	d.hw.d = d
}

// decode decodes block, a complete header block, into sink. An error is a
// COMPRESSION_ERROR: the table may be out of step with the peer's.
func (d *decoder) decode(block []byte, sink fieldSink) error {
	p := block
	sawField := false
	for len(p) > 0 {
		b := p[0]
		var err error
		switch {
		case b&0x80 != 0: // indexed field (§6.1)
			var i uint64
			if i, p, err = readVarInt(7, p); err != nil {
				return err
			}
			name, value, ok := d.at(i)
			if !ok {
				return errHpackIndex
			}
			sink.field(name, value)
			sawField = true
		case b&0xc0 == 0x40: // literal with incremental indexing (§6.2.1)
			if p, err = d.literal(6, true, p, sink); err != nil {
				return err
			}
			sawField = true
		case b&0xe0 == 0x20: // dynamic table size update (§6.3)
			var v uint64
			if v, p, err = readVarInt(5, p); err != nil {
				return err
			}
			if sawField || v > maxTableSize {
				return errHpackUpdate
			}
			d.t.setMaxSize(uint32(v))
		default: // literal without indexing or never indexed (§6.2.2, §6.2.3)
			if p, err = d.literal(4, false, p, sink); err != nil {
				return err
			}
			sawField = true
		}
	}
	return nil
}

// at returns the field of index i (static table first).
func (d *decoder) at(i uint64) (name, value []byte, ok bool) {
	if i == 0 {
		return nil, nil, false
	}
	if i <= uint64(len(staticTable)) {
		e := &staticTable[i-1]
		return e.name, e.value, true
	}
	return d.t.at(int(i - uint64(len(staticTable))))
}

func (d *decoder) literal(n uint8, index bool, p []byte, sink fieldSink) ([]byte, error) {
	i, p, err := readVarInt(n, p)
	if err != nil {
		return nil, err
	}
	d.buf = d.buf[:0]
	if i > 0 {
		name, _, ok := d.at(i)
		if !ok {
			return nil, errHpackIndex
		}
		d.buf = append(d.buf, name...)
	} else if p, err = d.readString(p); err != nil {
		return nil, err
	}
	nlen := len(d.buf)
	if p, err = d.readString(p); err != nil {
		return nil, err
	}
	name, value := d.buf[:nlen], d.buf[nlen:]
	if index {
		d.t.add(name, value)
	}
	sink.field(name, value)
	return p, nil
}

// readString appends a string literal (§5.2) to d.buf.
func (d *decoder) readString(p []byte) ([]byte, error) {
	if len(p) == 0 {
		return nil, errHpackTrunc
	}
	huff := p[0]&0x80 != 0
	l, p, err := readVarInt(7, p)
	if err != nil {
		return nil, err
	}
	if uint64(len(p)) < l {
		return nil, errHpackTrunc
	}
	s := p[:l]
	if huff {
		if _, err := hpack.HuffmanDecode(&d.hw, s); err != nil {
			return nil, errHpackHuffman
		}
	} else {
		d.buf = append(d.buf, s...)
	}
	return p[l:], nil
}
