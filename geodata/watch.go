package geodata

import (
	"path/filepath"
	"slices"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Change detection. The directories of the configured files are watched
// rather than the files: files are usually replaced by rename (downloads,
// deploys, Kubernetes volumes swapping a symlink), and a watch on the file
// itself would be lost with the old inode. Any event in a watched directory
// starts (or restarts) a ReloadDelay timer; when it fires every file is
// stat'ed, and a file whose identity, size or modification time changed is
// read, compared by SHA-256 with the content last seen, and parsed if new.
// A poll every PollInterval does the same, for file systems without events,
// and watches again directories that were missing or were recreated.

// startWatching watches the directories and starts the watch loop. The
// watches exist when it returns, so no change after Open is missed.
func (db *DB) startWatching() {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		db.logger.Warn("geodata: no change events; polling only", "every", db.cfg.PollInterval, "err", err)
	} else {
		db.watcher = w
	}
	db.watchDirs()
	db.stop = make(chan struct{})
	db.done = make(chan struct{})
	go db.watch()
}

// watchDirs adds a watch on every directory of a configured file. Adding a
// watched directory again is a no-op; adding one that was removed and
// created again restores its events.
func (db *DB) watchDirs() {
	if db.watcher == nil {
		return
	}
	for _, d := range db.dirs() {
		if err := db.watcher.Add(d); err != nil {
			db.logger.Debug("geodata: cannot watch directory; polling", "dir", d, "err", err)
		}
	}
}

// watch runs until Close.
func (db *DB) watch() {
	defer close(db.done)
	var events <-chan fsnotify.Event
	var errs <-chan error
	if db.watcher != nil {
		defer db.watcher.Close()
		events, errs = db.watcher.Events, db.watcher.Errors
	}
	poll := time.NewTicker(db.cfg.PollInterval)
	defer poll.Stop()
	debounce := time.NewTimer(db.cfg.ReloadDelay) // a first check, for changes made before the watches
	defer debounce.Stop()
	for {
		select {
		case <-db.stop:
			return
		case _, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			debounce.Reset(db.cfg.ReloadDelay)
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			db.logger.Warn("geodata: watcher error", "err", err)
		case <-debounce.C:
			db.checkAll()
		case <-poll.C:
			db.watchDirs()
			db.checkAll()
		}
	}
}

// dirs lists the directories of the configured files.
func (db *DB) dirs() []string {
	var out []string
	for _, f := range db.files {
		if d := filepath.Dir(f.path); !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// checkAll loads every file that changed; load logs what it refuses.
func (db *DB) checkAll() {
	for _, f := range db.files {
		_ = db.load(f, false)
	}
}
