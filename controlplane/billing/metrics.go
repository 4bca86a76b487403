package billing

import "github.com/prometheus/client_golang/prometheus"

// metrics are the ledger's Prometheus collectors; labels are fixed sets.
type metrics struct {
	reservations *prometheus.CounterVec
	micros       *prometheus.CounterVec
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
// platform_billing_reservations_total and platform_billing_charged_micros_total.
func (l *Ledger) Collectors() []prometheus.Collector {
	return []prometheus.Collector{l.m.reservations, l.m.micros}
}
