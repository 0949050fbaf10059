// Package ingest is the write path from a decoded remote-write request to
// store mutations: series resolution (package series) with UID misses
// resolved a batch at a time, the limits (package limits), float samples
// and native histograms as data cells of hour rows (the row builder of
// package mapping), exemplars in their slots, metric metadata (package
// metadata) and the series index (package index). A write is acknowledged
// only after the store acknowledged every Put; HTTP lives in package
// adapter.
//
// HA pairs (ha.go): with an HADeduper, the first series' cluster and
// replica labels decide the request (package hatracker): a replica that is
// not elected is answered 202 and nothing is stored; an elected one's
// series lose the replica label. Samples older than the retention time are
// dropped and counted.
package ingest
