// Package query answers remote-read queries: it turns Prometheus label
// matchers into row-key scans of the data table, decodes the rows and
// applies Prometheus's exact matcher semantics.
//
// Plan for one query:
//
//  1. Metrics: `__name__="x"` names one metric; any other matcher on
//     `__name__` (or none) selects among the metric names of tsdb-uid.
//  2. Scan: one per metric (and salt bucket), over the rows
//     [salt] metric hour(start) .. [salt] metric hour(end)+1h, with a row-key
//     regex in OpenTSDB's shape that requires the tags which equality and
//     literal-set matchers pin down. The regex is only a necessary
//     condition.
//  3. Rows: labels resolved from UIDs, every matcher applied exactly
//     (absent label = ""), samples kept in [start, end] inclusive, cells of a
//     row merged (newest cell wins for a repeated timestamp), rows of a
//     series joined across hours.
//
// Rows stream through; only the samples of matching series are kept.
package query

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// ErrTooManySamples means a query selected more samples than the limit.
var ErrTooManySamples = errors.New("query selects too many samples")

// errScanPanic marks the error of a scan that panicked (see scan).
var errScanPanic = errors.New("internal error")

// scanner is the part of store.Store the query path uses.
type scanner interface {
	Scan(ctx context.Context, req store.ScanRequest) store.Scanner
	Get(ctx context.Context, table string, row []byte, family string) (store.Row, error)
}

// Sample is one sample: Unix milliseconds and value.
type Sample = mapping.Point

// HistogramSample is one native-histogram sample: Unix milliseconds and
// exactly one of H (integer counts) and FH (float counts).
type HistogramSample struct {
	T  int64
	H  *histogram.Histogram
	FH *histogram.FloatHistogram
}

// Series is one series of a query's answer: its float samples and its
// native-histogram samples, each sorted by time with one sample per
// timestamp.
type Series struct {
	Labels     labels.Labels
	Samples    []Sample
	Histograms []HistogramSample
	// Exemplars are filled by SelectExemplars only, sorted by time.
	Exemplars []Exemplar

	pending bool         // its labels wait for resolvePending
	inRange bool         // SelectLabels: a sample in the range was seen
	cc      *chunkCutter // Stream: the chunks so far
	charged int64        // Stream: bytes charged to the budget so far
}

// Exemplar is one stored exemplar: its own labels, value and time.
type Exemplar struct {
	Labels labels.Labels
	V      float64
	T      int64
}

// mode is what a selection reads of the rows it scans.
type mode int

const (
	modeSamples   mode = iota // float and histogram samples (data table)
	modeLabels                // the label sets of rows in range only: no cell is decoded
	modeExemplars             // exemplars (exemplar table)
)

// Options configure a Querier.
type Options struct {
	DataTable string // "tsdb" by default
	UIDTable  string // "tsdb-uid" by default
	// ExemplarTable is promhbase's exemplar table; "" means
	// SelectExemplars finds none.
	ExemplarTable string
	// MaxSamples bounds the samples of one request (see Budget); 0 means
	// 50,000,000.
	MaxSamples int
	// MaxBytes bounds the bytes one request holds at once (see Budget);
	// 0 means DefaultMaxBytes.
	MaxBytes int64
	// ScanConcurrency bounds the scans (metrics × salt buckets) one query
	// runs at once; 0 means 4, 1 scans one after the other.
	ScanConcurrency int
	// MetricNamesTTL is how long the list of metric names read from the UID
	// table is reused; 0 means 10s.
	MetricNamesTTL time.Duration
	// Index, when set, is the series index (index.Reader): selectors
	// without a metric name scan only the metrics it names, and label
	// names and values without matchers come from it, for ranges it
	// covers.
	Index SeriesIndex
}

// SeriesIndex answers label questions by day without reading data rows
// (index.Reader). Answers may hold more than the range (day granularity)
// but never less, for ranges Covers accepts.
type SeriesIndex interface {
	Covers(ctx context.Context, start, end int64) (bool, error)
	MetricNames(ctx context.Context, start, end int64, ms []*labels.Matcher) ([]string, error)
	LabelNames(ctx context.Context, start, end int64) ([]string, error)
	LabelValues(ctx context.Context, name string, start, end int64) ([]string, error)
	IndexedMetrics(ctx context.Context) ([]string, error)
}

// indexCovers reports whether the series index can answer for [start, end].
func (q *Querier) indexCovers(ctx context.Context, start, end int64) (bool, error) {
	if q.opts.Index == nil {
		return false, nil
	}
	return q.opts.Index.Covers(ctx, start, end)
}

// Querier runs queries. It is safe for concurrent use.
type Querier struct {
	st     scanner
	mapper *mapping.Mapper
	opts   Options

	mu        sync.Mutex
	names     []string
	namesRead time.Time
	namesGen  uint64 // the UIDs' metric generation when names was read

	early     bool      // a tag name sorts before __name__ (see earlyTagNames)
	earlyRead time.Time // when early was read; zero: never
}

