package uid

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// HeadroomWarnRatio is the share of a kind's UIDs in use past which the
// UID table logs a warning (once per process and kind): tag-value UIDs in
// particular are never given back, and once they run out every new label
// value is refused.
const HeadroomWarnRatio = 0.9

// headroom tracks how many UIDs of each kind are assigned, as the counter
// row of tsdb-uid says (the highest value this process has seen: other
// writers assign too).
type headroom struct {
	counters [NumKinds]atomic.Int64
	warned   [NumKinds]atomic.Bool
	logger   *slog.Logger
}

// Capacity returns how many UIDs kind can have: 2^(8×width) - 1 (UID 0 is
// never assigned).
func (u *UIDs) Capacity(kind Kind) int64 {
	if w := u.widths[kind]; w < 8 {
		return int64(1)<<(8*w) - 1
	}
	return math.MaxInt64
}

// Headroom returns how many UIDs of kind are left to assign, as far as
// this process knows (see RefreshCounters).
func (u *UIDs) Headroom(kind Kind) int64 {
	return max(u.Capacity(kind)-u.headroom.counters[kind].Load(), 0)
}

// noteCounter records a value of kind's counter (from an increment or a
// read of the counter row) and warns once when the kind passes
// HeadroomWarnRatio of its capacity.
func (u *UIDs) noteCounter(kind Kind, id int64) {
	c := &u.headroom.counters[kind]
	for {
		old := c.Load()
		if id <= old || c.CompareAndSwap(old, id) {
			break
		}
	}
	capacity := u.Capacity(kind)
	if float64(min(id, capacity)) < HeadroomWarnRatio*float64(capacity) || u.headroom.logger == nil {
		return
	}
	if u.headroom.warned[kind].CompareAndSwap(false, true) {
		u.headroom.logger.Warn("uids running out: new names of this kind will be refused once none are left; widen the kind (a new table) or stop the label values that keep growing",
			"kind", kind.String(), "assigned", min(id, capacity), "capacity", capacity, "width", u.widths[kind])
	}
}

// RefreshCounters reads the counter row of tsdb-uid, so that Headroom
// counts the UIDs other writers assigned too. serve calls it at start and
// then periodically.
func (u *UIDs) RefreshCounters(ctx context.Context) error {
	row, err := u.st.Get(ctx, u.table, maxIDRow, FamilyID)
	if err != nil {
		return fmt.Errorf("read uid counters: %w", err)
	}
	for _, c := range row.Cells {
		kind, err := ParseKind(string(c.Qualifier))
		if err != nil || len(c.Value) != 8 {
			continue
		}
		u.noteCounter(kind, int64(binary.BigEndian.Uint64(c.Value)))
	}
	return nil
}

// headroomCollector exports the headroom of each kind.
func (u *UIDs) headroomCollector() prometheus.Collector {
	return headroomCollector{u: u, desc: prometheus.NewDesc("promhbase_uid_headroom",
		"UIDs of the kind left to assign (capacity of its width minus the counter in tsdb-uid, as this process last saw it). Tag-value UIDs are never given back.",
		[]string{"kind"}, nil),
		ratio: prometheus.NewDesc("promhbase_uid_used_ratio", "Share of the kind's UIDs assigned; promhbase warns in its log past 0.9.", []string{"kind"}, nil)}
}

type headroomCollector struct {
	u           *UIDs
	desc, ratio *prometheus.Desc
}

func (c headroomCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc; ch <- c.ratio }

func (c headroomCollector) Collect(ch chan<- prometheus.Metric) {
	for k := range NumKinds {
		capacity := c.u.Capacity(k)
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(c.u.Headroom(k)), k.String())
		ch <- prometheus.MustNewConstMetric(c.ratio, prometheus.GaugeValue, float64(capacity-c.u.Headroom(k))/float64(capacity), k.String())
	}
}
