package adapter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// maxNamedRejects bounds how many rejected series a 400 answer names.
const maxNamedRejects = 10

// Reasons a sample is rejected, the values of the rejects metric's label.
const (
	reasonInvalidLabels = "invalid_labels"
	reasonTimestamp     = "timestamp_out_of_range"
	reasonHistogram     = "native_histogram"
	reasonUIDExhausted  = "uid_exhausted"
)

// putter is the part of store.Store the write path uses.
type putter interface {
	Put(ctx context.Context, table string, puts []store.Put) error
}

// RowNoter learns which rows the write path wrote, for example to compact
// them once their hour has ended (compact.Scheduler). NoteRows gets the
// Puts of one request after the store answered, whatever it answered (rows
// of a failed request may have landed). It runs on the request's path: it
// must be cheap, must not block on I/O, and must copy what it keeps, as the
// Puts' memory is reused once it returns.
type RowNoter interface {
	NoteRows(puts []store.Put)
}

// Writer turns decoded remote-write requests into store Puts: one Put per
// row (series and hour) carrying one cell per sample, all Puts of a request
// sent in one call. It is safe for concurrent use.
type Writer struct {
	mapper *mapping.Mapper
	st     putter
	table  string
	family []byte    // the data table's column family, "t"
	pool   sync.Pool // *writeBatch
	noter  RowNoter  // nil: nobody is told
}

// NewWriter returns a Writer into table of st.
func NewWriter(m *mapping.Mapper, st putter, table string) *Writer {
	return &Writer{mapper: m, st: st, table: table, family: []byte("t")}
}

// SetRowNoter makes the Writer tell n the rows of every request it writes.
// Call it before the Writer is first used.
func (w *Writer) SetRowNoter(n RowNoter) { w.noter = n }

// writeResult says what a write did.
type writeResult struct {
	Samples  int            // samples acknowledged by the store
	Rejected map[string]int // samples rejected, by reason
}

// rejectError is a partial write: the valid series were written, these
// were not and never will be.
type rejectError struct {
	count int
	named []string
}

func (e *rejectError) Error() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d samples rejected: %s", e.count, strings.Join(e.named, "; "))
	if more := e.count - len(e.named); len(e.named) == maxNamedRejects && more > 0 {
		fmt.Fprintf(&sb, "; and more")
	}
	return sb.String()
}

// writeBatch holds the reusable buffers of one request.
type writeBatch struct {
	series wireSeries
	puts   []store.Put
	starts []int // index in cells of each put's first cell
	cells  []store.Cell
	arena  arena
	rej    *rejectError
	reject map[string]int
	cache  mapping.SeriesCacheReader
	missed []missedSeries
}

func (b *writeBatch) reset() {
	b.puts = b.puts[:0]
	b.starts = b.starts[:0]
	b.cells = b.cells[:0]
	b.arena.reset()
	b.rej = nil
	clear(b.reject)
	clear(b.missed)
	b.missed = b.missed[:0]
}

func (b *writeBatch) rejectSeries(reason string, n int, msg string) {
	if b.rej == nil {
		b.rej = &rejectError{}
	}
	b.rej.count += n
	if len(b.rej.named) < maxNamedRejects {
		b.rej.named = append(b.rej.named, msg)
	}
	b.reject[reason] += n
}

// Write stores the series of a decoded WriteRequest body. It returns only
// after the store acknowledged every Put. A *rejectError means the valid
// series were written and the others can never be; any other error means
// nothing may be assumed written and the request can be retried.
func (w *Writer) Write(ctx context.Context, body []byte) (writeResult, error) {
	b, _ := w.pool.Get().(*writeBatch)
	if b == nil {
		b = &writeBatch{reject: map[string]int{}}
	}
	// A failed Put may leave RPCs queued in the store's client that still
	// read the batch's buffers: such a batch is not reused.
	reuse := true
	defer func() {
		if reuse {
			b.reset()
			w.pool.Put(b)
		}
	}()
	// Pass 1: series in the cache become Puts; the others are noted.
	b.cache = w.mapper.CacheReader()
	ordinal := -1
	err := parseWriteRequest(body, &b.series, func(s *wireSeries) error {
		ordinal++
		return w.addSeries(b, s, ordinal)
	})
	b.cache.Release()
	if err != nil {
		return writeResult{}, err
	}
	// New series: resolve them concurrently (UID lookups and assignments
	// are round trips to the store), then pass 2 adds their Puts.
	if len(b.missed) > 0 {
		if err := w.resolveMissed(ctx, b); err != nil {
			return writeResult{}, err
		}
		ordinal, next := -1, 0
		err := parseWriteRequest(body, &b.series, func(s *wireSeries) error {
			ordinal++
			if next >= len(b.missed) || b.missed[next].ordinal != ordinal {
				return nil
			}
			m := &b.missed[next]
			next++
			if m.err == nil {
				w.addSamples(b, s, m.series)
			}
			return nil
		})
		if err != nil {
			return writeResult{}, err
		}
	}
	for i := range b.puts {
		end := len(b.cells)
		if i+1 < len(b.starts) {
			end = b.starts[i+1]
		}
		b.puts[i].Cells = b.cells[b.starts[i]:end:end]
	}
	res := writeResult{}
	if len(b.puts) > 0 {
		err := w.st.Put(ctx, w.table, b.puts)
		reuse = err == nil
		if w.noter != nil {
			w.noter.NoteRows(b.puts)
		}
		if err != nil {
			return res, fmt.Errorf("write %d rows: %w", len(b.puts), err)
		}
	}
	res.Samples = len(b.cells)
	if len(b.reject) > 0 {
		res.Rejected = make(map[string]int, len(b.reject))
		for k, v := range b.reject {
			res.Rejected[k] = v
		}
	}
	if b.rej != nil {
		rej := *b.rej
		return res, &rej
	}
	return res, nil
}

