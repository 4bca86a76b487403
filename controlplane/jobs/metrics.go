package jobs

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/svcplatform/platform/controlplane/store"
)

// metrics are the runner's Prometheus collectors. Labels are bounded: kind
// is one of the registered kinds, result and state fixed sets.
type metrics struct {
	runs    *prometheus.CounterVec
	seconds *prometheus.HistogramVec
	depth   *depthCollector
}

func newMetrics(db *store.DB) *metrics {
	return &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "platform_jobs_runs_total",
			Help: "Job attempts by kind and result: done, retry, dead, released (given back at shutdown) or lost (lease lost or outcome not recorded).",
		}, []string{"kind", "result"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "platform_jobs_run_seconds",
			Help:    "Duration of one job attempt, by kind.",
			Buckets: []float64{.005, .025, .1, .5, 1, 5, 15, 60, 300},
		}, []string{"kind"}),
		depth: &depthCollector{db: db, desc: prometheus.NewDesc("platform_jobs_queue_depth",
			"Jobs in the store by kind and state (queued, running, dead), counted at scrape time.", []string{"kind", "state"}, nil)},
	}
}

// Collectors returns the runner's metrics for registration on the admin
// /metrics endpoint: platform_jobs_runs_total, platform_jobs_run_seconds and
// platform_jobs_queue_depth.
func (r *Runner) Collectors() []prometheus.Collector {
	return []prometheus.Collector{r.m.runs, r.m.seconds, r.m.depth}
}

// depthCollector counts the jobs table when scraped.
type depthCollector struct {
	db   *store.DB
	desc *prometheus.Desc
}

func (d *depthCollector) Describe(ch chan<- *prometheus.Desc) { ch <- d.desc }

func (d *depthCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := depth(ctx, d.db)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(d.desc, err)
		return
	}
	for ks, n := range counts {
		ch <- prometheus.MustNewConstMetric(d.desc, prometheus.GaugeValue, float64(n), ks[0], ks[1])
	}
}
