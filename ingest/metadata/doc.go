// Package metadata keeps Prometheus metric metadata (type, help, unit) as
// OpenTSDB's UIDMeta JSON in the metric's reverse row of tsdb-uid, where
// a TSD's /api/uid/uidmeta shows it, writing a cell only when it changes.
package metadata
