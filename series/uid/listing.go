package uid

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// NewListing returns the Listing of UID table table in st, whose UIDs u
// assigns (its metric generation tells when a cached list is stale).
func NewListing(st interface {
	Get(ctx context.Context, table string, row []byte, family string) (store.Row, error)
	Scan(ctx context.Context, req store.ScanRequest) store.Scanner
}, table string, u *UIDs) *Listing {
	return &Listing{st: st, table: table, uids: u, metricWidth: u.Width(KindMetric)}
}

// Listing answers what query planning asks of a UID table's names as a
// whole: every metric name, and whether a tag name sorts before __name__.
// Its answers are cached for the age each call allows. It is safe for
// concurrent use.
type Listing struct {
	st interface {
		Get(ctx context.Context, table string, row []byte, family string) (store.Row, error)
		Scan(ctx context.Context, req store.ScanRequest) store.Scanner
	}
	table       string
	uids        *UIDs
	metricWidth int

	mu        sync.Mutex
	names     []string
	namesRead time.Time
	namesGen  uint64 // the UIDs' metric generation when names was read

	early     bool      // a tag name sorts before __name__
	earlyRead time.Time // when early was read; zero: never
}

// MetricNames lists the metric names of the UID table (its reverse rows
// of metric UIDs, see uid.MetricNames). It reuses the last list for maxAge
// unless this process has learnt a metric name since (writes through it
// are seen at once; names assigned by other processes within maxAge).
func (n *Listing) MetricNames(ctx context.Context, maxAge time.Duration) ([]string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	gen := n.uids.MetricGeneration()
	if n.names != nil && gen == n.namesGen && time.Since(n.namesRead) < maxAge {
		return n.names, nil
	}
	names, err := MetricNames(ctx, n.st, n.table, n.metricWidth)
	if err != nil {
		return nil, err
	}
	n.names, n.namesRead, n.namesGen = names, time.Now(), gen
	return names, nil
}

// EarlyTagNames reports whether a tag name of the UID table sorts before
// __name__ (an upper-case name, or "__a"...): a series that has one sorts
// before every series whose first label is __name__, so a query's series
// are then not in label order metric by metric. The tag names' UIDs run
// from 1 to the tagk counter: their reverse rows are read (with those of
// the other kinds' UIDs in that range, as many at most), and the answer is
// reused for maxAge.
func (n *Listing) EarlyTagNames(ctx context.Context, maxAge time.Duration) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.earlyRead.IsZero() && time.Since(n.earlyRead) < maxAge {
		return n.early, nil
	}
	var maxID uint64
	sc := n.st.Scan(ctx, store.ScanRequest{Table: n.table, Start: []byte{0}, Stop: []byte{0, 0}, Family: FamilyID})
	for sc.Next() {
		for _, c := range sc.Row().Cells {
			if string(c.Qualifier) == KindTagK.Qualifier() && len(c.Value) == 8 {
				maxID = binary.BigEndian.Uint64(c.Value)
			}
		}
	}
	err := sc.Err()
	sc.Close()
	if err != nil {
		return false, fmt.Errorf("read the uid counters of %s: %w", n.table, err)
	}
	early := false
	if w := n.uids.Width(KindTagK); maxID > 0 {
		var full [8]byte
		binary.BigEndian.PutUint64(full[:], 1)
		start := bytes.Clone(full[8-w:])
		binary.BigEndian.PutUint64(full[:], maxID)
		stop := append(bytes.Clone(full[8-w:]), 0) // just after maxID's row
		sc := n.st.Scan(ctx, store.ScanRequest{Table: n.table, Start: start, Stop: stop, Family: FamilyName})
		for sc.Next() && !early {
			for _, c := range sc.Row().Cells {
				if string(c.Qualifier) == KindTagK.Qualifier() && mapping.NameFromStored(c.Value) < mapping.MetricLabel {
					early = true
				}
			}
		}
		err := sc.Err()
		sc.Close()
		if err != nil {
			return false, fmt.Errorf("list the tag names of %s: %w", n.table, err)
		}
	}
	n.early, n.earlyRead = early, time.Now()
	return early, nil
}
