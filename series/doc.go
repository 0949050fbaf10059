// Package series turns Prometheus label sets into OpenTSDB series (metric
// UID, sorted tag pairs, salt bucket) and row keys back into label sets,
// through package uid, with bounded caches in both directions. A Series
// carries the index marks the write path uses to write each series' index
// cells once per day.
package series
