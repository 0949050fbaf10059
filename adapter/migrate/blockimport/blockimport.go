// Package blockimport imports Prometheus's TSDB blocks (a data
// directory, a snapshot, or block directories, read-only) into a
// promhbase through its remote-write endpoint, in batches of bounded
// size, resumably: a progress file records, per block, the series whose
// samples the store acknowledged, and a run with the same job goes on
// after them. Samples sent twice (the batch in flight when a run was
// killed) are written as the same cells, so nothing is doubled.
//
// Blocks are read with Prometheus's own tsdb package. Float chunks go as
// they are to /api/v1/import/chunks (chunks.go); native histograms, the
// samples of chunks that the range or the retention cuts, and blocks with
// deletions go by remote write. The HTTP senders (remote.go) retry network
// errors, 5xx and 429.
package blockimport

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// Sender writes one remote-write request; it returns once the store
// acknowledged it (retrying what can be retried), or an error.
type Sender interface {
	Send(ctx context.Context, req *prompb.WriteRequest) error
}

// Options configure an Import.
type Options struct {
	// Paths are block directories, or directories holding blocks (a data
	// directory, a snapshot).
	Paths []string
	// MinT and MaxT bound the samples imported (Unix ms, inclusive).
	MinT, MaxT int64
	// ExpireBefore, when positive (Unix ms), skips the samples before it
	// and counts them in Stats.Expired: those the server's retention
	// would drop.
	ExpireBefore int64
	// Matchers select the series (any set matching; none: all).
	Matchers [][]*labels.Matcher
	// BatchSamples bounds the samples of one request (default 50 000).
	BatchSamples int
	// Concurrency is how many requests are in flight at once (default
	// 4); progress is recorded in order.
	Concurrency int
	// ProgressFile is where progress is kept; empty: nowhere (no resume).
	ProgressFile string
	// Job names what is imported where (paths, range, selectors,
	// destination): progress recorded for another job is discarded.
	Job string
	// Progress, when set, is told of each batch acknowledged.
	Progress func(Stats)
	Logger   *slog.Logger
}

// Stats counts an import.
type Stats struct {
	Blocks, BlocksDone int
	Series             int64 // series sent
	Samples            int64 // float samples and histograms sent
	SamplesTotal       int64 // the blocks' samples (meta.json), an upper bound with filters
	Expired            int64 // samples skipped as before Options.ExpireBefore
	BlocksSkipped      int   // blocks an earlier run sent whole
	SeriesSkipped      int64 // series of the other blocks an earlier run sent
	Resumed            bool
}

// progress is the progress file's content.
type progress struct {
	Job string `json:"job"`
	// Blocks maps a block's ULID to the number of its selected series
	// (in the blocks' order) sent; -1: the block is done.
	Blocks map[string]int64 `json:"blocks"`
}

// Blocks returns the block directories of paths, in time order.
func Blocks(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		if _, err := os.Stat(filepath.Join(p, "meta.json")); err == nil {
			out = append(out, p)
			continue
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("blocks in %s: %w", p, err)
		}
		n := len(out)
		for _, e := range ents {
			if _, err := os.Stat(filepath.Join(p, e.Name(), "meta.json")); e.IsDir() && err == nil {
				out = append(out, filepath.Join(p, e.Name()))
			}
		}
		if len(out) == n {
			return nil, fmt.Errorf("%s holds no TSDB block (no meta.json in it or its subdirectories)", p)
		}
		if st, err := os.Stat(filepath.Join(p, "wal")); err == nil && st.IsDir() {
			if segs, _ := os.ReadDir(filepath.Join(p, "wal")); len(segs) > 0 {
				return nil, fmt.Errorf("%s has a write-ahead log (wal/): its head is not in a block; import a snapshot "+
					"(POST /api/v1/admin/tsdb/snapshot writes the head as a block) or stop Prometheus and let it cut the head", p)
			}
		}
	}
	return out, nil
}

