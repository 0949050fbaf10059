// Package gctune bounds how far Go's heap may grow over its live data
// before a collection, in bytes as well as in percent.
//
// GOGC sets the headroom as a share of the live heap: 75 % of 40 MB is
// 30 MB, but 75 % of the 300 MB that promhbase's caches hold at a million
// active series is 225 MB of garbage kept for nothing. promhbase's large
// caches hold no pointers, so a collection costs little more when they
// are large; the cost of collecting is in the pointers and the allocation
// rate, which do not grow with the caches. A Tuner keeps GOGC's percentage
// while the headroom it gives stays under a byte bound, and lowers the
// percentage when the live heap grows so large that it would not; and,
// with a lower byte bound, raises it while the live heap is so small that
// the percentage would collect every few megabytes (a process just
// started, whose first requests then pay for collection after
// collection).
//
// DefaultHeadroom is the byte bound when none is configured: 16 MiB a core
// of GOMAXPROCS, from 32 to 256 MiB.
package gctune

import (
	"math"
	"math/bits"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// liveMetric is the heap that survived the last collection.
const liveMetric = "/gc/heap/live:bytes"

// minPercent is the lowest GOGC a Tuner sets, however large the heap.
const minPercent = 10

// Percent returns the GOGC for a live heap of live bytes: gogc, lowered
// (not below minPercent, or gogc when that is lower) when the headroom it
// gives would be more than maxHeadroom bytes, raised when it would be less
// than minHeadroom (at most maxHeadroom). 0 turns a bound off; so does a
// gogc of 0 or less, or nothing live yet.
func Percent(gogc int, minHeadroom, maxHeadroom, live uint64) int {
	if gogc <= 0 || live == 0 {
		return gogc
	}
	if maxHeadroom > 0 {
		// The percentage that gives maxHeadroom.
		if p := ratio(maxHeadroom, live, false); p < uint64(gogc) {
			return max(int(p), min(minPercent, gogc))
		}
		minHeadroom = min(minHeadroom, maxHeadroom)
	}
	if minHeadroom == 0 {
		return gogc
	}
	// q = ⌈minHeadroom × 100 / live⌉, the percentage that gives
	// minHeadroom, but no more than keeps the runtime's own floor,
	// runtimeHeapMinimum × q/100, within live + minHeadroom.
	q := ratio(minHeadroom, live, true)
	if q <= uint64(gogc) {
		return gogc
	}
	total := live + minHeadroom
	if total < live {
		total = math.MaxUint64
	}
	q = min(q, ratio(total, runtimeHeapMinimum, false), math.MaxInt32)
	return max(gogc, int(q))
}

// ratio returns n × 100 / d, rounded up when up, saturating at
// math.MaxUint64 (computed in 128 bits).
func ratio(n, d uint64, up bool) uint64 {
	hi, lo := bits.Mul64(n, 100)
	if hi >= d {
		return math.MaxUint64
	}
	q, r := bits.Div64(hi, lo, d)
	if up && r > 0 && q < math.MaxUint64 {
		q++
	}
	return q
}

// Bounds of DefaultHeadroom.
const (
	headroomPerCore = 16 << 20
	headroomFloor   = 32 << 20
	headroomCeiling = 256 << 20
)

// DefaultHeadroom returns the byte headroom used for both bounds when
// none is configured, for a process running on procs cores
// (GOMAXPROCS): 16 MiB a core, at least 32 MiB and at most 256 MiB. The
// garbage a server makes grows with the cores writing it, and a fixed
// headroom collects that much more often: on a 16-core machine, with
// the server on 8 cores, 128 MiB took 14 % more remote-write samples/s
// than 32 MiB, with 15 % less CPU time per sample and about 105 MB more
// peak RSS (docs/bench/write-scaling.md).
func DefaultHeadroom(procs int) uint64 {
	return min(max(uint64(max(procs, 0))*headroomPerCore, headroomFloor), headroomCeiling)
}

// runtimeHeapMinimum is the heap the Go runtime collects at when the
// live heap is tiny, scaled by GOGC/100.
const runtimeHeapMinimum = 4 << 20

// Tuner adjusts GOGC after every collection.
type Tuner struct {
	gogc                     int
	minHeadroom, maxHeadroom uint64
	percent                  atomic.Int64 // the GOGC last set

	mu      sync.Mutex // held by adjust and Stop
	stopped bool
	sample  [1]metrics.Sample
}

// sentinel is garbage whose finalizer runs after each collection and arms
// the next one. It holds a pointer, so the tiny allocator (pointer-free
// objects only) never batches it with others.
type sentinel struct {
	t *Tuner
}

// Start sets GOGC to gogc and, when a bound is set, re-checks after every
// collection that the headroom it gives is within [minHeadroom,
// maxHeadroom] bytes (see Percent). Stop ends it.
func Start(gogc int, minHeadroom, maxHeadroom uint64) *Tuner {
	t := &Tuner{gogc: gogc, minHeadroom: minHeadroom, maxHeadroom: maxHeadroom}
	t.sample[0].Name = liveMetric
	t.set(gogc)
	if (minHeadroom > 0 || maxHeadroom > 0) && gogc > 0 {
		t.arm()
	}
	return t
}

// Percent returns the GOGC the tuner set last.
func (t *Tuner) Percent() int { return int(t.percent.Load()) }

// Stop ends the adjustments: once it returns, the tuner no longer sets
// GOGC, which keeps its last value.
func (t *Tuner) Stop() {
	t.mu.Lock()
	t.stopped = true
	t.mu.Unlock()
}

func (t *Tuner) arm() {
	runtime.SetFinalizer(&sentinel{t: t}, func(s *sentinel) {
		if s.t.adjust() {
			s.t.arm()
		}
	})
}

// adjust sets GOGC for the live heap the last collection left; false
// when the tuner was stopped.
func (t *Tuner) adjust() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	metrics.Read(t.sample[:])
	live := uint64(0)
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		live = t.sample[0].Value.Uint64()
	}
	if p := Percent(t.gogc, t.minHeadroom, t.maxHeadroom, live); int64(p) != t.percent.Load() {
		t.set(p)
	}
	return true
}

func (t *Tuner) set(p int) {
	t.percent.Store(int64(p))
	debug.SetGCPercent(p)
}
