package mail

import "github.com/prometheus/client_golang/prometheus"

// metrics are the area's Prometheus metrics; every label is bounded.
type metrics struct {
	accepted   *prometheus.CounterVec
	refused    *prometheus.CounterVec
	deliveries *prometheus.CounterVec
	seconds    *prometheus.HistogramVec
	checks     *prometheus.CounterVec
	reports    *prometheus.CounterVec
	sessions   *prometheus.CounterVec
}

func newMetrics() *metrics {
	return &metrics{
		accepted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "platform_mail_accepted_recipients_total",
			Help: "Recipients of messages accepted into the queue, by source (api, receipt, platform)."}, []string{"source"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "platform_mail_refused_total",
			Help: "Send requests refused, by reason (invalid, too_many_recipients, message_too_large, mail_rate_limited)."}, []string{"reason"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "platform_mail_deliveries_total",
			Help: "Delivery attempts, by transport (smtp, file) and result (sent, retry, failed)."}, []string{"transport", "result"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "platform_mail_delivery_seconds",
			Help: "Time of one delivery attempt, by transport.", Buckets: prometheus.ExponentialBuckets(0.005, 4, 8)}, []string{"transport"}),
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "platform_mail_domain_checks_total",
			Help: "Sending domain look-ups, by outcome (verified, pending, failed, error)."}, []string{"result"}),
		reports: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "platform_mail_reports_total",
			Help: "Recipients named by bounce and complaint reports received, by kind (bounce, soft_bounce, delayed, complaint)."}, []string{"kind"}),
		sessions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "platform_mail_bounce_messages_total",
			Help: "Messages offered to the bounce listener, by result (recorded, ignored, refused, too_large, busy)."}, []string{"result"}),
	}
}

// Collectors returns the area's metrics for the admin /metrics.
func (s *Service) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.m.accepted, s.m.refused, s.m.deliveries, s.m.seconds, s.m.checks, s.m.reports, s.m.sessions}
}
