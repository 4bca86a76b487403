package signin

import "github.com/prometheus/client_golang/prometheus"

// metrics are the area's Prometheus collectors; every label has a few
// values fixed by code.
type metrics struct {
	signIns        *prometheus.CounterVec
	signUps        *prometheus.CounterVec
	refreshes      *prometheus.CounterVec
	passwordChecks prometheus.Counter
}

func newMetrics() *metrics {
	return &metrics{
		signIns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "platform_signin_attempts_total",
			Help: "End-user sign-ins by result: success, invalid (wrong e-mail or password), throttled, locked, disabled, unverified.",
		}, []string{"result"}),
		signUps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "platform_signin_signups_total",
			Help: "End-user sign-ups by result: created, existing (an address already signed up), throttled, limit (the pool is at its plan's cap).",
		}, []string{"result"}),
		refreshes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "platform_signin_refreshes_total",
			Help: "Refresh-token uses by result: rotated, reused (the session was revoked), invalid.",
		}, []string{"result"}),
		passwordChecks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "platform_signin_password_checks_total",
			Help: "argon2id password checks made by end-user sign-ins, against a user's hash or the stand-in for an unknown e-mail.",
		}),
	}
}

// Collectors returns the area's metrics for the admin /metrics.
func (s *Service) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.m.signIns, s.m.signUps, s.m.refreshes, s.m.passwordChecks}
}
