// Package cachelog keeps the results cache's invalidations in the store,
// so that promhbase replicas over the same HBase tables tell each other
// of the old data they change: a replica that writes samples older than
// the cache's offset, deletes series or builds a rollup hour appends what
// changed before it acknowledges the change; every replica reads what the
// others appended every poll interval and drops the kept steps that read
// it. A replica then serves a stale step for at most one poll interval
// after the change was acknowledged.
//
// The log lives in the series index table (promhbase's own, family "i"),
// in rows OpenTSDB never reads and no index reader scans:
//
//	row   'X' ‖ ms (8 bytes, big-endian: the writer's clock when it appended)
//	          ‖ writer (8 bytes: random, one per process)
//	          ‖ seq (4 bytes, big-endian: the writer's count of its appends)
//	i:e   kind (1 byte: 0 samples, 1 rollups) ‖ mint ‖ maxt (8 bytes each,
//	      big-endian two's complement, Unix ms, inclusive)
//
// A poll scans the rows of the last Window (clocks of replicas may differ
// by up to Window minus two poll intervals and AppendTimeout: a row's time
// is taken before its Put) and returns the ones it has not
// returned before that another writer appended. Rows older than Keep are
// deleted by whichever replica polls.
package cachelog

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// Kind says what an Event changed.
type Kind byte

const (
	// Samples: samples in [Mint, Maxt] were written or deleted.
	Samples Kind = 0
	// Rollups: the rollup windows in [Mint, Maxt] were built again.
	Rollups Kind = 1
)

// Event is one change of old data.
type Event struct {
	Kind       Kind
	Mint, Maxt int64 // Unix ms, inclusive
}

// rowPrefix is the first byte of the log's rows in the index table.
const rowPrefix byte = 'X'

// keyLen is the length of a log row's key; valueLen of its cell's value.
const (
	keyLen   = 1 + 8 + 8 + 4
	valueLen = 1 + 8 + 8
)

var qualifier = []byte("e")

// ErrCorrupt is wrapped by the errors of rows that do not decode.
var ErrCorrupt = errors.New("corrupt results cache log row")

// AppendKey appends the key of the row of writer's seq-th append at ms.
func AppendKey(dst []byte, ms int64, writer [8]byte, seq uint32) []byte {
	dst = append(dst, rowPrefix)
	dst = binary.BigEndian.AppendUint64(dst, uint64(ms))
	dst = append(dst, writer[:]...)
	return binary.BigEndian.AppendUint32(dst, seq)
}

// AppendValue appends the cell value of ev.
func AppendValue(dst []byte, ev Event) []byte {
	dst = append(dst, byte(ev.Kind))
	dst = binary.BigEndian.AppendUint64(dst, uint64(ev.Mint))
	return binary.BigEndian.AppendUint64(dst, uint64(ev.Maxt))
}

// ParseKey returns the time and writer of a log row's key.
func ParseKey(k []byte) (ms int64, writer [8]byte, err error) {
	if len(k) != keyLen || k[0] != rowPrefix {
		return 0, writer, fmt.Errorf("%w: key of %d bytes %x, want %d starting %q", ErrCorrupt, len(k), k, keyLen, rowPrefix)
	}
	copy(writer[:], k[9:17])
	return int64(binary.BigEndian.Uint64(k[1:9])), writer, nil
}

// ParseValue returns the event of a log row's cell value.
func ParseValue(v []byte) (Event, error) {
	if len(v) != valueLen || v[0] > byte(Rollups) {
		return Event{}, fmt.Errorf("%w: value of %d bytes %x, want %d with kind 0 or 1", ErrCorrupt, len(v), v, valueLen)
	}
	ev := Event{Kind: Kind(v[0]), Mint: int64(binary.BigEndian.Uint64(v[1:9])), Maxt: int64(binary.BigEndian.Uint64(v[9:17]))}
	if ev.Mint > ev.Maxt {
		return Event{}, fmt.Errorf("%w: mint %d after maxt %d", ErrCorrupt, ev.Mint, ev.Maxt)
	}
	return ev, nil
}

