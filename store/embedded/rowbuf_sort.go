package embedded

import (
	"time"

	"github.com/promhbase/promhbase/store/embedded/memrows"
)

// Ordering new rows ahead of reads. A read (and a flush) needs the rows
// of the active buffer in key order; memrows.Rows.Sorted orders those
// added since its last call and merges them into the rest. Left to the
// reads, the first read after many new rows (a first contact, every
// series' new hour) pays for all of them: 26 ms of a 36 ms read after
// 100 k new series. The sorter orders them in the background when the
// writes pause (Prometheus sends in bursts after each scrape), so the
// reads between bursts find them ordered. It does not order them while
// writes go on: at a million series every flush of the buffer starts it
// anew with every row, and ordering them in steps as they came (each
// step merging every row ordered so far) took 8-13 % off the steady
// writes there.

// presortIdle is how long after the last new row the sorter orders the
// new rows.
const presortIdle = 50 * time.Millisecond

// sorter orders the active buffers' new rows presortIdle after the last
// of them came. A put that adds rows wakes it (sortKick) when it is not
// armed; it arms itself, waits until no row came for presortIdle, then
// disarms and orders them. It returns when stopSort is closed.
func (rb *rowBuffer) sorter() {
	defer close(rb.sorterDone)
	idle := time.NewTimer(presortIdle)
	idle.Stop()
	for {
		select {
		case <-rb.stopSort:
			idle.Stop()
			return
		case <-rb.sortKick:
			rb.sortArmed.Store(true)
			idle.Reset(presortIdle)
		case <-idle.C:
			if wait := presortIdle - time.Duration(time.Now().UnixNano()-rb.lastFresh.Load()); wait > 0 {
				idle.Reset(wait) // rows still coming
				continue
			}
			// Disarmed first: a put adding rows from here on wakes it.
			rb.sortArmed.Store(false)
			rb.presort()
		}
	}
}

// presort orders the new rows of the active buffers.
func (rb *rowBuffer) presort() {
	rb.mu.Lock()
	layers := make([]*memrows.Rows, 0, len(rb.active))
	for _, m := range rb.active {
		layers = append(layers, m)
	}
	rb.mu.Unlock()
	for _, m := range layers {
		m.RLock()
		fresh := m.Len() - m.SortedLen()
		m.RUnlock()
		if fresh > 0 {
			m.Sorted()
			rb.presorts.Add(1)
		}
	}
}