// Import imports the blocks of opts.Paths through s.
func Import(ctx context.Context, s Sender, opts Options) (Stats, error) {
	if opts.BatchSamples <= 0 {
		opts.BatchSamples = 50_000
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	everySeries := len(opts.Matchers) == 0
	if everySeries {
		opts.Matchers = [][]*labels.Matcher{{labels.MustNewMatcher(labels.MatchRegexp, model.MetricNameLabel, ".+")}}
	}
	var st Stats
	dirs, err := Blocks(opts.Paths)
	if err != nil {
		return st, err
	}
	prog := progress{Job: opts.Job, Blocks: map[string]int64{}}
	if opts.ProgressFile != "" {
		if b, err := os.ReadFile(opts.ProgressFile); err == nil {
			var old progress
			if json.Unmarshal(b, &old) == nil && old.Job == opts.Job && old.Blocks != nil {
				prog, st.Resumed = old, true
			} else {
				opts.Logger.Warn("progress file of another import: starting over", "file", opts.ProgressFile)
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			return st, fmt.Errorf("read progress: %w", err)
		}
	}
	blocks := make([]*tsdb.Block, 0, len(dirs))
	defer func() {
		for _, b := range blocks {
			b.Close()
		}
	}()
	for _, d := range dirs {
		b, err := tsdb.OpenBlock(opts.Logger, d, nil, nil)
		if err != nil {
			return st, fmt.Errorf("open block %s: %w", d, err)
		}
		blocks = append(blocks, b)
		st.SamplesTotal += int64(b.Meta().Stats.NumSamples)
	}
	slices.SortFunc(blocks, func(a, b *tsdb.Block) int { return int(a.Meta().MinTime - b.Meta().MinTime) })
	st.Blocks = len(blocks)
	save := func() error {
		if opts.ProgressFile == "" {
			return nil
		}
		b, err := json.Marshal(prog)
		if err != nil {
			return err
		}
		tmp := opts.ProgressFile + ".tmp"
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			return fmt.Errorf("write progress: %w", err)
		}
		return os.Rename(tmp, opts.ProgressFile)
	}
	for _, b := range blocks {
		id := b.Meta().ULID.String()
		done := prog.Blocks[id]
		if done < 0 {
			st.BlocksDone++
			st.BlocksSkipped++
			continue
		}
		// A block selected whole and older than ExpireBefore (its MaxTime
		// is exclusive) is counted from its meta.json, not read.
		m := b.Meta()
		if done == 0 && everySeries && opts.ExpireBefore > 0 && m.MaxTime <= opts.ExpireBefore && opts.MinT <= m.MinTime && opts.MaxT >= m.MaxTime-1 {
			st.Expired += int64(m.Stats.NumSamples)
			prog.Blocks[id] = -1
			st.BlocksDone++
			if err := save(); err != nil {
				return st, err
			}
			continue
		}
		read := func(ctx context.Context, b *tsdb.Block, opts Options, skip int64, st *Stats, acked func(n, samples int64) error) error {
			return importBlock(ctx, s, b, opts, skip, st, acked)
		}
		// A block with deletions has its chunks encoded again where they
		// cut one (see importBlockChunks): its samples go one by one.
		if cs, ok := s.(ChunkSender); ok && b.Meta().Stats.NumTombstones == 0 {
			read = func(ctx context.Context, b *tsdb.Block, opts Options, skip int64, st *Stats, acked func(n, samples int64) error) error {
				return importBlockChunks(ctx, cs, b, opts, skip, st, acked)
			}
		}
		err := read(ctx, b, opts, done, &st, func(n, samples int64) error {
			prog.Blocks[id] = n
			st.Samples += samples
			if opts.Progress != nil {
				opts.Progress(st)
			}
			return save()
		})
		if err != nil {
			return st, fmt.Errorf("block %s (%s): %w", id, b.Dir(), err)
		}
		prog.Blocks[id] = -1
		st.BlocksDone++
		if err := save(); err != nil {
			return st, err
		}
		if opts.Progress != nil {
			opts.Progress(st)
		}
	}
	return st, nil
}

// appendAt appends the sample of type vt where it stands to ts.
func appendAt(ts *prompb.TimeSeries, it chunkenc.Iterator, vt chunkenc.ValueType) {
	switch vt {
	case chunkenc.ValFloat:
		t, v := it.At()
		ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: t, Value: v})
	case chunkenc.ValHistogram:
		t, h := it.AtHistogram(nil)
		ts.Histograms = append(ts.Histograms, prompb.FromIntHistogram(t, h))
	case chunkenc.ValFloatHistogram:
		t, h := it.AtFloatHistogram(nil)
		ts.Histograms = append(ts.Histograms, prompb.FromFloatHistogram(t, h))
	}
}

