package embedded

import (
	"sync/atomic"

	"github.com/promhbase/promhbase/internal/hashset"
	"github.com/promhbase/promhbase/store/embedded/memrows"
)

// The size at which the active buffer is flushed: its budget, or more
// while its rows continue those of the buffer before it.
//
// A flush writes each row of the buffer as a run of its cells, and
// compactions merge a row's runs later: a row's cost is paid per flush,
// a cell's per cell. With the budget of 32 MiB and a few hundred thousand
// series, a buffer holds about one cell a row when it is flushed (a row's
// key and bookkeeping take about 110 bytes, a cell about 25), so most of
// the flush and the merges after it are rows' costs. When the buffer's
// rows are mostly rows the buffer before it held too (a steady set of
// series, writing into the same hour), a larger buffer gives each row
// more cells a flush for the same work a row; when they are mostly new
// (series seen for the first time, or more series than a buffer holds
// rows), it gives nothing but memory, and the buffer keeps its budget.

const (
	// growFactor is how many times its budget the buffer may grow to.
	growFactor = 4
	// sampleMask picks the rows whose continuation is looked at: those
	// whose hash has these bits clear, one in eight, so that a buffer of
	// a million new rows pays for a hundred thousand lookups, not a
	// million (the share is the same).
	sampleMask = 7
	// minRowsToGrow is how many sampled rows the buffer adds before the
	// share of continued ones counts.
	minRowsToGrow = 128
)

// sampled reports whether the row of hash h is one whose continuation
// counts.
func sampled(h uint64) bool { return h&sampleMask == 0 }

// generation is the accounting of one active buffer (every table's
// memrows.Rows of it): its bytes, the sampled rows its puts added and how
// many of those the buffer before it held too.
type generation struct {
	bytes     atomic.Int64
	rows      atomic.Int64
	continued atomic.Int64
	// prev is the set of the hashes of the sampled rows of the buffer
	// before it; nil until the flush that swapped that buffer out has
	// made it.
	prev atomic.Pointer[hashset.Set]
}

// limit returns the size at which the generation's buffer is flushed:
// grown (at least budget) once it has added minRowsToGrow rows, at least
// half of them continued, budget otherwise.
func (g *generation) limit(budget, grown int64) int64 {
	if n := g.rows.Load(); n >= minRowsToGrow && 2*g.continued.Load() >= n {
		return max(budget, grown)
	}
	return budget
}

// grownLimit returns the size a buffer of budget may grow to:
// growFactor times it, but no more than half of the block cache its
// buffers reserve their memory from (cacheBytes; 0 for none), so that
// two buffers, the active and the flushing one, leave the cache some
// room.
func grownLimit(budget, cacheBytes int64) int64 {
	grown := growFactor * budget
	if cacheBytes > 0 {
		grown = min(grown, cacheBytes/2)
	}
	return max(budget, grown)
}

// added counts sampled rows new to the buffer, continued of them held by
// the buffer before it.
func (g *generation) added(rows, continued int64) {
	if rows > 0 {
		g.rows.Add(rows)
		g.continued.Add(continued)
	}
}

// newHashSet returns the set of the sampled rows' hashes of bufs.
func newHashSet(bufs map[string]*memrows.Rows) *hashset.Set {
	s := new(hashset.Set)
	for _, m := range bufs {
		m.RLock()
		m.EachHash(func(h uint64) {
			if sampled(h) {
				s.Add(h)
			}
		})
		m.RUnlock()
	}
	return s
}
