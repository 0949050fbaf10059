package limits

import (
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// ActiveSeriesWindow is the period of one active-series sketch: the
// estimate covers the current period and the one before it.
const ActiveSeriesWindow = 10 * time.Minute

// sketchBits is log2 of a sketch's registers: 2^16 registers estimate
// with a standard error of 1.04/sqrt(2^16), about 0.4 %, and count exactly
// enough (linear counting) up to 2.5 × 2^16 series, past which the raw
// estimate's bias (a few % around 3 × 2^16) has faded by the default
// limit.
const sketchBits = 16

// Sketch is a HyperLogLog sketch of series (64 KiB: a register is a
// byte, four to a word; a rank is at most 64-sketchBits+1). Add is safe
// for concurrent use and does not allocate. Small, so that many tenants'
// sketches stay in the CPU's caches.
type Sketch struct {
	reg [1 << sketchBits / 4]atomic.Uint32
}

// Add marks the series of hash (series.Series.Hash, a well-mixed 64-bit
// hash of its row key's identity).
func (s *Sketch) Add(hash uint64) {
	idx := hash >> (64 - sketchBits)
	rank := uint32(bits.LeadingZeros64(hash<<sketchBits|1<<(sketchBits-1))) + 1
	w, shift := &s.reg[idx/4], 8*(idx%4)
	for {
		old := w.Load()
		if rank <= old>>shift&0xff || w.CompareAndSwap(old, old&^(0xff<<shift)|rank<<shift) {
			return
		}
	}
}

// rank returns register i.
func (s *Sketch) rank(i int) uint32 { return s.reg[i/4].Load() >> (8 * (i % 4)) & 0xff }

// activeSeries keeps two sketches, the current period's and the one
// before; the estimate is that of their union.
type activeSeries struct {
	cur   atomic.Pointer[Sketch]
	mu    sync.Mutex
	prev  *Sketch
	start time.Time // of cur's period

	cachedAt time.Time
	cached   int64
}

func newActiveSeries(now time.Time) *activeSeries {
	a := &activeSeries{start: now}
	a.prev = &Sketch{}
	a.cur.Store(&Sketch{})
	return a
}

// current returns the sketch of now's period, rotating when a period has
// passed.
func (a *activeSeries) current(now time.Time) *Sketch {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rotate(now)
	return a.cur.Load()
}

// rotate starts a new period when the current one is over; a.mu is held.
func (a *activeSeries) rotate(now time.Time) {
	switch el := now.Sub(a.start); {
	case el >= 2*ActiveSeriesWindow:
		a.prev = &Sketch{}
		a.cur.Store(&Sketch{})
		a.start = now
	case el >= ActiveSeriesWindow:
		a.prev = a.cur.Load()
		a.cur.Store(&Sketch{})
		a.start = a.start.Add(ActiveSeriesWindow)
	default:
		return
	}
	a.cachedAt = time.Time{}
}

// estimate returns the estimated distinct series of both periods,
// recomputed at most once a second.
func (a *activeSeries) estimate(now time.Time) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rotate(now)
	if !a.cachedAt.IsZero() && now.Sub(a.cachedAt) < time.Second {
		return a.cached
	}
	cur := a.cur.Load()
	const m = 1 << sketchBits
	var sum float64
	zeros := 0
	for i := range m {
		r := max(cur.rank(i), a.prev.rank(i))
		if r == 0 {
			zeros++
		}
		sum += math.Ldexp(1, -int(r))
	}
	est := 0.7213 / (1 + 1.079/m) * m * m / sum
	if est <= 2.5*m && zeros > 0 {
		est = m * math.Log(float64(m)/float64(zeros)) // linear counting
	}
	a.cached, a.cachedAt = int64(math.Round(est)), now
	return a.cached
}