// blockCounts are what an import of a block counts into Stats once it is
// done: the series sent, those skipped (sent before a resume), and the
// samples left out as expired.
type blockCounts struct{ sent, skipped, expired int64 }

// addTo adds the counts to st.
func (c *blockCounts) addTo(st *Stats) {
	st.Series, st.SeriesSkipped, st.Expired = st.Series+c.sent, st.SeriesSkipped+c.skipped, st.Expired+c.expired
}

// expireBeforeOf is the time before which samples are left out as
// expired: Options.ExpireBefore, or none.
func expireBeforeOf(opts Options) int64 {
	if opts.ExpireBefore <= 0 {
		return math.MinInt64 // none
	}
	return opts.ExpireBefore
}

// importBlock sends the selected series of b from the skip-th on; acked
// is called, one call at a time, with the number of series sent whole and
// the samples sent once each batch and those before it are acknowledged
// (a series longer than a batch is sent in parts, and counts once its
// last part is). The series are counted into st once the block is done.
func importBlock(ctx context.Context, s Sender, b *tsdb.Block, opts Options, skip int64, st *Stats, acked func(n, samples int64) error) error {
	mint, maxt := max(opts.MinT, b.Meta().MinTime), min(opts.MaxT, b.Meta().MaxTime)
	if mint > maxt {
		return nil
	}
	q, err := tsdb.NewBlockQuerier(b, mint, maxt)
	if err != nil {
		return err
	}
	defer q.Close()
	sets := make([]storage.SeriesSet, 0, len(opts.Matchers))
	for _, ms := range opts.Matchers {
		sets = append(sets, q.Select(ctx, true, nil, ms...))
	}
	set := storage.NewMergeSeriesSet(sets, 0, storage.ChainedSeriesMerge)
	var (
		req     = &prompb.WriteRequest{}
		samples int   // in req
		index   int64 // series seen
		it      chunkenc.Iterator
		pending bool
		counts  blockCounts
		p       = newPipeline(ctx, cmp.Or(opts.Concurrency, 4), acked)
	)
	expireBefore := expireBeforeOf(opts)
	defer counts.addTo(st)
	flush := func(complete int64) error {
		if !pending {
			return nil
		}
		r := req
		if err := p.send(func(ctx context.Context) error { return s.Send(ctx, r) }, int64(samples), complete); err != nil {
			return err
		}
		req, samples, pending = &prompb.WriteRequest{Timeseries: make([]prompb.TimeSeries, 0, len(req.Timeseries))}, 0, false
		return nil
	}
	for set.Next() {
		if index < skip {
			index++
			counts.skipped++
			continue
		}
		series := set.At()
		lbls := prompb.FromLabels(series.Labels(), nil)
		ts := prompb.TimeSeries{Labels: lbls}
		it = series.Iterator(it)
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			if it.AtT() < expireBefore {
				counts.expired++
				continue
			}
			appendAt(&ts, it, vt)
			samples++
			if samples >= opts.BatchSamples {
				req.Timeseries = append(req.Timeseries, ts)
				pending = true
				if err := flush(index); err != nil {
					return err
				}
				ts = prompb.TimeSeries{Labels: lbls}
			}
		}
		if err := it.Err(); err != nil {
			return p.abort(fmt.Errorf("series %s: %w", series.Labels(), err))
		}
		index++
		counts.sent++
		if len(ts.Samples)+len(ts.Histograms) > 0 {
			req.Timeseries = append(req.Timeseries, ts)
			pending = true
		}
		if samples >= opts.BatchSamples/2 {
			if err := flush(index); err != nil {
				return err
			}
		}
	}
	return p.finish(set.Err(), flush, index)
}
