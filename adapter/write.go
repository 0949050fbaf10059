package adapter

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/promhbase/promhbase/index"
	"github.com/promhbase/promhbase/internal/arena"
	"github.com/promhbase/promhbase/internal/wire"
	"github.com/promhbase/promhbase/limits"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// maxNamedRejects bounds how many rejected series a 400 answer names.
const maxNamedRejects = 10

// Reasons a sample is rejected, the values of the rejects metric's label.
const (
	reasonInvalidLabels = "invalid_labels"
	reasonInvalidSeries = "invalid_series"
	reasonTimestamp     = "timestamp_out_of_range"
	reasonHistogram     = "invalid_histogram"
	reasonUIDExhausted  = "uid_exhausted"
)

// rejectReasons lists every reason, for the metric's label values.
func rejectReasons() []string {
	return append([]string{reasonInvalidLabels, reasonInvalidSeries, reasonTimestamp, reasonHistogram, reasonUIDExhausted}, limits.Reasons()...)
}

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

// Writer turns decoded remote-write requests (1.0 and 2.0) into store
// Puts: one Put per row (series and hour) carrying one cell per float
// sample and per native histogram (see mapping.AppendHistogramValue), all
// Puts of a request sent in one call; then the exemplars, one cell per
// exemplar slot in the exemplar table (see mapping.AppendExemplarValue);
// then metric metadata that changed (mapping.Metas). It is safe for
// concurrent use.
type Writer struct {
	mapper *mapping.Mapper
	st     putter
	table  string
	family []byte    // the data table's column family, "t"
	pool   sync.Pool // *writeBatch
	noter  RowNoter  // nil: nobody is told

	exTable string // "": exemplars are not kept
	exSlots int    // exemplar slots per series and hour
	metas   *mapping.Metas
	names   *wire.LabelNames // label-name ids of 2.0 series keys
	indexer SeriesIndexer
	limits  *limits.Limits // nil: only the row key's bound applies
}

// SeriesIndexer keeps the series index of the series the Writer writes
// (index.Writer). It is called before the request's data is written:
// WriteDeferred when the data's durable write follows (the index's puts may
// wait for its fsync), Write when none does. Both return once the store
// took what they wrote; a failure fails the request, which the sender
// retries.
type SeriesIndexer interface {
	Write(ctx context.Context, entries []index.Entry) error
	WriteDeferred(ctx context.Context, entries []index.Entry) error
}

// SetIndexer makes the Writer keep the series index with ix. Call it before
// the Writer is first used.
func (w *Writer) SetIndexer(ix SeriesIndexer) { w.indexer = ix }

// NewWriter returns a Writer into table of st.
func NewWriter(m *mapping.Mapper, st putter, table string) *Writer {
	return &Writer{mapper: m, st: st, table: table, family: []byte("t"), names: wire.NewLabelNames()}
}

// DefaultExemplarSlots is the default number of exemplars kept per series
// and hour: one per 5 s slot, so at least one per scrape at any scrape
// interval of 5 s or more.
const DefaultExemplarSlots = 720

// SetExemplars makes the Writer keep exemplars in table (family e), at most
// slots (1..65535) per series and hour; an empty table drops them (they
// are then not counted as written). Call it before the Writer is first
// used.
func (w *Writer) SetExemplars(table string, slots int) {
	w.exTable, w.exSlots = table, min(max(slots, 1), mapping.MaxExemplarSlots)
}

// SetMetadata makes the Writer keep metric metadata in m. Call it before the
// Writer is first used.
func (w *Writer) SetMetadata(m *mapping.Metas) { w.metas = m }

// SetLimits makes the Writer apply l to every request: the per-series
// limits to series not in the series cache (a 400 naming each, the rest
// written), the series-per-request limit (413), the active-series limit
// (400 for new series) and the new-series rate (429, nothing written).
// Call it before the Writer is first used.
func (w *Writer) SetLimits(l *limits.Limits) { w.limits = l }