// New returns a Querier over st.
func New(st scanner, m *mapping.Mapper, opts Options) *Querier {
	if opts.DataTable == "" {
		opts.DataTable = "tsdb"
	}
	if opts.UIDTable == "" {
		opts.UIDTable = "tsdb-uid"
	}
	if opts.MaxSamples <= 0 {
		opts.MaxSamples = 50_000_000
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.ScanConcurrency <= 0 {
		opts.ScanConcurrency = 4
	}
	if opts.MetricNamesTTL <= 0 {
		opts.MetricNamesTTL = 10 * time.Second
	}
	return &Querier{st: st, mapper: m, opts: opts}
}

// Select returns the series that the matchers select, with their samples in
// [start, end] (Unix ms, inclusive), sorted by labels, every sample
// decoded, under a budget of q's limits: for tests and tools. The server's
// paths use Stream, which holds samples as chunks.
func (q *Querier) Select(ctx context.Context, start, end int64, matchers ...*labels.Matcher) ([]Series, error) {
	var out []Series
	err := q.Stream(ctx, q.NewBudget(), start, end, matchers, func(cs *ChunkSeries) error {
		fs, hs, err := DecodeChunks(cs.Chunks)
		if err != nil {
			return err
		}
		out = append(out, Series{Labels: cs.Labels, Samples: fs, Histograms: hs})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Stream runs one query under budget b: it selects the series that the
// matchers select, with their samples in [start, end] (Unix ms,
// inclusive), and calls emit with each, in label order, as soon as the
// series is complete: the scans run metric by metric in name order (and
// a series' labels start with its name: see stream), so the series of a
// metric are handed on once the scans of that metric are done, while the
// scans of the next metrics run ahead.
//
// emit runs in the caller's goroutine, one series at a time. The series is
// emit's, charged to b: emit must b.Release(cs.Bytes) once it no longer
// holds it (at once when it sends it on). An error of emit ends the query
// and is returned. Samples are counted against b's sample limit, bytes
// held against its byte limit (ErrTooManySamples, ErrTooManyBytes).
func (q *Querier) Stream(ctx context.Context, b *Budget, start, end int64, matchers []*labels.Matcher, emit func(*ChunkSeries) error) error {
	return q.stream(ctx, b, start, end, matchers, false, emit)
}

// StreamFloats is Stream for answers that carry samples, not chunks (a
// SAMPLES remote read): a series without native histograms comes with its
// float samples in ChunkSeries.Floats, not encoded into XOR chunks only to
// be decoded again. They are held (and charged) at 16 bytes a sample,
// up to about twice that while a series' slice grows, instead of the 1–3
// bytes of chunks; the SAMPLES answer built beside them takes about 18
// bytes a sample, and its snappy block, held with it at the end, about
// 21 more, so the peak of such a request moves little.
func (q *Querier) StreamFloats(ctx context.Context, b *Budget, start, end int64, matchers []*labels.Matcher, emit func(*ChunkSeries) error) error {
	return q.stream(ctx, b, start, end, matchers, true, emit)
}

func (q *Querier) stream(ctx context.Context, b *Budget, start, end int64, matchers []*labels.Matcher, rawFloats bool, emit func(*ChunkSeries) error) error {
	if start > end || end < 0 || start/1000 > math.MaxUint32 {
		return nil
	}
	start = max(start, 0)
	metrics, err := q.metricNames(ctx, start, end, matchers)
	if err != nil || len(metrics) == 0 {
		return err
	}
	sel := &selection{q: q, mode: modeSamples, rawFloats: rawFloats, start: start, end: end, matchers: matchers, budget: b}
	cs, ok, err := sel.constraints(ctx)
	if err != nil || !ok {
		return err
	}
	f := newRowFilter(q.mapper.Layout(), cs)
	var groups [][]store.ScanRequest
	for _, name := range metrics {
		reqs, err := sel.scans(ctx, []string{name}, f)
		if err != nil {
			return err
		}
		if len(reqs) > 0 {
			groups = append(groups, reqs)
		}
	}
	if len(groups) == 1 {
		// One metric: its scans cut into parts that run at once. (The
		// scans of many metrics already do.)
		if groups[0], err = sel.split(ctx, groups[0]); err != nil {
			return err
		}
	}
	if len(groups) > 1 {
		early, err := q.earlyTagNames(ctx)
		if err != nil {
			return err
		}
		if early {
			// Series do not come metric by metric: one group, sorted whole.
			groups = [][]store.ScanRequest{slices.Concat(groups...)}
		}
	}
	return sel.stream(ctx, groups, emit)
}

// earlyTagNames reports whether a tag name of the UID table sorts before
// __name__ (an upper-case name, or "__a"...): a series that has one sorts
// before every series whose first label is __name__, so a query's series
// are then not in label order metric by metric. The tag names' UIDs run
// from 1 to the tagk counter: their reverse rows are read (with those of
// the other kinds' UIDs in that range, as many at most), and the answer is
// reused for MetricNamesTTL.
func (q *Querier) earlyTagNames(ctx context.Context) (bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.earlyRead.IsZero() && time.Since(q.earlyRead) < q.opts.MetricNamesTTL {
		return q.early, nil
	}
	var maxID uint64
	sc := q.st.Scan(ctx, store.ScanRequest{Table: q.opts.UIDTable, Start: []byte{0}, Stop: []byte{0, 0}, Family: "id"})
	for sc.Next() {
		for _, c := range sc.Row().Cells {
			if string(c.Qualifier) == mapping.KindTagK.Qualifier() && len(c.Value) == 8 {
				maxID = binary.BigEndian.Uint64(c.Value)
			}
		}
	}
	err := sc.Err()
	sc.Close()
	if err != nil {
		return false, fmt.Errorf("read the uid counters of %s: %w", q.opts.UIDTable, err)
	}
	early := false
	if w := q.mapper.UIDs().Width(mapping.KindTagK); maxID > 0 {
		var full [8]byte
		binary.BigEndian.PutUint64(full[:], 1)
		start := bytes.Clone(full[8-w:])
		binary.BigEndian.PutUint64(full[:], maxID)
		stop := append(bytes.Clone(full[8-w:]), 0) // just after maxID's row
		sc := q.st.Scan(ctx, store.ScanRequest{Table: q.opts.UIDTable, Start: start, Stop: stop, Family: "name"})
		for sc.Next() && !early {
			for _, c := range sc.Row().Cells {
				if string(c.Qualifier) == mapping.KindTagK.Qualifier() && mapping.NameFromStored(c.Value) < labels.MetricName {
					early = true
				}
			}
		}
		err := sc.Err()
		sc.Close()
		if err != nil {
			return false, fmt.Errorf("list the tag names of %s: %w", q.opts.UIDTable, err)
		}
	}
	q.early, q.earlyRead = early, time.Now()
	return early, nil
}

// SelectLabels returns the label sets of the series that the matchers
// select and that have a sample in [start, end], sorted, keeping no
// sample: a row whose hour lies inside the range counts at once, only rows
// at the range's edges are decoded.
func (q *Querier) SelectLabels(ctx context.Context, start, end int64, matchers ...*labels.Matcher) ([]labels.Labels, error) {
	ss, err := q.selectMode(ctx, modeLabels, start, end, matchers)
	if err != nil {
		return nil, err
	}
	out := make([]labels.Labels, len(ss))
	for i := range ss {
		out[i] = ss[i].Labels
	}
	return out, nil
}

// SelectExemplars returns the series that the matchers select that have
// exemplars in [start, end], with those exemplars.
func (q *Querier) SelectExemplars(ctx context.Context, start, end int64, matchers ...*labels.Matcher) ([]Series, error) {
	if q.opts.ExemplarTable == "" {
		return nil, nil
	}
	return q.selectMode(ctx, modeExemplars, start, end, matchers)
}

func (q *Querier) selectMode(ctx context.Context, md mode, start, end int64, matchers []*labels.Matcher) ([]Series, error) {
	if start > end {
		return nil, nil
	}
	if end < 0 || start/1000 > math.MaxUint32 {
		return nil, nil
	}
	start = max(start, 0)
	metrics, err := q.metricNames(ctx, start, end, matchers)
	if err != nil {
		return nil, err
	}
	if len(metrics) == 0 {
		return nil, nil
	}
	sel := &selection{q: q, mode: md, start: start, end: end, matchers: matchers, series: map[string]*Series{}, budget: q.NewBudget()}
	cs, ok, err := sel.constraints(ctx)
	if err != nil || !ok {
		return nil, err
	}
	reqs, err := sel.scans(ctx, metrics, newRowFilter(q.mapper.Layout(), cs))
	if err != nil {
		return nil, err
	}
	if reqs, err = sel.split(ctx, reqs); err != nil {
		return nil, err
	}
	subs, err := sel.scanAll(ctx, reqs)
	if err != nil {
		return nil, err
	}
	var out []Series
	for _, sub := range subs {
		for _, s := range sub.series {
			if s != nil && (s.inRange || len(s.Samples) > 0 || len(s.Histograms) > 0 || len(s.Exemplars) > 0) {
				out = append(out, *s)
			}
		}
	}
	slices.SortFunc(out, func(a, b Series) int { return labels.Compare(a.Labels, b.Labels) })
	return joinEqual(out), nil
}

// split cuts scans into parts that run at once (scanAll, stream) when
// the cores a query may use (ScanConcurrency and GOMAXPROCS) are at least
// twice the scans and the store can cut a range (store.RangeSplitter):
// one large metric then takes every core, as many metrics or salt buckets
// do. A series whose rows fall in two parts (a row per hour, when the
// range spans hours) is joined when the parts are collected
// (joinChunkSeries; joinEqual for SelectLabels and SelectExemplars); until
// then each part charges the budget for it (its labels, overhead and open
// chunk), so such a query may reach --query.max-bytes-per-query with
// fewer series than one scan would.
func (s *selection) split(ctx context.Context, reqs []store.ScanRequest) ([]store.ScanRequest, error) {
	sp, ok := s.q.st.(store.RangeSplitter)
	par := min(s.q.opts.ScanConcurrency, runtime.GOMAXPROCS(0))
	if !ok || len(reqs) == 0 || par/len(reqs) < 2 {
		return reqs, nil
	}
	parts := par / len(reqs)
	out := make([]store.ScanRequest, 0, par)
	for _, req := range reqs {
		keys, err := sp.SplitRange(ctx, req.Table, req.Start, req.Stop, parts)
		if err != nil {
			return nil, fmt.Errorf("split scan %s [%x, %x): %w", req.Table, req.Start, req.Stop, err)
		}
		start := req.Start
		for _, k := range keys {
			part := req
			part.Start, part.Stop = start, k
			out = append(out, part)
			start = k
		}
		last := req
		last.Start = start
		out = append(out, last)
	}
	return out, nil
}

// joinEqual joins adjacent series of sorted that have equal labels: one
// label set can have several row keys (a label-less series written with and
// without its reserved tag, a name stored in its Latin-1 and its legacy
// UTF-8 form). Their samples are merged by time, one per timestamp.
func joinEqual(sorted []Series) []Series {
	out := sorted[:0]
	for _, s := range sorted {
		n := len(out)
		if n == 0 || !labels.Equal(out[n-1].Labels, s.Labels) {
			out = append(out, s)
			continue
		}
		prev := &out[n-1]
		merged := append(prev.Samples, s.Samples...)
		slices.SortStableFunc(merged, func(a, b Sample) int {
			switch {
			case a.T < b.T:
				return -1
			case a.T > b.T:
				return 1
			}
			return 0
		})
		prev.Samples = slices.CompactFunc(merged, func(a, b Sample) bool { return a.T == b.T })
		hs := append(prev.Histograms, s.Histograms...)
		slices.SortStableFunc(hs, func(a, b HistogramSample) int { return cmpT(a.T, b.T) })
		prev.Histograms = slices.CompactFunc(hs, func(a, b HistogramSample) bool { return a.T == b.T })
		prev.Exemplars = append(prev.Exemplars, s.Exemplars...)
		slices.SortStableFunc(prev.Exemplars, func(a, b Exemplar) int { return cmpT(a.T, b.T) })
	}
	return out
}

func cmpT(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// metricNames returns the metric names the __name__ matchers allow: the
// metrics named, else those the series index has for the other matchers
// and [start, end], else every metric of the UID table.
func (q *Querier) metricNames(ctx context.Context, start, end int64, matchers []*labels.Matcher) ([]string, error) {
	var nameMatchers []*labels.Matcher
	for _, m := range matchers {
		if m.Name != labels.MetricName {
			continue
		}
		if m.Type == labels.MatchEqual {
			if m.Value == "" {
				return nil, nil // every stored series has a name
			}
			for _, o := range matchers {
				if o.Name == labels.MetricName && !o.Matches(m.Value) {
					return nil, nil
				}
			}
			return []string{m.Value}, nil
		}
		nameMatchers = append(nameMatchers, m)
	}
	// Literal alternatives name their metrics directly.
	for _, m := range nameMatchers {
		if m.Type != labels.MatchRegexp {
			continue
		}
		if set := m.SetMatches(); len(set) > 0 {
			var out []string
			for _, v := range set {
				if v != "" && matchesAll(nameMatchers, v) {
					out = append(out, v)
				}
			}
			// "a|a" lists a twice; each metric must be scanned once.
			slices.Sort(out)
			return slices.Compact(out), nil
		}
	}
	var all []string
	covered, err := q.indexCovers(ctx, start, end)
	if err != nil {
		return nil, err
	}
	if covered {
		all, err = q.indexedMetricNames(ctx, start, end, matchers)
	} else {
		all, err = q.allMetricNames(ctx)
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range all {
		if matchesAll(nameMatchers, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

func matchesAll(ms []*labels.Matcher, v string) bool {
	for _, m := range ms {
		if !m.Matches(v) {
			return false
		}
	}
	return true
}

// indexedMetricNames returns the metrics the series index names for the
// matchers and [start, end], and every metric of the UID table the index
// never saw a series of: a metric another writer (an OpenTSDB TSD)
// created is scanned rather than missed.
func (q *Querier) indexedMetricNames(ctx context.Context, start, end int64, matchers []*labels.Matcher) ([]string, error) {
	narrowed, err := q.opts.Index.MetricNames(ctx, start, end, matchers)
	if err != nil {
		return nil, err
	}
	known, err := q.opts.Index.IndexedMetrics(ctx)
	if err != nil {
		return nil, err
	}
	all, err := q.allMetricNames(ctx)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(narrowed)
	for _, n := range all {
		if _, found := slices.BinarySearch(known, n); !found {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// allMetricNames lists the metric names of the UID table (its reverse rows
// of metric UIDs, see mapping.MetricNames). It reuses the last list for MetricNamesTTL unless this
// process has learnt a metric name since (writes through it are seen at
// once; names assigned by other processes within the TTL).
func (q *Querier) allMetricNames(ctx context.Context) ([]string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	gen := q.mapper.UIDs().MetricGeneration()
	if q.names != nil && gen == q.namesGen && time.Since(q.namesRead) < q.opts.MetricNamesTTL {
		return q.names, nil
	}
	names, err := mapping.MetricNames(ctx, q.st, q.opts.UIDTable, q.mapper.Layout().MetricWidth)
	if err != nil {
		return nil, err
	}
	q.names, q.namesRead, q.namesGen = names, time.Now(), gen
	return names, nil
}

// selection accumulates the answer of one scan, or of a query's scans.
type selection struct {
	q    *Querier
	mode mode
	// rawFloats keeps the floats of series without histograms raw
	// (StreamFloats).
	rawFloats  bool
	start, end int64
	matchers   []*labels.Matcher
	series     map[string]*Series // metric ‖ tags -> series
	budget     *Budget            // shared by the selections of one request
	// ahead reports whether the scan works ahead of what is being handed
	// on (see Budget.reserve); nil means no.
	ahead    func() bool
	keyBytes int64 // charged for the keys of series (matching or not)
	merger   mapping.Merger
	hist     histScratch
	// pending are the keys of series met whose labels wait for a batched
	// read of their UIDs' names (resolvePending), in the order met.
	pending []string
}

// maxPending bounds the series of a scan whose labels wait for a batched
// read of names, and so the data kept of series that may turn out not to
// match.
const maxPending = 256

// histScratch is what selection.histograms decodes a row's histogram cells
// into, kept between rows: the chunk appenders copy what they keep.
type histScratch struct {
	cands []histCand
	out   []HistogramSample
	hs    []*histogram.Histogram
	fhs   []*histogram.FloatHistogram
}

// histCand is a histogram cell of a row, by time and version.
type histCand struct {
	t       int64
	version uint64
	cell    int
}

// sub returns a selection of s's query for one scan.
func (s *selection) sub() *selection {
	return &selection{q: s.q, mode: s.mode, rawFloats: s.rawFloats, start: s.start, end: s.end, matchers: s.matchers, series: map[string]*Series{}, budget: s.budget}
}

// tagConstraint is a tag that every selected row must carry, with the
// values it may have (nil: any value).
type tagConstraint struct {
	tagk   []byte
	values [][]byte
}

// constraints resolves the matchers to tag constraints. ok is false when
// no row can match (a required name or value has no UID).
func (s *selection) constraints(ctx context.Context) (cs []tagConstraint, ok bool, err error) {
	uids := s.q.mapper.UIDs()
	byTagk := map[string]*tagConstraint{}
	for _, m := range s.matchers {
		if m.Name == labels.MetricName || m.Matches("") {
			continue // post-filter only: absent labels may match
		}
		tagks, err := uids.IDs(ctx, mapping.KindTagK, m.Name)
		if errors.Is(err, mapping.ErrNoSuchName) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		if len(tagks) > 1 {
			// The name is stored in two forms (see mapping.StoredName);
			// one regex term cannot require either tag: post-filter only.
			continue
		}
		tagk := tagks[0]
		c := byTagk[string(tagk)]
		if c == nil {
			c = &tagConstraint{tagk: tagk}
			byTagk[string(tagk)] = c
		}
		var literals []string
		switch m.Type {
		case labels.MatchEqual:
			literals = []string{m.Value}
		case labels.MatchRegexp:
			literals = m.SetMatches()
		}
		if len(literals) == 0 || c.values != nil {
			continue // presence only, or already narrowed by another matcher
		}
		if len(literals) > 1 {
			if err := uids.LoadIDs(ctx, mapping.KindTagV, literals); err != nil {
				return nil, false, err
			}
		}
		for _, v := range literals {
			ids, err := uids.IDs(ctx, mapping.KindTagV, v)
			if errors.Is(err, mapping.ErrNoSuchName) {
				continue
			}
			if err != nil {
				return nil, false, err
			}
			c.values = append(c.values, ids...)
		}
		if len(c.values) == 0 {
			return nil, false, nil
		}
	}
	for _, c := range byTagk {
		cs = append(cs, *c)
	}
	slices.SortFunc(cs, func(a, b tagConstraint) int { return bytes.Compare(a.tagk, b.tagk) })
	return cs, true, nil
}

// RowRegex builds the row-key regex of OpenTSDB's shape for the tag
// constraints:
//
//	(?s)^.{prefix}(?:.{pair})*<tagk>(?:<v1>|<v2>)(?:.{pair})*...\z
//
// with every UID byte written as \xHH. Constraints must be sorted by tagk
// UID, the order of the pairs in the row key.
func RowRegex(layout mapping.Layout, cs []tagConstraint) string {
	if len(cs) == 0 {
		return ""
	}
	pair := strconv.Itoa(layout.PairLen())
	re := make([]byte, 0, 64)
	re = append(re, `(?s)^.{`...)
	re = strconv.AppendInt(re, int64(layout.PrefixLen()), 10)
	re = append(re, '}')
	for _, c := range cs {
		re = append(re, `(?:.{`+pair+`})*`...)
		re = mapping.AppendRegexQuoted(re, c.tagk)
		if len(c.values) == 0 {
			re = append(re, `.{`...)
			re = strconv.AppendInt(re, int64(layout.TagVWidth), 10)
			re = append(re, '}')
			continue
		}
		re = append(re, `(?:`...)
		for i, v := range c.values {
			if i > 0 {
				re = append(re, '|')
			}
			re = mapping.AppendRegexQuoted(re, v)
		}
		re = append(re, ')')
	}
	re = append(re, `(?:.{`+pair+`})*\z`...)
	return string(re)
}

// rowFilter is the row filter of a query's scans in both forms.
type rowFilter struct {
	regex string
	match func([]byte) bool
}

func newRowFilter(layout mapping.Layout, cs []tagConstraint) rowFilter {
	return rowFilter{regex: RowRegex(layout, cs), match: RowMatcher(layout, cs)}
}

// scans are the scans of a query: per metric UID (a name may have two, see
// mapping.StoredName) and salt bucket, over the hours of [start, end].
func (s *selection) scans(ctx context.Context, names []string, f rowFilter) ([]store.ScanRequest, error) {
	uids := s.q.mapper.UIDs()
	if len(names) > 1 {
		if err := uids.LoadIDs(ctx, mapping.KindMetric, names); err != nil {
			return nil, err
		}
	}
	var reqs []store.ScanRequest
	for _, name := range names {
		metrics, err := uids.IDs(ctx, mapping.KindMetric, name)
		if errors.Is(err, mapping.ErrNoSuchName) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, metric := range metrics {
			for _, p := range s.hourParts() {
				for _, r := range s.q.mapper.Layout().MetricRanges(metric, p.from/1000, p.to/1000) {
					req := store.ScanRequest{Table: s.q.opts.DataTable, Start: r.Start, Stop: r.Stop, Family: "t", RowRegex: f.regex, RowMatch: f.match, KeysOnly: p.keysOnly}
					if s.mode == modeExemplars {
						req.Table, req.Family = s.q.opts.ExemplarTable, mapping.ExemplarFamily
					}
					reqs = append(reqs, req)
				}
			}
		}
	}
	return reqs, nil
}

// hourPart is a part of a selection's range, in whole hours of rows but
// at its edges (Unix milliseconds, inclusive).
type hourPart struct {
	from, to int64
	keysOnly bool // the rows' hours lie inside [start, end]: their keys say all
}

// hourParts returns the selection's range as one part, or, for
// SelectLabels, as the hours at its edges and the whole hours inside it,
// which are scanned for their keys only (see rowInRange: a row inside
// the range counts when it has a cell, none is decoded).
func (s *selection) hourParts() []hourPart {
	const hour = mapping.MaxOffsetMs
	whole := []hourPart{{from: s.start, to: s.end}}
	if s.mode != modeLabels || s.end-s.start+1 < hour {
		return whole
	}
	first := (s.start + hour - 1) / hour * hour // the first hour inside
	last := (s.end - hour + 1) / hour * hour    // the last hour inside
	if first > last {
		return whole
	}
	var parts []hourPart
	if s.start < first {
		parts = append(parts, hourPart{from: s.start, to: first - 1})
	}
	parts = append(parts, hourPart{from: first, to: last + hour - 1, keysOnly: true})
	if s.end >= last+hour {
		parts = append(parts, hourPart{from: last + hour, to: s.end})
	}
	return parts
}

// scanAll runs the scans, up to ScanConcurrency at once (OpenTSDB scans
// its salt buckets in parallel too), each into a selection of its own:
// a series lives in one metric UID and one salt bucket (the salt hashes
// the metric and tags, not the time), so their series never overlap, and
// only the sample count, which bounds the whole query, is shared. The
// first error cancels the other scans.
func (s *selection) scanAll(ctx context.Context, reqs []store.ScanRequest) ([]*selection, error) {
	if len(reqs) <= 1 || s.q.opts.ScanConcurrency <= 1 {
		for _, req := range reqs {
			if err := s.scan(ctx, req); err != nil {
				return nil, err
			}
		}
		return []*selection{s}, nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	subs := make([]*selection, len(reqs))
	sem := make(chan struct{}, s.q.opts.ScanConcurrency)
	var wg sync.WaitGroup
	for i, req := range reqs {
		sub := s.sub()
		subs[i] = sub
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := sub.scan(ctx, req); err != nil {
				cancel(err)
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return subs, nil
}

// scan reads the rows of req into the selection's series. It runs in a
// goroutine of its own when a query scans in parallel, so a panic on
// data the decoders let through (a defect: they check what they read)
// fails the query with an error instead of ending the process.
func (s *selection) scan(ctx context.Context, req store.ScanRequest) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("scan of %s from %x: %w: %v", req.Table, req.Start, errScanPanic, r)
		}
	}()
	sc := s.q.st.Scan(ctx, req)
	defer sc.Close()
	layout := s.q.mapper.Layout()
	var key []byte
	for sc.Next() {
		row := sc.Row()
		_, metric, base, tags, err := layout.ParseRowKey(row.Key)
		if err != nil {
			continue // not a data row of this layout
		}
		key = append(append(key[:0], metric...), tags...)
		ser, ok := s.series[string(key)]
		if ser != nil && ser.pending {
			// A later row (hour) of a series whose labels are not known
			// yet: learn them first, so that no series holds more than a
			// row before it is known to match.
			if err := s.resolvePending(ctx); err != nil {
				return err
			}
			ser = s.series[string(key)]
		}
		if !ok {
			lbls, cached, err := s.q.mapper.CachedLabels(ctx, metric, tags)
			if err != nil {
				return fmt.Errorf("labels of row %x: %w", row.Key, err)
			}
			if cached {
				if ser, err = s.addSeries(ctx, string(key), lbls); err != nil {
					return err
				}
			} else if ser, err = s.addPending(ctx, string(key)); err != nil {
				return err
			}
		}
		if ser == nil {
			continue
		}
		switch s.mode {
		case modeLabels:
			if !ser.inRange {
				ser.inRange, err = s.rowInRange(base, row)
			}
		case modeSamples:
			err = s.addRow(ctx, ser, base, row)
		case modeExemplars:
			err = s.addExemplars(ser, base, row)
		}
		if err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("scan %s [%x, %x): %w", req.Table, req.Start, req.Stop, err)
	}
	return s.resolvePending(ctx)
}

// addSeries adds the series of key with its labels, nil when they do
// not match, and returns it. The map entry is kept for matching series and
// others alike.
func (s *selection) addSeries(ctx context.Context, key string, lbls labels.Labels) (*Series, error) {
	var ser *Series
	if s.matches(lbls) {
		ser = &Series{Labels: lbls}
	}
	if s.mode == modeSamples {
		n := int64(len(key)) + mapEntryOverhead
		if ser != nil {
			ser.charged = int64(lbls.ByteSize()) + seriesOverhead
			n += ser.charged
		}
		if err := s.budget.reserve(ctx, n, s.ahead); err != nil {
			return nil, err
		}
		s.keyBytes += int64(len(key)) + mapEntryOverhead
	}
	s.series[key] = ser
	return ser, nil
}

// addPending adds the series of key, whose labels the caches cannot
// answer, as pending: it collects its rows until resolvePending, which
// runs when maxPending series wait, when a pending series' next row
// comes, and when the scan ends. It returns the series to add the
// current row to, nil when a resolvePending found it does not match.
func (s *selection) addPending(ctx context.Context, key string) (*Series, error) {
	ser := &Series{pending: true}
	if s.mode == modeSamples {
		n := int64(len(key)) + mapEntryOverhead
		if err := s.budget.reserve(ctx, n, s.ahead); err != nil {
			return nil, err
		}
		s.keyBytes += n
	}
	s.series[key] = ser
	s.pending = append(s.pending, key)
	if len(s.pending) < maxPending {
		return ser, nil
	}
	if err := s.resolvePending(ctx); err != nil {
		return nil, err
	}
	return s.series[key], nil
}

// resolvePending reads the names the pending series lack in one batched
// read per kind (mapping.Mapper.LoadNames), then gives each its labels,
// or drops it, releasing what it was charged, when they do not match.
func (s *selection) resolvePending(ctx context.Context) error {
	if len(s.pending) == 0 {
		return nil
	}
	keys := make([][]byte, len(s.pending))
	for i, k := range s.pending {
		keys[i] = []byte(k)
	}
	if err := s.q.mapper.LoadNames(ctx, keys); err != nil {
		return fmt.Errorf("labels of %d series: %w", len(keys), err)
	}
	mw := s.q.mapper.Layout().MetricWidth
	for i, k := range s.pending {
		ser := s.series[k]
		lbls, err := s.q.mapper.Labels(ctx, keys[i][:mw], keys[i][mw:])
		if err != nil {
			return fmt.Errorf("labels of series %x: %w", k, err)
		}
		ser.pending = false
		if !s.matches(lbls) {
			if s.mode == modeSamples {
				s.budget.Release(ser.charged)
			}
			s.series[k] = nil
			continue
		}
		ser.Labels = lbls
		if s.mode == modeSamples {
			n := int64(lbls.ByteSize()) + seriesOverhead
			if err := s.budget.reserve(ctx, n, s.ahead); err != nil {
				return err
			}
			ser.charged += n
		}
	}
	s.pending = s.pending[:0]
	return nil
}

func (s *selection) matches(lbls labels.Labels) bool {
	for _, m := range s.matchers {
		if !m.Matches(lbls.Get(m.Name)) {
			return false
		}
	}
	return true
}

// addRow decodes a row's cells, merges them by timestamp (see
// mapping.Merger: the newest cell version wins, then the later cell), and
// appends the samples in [start, end] to the series' chunks, charging the
// budget for what they grow by.
func (s *selection) addRow(ctx context.Context, ser *Series, base uint32, row store.Row) error {
	pts, err := s.merger.Merge(base, row.Cells, s.start, s.end)
	if err != nil {
		return fmt.Errorf("row %x: %w", row.Key, err)
	}
	hs, err := s.histograms(base, row)
	if err != nil {
		return err
	}
	if len(pts)+len(hs) == 0 {
		return nil
	}
	if err := s.budget.addSamples(len(pts) + len(hs)); err != nil {
		return err
	}
	if ser.cc == nil {
		ser.cc = &chunkCutter{raw: s.rawFloats}
	}
	before := ser.cc.size()
	if err := ser.cc.appendMerged(pts, hs); err != nil {
		return fmt.Errorf("row %x: %w", row.Key, err)
	}
	if d := ser.cc.size() - before; d > 0 {
		if err := s.budget.reserve(ctx, d, s.ahead); err != nil {
			return err
		}
		ser.charged += d
	}
	return nil
}

// rowInRange reports whether a row has a sample (float or histogram) in
// [start, end]: at once when the row's hour lies inside the range, else by
// decoding it (rows at the range's edges only).
func (s *selection) rowInRange(base uint32, row store.Row) (bool, error) {
	first := int64(base) * 1000
	if first >= s.start && first+mapping.MaxOffsetMs-1 <= s.end {
		return len(row.Cells) > 0, nil
	}
	pts, err := s.merger.Merge(base, row.Cells, s.start, s.end)
	if err != nil {
		return false, fmt.Errorf("row %x: %w", row.Key, err)
	}
	if len(pts) > 0 {
		return true, nil
	}
	for _, c := range row.Cells {
		if off, ok := mapping.ParseHistogramQualifier(c.Qualifier); ok {
			if t := first + int64(off); t >= s.start && t <= s.end {
				return true, nil
			}
		}
	}
	return false, nil
}

// addExemplars decodes a row of the exemplar table and appends its
// exemplars in [start, end] to the series, in time order.
func (s *selection) addExemplars(ser *Series, base uint32, row store.Row) error {
	var scratch [8]mapping.Label
	n := len(ser.Exemplars)
	for _, c := range row.Cells {
		off, v, lbls, err := mapping.DecodeExemplarValue(c.Value, scratch[:0])
		if err != nil {
			return fmt.Errorf("row %x: exemplar cell %X: %w", row.Key, c.Qualifier, err)
		}
		t := int64(base)*1000 + int64(off)
		if t < s.start || t > s.end {
			continue
		}
		b := labels.NewScratchBuilder(len(lbls))
		for _, l := range lbls {
			b.Add(string(l.Name), string(l.Value))
		}
		b.Sort()
		ser.Exemplars = append(ser.Exemplars, Exemplar{Labels: b.Labels(), V: v, T: t})
	}
	slices.SortStableFunc(ser.Exemplars[n:], func(a, b Exemplar) int { return cmpT(a.T, b.T) })
	return s.budget.addSamples(len(ser.Exemplars) - n)
}

// histograms decodes the native-histogram cells of a row (qualifier 0x06 +
// offset, see mapping.AppendHistogramQualifier) whose time is in [start,
// end], sorted by time; of several cells with one timestamp (a 3-byte and
// a 5-byte qualifier for the same instant) the newest version wins. The
// samples and their histograms are the selection's scratch, valid until
// the next call.
func (s *selection) histograms(base uint32, row store.Row) ([]HistogramSample, error) {
	sc := &s.hist
	cs := sc.cands[:0]
	for i, c := range row.Cells {
		off, ok := mapping.ParseHistogramQualifier(c.Qualifier)
		if !ok {
			continue
		}
		t := int64(base)*1000 + int64(off)
		if t < s.start || t > s.end {
			continue
		}
		cs = append(cs, histCand{t, c.Timestamp, i})
	}
	sc.cands = cs
	if len(cs) == 0 {
		return nil, nil
	}
	slices.SortStableFunc(cs, func(a, b histCand) int {
		if c := cmpT(a.t, b.t); c != 0 {
			return c
		}
		if a.version != b.version {
			if a.version < b.version {
				return -1
			}
			return 1
		}
		return a.cell - b.cell
	})
	out := sc.out[:0]
	for i, c := range cs {
		if i+1 < len(cs) && cs[i+1].t == c.t {
			continue // a newer version follows
		}
		cell := row.Cells[c.cell]
		k := len(out)
		for len(sc.hs) <= k {
			sc.hs = append(sc.hs, &histogram.Histogram{})
			sc.fhs = append(sc.fhs, &histogram.FloatHistogram{})
		}
		h, fh := sc.hs[k], sc.fhs[k]
		isFloat, err := mapping.DecodeHistogramValue(cell.Value, h, fh)
		if err != nil {
			return nil, fmt.Errorf("row %x: histogram cell %X: %w", row.Key, cell.Qualifier, err)
		}
		hs := HistogramSample{T: c.t, H: h}
		if isFloat {
			hs = HistogramSample{T: c.t, FH: fh}
		}
		out = append(out, hs)
	}
	sc.out = out
	return out, nil
}

// hasRows reports whether metric name has a data row whose hour overlaps
// [start, end] (ms); it reads at most one row per salt bucket.
func (q *Querier) hasRows(ctx context.Context, name string, start, end int64) (bool, error) {
	if start > end || end < 0 || start/1000 > math.MaxUint32 {
		return false, nil
	}
	metrics, err := q.mapper.UIDs().IDs(ctx, mapping.KindMetric, name)
	if errors.Is(err, mapping.ErrNoSuchName) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, metric := range metrics {
		for _, r := range q.mapper.Layout().MetricRanges(metric, max(start, 0)/1000, end/1000) {
			sc := q.st.Scan(ctx, store.ScanRequest{Table: q.opts.DataTable, Start: r.Start, Stop: r.Stop, Family: "t"})
			found := sc.Next()
			err := sc.Err()
			sc.Close()
			if err != nil {
				return false, fmt.Errorf("scan %s [%x, %x): %w", q.opts.DataTable, r.Start, r.Stop, err)
			}
			if found {
				return true, nil
			}
		}
	}
	return false, nil
}
