// Package rollup is downsampling into OpenTSDB 2.4's rollup tables: the
// rollup configuration (config.go: the file that OpenTSDB's
// tsd.rollups.config names, in its JSON format, so that the one file
// configures promhbase and a TSD alike), windows and the counter
// aggregate (window.go), rollup cells and their decoder (cells.go), the
// embedded store's packed forms (dense.go: each aggregate a float column
// of package dense; codec.go: the generic form), the Builder of an hour
// (build.go), the progress row that records which hours are built
// (progress.go, hours.go), the background Scheduler (scheduler.go) and
// the build lease (lease.go). The bytes of rollup rows and
// cells are package mapping's (mapping/rollup.go).
//
// # The file
//
//	{
//	  "aggregationIds": {"sum": 0, "count": 1, "max": 2, "min": 3},
//	  "intervals": [
//	    {"table": "tsdb", "preAggregationTable": "tsdb-agg",
//	     "interval": "1m", "rowSpan": "1h", "defaultInterval": true},
//	    {"table": "tsdb-rollup-5m", "preAggregationTable": "tsdb-rollup-agg-5m",
//	     "interval": "5m", "rowSpan": "1d"}
//	  ]
//	}
//
// aggregationIds maps OpenTSDB aggregator names to the ids that start
// rollup qualifiers. Each interval names its rollup table (table), the
// table of pre-aggregated (group-by) points (preAggregationTable), the
// interval ("5m") and the row span of the tables' rows ("1d"). The one
// default interval is the raw data table.
//
// # Rules
//
// [Parse] (and [New]) accept what OpenTSDB's RollupConfig and
// RollupInterval accept, with these differences, each refusing a file that
// a TSD would take but that would misbehave:
//
//   - Aggregation ids are 0..63: ids from [FirstReservedID] (64) to 127
//     are reserved for promhbase's own aggregates (the counter aggregates
//     that rate and increase need across counter resets), which are not
//     listed in the file: a TSD refuses a file naming an aggregator it does
//     not know, and the file is meant for a TSD too. Names are lower-cased
//     as OpenTSDB does, must be unique after that, and are ASCII letters,
//     digits, '_' and '-'.
//   - Exactly one interval is the default (OpenTSDB takes none), and its
//     rowSpan is "1h", the raw table's rows.
//   - Intervals are spelt strictly (see [mapping.ParseRollupInterval] and
//     [mapping.ParseRowSpan]): "5m", never "05m" or "5M". No two intervals
//     have the same length ("60m" and "1h"), and no table serves two
//     intervals (an interval's table and preAggregationTable may be the
//     same, as OpenTSDB allows).
//   - Every index a row can hold stays below 3840 and below OpenTSDB's
//     count of intervals in the span ([mapping.CheckRollupInterval]).
//   - Table names are HBase table names: an optional namespace of ASCII
//     letters, digits and '_' and a colon, then ASCII letters, digits,
//     '_', '-' and '.', not starting with '-' or '.'.
//   - Keys are matched exactly (as Jackson does, not case-insensitively as
//     encoding/json does); a key twice in one object is refused. Unknown
//     keys are ignored, as OpenTSDB's builders ignore them (delaySla of
//     later OpenTSDB versions, for one), and [Config.AppendJSON] does not
//     write them back.
//   - The file is at most [MaxConfigBytes] (1 MiB), checked before
//     decoding.
//
// [Config.AppendJSON] writes a Config back in the same shape, with a
// stable order: aggregation ids by id, intervals as given, each
// interval's keys in the order above (defaultInterval only when true).
// [Default] is promhbase's built-in configuration.
package rollup
