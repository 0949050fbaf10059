package ingest

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/promhbase/promhbase/ingest/limits"
	"github.com/promhbase/promhbase/ingest/metadata"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/mapping/wire"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/series/index"
	"github.com/promhbase/promhbase/series/uid"
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

// RejectReasons lists every reason, for the metric's label values.
func RejectReasons() []string {
	return append([]string{reasonInvalidLabels, reasonInvalidSeries, reasonTimestamp, reasonHistogram, reasonUIDExhausted, reasonRelabelDrop}, limits.Reasons()...)
}

// Putter is the part of store.Store the write path uses.
type Putter interface {
	Put(ctx context.Context, table string, puts []store.Put) error
}

// Writer turns decoded remote-write requests (1.0 and 2.0) into store
// Puts: one Put per row (series and hour) carrying one cell per float
// sample and per native histogram (see mapping.AppendHistogramValue), all
// Puts of a request sent in one call; then the exemplars, one cell per
// exemplar slot in the exemplar table (see mapping.AppendExemplarValue);
// then metric metadata that changed (metadata.Metas). It is safe for
// concurrent use.
type Writer struct {
	mapper  *series.Mapper
	st      Putter
	table   string
	family  []byte // the data table's column family, "t"
	batches batchPool
	noter   RowNoter        // nil: nobody is told
	checked CheckedRowNoter // nil: nobody is told

	retention atomic.Int64     // a time.Duration; 0: nothing expires at its write
	now       func() time.Time // retention's clock

	exTable string // "": exemplars are not kept
	exSlots int    // exemplar slots per series and hour
	metas   *metadata.Metas
	names   *wire.LabelNames // label-name ids of 2.0 series keys
	indexer SeriesIndexer
	forgot  DayForgetter   // the indexer's forgotten days; nil: none
	limits  *limits.Limits // nil: only the row key's bound applies
	ha      HA             // ha.Tracker nil: HA pairs are not deduplicated
	replica []byte         // ha.ReplicaLabel

	relabelMu sync.Mutex // SetRelabel's
	relabel   atomic.Pointer[relabelState]
	// keySeed hashes series keys for the per-metric series limit.
	keySeed maphash.Seed
}

// HADeduper decides the writes of HA Prometheus pairs (hatracker.Tracker).
type HADeduper interface {
	// Decide tells whether a write whose first series carries cluster
	// and replica is dropped (drop, with err saying why), refused (err)
	// or stored (both zero).
	Decide(ctx context.Context, tenant, cluster, replica string) (drop bool, err error)
	// Deduped counts n samples of cluster dropped.
	Deduped(tenant, cluster string, n int)
}

// HA configures the deduplication of HA pairs: a request whose first
// series carries both labels is decided by Tracker; stored, every series
// of it loses the replica label; dropped, nothing of it is stored.
// Requests without both labels in their first series are stored as they
// are, as Mimir does.
type HA struct {
	Tracker                    HADeduper
	ClusterLabel, ReplicaLabel string
	// Tenant is the tenant the elections are kept for.
	Tenant string
}

// SeriesIndexer keeps the series index of the series the Writer writes
// (index.Writer): Stage adds the index's puts to the request's batch,
// which the Writer commits with its data in one store.Write, then tells
// the result whether the batch was written (Staged.Done). A failure fails
// the request, which the sender retries.
type SeriesIndexer interface {
	Stage(ctx context.Context, entries []index.Entry, b *store.Batch) (index.Staged, error)
}

// DayForgetter is a SeriesIndexer that may have forgotten having indexed
// the series of some days (index.Writer.Forget, after a deletion or
// retention removed their cells): a series marked indexed for such a day
// is handed to it anyway, and it decides what to write again.
type DayForgetter interface {
	Forgotten(day uint32) bool
}

// Options configure a Writer. The zero value of each field turns its
// feature off.
type Options struct {
	// Table is the data table (tsdb); its column family is "t".
	Table string
	// ExemplarTable keeps exemplars (family e), at most ExemplarSlots
	// (1..65535) per series and hour; "" drops them (they are then not
	// counted as written).
	ExemplarTable string
	ExemplarSlots int
	// Metadata keeps metric metadata; nil drops it.
	Metadata *metadata.Metas
	// Limits applies to every request: the per-series limits to series
	// not in the series cache (a 400 naming each, the rest written), the
	// series-per-request limit (413), the active-series limit (400 for
	// new series), the ingestion rate and the new-series rate (429,
	// nothing written). nil: only the row key's bound applies.
	Limits *limits.Limits
	// Indexer keeps the series index of the series written; nil keeps
	// none.
	Indexer SeriesIndexer
	// RowNoter is told the rows of every request written, on the
	// request's path; nil tells nobody.
	RowNoter RowNoter
	// CheckedRowNoter is told the rows of every request written before
	// it is acknowledged, and its error fails the request; nil tells
	// nobody.
	CheckedRowNoter CheckedRowNoter
	// HA deduplicates HA Prometheus pairs; a nil Tracker turns it off.
	HA HA
	// Retention, when positive, drops the samples and histograms older
	// than it at their write (counted in Result.Expired, the request
	// answered as written), as VictoriaMetrics drops rows outside its
	// retention: the retention cycle would delete them. Now is its clock
	// (nil: time.Now).
	Retention time.Duration
	Now       func() time.Time
}

