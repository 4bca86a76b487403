//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly

package cli

import (
	"bufio"
	"os"
	"strings"
)

// isTerminal is false where terminals are not told apart: no prompts with
// hidden input and no progress bar.
func isTerminal(*os.File) bool { return false }

func readSecret(f *os.File) (string, error) {
	s, err := bufio.NewReader(f).ReadString('\n')
	return strings.TrimRight(s, "\r\n"), err
}
