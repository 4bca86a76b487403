package index

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// adviseHuge asks the kernel for transparent huge pages on the whole 2 MB
// pages inside [p, p+n) (madvise MADV_HUGEPAGE: honoured where
// /sys/kernel/mm/transparent_hugepage/enabled is "madvise" or "always"). It
// is a hint: an error changes nothing but speed, so it is ignored.
func adviseHuge(p unsafe.Pointer, n int) {
	const huge = 2 << 20
	start := (uintptr(p) + huge - 1) &^ (huge - 1)
	end := (uintptr(p) + uintptr(n)) &^ (huge - 1)
	if end <= start {
		return
	}
	_ = unix.Madvise(unsafe.Slice((*byte)(unsafe.Add(p, start-uintptr(p))), end-start), unix.MADV_HUGEPAGE)
}