// resolveConcurrency bounds the series of one request resolved at once.
const resolveConcurrency = 32

// missedSeries is a series of a request that was not in the series cache.
type missedSeries struct {
	ordinal int // position in the request
	key     []byte
	labels  []mapping.Label
	samples int
	series  mapping.Series
	err     error
}

// addSeries handles one series of pass 1: cached series get their Puts,
// others are copied into b.missed.
func (w *Writer) addSeries(b *writeBatch, s *wireSeries, ordinal int) error {
	if s.Histograms > 0 {
		b.rejectSeries(reasonHistogram, s.Histograms, fmt.Sprintf("%s: native histograms are not supported", formatSeries(s)))
	}
	if len(s.Samples) == 0 {
		return nil
	}
	if series, ok := b.cache.Get(s.Key); ok {
		w.addSamples(b, s, series)
		return nil
	}
	// A copy: s.Key may live in a buffer reused by the next series.
	m := missedSeries{ordinal: ordinal, key: bytes.Clone(s.Key), samples: len(s.Samples)}
	lbls, err := (&wireSeries{Key: m.key}).Labels()
	if err != nil {
		return err
	}
	m.labels = slices.Clone(lbls)
	b.missed = append(b.missed, m)
	return nil
}

// resolveMissed resolves the missed series with resolveConcurrency
// workers. Series that can never be stored are rejected; any other error
// fails the request.
func (w *Writer) resolveMissed(ctx context.Context, b *writeBatch) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(resolveConcurrency, len(b.missed)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(b.missed) {
					return
				}
				m := &b.missed[i]
				m.series, m.err = w.mapper.Resolve(ctx, m.key, m.labels)
			}
		}()
	}
	wg.Wait()
	for i := range b.missed {
		m := &b.missed[i]
		switch {
		case m.err == nil:
		case errors.Is(m.err, mapping.ErrInvalidSeries):
			b.rejectSeries(reasonInvalidLabels, m.samples, m.err.Error())
		case errors.Is(m.err, mapping.ErrUIDExhausted):
			b.rejectSeries(reasonUIDExhausted, m.samples, fmt.Sprintf("%s: %v", mapping.FormatLabels(m.labels), m.err))
		default:
			return m.err
		}
	}
	return nil
}

// addSamples adds the Puts of one series: one per hour it has samples in.
func (w *Writer) addSamples(b *writeBatch, s *wireSeries, series mapping.Series) {
	keyLen := w.mapper.Layout().SaltWidth + len(series.Metric) + 4 + len(series.Tags)
	curBase := int64(-1)
	badTS := 0
	var firstBad int64
	for _, smp := range s.Samples {
		if smp.T < 0 || smp.T/1000 > math.MaxUint32 {
			if badTS == 0 {
				firstBad = smp.T
			}
			badTS++
			continue
		}
		sec := smp.T / 1000
		base := sec - sec%3600
		if base != curBase {
			curBase = base
			key := b.arena.alloc(keyLen)
			key = w.mapper.AppendRowKey(key, series, uint32(base))
			b.starts = append(b.starts, len(b.cells))
			b.puts = append(b.puts, store.Put{Row: key})
		}
		buf := b.arena.alloc(12)
		buf, flags := mapping.AppendValue(buf[:4], smp.V)
		mapping.AppendMsQualifier(buf[:0], uint32(smp.T-base*1000), flags)
		b.cells = append(b.cells, store.Cell{Family: w.family, Qualifier: buf[:4:4], Value: buf[4:len(buf):len(buf)]})
	}
	if badTS > 0 {
		b.rejectSeries(reasonTimestamp, badTS, fmt.Sprintf("%s: %d samples with timestamps outside 0..%d ms (first %d)",
			formatSeries(s), badTS, int64(math.MaxUint32)*1000+999, firstBad))
	}
}

// formatSeries renders a series' labels for an error message.
func formatSeries(s *wireSeries) string {
	lbls, err := s.Labels()
	if err != nil {
		return fmt.Sprintf("series with undecodable labels (%v)", err)
	}
	return mapping.FormatLabels(lbls)
}

// arena hands out byte slices from large chunks that are never reallocated,
// so slices stay valid until reset. Chunks are kept for reuse.
type arena struct {
	chunks [][]byte
	cur    int
}

const arenaChunk = 256 << 10

// alloc returns an empty slice with capacity >= n.
func (a *arena) alloc(n int) []byte {
	for a.cur < len(a.chunks) {
		c := a.chunks[a.cur]
		if cap(c)-len(c) >= n {
			start := len(c)
			a.chunks[a.cur] = c[:start+n]
			return c[start : start : start+n]
		}
		a.cur++
	}
	size := arenaChunk
	if n > size {
		size = n
	}
	c := make([]byte, n, size)
	a.chunks = append(a.chunks, c)
	return c[0:0:n]
}

func (a *arena) reset() {
	for i := range a.chunks {
		a.chunks[i] = a.chunks[i][:0]
	}
	a.cur = 0
}
