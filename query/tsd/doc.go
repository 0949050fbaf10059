// Package tsd evaluates OpenTSDB 2.4.1's /api/query as a TSD does, over
// the same tables: the rows of a metric in the hours a TSD scans, the
// series kept by its filters, grouped by the group-by tags, each series
// downsampled and turned into a rate, then aggregated across its group
// with the aggregator's interpolation. The answer carries each point's
// type as the TSD decides it (an integer only while every value the
// aggregation holds is one), so that it serializes byte for byte as a
// TSD's (adapter/opentsdb).
//
// The order of operations and the quirks it keeps are a TSD's, not its
// documentation's (../shared/notes/opentsdb-api.md §4.6 and §7): rate
// per series before the aggregation, against (0, 0) for its first
// point; interpolation in integer arithmetic when both ends are
// integers; buckets aligned on the Unix epoch; points outside the query
// dropped only when written.
//
// Not evaluated yet (the query is refused with a clear error before it
// gets here): "all" and calendar buckets, rollup and pre-aggregate
// tables, tsuids.
package tsd
