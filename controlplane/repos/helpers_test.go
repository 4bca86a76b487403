package repos_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// countFiles counts the files under dir, temporary ones aside.
func countFiles(dir string) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if !d.IsDir() && !strings.HasPrefix(d.Name(), ".") {
			n++
		}
		return nil
	})
	return n, err
}
