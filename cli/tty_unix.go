//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package cli

import (
	"os"

	"golang.org/x/sys/unix"
)

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios)
	return err == nil
}

// readSecret reads one line from the terminal f with echo off.
func readSecret(f *os.File) (string, error) {
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return readLine(f)
	}
	quiet := *old
	quiet.Lflag &^= unix.ECHO
	quiet.Lflag |= unix.ICANON | unix.ISIG
	if err := unix.IoctlSetTermios(fd, ioctlSetTermios, &quiet); err != nil {
		return readLine(f)
	}
	defer unix.IoctlSetTermios(fd, ioctlSetTermios, old)
	return readLine(f)
}

// readLine reads up to a newline one byte at a time, so nothing after it
// is taken from f.
func readLine(f *os.File) (string, error) {
	var b []byte
	var c [1]byte
	for {
		n, err := f.Read(c[:])
		if n == 1 {
			if c[0] == '\n' {
				break
			}
			if c[0] != '\r' {
				b = append(b, c[0])
			}
		}
		if err != nil {
			if len(b) > 0 {
				break
			}
			return "", err
		}
	}
	return string(b), nil
}
