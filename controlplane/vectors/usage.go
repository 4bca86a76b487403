package vectors

import (
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/metering"
)

// The metrics the area records (the lead may move them to metering's list).
const (
	// MetricOperations counts upsert, query, delete and index requests.
	MetricOperations metering.Metric = "vector_operations"
	// MetricQueriedDimensions counts, as Vectorize bills, the dimensions of
	// each query times the vectors it ranked.
	MetricQueriedDimensions metering.Metric = "vector_queried_dimensions"
	// MetricStored is each collection's live vector count, recorded once
	// per UTC day.
	MetricStored metering.Metric = "vectors_stored"
)

// newUsage gathers the area's counts in memory and hands them to the meter
// at each flush (metering.Aggregator: one exactly-once batch per flush);
// nil, counting nothing, without a meter.
func newUsage(m metering.Sink, clk clock.Clock) *metering.Aggregator {
	if m == nil {
		return nil
	}
	return metering.NewAggregator(m, clk)
}
