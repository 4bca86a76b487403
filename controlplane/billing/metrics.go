package billing

import "github.com/prometheus/client_golang/prometheus"

// metrics are the ledger's Prometheus collectors; labels are fixed sets.
type metrics struct {
	reservations *prometheus.CounterVec
	micros       *prometheus.CounterVec
	batch        prometheus.Histogram
	lost         prometheus.Counter
}

func newMetrics() *metrics {
	return &metrics{
		reservations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "platform_billing_reservations_total",
			Help: "Reservations by result: reserved, refused, settled, settled_late, released or expired.",
		}, []string{"result"}),
		micros: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "platform_billing_charged_micros_total",
			Help: "Micro-dollars charged, by purpose (ai, embeddings, agent, storage) and pool (ai_credit, usage_credit, balance).",
		}, []string{"purpose", "pool"}),
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "platform_billing_batch_movements",
			Help:    "Movements (reserve, settle, release) committed per batch transaction on the hot path.",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 512, 4096},
		}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "platform_billing_movements_failed_total",
			Help: "Hot-path movements whose commit failed (each logged; the workspace's copy is reloaded from the database).",
		}),
	}
}

func (m *metrics) charged(purpose, creditPool string, fromCredit, fromBalance Micros) {
	if fromCredit > 0 {
		m.micros.WithLabelValues(purpose, creditPool).Add(float64(fromCredit))
	}
	if fromBalance > 0 {
		m.micros.WithLabelValues(purpose, poolBalance).Add(float64(fromBalance))
	}
}

// Collectors returns the ledger's metrics for the admin /metrics endpoint:
// platform_billing_reservations_total, platform_billing_charged_micros_total,
// platform_billing_batch_movements and platform_billing_movements_failed_total.
func (l *Ledger) Collectors() []prometheus.Collector {
	return []prometheus.Collector{l.m.reservations, l.m.micros, l.m.batch, l.m.lost}
}
