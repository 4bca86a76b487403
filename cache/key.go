package cache

import (
	"encoding/binary"
	"sync"
)

// Entry kinds, the first byte of every encoded key, so keys of different
// kinds never compare equal.
const (
	keyStatic  = 'S'
	keyPrimary = 'P'
	keyVariant = 'V'
)

// keyBuf is a pooled buffer for encoding a key on the hit path.
type keyBuf struct{ b []byte }

var keyPool = sync.Pool{New: func() any { return &keyBuf{b: make([]byte, 0, 512)} }}

const maxPooledKey = 64 << 10

func getKeyBuf() *keyBuf { return keyPool.Get().(*keyBuf) }

func putKeyBuf(k *keyBuf) {
	if cap(k.b) > maxPooledKey {
		return
	}
	k.b = k.b[:0]
	keyPool.Put(k)
}

// appendPart appends one length-prefixed key part, so that no two different
// part lists encode to the same bytes.
func appendPart(dst, p []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(p)))
	return append(dst, p...)
}

func appendPartString(dst []byte, p string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(p)))
	return append(dst, p...)
}

// appendPartLower appends a part lower-cased (host names are
// case-insensitive).
func appendPartLower(dst, p []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(p)))
	for _, c := range p {
		dst = append(dst, lower(c))
	}
	return dst
}
