package controlplane

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcplatform/platform/controlplane/api"
)

// Metrics are the control plane's Prometheus metrics, served on the admin
// listener's /metrics. Labels are bounded: route is the route table's
// pattern ("GET /api/projects/{id}", or "no_route"), never a raw path.
//
//	platform_api_requests_total{route,code}           counter
//	platform_api_request_duration_seconds{route}      histogram
//	platform_store_tx_duration_seconds{outcome}       histogram (commit or rollback)
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	tx       *prometheus.HistogramVec
}

var _ api.Observer = (*Metrics)(nil)

// NewMetrics returns unregistered metrics.
func NewMetrics() *Metrics {
	return &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "platform_api_requests_total",
			Help: "API requests answered, by route pattern and status code."}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "platform_api_request_duration_seconds",
			Help:    "Time to answer an API request, by route pattern.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}}, []string{"route"}),
		tx: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "platform_store_tx_duration_seconds",
			Help:    "Time a metadata-database transaction took from begin to commit or rollback.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5}}, []string{"outcome"}),
	}
}

// Register registers every metric with reg.
func (m *Metrics) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.tx} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// ObserveRequest implements api.Observer.
func (m *Metrics) ObserveRequest(route string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(route).Observe(d.Seconds())
}

// ObserveTx records one store transaction: its duration and whether it
// committed (err nil) or rolled back. The store calls it through its
// transaction hook.
func (m *Metrics) ObserveTx(d time.Duration, err error) {
	outcome := "commit"
	if err != nil {
		outcome = "rollback"
	}
	m.tx.WithLabelValues(outcome).Observe(d.Seconds())
}
