package blobs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// s3Metrics count the S3 backend's HTTP requests. Labels are bounded:
// method is the HTTP method, class the status class (2xx..5xx) or "error"
// when no answer came.
type s3Metrics struct {
	requests *prometheus.CounterVec
	seconds  *prometheus.HistogramVec
}

func newS3Metrics() *s3Metrics {
	return &s3Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "platform_blobs_s3_requests_total",
			Help: "HTTP requests to the S3 blob backend, by method and status class (2xx, 3xx, 4xx, 5xx, or error when no answer came).",
		}, []string{"method", "class"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "platform_blobs_s3_request_seconds",
			Help:    "Time to the response headers of a request to the S3 blob backend, by method.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10, 60},
		}, []string{"method"}),
	}
}

// Collectors returns the backend's metrics for the admin /metrics
// endpoint: platform_blobs_s3_requests_total and
// platform_blobs_s3_request_seconds.
func (s *S3) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.m.requests, s.m.seconds}
}

// counted is an http.RoundTripper that records each request in m.
type counted struct {
	next http.RoundTripper
	m    *s3Metrics
}

func (c counted) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := c.next.RoundTrip(r)
	method := r.Method
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodPost, http.MethodDelete:
	default:
		method = "other"
	}
	c.m.seconds.WithLabelValues(method).Observe(time.Since(start).Seconds())
	class := "error"
	if err == nil {
		class = strconv.Itoa(resp.StatusCode/100) + "xx"
	}
	c.m.requests.WithLabelValues(method, class).Inc()
	// minio-go retries every error but an x509.UnknownAuthorityError found
	// directly under the url.Error, while Go wraps it in a
	// tls.CertificateVerificationError: unwrap it so that a missing CA fails
	// at once instead of retrying until the context ends.
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	if errors.As(err, &cv) && errors.As(cv.Err, &ua) {
		return nil, ua
	}
	return resp, err
}
