package edge

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcplatform/platform/rules"
)

// kindUnknownLabel indexes requests for a host no site answers at.
const kindUnknownLabel = int(numSiteKinds)

var kindLabels = [numSiteKinds + 1]string{"static", "app", "function", "unknown"}

var classLabels = [6]string{"1xx", "2xx", "3xx", "4xx", "5xx", "other"}

// Password attempt results.
const (
	passwordRight = iota
	passwordWrong
	passwordThrottled
	numPasswordResults
)

// metrics are the edge's Prometheus metrics, every one named
// platform_edge_*, with labels of bounded cardinality. Counters with labels
// are resolved once, so counting on the hot path is an atomic add.
type metrics struct {
	requests    [numSiteKinds + 1][6]prometheus.Counter
	duration    [numSiteKinds + 1]prometheus.Observer
	decisions   [numSiteKinds][4][3]prometheus.Counter
	guarded     prometheus.Counter
	passwords   [numPasswordResults]prometheus.Counter
	compressed  prometheus.Counter
	originResp  [numSiteKinds][6]prometheus.Counter
	originErr   *prometheus.CounterVec
	version     prometheus.Gauge
	ready       prometheus.Gauge
	applied     prometheus.Counter
	syncErrors  prometheus.Counter
	lastSync    prometheus.Gauge
	flushed     prometheus.Counter
	flushErrors prometheus.Counter
	blobFetches *prometheus.CounterVec

	staleRetries prometheus.Counter    // requests sent again after a pooled origin connection was found closed
	upgrades     [2]prometheus.Counter // upgraded connections (WebSockets) to origins: [0] spliced, [1] refused by the origin or failed
	upgradesOpen prometheus.Gauge      // upgraded connections open now
	connRefused  [2]prometheus.Counter // connections closed at accept: [0] per-address cap, [1] trusted proxies' total cap
	accessDrops  prometheus.Counter    // access-log lines lost to a failed write

	staleServed prometheus.Counter                    // stored responses served instead of an origin failure
	passes      prometheus.Counter                    // forwarded without a cache lookup (hit-for-pass, fwd_pass.go)
	refreshes   [numRefreshResults]prometheus.Counter // background revalidations, by result

	collectors []prometheus.Collector
}