// SetRowNoter makes the Writer tell n the rows of every request it writes.
// Call it before the Writer is first used.
func (w *Writer) SetRowNoter(n RowNoter) { w.noter = n }

// writeResult says what a write did.
type writeResult struct {
	Samples    int            // float samples acknowledged by the store
	Histograms int            // native histograms acknowledged
	Exemplars  int            // exemplars acknowledged (distinct slots)
	Rejected   map[string]int // samples and histograms rejected, by reason
}

// rejectError is a partial write: the valid series were written, these
// were not and never will be.
type rejectError struct {
	count int
	named []string
}

func (e *rejectError) Error() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d samples or histograms rejected: %s", e.count, strings.Join(e.named, "; "))
	if more := e.count - len(e.named); len(e.named) == maxNamedRejects && more > 0 {
		fmt.Fprintf(&sb, "; and more")
	}
	return sb.String()
}

// writeBatch holds the reusable buffers of one request.
type writeBatch struct {
	series wire.Series
	v2     wire.V2State
	puts   []store.Put
	starts []int // index in cells of each put's first cell
	cells  []store.Cell
	arena  arena.Arena
	rej    *rejectError
	reject map[string]int
	cache  mapping.SeriesCacheReader
	missed []missedSeries
	// resolveItems is resolveMissed's scratch.
	resolveItems []mapping.ResolveItem
	// labelsOf decodes the labels of missed series (its label slice is
	// reused; each series keeps a copy in labelBuf, one after the other).
	labelsOf wire.Series
	labelBuf []mapping.Label
	sketch   *limits.Sketch // active series; nil without limits

	samples, histograms int
	hist                wire.Histogram
	scratch             []byte
	exPuts              []store.Put
	exCells             []store.Cell
	exSeen              map[string]struct{} // row ‖ slot of this request's exemplars
	metas               []wire.Meta         // 1.0's metadata field
	pendingMeta         []pendingMeta
	index               []index.Entry // series and days not yet indexed
}

// pendingMeta is metadata of a request that is not known to be stored.
type pendingMeta struct {
	family string
	md     mapping.Metadata
}