// Options configures a Log.
type Options struct {
	// Table is the series index table.
	Table string
	// Window is how far back a poll looks (default 1m): more than two poll
	// intervals, AppendTimeout and the clock difference of any two
	// replicas.
	Window time.Duration
	// Keep is how long rows stay before a poll deletes them (default 1h;
	// at least Window).
	Keep time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Log is one tenant's log of invalidations in the store. It is safe for
// concurrent use.
type Log struct {
	st     store.Store
	opts   Options
	writer [8]byte

	mu      sync.Mutex
	seq     uint32
	next    *batch // the batch appends join; nil when none is open
	writing bool   // an appender is writing batches

	pollMu    sync.Mutex
	seen      map[string]int64 // keys a poll returned or skipped, by their ms
	lastTrim  time.Time
	trimEvery time.Duration
}

// batch is the events appended while the previous batch was written.
type batch struct {
	evs  []Event
	done chan struct{}
	err  error
}

// New returns the log in opts.Table of st, writing as a new writer.
func New(st store.Store, opts Options) *Log {
	if opts.Window <= 0 {
		opts.Window = time.Minute
	}
	if opts.Keep <= 0 {
		opts.Keep = time.Hour
	}
	opts.Keep = max(opts.Keep, opts.Window)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	l := &Log{st: st, opts: opts, seen: map[string]int64{}, trimEvery: opts.Window}
	_, _ = rand.Read(l.writer[:]) // crypto/rand.Read never fails
	return l
}

// Append writes ev to the log and returns once the store acknowledged it.
// Appends that come while another is being written are written together,
// in one Put (overlapping ranges of a kind in one row).
func (l *Log) Append(ctx context.Context, ev Event) error {
	l.mu.Lock()
	b := l.next
	if b == nil {
		b = &batch{done: make(chan struct{})}
		l.next = b
	}
	b.evs = append(b.evs, ev)
	lead := !l.writing
	l.writing = true
	l.mu.Unlock()
	if lead {
		// The batches of others ride on these writes, and later ones
		// may follow: they neither end with this caller's context nor
		// hold it.
		go l.drain(context.WithoutCancel(ctx))
	}
	select {
	case <-b.done:
		return b.err
	case <-ctx.Done():
		select {
		case <-b.done:
			return b.err
		default:
		}
		return fmt.Errorf("append to the results cache log: %w", ctx.Err())
	}
}

// AppendTimeout bounds one batch's Put: a row appended becomes visible at
// most this long after the time in its key.
const AppendTimeout = 10 * time.Second

// drain writes the open batches until none is left.
func (l *Log) drain(ctx context.Context) {
	for {
		l.mu.Lock()
		b := l.next
		l.next = nil
		if b == nil {
			l.writing = false
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
		pctx, cancel := context.WithTimeout(ctx, AppendTimeout)
		b.err = l.put(pctx, b.evs)
		cancel()
		close(b.done)
	}
}

// put writes evs, those of a kind that overlap or touch merged, a row
// each.
func (l *Log) put(ctx context.Context, evs []Event) error {
	slices.SortFunc(evs, func(a, b Event) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Mint, b.Mint))
	})
	merged := evs[:0:0]
	for _, ev := range evs {
		if n := len(merged); n > 0 && merged[n-1].Kind == ev.Kind && (merged[n-1].Maxt == math.MaxInt64 || ev.Mint <= merged[n-1].Maxt+1) {
			merged[n-1].Maxt = max(merged[n-1].Maxt, ev.Maxt)
			continue
		}
		merged = append(merged, ev)
	}
	ms := l.opts.Now().UnixMilli()
	puts := make([]store.Put, 0, len(merged))
	for _, m := range merged {
		l.mu.Lock()
		l.seq++
		seq := l.seq
		l.mu.Unlock()
		puts = append(puts, store.Put{Row: AppendKey(nil, ms, l.writer, seq), Cells: []store.Cell{{
			Family: []byte(mapping.IndexFamily), Qualifier: qualifier, Value: AppendValue(nil, m)}}})
	}
	if err := l.st.Put(ctx, l.opts.Table, puts); err != nil {
		return fmt.Errorf("append to the results cache log in table %q: %w", l.opts.Table, err)
	}
	return nil
}

// Poll returns the events other writers appended that no earlier Poll
// returned, from the rows of the last Window. Rows that do not decode are
// skipped (counted in skipped). Now and then it deletes the rows older
// than Keep.
func (l *Log) Poll(ctx context.Context) (evs []Event, skipped int, err error) {
	l.pollMu.Lock()
	defer l.pollMu.Unlock()
	now := l.opts.Now()
	from := now.Add(-l.opts.Window).UnixMilli()
	sc := l.st.Scan(ctx, store.ScanRequest{Table: l.opts.Table, Start: AppendKey(nil, from, [8]byte{}, 0),
		Stop: []byte{rowPrefix + 1}, Family: mapping.IndexFamily})
	for sc.Next() {
		r := sc.Row()
		if _, ok := l.seen[string(r.Key)]; ok {
			continue
		}
		ms, writer, err := ParseKey(r.Key)
		if err != nil {
			skipped++
			continue
		}
		l.seen[string(r.Key)] = ms
		if writer == l.writer {
			continue // told to the cache when appended
		}
		for _, c := range r.Cells {
			if string(c.Qualifier) != string(qualifier) {
				continue
			}
			ev, err := ParseValue(c.Value)
			if err != nil {
				skipped++
				continue
			}
			evs = append(evs, ev)
		}
	}
	err = sc.Err()
	_ = sc.Close()
	if err != nil {
		return evs, skipped, fmt.Errorf("poll the results cache log in table %q: %w", l.opts.Table, err)
	}
	for k, ms := range l.seen {
		if ms < from {
			delete(l.seen, k)
		}
	}
	if now.Sub(l.lastTrim) >= l.trimEvery {
		l.lastTrim = now
		before := AppendKey(nil, now.Add(-l.opts.Keep).UnixMilli(), [8]byte{}, 0)
		if _, err := store.DeleteRows(ctx, l.st, l.opts.Table, []byte{rowPrefix}, before); err != nil {
			return evs, skipped, fmt.Errorf("trim the results cache log in table %q: %w", l.opts.Table, err)
		}
	}
	return evs, skipped, nil
}
