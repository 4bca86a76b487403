//go:build !unix

package databases

// diskFree cannot tell the free space here.
func diskFree(string) (int64, bool) { return 0, false }
