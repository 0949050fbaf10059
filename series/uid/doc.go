// Package uid maps metric names, tag names and tag values to OpenTSDB's
// UIDs and back, in the tsdb-uid table, as a TSD does: counter row 0x00,
// reverse mapping written before the forward one, both with check-and-put,
// so promhbase processes and TSDs can assign UIDs side by side. It owns
// the UID caches, batched assignment for many new names at once, the
// headroom of each kind's UID space, the metric-name listings of the
// table, and `uid fsck`.
//
// Increments of the counter row are combined across concurrent requests.
// Listing is the metric-name listing that queries plan with.
package uid
