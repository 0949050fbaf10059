// Package cells merges the cells of one stored data row into its samples,
// with OpenTSDB's rules: every qualifier form a TSD writes, one sample per
// timestamp, the newest cell version winning. Merger decodes to values
// for queries; RawMerger keeps each sample's exact bytes, for compaction.
//
// A settled row of the embedded store comes as one packed cell, decoded
// through package dense.
package cells
