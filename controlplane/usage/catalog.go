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
	// Note, when set, says why the metric is not measured.
	Note string `json:"note,omitempty"`
	// NotMeasured marks a metric nothing records yet (its area is not
	// built): the report shows it as null, never 0, names it (Label) in
	// notMeasured and says why (Note) in notes, until its area records it.
	NotMeasured bool `json:"notMeasured,omitempty"`
	// Label names a metric that is not measured in notMeasured.
	Label string `json:"-"`
}

// Catalog is every metric the report shows, in order. The report lists each
// one (zero when nothing was recorded, null when not measured) and any other
// metric it finds.
var Catalog = []MetricInfo{
	{Metric: metering.Projects, Unit: "count", Source: "projects"},
	{Metric: metering.Deploys, Unit: "count", Source: "deploys"},
	{Metric: metering.BuildSeconds, Unit: "seconds", Source: "deploys"},
	{Metric: metering.DatabaseQueries, Unit: "count", Source: "databases"},
	{Metric: metering.RowsRead, Unit: "count", Source: "databases"},
	{Metric: metering.RowsWritten, Unit: "count", Source: "databases"},
	{Metric: metering.APIKeyCalls, Unit: "count", Source: "api"},
	{Metric: metering.VectorOperations, Unit: "count", Source: "vectors"},
	{Metric: metering.VectorQueriedDims, Unit: "dimensions", Source: "vectors"},
	{Metric: metering.VectorsStored, Unit: "count", Source: "vectors"},
	{Metric: metering.CheckoutSessions, Unit: "count", Source: "payments"},
	{Metric: metering.Payments, Unit: "count", Source: "payments"},
	{Metric: metering.AIRequests, Unit: "count", Source: "ai"},
	{Metric: metering.AITokensIn, Unit: "tokens", Source: "ai"},
	{Metric: metering.AITokensOut, Unit: "tokens", Source: "ai"},
	{Metric: metering.AIEmbeddings, Unit: "count", Source: "ai"},
	{Metric: metering.AICostMicros, Unit: "micro_dollars", Source: "ai"},
	{Metric: metering.MediaMinutesProcessed, Unit: "minutes", Source: "media"},
	{Metric: metering.MediaStoredBytes, Unit: "bytes", Source: "media"},
	{Metric: metering.AgentRuns, Unit: "count", Source: "agents"},
	{Metric: metering.FunctionTestRuns, Unit: "count", Source: "functions", NotMeasured: true, Label: "function test runs",
		Note: "function test runs are not recorded yet: not measured (null)"},
	{Metric: metering.AppRunSeconds, Unit: "seconds", Source: "deploys"},
	{Metric: metering.MemoryOperations, Unit: "count", Source: "memory"},
	{Metric: metering.Emails, Unit: "count", Source: "mail"},
	{Metric: metering.EndUserLogins, Unit: "count", Source: "auth pools"},
}

// NotMeasured is what the report says it does not measure: the spec's
// unmeasured list, then the catalog's metrics that are not measured yet.
var NotMeasured = notMeasured()

func notMeasured() []string {
	out := []string{
		"requests to sites and apps",
		"bandwidth to sites and apps",
		"function-URL traffic",
		"errors",
		"latency",
	}
	for _, m := range Catalog {
		if m.NotMeasured {
			out = append(out, m.Label)
		}
	}
	return out
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

// zeroTotals returns every catalog metric at zero, those not measured at
// null.
func zeroTotals() map[string]*float64 {
	out := make(map[string]*float64, len(Catalog))
	for _, m := range Catalog {
		if m.NotMeasured {
			out[string(m.Metric)] = nil
		} else {
			out[string(m.Metric)] = new(float64)
		}
	}
	return out
}

// add adds q to totals[metric], making it a number if it was null.
func add(totals map[string]*float64, metric string, q float64) {
	v := totals[metric]
	if v == nil {
		v = new(float64)
		totals[metric] = v
	}
	*v += q
}