// New returns a Writer into st configured by opts.
func New(m *series.Mapper, st Putter, opts Options) *Writer {
	w := &Writer{mapper: m, st: st, table: opts.Table, family: []byte("t"), names: wire.NewLabelNames(), batches: newBatchPool(),
		metas: opts.Metadata, indexer: opts.Indexer, limits: opts.Limits, noter: opts.RowNoter, checked: opts.CheckedRowNoter, ha: opts.HA, replica: []byte(opts.HA.ReplicaLabel)}
	w.forgot, _ = opts.Indexer.(DayForgetter)
	w.retention.Store(int64(opts.Retention))
	w.now = opts.Now
	if w.now == nil {
		w.now = time.Now
	}
	if opts.ExemplarTable != "" {
		w.exTable, w.exSlots = opts.ExemplarTable, min(max(opts.ExemplarSlots, 1), mapping.MaxExemplarSlots)
	}
	w.relabel.Store(&relabelState{epoch: m.SeriesEpoch()})
	w.keySeed = maphash.MakeSeed()
	return w
}

// SetRetention replaces Options.Retention for the requests that start
// from now on: the longest time any series keeps (0: none expire at
// their write).
func (w *Writer) SetRetention(d time.Duration) { w.retention.Store(int64(d)) }

// DefaultExemplarSlots is the default number of exemplars kept per series
// and hour: one per 5 s slot, so at least one per scrape at any scrape
// interval of 5 s or more.
const DefaultExemplarSlots = 720

// Write stores the series of a decoded request body: a remote write 1.0
// WriteRequest, or with v2 an io.prometheus.write.v2.Request. It returns
// only after the store acknowledged every Put. A *RejectError means the
// valid series were written and the others can never be; any other error
// means nothing may be assumed written and the request can be retried.
func (w *Writer) Write(ctx context.Context, body []byte, v2 bool) (Result, error) {
	b := w.getBatch()
	parse := func(metas *[]wire.Meta, fn func(*wire.Series) error) error {
		if v2 {
			return wire.ParseWriteRequestV2(body, &b.v2, &b.series, fn)
		}
		return wire.ParseWriteRequest(body, &b.series, metas, fn)
	}
	return w.write(ctx, b, parse, v2, 0)
}

// WriteTranslated is Write of a remote write 1.0 body translated from
// another protocol (OTLP), which holds a TimeSeries a sample: a
// histogram point of ten buckets is thirteen. The series-per-request
// limit, which bounds the batches of a remote-write sender
// (max_samples_per_send), does not apply to it; the request it came from
// is bounded in bytes instead. Every other limit does.
func (w *Writer) WriteTranslated(ctx context.Context, body []byte) (Result, error) {
	b := w.getBatch()
	b.translated = true
	return w.write(ctx, b, func(metas *[]wire.Meta, fn func(*wire.Series) error) error {
		return wire.ParseWriteRequest(body, &b.series, metas, fn)
	}, false, 0)
}

// WriteSeries stores series that are decoded already, as Write stores a
// remote write 1.0 request of them. each calls fn for every series, in
// the same order every time it is called (up to three times); the series
// need only Key (remote write's Label fields in name order) and Samples,
// and may be reused once fn returns. samples, the number of samples, sizes
// the write's buffers. The samples are a bulk load's (store.Batch.PutBulk:
// the embedded store writes them straight into its settled form). With
// deferSync they may be visible but not yet durable when it returns
// (store.WriteDeferred): the next write without it makes them so (one
// fsync for the parts of one import), and nothing may be acknowledged
// before that write returns.
func (w *Writer) WriteSeries(ctx context.Context, samples int, deferSync bool, each func(fn func(*wire.Series) error) error) (Result, error) {
	b := w.getBatch()
	b.deferSync, b.bulk = deferSync, true
	return w.write(ctx, b, func(_ *[]wire.Meta, fn func(*wire.Series) error) error { return each(fn) }, false, samples)
}

