//go:build !linux

package index

import "unsafe"

// adviseHuge is a hint only Linux takes.
func adviseHuge(p unsafe.Pointer, n int) {}