func newMetrics() *metrics {
	m := &metrics{}
	reqs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "platform_edge_requests_total",
		Help: "Visitor requests answered by the edge, by target kind and status class."}, []string{"kind", "code"})
	dur := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "platform_edge_request_duration_seconds",
		Help:    "Time to answer a visitor request (until the handler returns; streamed bodies continue), by target kind.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}},
		[]string{"kind"})
	dec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "platform_edge_shield_decisions_total",
		Help: "Shield refusals and log-only would-be refusals, by target kind, rule and verdict."}, []string{"kind", "rule", "verdict"})
	pw := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "platform_edge_password_attempts_total",
		Help: "Site-password form submissions, by result."}, []string{"result"})
	oresp := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "platform_edge_origin_responses_total",
		Help: "Responses received from app and function origins, by target kind and status class."}, []string{"kind", "code"})
	m.originErr = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "platform_edge_origin_errors_total",
		Help: "Forwards that failed, by target kind and the status answered (502, 503, 504)."}, []string{"kind", "code"})
	m.guarded = prometheus.NewCounter(prometheus.CounterOpts{Name: "platform_edge_file_guard_total",
		Help: "Requests for private files answered 404 by the file guard."})
	m.compressed = prometheus.NewCounter(prometheus.CounterOpts{Name: "platform_edge_compressions_total",
		Help: "Static files compressed (gzip or brotli) on a cache miss."})
	m.version = prometheus.NewGauge(prometheus.GaugeOpts{Name: "platform_edge_config_version",
		Help: "Version of the configuration snapshot in use."})
	m.ready = prometheus.NewGauge(prometheus.GaugeOpts{Name: "platform_edge_ready",
		Help: "1 once a configuration is loaded and served."})
	m.applied = prometheus.NewCounter(prometheus.CounterOpts{Name: "platform_edge_config_applied_total",
		Help: "Configuration snapshots applied."})
	m.syncErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "platform_edge_config_sync_errors_total",
		Help: "Failed configuration polls or refused snapshots."})
	m.lastSync = prometheus.NewGauge(prometheus.GaugeOpts{Name: "platform_edge_config_last_sync_timestamp_seconds",
		Help: "When the control plane last answered a configuration poll (Unix time)."})
	m.flushed = prometheus.NewCounter(prometheus.CounterOpts{Name: "platform_edge_shield_counts_flushed_total",
		Help: "Shield count rows accepted by the control plane."})
	m.flushErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "platform_edge_shield_count_flush_errors_total",
		Help: "Failed attempts to send Shield counts (they are kept and sent again)."})
	m.blobFetches = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "platform_edge_blob_fetches_total",
		Help: "Static-file blobs fetched from the control plane, by result."}, []string{"result"})

	m.staleRetries = prometheus.NewCounter(prometheus.CounterOpts{Name: "platform_edge_origin_stale_retries_total",
		Help: "Requests sent again because the pooled origin connection taken for them had been closed by the origin (nothing was sent on it)."})
	upg := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "platform_edge_upgrades_total",
		Help: "Upgrade requests (WebSockets) forwarded to origins, by result: spliced, or refused (the origin did not switch protocols, or failed)."}, []string{"result"})
	m.upgrades[0], m.upgrades[1] = upg.WithLabelValues("spliced"), upg.WithLabelValues("refused")
	m.upgradesOpen = prometheus.NewGauge(prometheus.GaugeOpts{Name: "platform_edge_upgraded_connections",
		Help: "Upgraded connections (WebSockets) spliced to origins now."})
	cr := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "platform_edge_connections_refused_total",
		Help: "Connections closed at accept, by limit: per_address (MaxConnsPerIP) or trusted_proxies (MaxProxyConns)."}, []string{"limit"})
	m.connRefused[0], m.connRefused[1] = cr.WithLabelValues("per_address"), cr.WithLabelValues("trusted_proxies")
	m.accessDrops = prometheus.NewCounter(prometheus.CounterOpts{Name: "platform_edge_access_log_errors_total",
		Help: "Access-log writes that failed (the lines are lost; serving goes on)."})
	m.staleServed = prometheus.NewCounter(prometheus.CounterOpts{Name: "platform_edge_cache_stale_on_error_total",
		Help: "Stored responses served stale instead of an origin failure (RFC 5861 stale-if-error, RFC 9111 disconnected)."})
	m.passes = prometheus.NewCounter(prometheus.CounterOpts{Name: "platform_edge_cache_passes_total",
		Help: "Requests forwarded without a cache lookup because their key's last answer was not storable (hit-for-pass); the cache's miss counters do not include them."})
	rf := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "platform_edge_cache_refreshes_total",
		Help: "Background revalidations of stale-while-revalidate responses (RFC 5861), by result: revalidated (304), stored, failed, skipped (every slot busy)."},
		[]string{"result"})
	for i, l := range refreshResultLabels {
		m.refreshes[i] = rf.WithLabelValues(l)
	}
	for k := range kindLabels {
		for c := range classLabels {
			m.requests[k][c] = reqs.WithLabelValues(kindLabels[k], classLabels[c])
		}
		m.duration[k] = dur.WithLabelValues(kindLabels[k])
	}
	for k := range numSiteKinds {
		for r := range 4 {
			for v := range 3 {
				m.decisions[k][r][v] = dec.WithLabelValues(kindLabels[k], rules.Rule(r).String(), rules.Verdict(v).String())
			}
		}
		for c := range classLabels {
			m.originResp[k][c] = oresp.WithLabelValues(kindLabels[k], classLabels[c])
		}
	}
	for i, r := range [numPasswordResults]string{"right", "wrong", "throttled"} {
		m.passwords[i] = pw.WithLabelValues(r)
	}
	order := prometheus.NewGauge(prometheus.GaugeOpts{Name: "platform_edge_netpoll_order_info",
		Help:        "Always 1; the label says in which order the runtime's poller serves ready connections (netpoll.go): epoll (make build) or runtime.",
		ConstLabels: prometheus.Labels{"order": netpollOrderName()}})
	order.Set(1)
	m.collectors = []prometheus.Collector{reqs, dur, dec, pw, oresp, m.originErr, m.guarded, m.compressed, m.version,
		m.ready, m.applied, m.syncErrors, m.lastSync, m.flushed, m.flushErrors, m.blobFetches,
		m.staleRetries, upg, m.upgradesOpen, cr, m.accessDrops, m.staleServed, m.passes, rf, order}
	return m
}

func statusClass(status int) int {
	if status >= 100 && status < 600 {
		return status/100 - 1
	}
	return 5
}

// request counts one answered request. It does not allocate.
func (m *metrics) request(kind, status int, start time.Time) {
	m.requests[kind][statusClass(status)].Inc()
	m.duration[kind].Observe(time.Since(start).Seconds())
}

// decision counts a Shield refusal or would-be refusal.
func (m *metrics) decision(kind siteKind, d rules.Decision) {
	if d.Verdict != rules.Allow && int(d.Rule) < 4 && int(d.Verdict) < 3 {
		m.decisions[kind][d.Rule][d.Verdict].Inc()
	}
}

func (m *metrics) password(result int) { m.passwords[result].Inc() }

func (m *metrics) originStatus(kind siteKind, status int) {
	m.originResp[kind][statusClass(status)].Inc()
}

func (m *metrics) originError(kind siteKind, status int) {
	m.originErr.WithLabelValues(kindLabels[kind], classCode(status)).Inc()
}

func classCode(status int) string {
	switch status {
	case 502:
		return "502"
	case 503:
		return "503"
	case 504:
		return "504"
	}
	return "other"
}
