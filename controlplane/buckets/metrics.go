package buckets

import "github.com/prometheus/client_golang/prometheus"

// metrics are the area's Prometheus collectors.
type metrics struct {
	s3Requests *prometheus.CounterVec
}

func newMetrics() *metrics {
	return &metrics{
		s3Requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "platform_buckets_s3_requests_total",
			Help: "Requests to the S3-compatible surface, by operation (S3's names; unsupported and unknown otherwise) and answer (OK or the S3 error code)."},
			[]string{"operation", "code"}),
	}
}

// Collectors returns the area's metrics for the registry.
func (s *Service) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.m.s3Requests}
}
