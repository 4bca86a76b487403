package domains

import "github.com/prometheus/client_golang/prometheus"

// metrics are the area's Prometheus metrics; every label is bounded.
type metrics struct {
	checks *prometheus.CounterVec
}

func newMetrics() *metrics {
	return &metrics{
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "platform_domains_checks_total",
			Help: "Custom domain look-ups, by outcome (pending, verified, misconfigured, taken, error)."}, []string{"result"}),
	}
}

// Collectors returns the area's metrics for the admin /metrics.
func (s *Service) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.m.checks}
}