// WriteDecoded stores series that are decoded already (Key, and Samples
// or Encoded), as WriteTranslated stores a request of them: live samples,
// durable when it returns, every limit but the series-per-request one
// applying (the caller bounds its request in bytes). each is as for
// WriteSeries; samples sizes the write's buffers.
func (w *Writer) WriteDecoded(ctx context.Context, samples int, each func(fn func(*wire.Series) error) error) (Result, error) {
	b := w.getBatch()
	b.translated = true
	return w.write(ctx, b, func(_ *[]wire.Meta, fn func(*wire.Series) error) error { return each(fn) }, false, samples)
}

// Sync makes the writes WriteSeries deferred durable (store.Sync). An
// import whose write fails after deferred ones calls it before saying
// what was written.
func (w *Writer) Sync(ctx context.Context) error {
	return store.Sync(ctx, w.st)
}

// parseFunc parses a request: it calls fn for each series, and collects
// 1.0's metadata into metas when it is not nil.
type parseFunc = func(metas *[]wire.Meta, fn func(*wire.Series) error) error

// write is Write's work, from parse that calls fn for each series (and
// collects 1.0's metadata into metas when it is not nil); samples
// estimates the samples it holds. Its phases: start the batch, map the
// cached series, drop a deduplicated request, check the request's
// limits, map the new series, seal the puts, commit the index and the
// data, then write the exemplars and the metadata and report.
func (w *Writer) write(ctx context.Context, b *writeBatch, parse parseFunc, v2 bool, samples int) (Result, error) {
	// A failed Put may leave RPCs queued in the store's client that still
	// read the batch's buffers: such a batch is not reused.
	reuse := true
	defer func() {
		if reuse {
			w.putBatch(b)
		}
	}()
	w.startBatch(b, samples)
	ordinal, dedup, err := w.mapCached(ctx, b, parse, v2)
	if dedup.err != nil {
		return w.dropDeduped(parse, dedup)
	}
	if err != nil {
		return Result{}, err
	}
	if w.limits != nil {
		if reason, err := w.checkRequestLimits(b, ordinal+1); err != nil {
			return b.rejectAll(reason), err
		}
		if err := w.admitPerMetric(ctx, b); err != nil {
			return Result{}, err
		}
	}
	if err := w.mapMissed(ctx, b, parse); err != nil {
		return Result{}, err
	}
	b.sealPuts()
	if reuse, err = w.commit(ctx, b); err != nil {
		return Result{}, err
	}
	res := Result{Samples: b.samples, Histograms: b.histograms, Expired: b.expired, Exemplars: len(b.exPuts)}
	if err := w.storeMetadata(ctx, b); err != nil {
		return res, err
	}
	return b.report(res)
}

// startBatch readies b for a request of about samples samples: its
// buffers, the tenant's cardinality sketch and the retention's horizon.
func (w *Writer) startBatch(b *writeBatch, samples int) {
	b.grow(samples)
	b.relabel = w.relabel.Load()
	if w.limits != nil {
		b.sketch = w.limits.Sketch()
		b.perMetric = w.limits.PerMetric()
	}
	b.minT = math.MinInt64
	if ret := time.Duration(w.retention.Load()); ret > 0 {
		b.minT = w.now().Add(-ret).UnixMilli()
	}
}

// mapCached is the first pass over the request: series in the cache
// become Puts; the others are noted in b.missed. It returns the last
// series' ordinal and, when the HA tracker drops the request, why.
func (w *Writer) mapCached(ctx context.Context, b *writeBatch, parse parseFunc, v2 bool) (int, haDrop, error) {
	b.cache = w.mapper.CacheReader()
	ordinal := -1
	var dedup haDrop
	err := parse(&b.metas, func(s *wire.Series) error {
		ordinal++
		// The next series' cache slot starts loading now, while this
		// one is handled.
		b.cache.Prefetch(s.NextKey)
		if ordinal == 0 && w.ha.Tracker != nil {
			var err error
			if b.dropLabel, dedup, err = w.decideHA(ctx, s); err != nil {
				return err
			}
		}
		return w.addSeries(b, s, ordinal, v2)
	})
	b.cache.Release()
	return ordinal, dedup, err
}

// dropDeduped answers a request the HA tracker dropped: nothing of it is
// stored; what it held is counted.
func (w *Writer) dropDeduped(parse parseFunc, dedup haDrop) (Result, error) {
	n := 0
	if err := parse(nil, func(s *wire.Series) error {
		n += len(s.Samples) + len(s.Encoded) + len(s.Hists)
		return nil
	}); err != nil {
		return Result{}, err
	}
	w.ha.Tracker.Deduped(w.ha.Tenant, dedup.cluster, n)
	return Result{Deduped: n}, dedup.err
}

