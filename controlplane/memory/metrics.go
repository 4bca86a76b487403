package memory

import "github.com/prometheus/client_golang/prometheus"

// metrics are the area's Prometheus metrics; every label is bounded.
type metrics struct {
	ops   *prometheus.CounterVec
	swept prometheus.Counter
}

func newMetrics() *metrics {
	return &metrics{
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "platform_memory_operations_total",
			Help: "Key operations on memory stores, as metered (memory_operations), by kind (get, put, delete, list)."}, []string{"op"}),
		swept: prometheus.NewCounter(prometheus.CounterOpts{Name: "platform_memory_expired_keys_removed_total",
			Help: "Expired keys removed by the sweep or by a put that needed their room."}),
	}
}

// Collectors returns the area's metrics for the admin /metrics.
func (s *Service) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.m.ops, s.m.swept}
}
