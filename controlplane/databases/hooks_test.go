package databases

// PauseExports makes the exports of s wait, between their snapshot and
// their dump, until release is closed: the database stays in its export
// for as long as a test needs.
func PauseExports(s *Service, release <-chan struct{}) {
	f := exportPause(func(string) { <-release })
	s.pause.Store(&f)
}

// OnExportWait calls f each time a query of s starts waiting for a running
// export.
func OnExportWait(s *Service, f func()) { s.exportWaiting.Store(&f) }

// OnRemoved calls f each time s removed the files of a database deleted on
// another replica.
func OnRemoved(s *Service, f func(id string)) { s.removed.Store(&f) }