// mapMissed resolves the series the cache missed concurrently (UID
// lookups and assignments are round trips to the store), then a second
// pass over the request adds their Puts.
func (w *Writer) mapMissed(ctx context.Context, b *writeBatch, parse parseFunc) error {
	if len(b.missed) == 0 {
		return nil
	}
	if err := w.resolveMissed(ctx, b); err != nil {
		return err
	}
	ordinal, next := -1, 0
	return parse(nil, func(s *wire.Series) error {
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
}

// sealPuts gives each Put its run of b.cells.
func (b *writeBatch) sealPuts() {
	for i := range b.puts {
		end := len(b.cells)
		if i+1 < len(b.starts) {
			end = b.starts[i+1]
		}
		b.puts[i].Cells = b.cells[b.starts[i]:end:end]
	}
}

// commit writes the batch's index entries, data rows and exemplars with
// one store.Write (the store decides how they become durable together;
// store.Write), and notes the rows written; it returns whether b may be
// reused (not after a failed write, whose RPCs may still read its
// buffers). Its phases: stage the index, add the data and the exemplars,
// write, then tell the index and the row noter.
//
// The index is in the same write as the data, so that nothing
// acknowledged can be missed by a query through the index.
func (w *Writer) commit(ctx context.Context, b *writeBatch) (reuse bool, err error) {
	wb := &b.write
	wb.Reset()
	var staged index.Staged
	if len(b.index) > 0 {
		if staged, err = w.indexer.Stage(ctx, b.index, wb); err != nil {
			return true, fmt.Errorf("index %d series: %w", len(b.index), err)
		}
	}
	if b.bulk {
		wb.PutBulk(w.table, b.puts)
	} else {
		wb.Put(w.table, b.puts)
	}
	for i := range b.exPuts {
		b.exPuts[i].Cells = b.exCells[i : i+1 : i+1]
	}
	wb.Put(w.exTable, b.exPuts)
	if b.deferSync {
		err = store.WriteDeferred(ctx, w.st, wb)
	} else {
		err = store.Write(ctx, w.st, wb)
	}
	staged.Done(err == nil)
	wb.Reset()
	noteErr := w.noteRows(ctx, b)
	if err != nil {
		return false, fmt.Errorf("write %d rows, %d exemplars, %d series' index: %w", len(b.puts), len(b.exPuts), len(b.index), err)
	}
	if noteErr != nil {
		return true, fmt.Errorf("%d rows written: %w", len(b.puts), noteErr)
	}
	return true, nil
}

// noteRows tells the row noters (compaction's rows; rollups' dirty hours,
// the results cache) of the batch's data rows, written or not, and returns
// the checked noter's error.
func (w *Writer) noteRows(ctx context.Context, b *writeBatch) error {
	if len(b.puts) == 0 {
		return nil
	}
	if w.noter != nil {
		w.noter.NoteRows(b.puts)
	}
	if w.checked != nil {
		return w.checked.NoteRowsChecked(ctx, b.puts)
	}
	return nil
}

// report completes res with the samples the limits rejected, and returns
// the rejection error when there was one.
func (b *writeBatch) report(res Result) (Result, error) {
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

// missedSeries is a series of a request that was not in the series cache.
type missedSeries struct {
	ordinal int // position in the request
	key     []byte
	labels  []mapping.Label
	samples int
	series  series.Series
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
		b.rejectSeries(reasonInvalidSeries, len(s.Samples)+len(s.Encoded)+len(s.Hists), fmt.Sprintf("%s %s", name, s.Invalid))
		return nil
	}
	if s.Meta.Set {
		w.noteMetadata(b, s, v2)
	}
	if len(s.Samples) == 0 && len(s.Encoded) == 0 && len(s.Hists) == 0 && (len(s.Exemplars) == 0 || w.exTable == "") {
		return nil
	}
	if series, ok := b.cache.Get(s.Key); ok {
		w.addSamples(b, s, series)
		return nil
	}
	// A new series' float samples older than the retention count as
	// expired, not against its limits; one with nothing else is not even
	// resolved (no UID for a series nothing of which is stored).
	live := len(s.Samples) + len(s.Encoded)
	if b.minT != math.MinInt64 {
		live = 0
		for _, p := range s.Samples {
			if p.T >= b.minT {
				live++
			}
		}
		for _, p := range s.Encoded {
			if p.T >= b.minT {
				live++
			}
		}
		if live == 0 && len(s.Hists) == 0 && !w.keepsExemplar(b, s) {
			b.expired += len(s.Samples) + len(s.Encoded)
			return nil
		}
	}
	// A copy: s.Key may live in a buffer reused by the next series; the
	// request's arena keeps it as long as the request needs it.
	m := missedSeries{ordinal: ordinal, key: b.arena.Copy(s.Key), samples: live + len(s.Hists)}
	lbls, err := b.labelsOf.KeyLabels(m.key, s.Names())
	if err != nil {
		return err
	}
	if b.dropLabel != nil {
		// An HA pair's series: resolved without the replica label, and
		// cached under the key as sent, so that the elected replica's
		// series are found in the cache as they come.
		lbls = slices.DeleteFunc(lbls, func(l mapping.Label) bool { return bytes.Equal(l.Name, b.dropLabel) })
	}
	var keep bool
	if lbls, keep = b.relabelMissed(lbls, m.samples); !keep {
		return nil
	}
	if w.limits != nil {
		if reason, err := w.limits.CheckSeries(lbls); err != nil {
			b.rejectSeries(reason, m.samples, err.Error())
			return nil
		}
	}
	m.labels = b.keepLabels(lbls)
	b.missed = append(b.missed, m)
	return nil
}

// resolveMissed resolves the missed series in one batch (their new names
// get UIDs together). Series that can never be stored are rejected; any
// other error fails the request.
func (w *Writer) resolveMissed(ctx context.Context, b *writeBatch) error {
	items := b.resolveItems[:0]
	for i := range b.missed {
		items = append(items, series.ResolveItem{Key: b.missed[i].key, Labels: b.missed[i].labels})
	}
	w.mapper.ResolveMissedAt(ctx, items, b.relabel.epoch) // pass 1 missed them in the cache
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
		case errors.Is(m.err, uid.ErrUIDExhausted):
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
func (w *Writer) addSamples(b *writeBatch, s *wire.Series, series series.Series) {
	if b.sketch != nil {
		b.sketch.Add(series.Hash)
	}
	if b.perMetric {
		w.limits.MarkMetricSeries(series.Metric, maphash.Bytes(w.keySeed, s.Key))
	}
	keyLen := w.mapper.Layout().RowKeyBytes(len(series.Metric), len(series.Tags))
	curBase := int64(-1)
	lastDay := int64(-1)
	// row starts a Put for the hour of t unless the current one is it.
	row := func(t int64) int64 {
		base := mapping.HourBase(t)
		if base != curBase {
			curBase = base
			if day := base / mapping.DaySeconds; w.indexer != nil && day != lastDay {
				lastDay = day
				if !series.IndexedFor(uint32(day)) || w.forgot != nil && w.forgot.Forgotten(uint32(day)) {
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
	// keep reports whether a sample of time t is kept, and counts it when
	// it is not: out of range, or expired.
	keep := func(t int64) bool {
		switch {
		case !validTime(t):
			if badTS == 0 {
				firstBad = t
			}
			badTS++
			return false
		case t < b.minT:
			b.expired++
			return false
		}
		return true
	}
	for _, smp := range s.Samples {
		if !keep(smp.T) {
			continue
		}
		base := row(smp.T)
		q, v := mapping.AppendSampleCell(b.arena.Alloc(mapping.SampleCellBytes), base, smp.T, smp.V)
		b.cells = append(b.cells, store.Cell{Family: w.family, Qualifier: q, Value: v})
		b.samples++
	}
	for _, smp := range s.Encoded {
		if !keep(smp.T) {
			continue
		}
		base := row(smp.T)
		q, v := mapping.AppendEncodedCell(b.arena.Alloc(mapping.SampleCellBytes), base, smp)
		b.cells = append(b.cells, store.Cell{Family: w.family, Qualifier: q, Value: v})
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
		if !keep(h.T) {
			continue
		}
		base := row(h.T)
		if h.IsFloat {
			b.scratch = mapping.AppendHistogramValue(b.scratch[:0], nil, &h.FH)
		} else {
			b.scratch = mapping.AppendHistogramValue(b.scratch[:0], &h.H, nil)
		}
		q, v := mapping.AppendHistogramCell(b.arena.Alloc(mapping.HistogramQualifierBytes+len(b.scratch)), base, h.T, b.scratch)
		b.cells = append(b.cells, store.Cell{Family: w.family, Qualifier: q, Value: v})
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

// formatSeries renders a series' labels for an error message.
func formatSeries(s *wire.Series) string {
	lbls, err := s.Labels()
	if err != nil {
		return fmt.Sprintf("series with undecodable labels (%v)", err)
	}
	return mapping.FormatLabels(lbls)
}
