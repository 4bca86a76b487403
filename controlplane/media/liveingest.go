package media

// LiveIngest reports live ingest as started: the address publishers are
// told (empty when live channels are off) and, when it is set, why live
// channels cannot be created (nginx or its RTMP module missing). The
// command line prints it at start.
func (s *Service) LiveIngest() (ingestURL string, unavailable error) {
	if s.live == nil {
		return "", nil
	}
	if s.live.err != nil {
		return s.live.cfg.IngestURL, s.live.err
	}
	return s.live.cfg.IngestURL, nil
}