func (b *writeBatch) reset() {
	b.puts = b.puts[:0]
	b.starts = b.starts[:0]
	b.cells = b.cells[:0]
	b.arena.Reset()
	b.rej = nil
	clear(b.reject)
	clear(b.missed)
	b.missed = b.missed[:0]
	b.labelsOf.ForgetLabels() // no pointers into the last request's keys
	clear(b.labelBuf)
	b.labelBuf = b.labelBuf[:0]
	b.samples, b.histograms = 0, 0
	b.sketch = nil
	b.exPuts = b.exPuts[:0]
	b.exCells = b.exCells[:0]
	clear(b.exSeen)
	b.metas = b.metas[:0]
	b.pendingMeta = b.pendingMeta[:0]
	clear(b.index)
	b.index = b.index[:0]
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

// Write stores the series of a decoded request body: a remote write 1.0
// WriteRequest, or with v2 an io.prometheus.write.v2.Request. It returns
// only after the store acknowledged every Put. A *rejectError means the
// valid series were written and the others can never be; any other error
// means nothing may be assumed written and the request can be retried.
func (w *Writer) Write(ctx context.Context, body []byte, v2 bool) (writeResult, error) {
	b, _ := w.pool.Get().(*writeBatch)
	if b == nil {
		b = &writeBatch{reject: map[string]int{}, exSeen: map[string]struct{}{}}
		b.v2.SetNames(w.names)
	}
	parse := func(metas *[]wire.Meta, fn func(*wire.Series) error) error {
		if v2 {
			return wire.ParseWriteRequestV2(body, &b.v2, &b.series, fn)
		}
		return wire.ParseWriteRequest(body, &b.series, metas, fn)
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
	if w.limits != nil {
		b.sketch = w.limits.Sketch()
	}
	// Pass 1: series in the cache become Puts; the others are noted.
	b.cache = w.mapper.CacheReader()
	ordinal := -1
	err := parse(&b.metas, func(s *wire.Series) error {
		ordinal++
		return w.addSeries(b, s, ordinal, v2)
	})
	b.cache.Release()
	if err != nil {
		return writeResult{}, err
	}
	if w.limits != nil {
		if reason, err := w.checkRequestLimits(b, ordinal+1); err != nil {
			return b.rejectAll(reason), err
		}
	}
	// New series: resolve them concurrently (UID lookups and assignments
	// are round trips to the store), then pass 2 adds their Puts.
	if len(b.missed) > 0 {
		if err := w.resolveMissed(ctx, b); err != nil {
			return writeResult{}, err
		}
		ordinal, next := -1, 0
		err := parse(nil, func(s *wire.Series) error {
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
	// The index is written before the request is acknowledged, so that
	// nothing acknowledged can be missed by a query through the index. On
	// a store that defers durability (the embedded store) it goes first
	// and its puts wait for the data Put's fsync; on others (HBase, where
	// each is a round trip of its own) it is written while the data is.
	var ixErr error
	var ixDone chan struct{}
	if len(b.index) > 0 {
		_, deferrable := w.st.(store.DeferredPutter)
		switch {
		case len(b.puts) == 0:
			ixErr = w.indexer.Write(ctx, b.index) // no durable write follows
		case deferrable:
			ixErr = w.indexer.WriteDeferred(ctx, b.index)
		default:
			ixDone = make(chan struct{})
			go func() {
				defer close(ixDone)
				ixErr = w.indexer.Write(ctx, b.index)
			}()
		}
		if ixDone == nil && ixErr != nil {
			return res, fmt.Errorf("index %d series: %w", len(b.index), ixErr)
		}
	}
	if len(b.puts) > 0 {
		err := w.st.Put(ctx, w.table, b.puts)
		reuse = err == nil
		if w.noter != nil {
			w.noter.NoteRows(b.puts)
		}
		if ixDone != nil {
			<-ixDone // b is reused once Write returns
			if ixErr != nil && err == nil {
				reuse = false
				return res, fmt.Errorf("index %d series: %w", len(b.index), ixErr)
			}
		}
		if err != nil {
			return res, fmt.Errorf("write %d rows: %w", len(b.puts), err)
		}
	}
	res.Samples, res.Histograms = b.samples, b.histograms
	if len(b.exPuts) > 0 {
		for i := range b.exPuts {
			b.exPuts[i].Cells = b.exCells[i : i+1 : i+1]
		}
		if err := w.st.Put(ctx, w.exTable, b.exPuts); err != nil {
			reuse = false
			return res, fmt.Errorf("write %d exemplars: %w", len(b.exPuts), err)
		}
		res.Exemplars = len(b.exPuts)
	}
	if err := w.storeMetadata(ctx, b); err != nil {
		return res, err
	}
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

// checkRequestLimits applies the limits that concern the request as a
// whole, after pass 1: series per request, then, for the new series, the
// active-series limit (each refused) and the new-series rate. An error
// means nothing is to be written; reason says why.
func (w *Writer) checkRequestLimits(b *writeBatch, series int) (reason string, err error) {
	if err := w.limits.CheckRequest(series); err != nil {
		return limits.ReasonSeriesPerRequest, err
	}
	if len(b.missed) == 0 {
		return "", nil
	}
	if err := w.limits.CheckActive(); err != nil {
		for i := range b.missed {
			m := &b.missed[i]
			b.rejectSeries(limits.ReasonActiveSeries, m.samples, fmt.Sprintf("%s: %v", mapping.FormatLabelsMax(m.labels, 10), err))
		}
		b.missed = b.missed[:0]
		return "", nil
	}
	if err := w.limits.AdmitNew(len(b.missed)); err != nil {
		return limits.ReasonNewSeriesRate, err
	}
	return "", nil
}

// rejectAll is the result of a request refused as a whole: all its samples
// and histograms are counted as rejected, those rejected per series for
// their own reasons, the others for reason.
func (b *writeBatch) rejectAll(reason string) writeResult {
	res := writeResult{Rejected: make(map[string]int, len(b.reject)+1)}
	for k, v := range b.reject {
		res.Rejected[k] = v
	}
	n := b.samples + b.histograms
	for _, m := range b.missed {
		n += m.samples
	}
	res.Rejected[reason] += n
	return res
}

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
func (w *Writer) addSeries(b *writeBatch, s *wire.Series, ordinal int, v2 bool) error {
	if s.Invalid != "" {
		name := fmt.Sprintf("series %d", ordinal)
		if s.Key != nil {
			name = formatSeries(s)
		}
		b.rejectSeries(reasonInvalidSeries, len(s.Samples)+len(s.Hists), fmt.Sprintf("%s %s", name, s.Invalid))
		return nil
	}
	if s.Meta.Set {
		w.noteMetadata(b, s, v2)
	}
	if len(s.Samples) == 0 && len(s.Hists) == 0 && (len(s.Exemplars) == 0 || w.exTable == "") {
		return nil
	}
	if series, ok := b.cache.Get(s.Key); ok {
		w.addSamples(b, s, series)
		return nil
	}
	// A copy: s.Key may live in a buffer reused by the next series; the
	// request's arena keeps it as long as the request needs it.
	m := missedSeries{ordinal: ordinal, key: b.arena.Copy(s.Key), samples: len(s.Samples) + len(s.Hists)}
	lbls, err := b.labelsOf.KeyLabels(m.key, s.Names())
	if err != nil {
		return err
	}
	if w.limits != nil {
		if reason, err := w.limits.CheckSeries(lbls); err != nil {
			b.rejectSeries(reason, m.samples, err.Error())
			return nil
		}
	}
	b.labelBuf = append(b.labelBuf, lbls...)
	m.labels = b.labelBuf[len(b.labelBuf)-len(lbls) : len(b.labelBuf) : len(b.labelBuf)]
	b.missed = append(b.missed, m)
	return nil
}

// resolveMissed resolves the missed series in one batch (their new names
// get UIDs together). Series that can never be stored are rejected; any
// other error fails the request.
func (w *Writer) resolveMissed(ctx context.Context, b *writeBatch) error {
	items := b.resolveItems[:0]
	for i := range b.missed {
		items = append(items, mapping.ResolveItem{Key: b.missed[i].key, Labels: b.missed[i].labels})
	}
	w.mapper.ResolveMissed(ctx, items) // pass 1 missed them in the cache
	for i := range b.missed {
		b.missed[i].series, b.missed[i].err = items[i].Series, items[i].Err
	}
	clear(items)
	b.resolveItems = items[:0]
	for i := range b.missed {
		m := &b.missed[i]
		switch {
		case m.err == nil:
		case errors.Is(m.err, mapping.ErrRowKeyTooLong):
			b.rejectSeries(limits.ReasonRowKey, m.samples, m.err.Error())
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

// validTime reports whether a timestamp (Unix ms) fits a row key: 0 ..
// 2^32-1 seconds.
func validTime(t int64) bool { return t >= 0 && t/1000 <= math.MaxUint32 }

// addSamples adds the Puts of one series: one per hour it has samples or
// histograms in; and its exemplars.
func (w *Writer) addSamples(b *writeBatch, s *wire.Series, series mapping.Series) {
	if b.sketch != nil {
		b.sketch.Add(series.Hash)
	}
	keyLen := w.mapper.Layout().SaltWidth + len(series.Metric) + 4 + len(series.Tags)
	curBase := int64(-1)
	lastDay := int64(-1)
	// row starts a Put for the hour of t unless the current one is it.
	row := func(t int64) int64 {
		sec := t / 1000
		base := sec - sec%3600
		if base != curBase {
			curBase = base
			if day := base / mapping.DaySeconds; w.indexer != nil && day != lastDay {
				lastDay = day
				if !series.IndexedFor(uint32(day)) {
					b.index = append(b.index, index.Entry{Series: series, Day: uint32(day)})
				}
			}
			key := b.arena.Alloc(keyLen)
			key = w.mapper.AppendRowKey(key, series, uint32(base))
			b.starts = append(b.starts, len(b.cells))
			b.puts = append(b.puts, store.Put{Row: key})
		}
		return base
	}
	badTS := 0
	var firstBad int64
	for _, smp := range s.Samples {
		if !validTime(smp.T) {
			if badTS == 0 {
				firstBad = smp.T
			}
			badTS++
			continue
		}
		base := row(smp.T)
		buf := b.arena.Alloc(12)
		buf, flags := mapping.AppendValue(buf[:4], smp.V)
		mapping.AppendMsQualifier(buf[:0], uint32(smp.T-base*1000), flags)
		b.cells = append(b.cells, store.Cell{Family: w.family, Qualifier: buf[:4:4], Value: buf[4:len(buf):len(buf)]})
		b.samples++
	}
	badHist := 0
	var histErr error
	for _, msg := range s.Hists {
		h := &b.hist
		err := wire.ParseHistogram(msg, h)
		if err == nil {
			err = h.Validate()
		}
		if err != nil {
			badHist++
			histErr = cmp.Or(histErr, err)
			continue
		}
		if !validTime(h.T) {
			if badTS == 0 {
				firstBad = h.T
			}
			badTS++
			continue
		}
		base := row(h.T)
		if h.IsFloat {
			b.scratch = mapping.AppendHistogramValue(b.scratch[:0], nil, &h.FH)
		} else {
			b.scratch = mapping.AppendHistogramValue(b.scratch[:0], &h.H, nil)
		}
		buf := b.arena.Alloc(5 + len(b.scratch))
		buf = mapping.AppendHistogramQualifier(buf, uint32(h.T-base*1000))
		buf = append(buf, b.scratch...)
		b.cells = append(b.cells, store.Cell{Family: w.family, Qualifier: buf[:5:5], Value: buf[5:len(buf):len(buf)]})
		b.histograms++
	}
	if badTS > 0 {
		b.rejectSeries(reasonTimestamp, badTS, fmt.Sprintf("%s: %d samples with timestamps outside 0..%d ms (first %d)",
			formatSeries(s), badTS, int64(math.MaxUint32)*1000+999, firstBad))
	}
	if badHist > 0 {
		b.rejectSeries(reasonHistogram, badHist, fmt.Sprintf("%s: %d invalid native histograms (first: %v)", formatSeries(s), badHist, histErr))
	}
	if w.exTable != "" {
		w.addExemplars(b, s, series, keyLen)
	}
}

// addExemplars adds one exemplar-table Put per exemplar: the cell of the
// slot of its time in the row of its series and hour (so a series keeps at
// most exSlots exemplars an hour, a later one replacing the one in its
// slot). Exemplars of one request that fall into one slot take the next
// free slots, so a request never replaces its own exemplars. Exemplars with
// a timestamp no row key can hold are dropped and not counted, as
// Prometheus never fails a request for its exemplars.
func (w *Writer) addExemplars(b *writeBatch, s *wire.Series, series mapping.Series, keyLen int) {
	for _, e := range s.Exemplars {
		if !validTime(e.T) {
			continue
		}
		sec := e.T / 1000
		base := sec - sec%3600
		off := uint32(e.T - base*1000)
		key := b.arena.Alloc(keyLen + 2)
		key = w.mapper.AppendRowKey(key, series, uint32(base))
		slot := mapping.ExemplarSlot(off, w.exSlots)
		free := false
		for range w.exSlots {
			id := key[:len(key)+2]
			mapping.AppendExemplarQualifier(id[:len(key)], slot)
			if _, used := b.exSeen[string(id)]; !used {
				b.exSeen[string(id)] = struct{}{}
				free = true
				break
			}
			slot = uint16((int(slot) + 1) % w.exSlots)
		}
		if !free {
			continue // every slot of the hour taken by this request
		}
		b.scratch = mapping.AppendExemplarValue(b.scratch[:0], off, e.V, s.ExemplarLabels(e))
		val := append(b.arena.Alloc(len(b.scratch)), b.scratch...)
		b.exPuts = append(b.exPuts, store.Put{Row: key})
		b.exCells = append(b.exCells, store.Cell{Family: []byte(mapping.ExemplarFamily), Qualifier: key[len(key) : len(key)+2 : len(key)+2], Value: val})
	}
}

// metricTypes are the names of the MetricType enum of both protocols
// (1.0's UNKNOWN is 2.0's METRIC_TYPE_UNSPECIFIED).
var metricTypes = [...]string{"unknown", "counter", "gauge", "histogram", "gaugehistogram", "summary", "info", "stateset"}

// noteMetadata records a 2.0 series' metadata for storeMetadata, unless it
// is known to be stored already.
func (w *Writer) noteMetadata(b *writeBatch, s *wire.Series, v2 bool) {
	if w.metas == nil || s.Key == nil {
		return
	}
	md := mapping.Metadata{Help: string(s.Meta.Help), Unit: string(s.Meta.Unit)}
	if s.Meta.Type < uint64(len(metricTypes)) && (s.Meta.Type > 0 || !v2) {
		md.Type = metricTypes[s.Meta.Type]
	}
	lbls, err := s.Labels()
	if err != nil {
		return
	}
	for _, l := range lbls {
		if string(l.Name) == mapping.MetricLabel && len(l.Value) > 0 {
			family := mapping.FamilyName(string(l.Value), md.Type)
			if !w.metas.Known([]byte(family), md) {
				b.pendingMeta = append(b.pendingMeta, pendingMeta{family: family, md: md})
			}
			return
		}
	}
}

// storeMetadata stores the metadata of the request (1.0's metadata field
// and 2.0's per-series metadata) that changed.
func (w *Writer) storeMetadata(ctx context.Context, b *writeBatch) error {
	if w.metas == nil {
		return nil
	}
	for _, m := range b.metas {
		if len(m.Family) == 0 || !utf8.Valid(m.Family) {
			continue
		}
		md := mapping.Metadata{Help: string(m.Help), Unit: string(m.Unit)}
		if m.Type < uint64(len(metricTypes)) {
			md.Type = metricTypes[m.Type]
		}
		if !w.metas.Known(m.Family, md) {
			b.pendingMeta = append(b.pendingMeta, pendingMeta{family: string(m.Family), md: md})
		}
	}
	for i, p := range b.pendingMeta {
		if i > 0 && b.pendingMeta[i-1] == p {
			continue
		}
		if _, err := w.metas.Update(ctx, p.family, p.md); err != nil {
			if errors.Is(err, mapping.ErrInvalidSeries) || errors.Is(err, mapping.ErrUIDExhausted) {
				continue // a name that can never be stored: nothing to retry
			}
			return fmt.Errorf("store metadata of %q: %w", p.family, err)
		}
	}
	// Metadata is written with check-and-puts, after the request's data:
	// a store that makes those durable only with a later write is synced
	// before the request is acknowledged.
	if sy, ok := w.st.(store.Syncer); ok && len(b.pendingMeta) > 0 {
		if err := sy.Sync(ctx); err != nil {
			return fmt.Errorf("sync metadata: %w", err)
		}
	}
	return nil
}

// formatSeries renders a series' labels for an error message.
func formatSeries(s *wire.Series) string {
	lbls, err := s.Labels()
	if err != nil {
		return fmt.Sprintf("series with undecodable labels (%v)", err)
	}
	return mapping.FormatLabels(lbls)
}
