package usage

import "github.com/svcplatform/platform/controlplane/metering"

// MetricInfo describes one metric of the report.
type MetricInfo struct {
	Metric metering.Metric `json:"metric"`
	// Unit is count, seconds, minutes, bytes, micro_dollars, tokens or
	// dimensions.
	Unit string `json:"unit"`
	// Source is the area that records it.
	Source string `json:"source"`
	// Note, when set, says why the metric is always zero today (its area
	// is not built yet, or nothing records it yet).
	Note string `json:"note,omitempty"`
}

// Catalog is every metric the report shows, in order. The report lists each
// one (zero when nothing was recorded) and any other metric it finds.
var Catalog = []MetricInfo{
	{metering.Projects, "count", "projects", ""},
	{metering.Deploys, "count", "deploys", ""},
	{metering.BuildSeconds, "seconds", "deploys", ""},
	{metering.DatabaseQueries, "count", "databases", ""},
	{metering.RowsRead, "count", "databases", ""},
	{metering.RowsWritten, "count", "databases", ""},
	{metering.APIKeyCalls, "count", "api", ""},
	{metering.VectorOperations, "count", "vectors", ""},
	{metering.VectorQueriedDims, "dimensions", "vectors", ""},
	{metering.VectorsStored, "count", "vectors", ""},
	{metering.CheckoutSessions, "count", "payments", ""},
	{metering.Payments, "count", "payments", ""},
	{metering.AIRequests, "count", "ai", ""},
	{metering.AITokensIn, "tokens", "ai", ""},
	{metering.AITokensOut, "tokens", "ai", ""},
	{metering.AIEmbeddings, "count", "ai", ""},
	{metering.AICostMicros, "micro_dollars", "ai", ""},
	{metering.MediaMinutesProcessed, "minutes", "media", ""},
	{metering.MediaStoredBytes, "bytes", "media", ""},
	{metering.AgentRuns, "count", "agents", ""},
	{metering.FunctionTestRuns, "count", "functions", "function test runs are not recorded yet: always 0"},
	{metering.AppRunSeconds, "seconds", "deploys", ""},
	{metering.MemoryOperations, "count", "memory", "memory stores are not built yet: always 0"},
	{metering.Emails, "count", "mail", "e-mail sending is not built yet: always 0"},
	{metering.EndUserLogins, "count", "auth pools", "end-user sign-in pools are not built yet: always 0"},
}

// NotMeasured is what the report says it does not measure (the spec's
// unmeasured list).
var NotMeasured = []string{
	"requests to sites and apps",
	"bandwidth to sites and apps",
	"function-URL traffic",
	"errors",
	"latency",
}

// notes returns the notes of the catalog's metrics that have one.
func notes() map[string]string {
	out := map[string]string{}
	for _, m := range Catalog {
		if m.Note != "" {
			out[string(m.Metric)] = m.Note
		}
	}
	return out
}

// zeroTotals returns every catalog metric at zero.
func zeroTotals() map[string]float64 {
	out := make(map[string]float64, len(Catalog))
	for _, m := range Catalog {
		out[string(m.Metric)] = 0
	}
	return out
}
