package compact

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/ingest"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/benchdata"
)

// nopPutter acknowledges every Put without storing it.
type nopPutter struct{}

func (nopPutter) Put(context.Context, string, []store.Put) error { return nil }

// BenchmarkWritePathNoted measures Writer.Write (protobuf to Puts, the
// store excluded) without and with the scheduler remembering the rows: the
// cost compaction adds to the write hot path, in steady state (every row
// already remembered for its hour).
func BenchmarkWritePathNoted(b *testing.B) {
	e := newEnv(b, mapping.DefaultLayout())
	e.now = time.Unix(t0, 0)
	series := benchdata.Series() // restamped into hour t0
	for i := range series {
		series[i].Samples[0].Timestamp = t0*1000 + 123
	}
	body, err := benchdata.V1Request(series)
	if err != nil {
		b.Fatal(err)
	}
	e.write(series...) // assigns the UIDs, warms the series cache
	for _, noted := range []bool{false, true} {
		b.Run(fmt.Sprintf("noted=%v", noted), func(b *testing.B) {
			opts := ingest.Options{Table: e.Tables.Data}
			if noted {
				s, err := NewScheduler(e.c, SchedulerOptions{Now: func() time.Time { return e.now }})
				if err != nil {
					b.Fatal(err)
				}
				opts.RowNoter = s
			}
			w := ingest.New(e.Mapper, nopPutter{}, opts)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := w.Write(ctx, body, false); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(series)), "ns/sample")
		})
	}
}

// BenchmarkNoteRows measures Scheduler.NoteRows alone on a request of 2000
// rows already remembered, and reports the memory one remembered row takes.
func BenchmarkNoteRows(b *testing.B) {
	layout := mapping.DefaultLayout()
	c := New(nil, Options{Layout: layout})
	s, err := NewScheduler(c, SchedulerOptions{Now: func() time.Time { return time.Unix(t0, 0) }})
	if err != nil {
		b.Fatal(err)
	}
	const rows = 2000
	puts := make([]store.Put, rows)
	for i := range puts {
		tags := make([]byte, 0, 60)
		for j := range 10 {
			tags = append(tags, 0, 0, byte(j+1), byte(i>>16), byte(i>>8), byte(i+j))
		}
		puts[i].Row = layout.AppendRowKey(nil, []byte{0, 0, byte(i%50 + 1)}, t0, tags)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s.NoteRows(puts)
	// Twice: the scratch NoteRows keeps for reuse (a sync.Pool) goes with
	// the second, so that what remains is what it remembered.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportAllocs()
	for b.Loop() {
		s.NoteRows(puts)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/rows, "bytes/remembered-row")
	runtime.KeepAlive(s)
}

// BenchmarkCompaction writes 1000 series × 24 hours of 60 s samples
// (1,440,000 samples, one cell each, written as Prometheus sends them: one
// request per scrape round) through the write path, then measures reading
// all of them back through query.Querier and the bytes they take, before
// and after CompactRange. Bytes: kv-bytes is the size of the cells in
// HBase's KeyValue format (20 bytes of framing + row + family + qualifier
// + value per cell, before HBase's block encoding and compression);
// sst-bytes is the embedded store's live sstables after a flush and a full
// Pebble compaction (embedded backend only; Pebble prefix-compresses keys
// and snappy-compresses blocks).
func BenchmarkCompaction(b *testing.B) {
	const (
		nSeries = 1000
		hours   = 24
		step    = 60 * time.Second
	)
	e := newEnv(b, mapping.DefaultLayout())
	e.now = time.Unix(t0+hours*3600+3600, 0)
	lbls := make([][]prompb.Label, nSeries)
	for i := range lbls {
		lbls[i] = []prompb.Label{{Name: "__name__", Value: "bench_compaction"}, {Name: "instance", Value: fmt.Sprintf("host-%04d:9100", i)}, {Name: "job", Value: "node"}}
	}
	start := time.Now()
	rounds := int(hours * time.Hour / step)
	req := make([]prompb.TimeSeries, nSeries)
	for r := range rounds {
		ts := int64(t0)*1000 + int64(r)*step.Milliseconds()
		for i := range req {
			req[i] = prompb.TimeSeries{Labels: lbls[i], Samples: []prompb.Sample{{Timestamp: ts + int64(i%1000), Value: float64((r*7+i)%1000) * 0.25}}}
		}
		e.write(req...)
	}
	b.Logf("wrote %d samples in %s", nSeries*rounds, time.Since(start).Round(time.Millisecond))

	read := func(b *testing.B) {
		b.ReportAllocs()
		var n int
		for b.Loop() {
			got, err := e.Querier.Select(context.Background(), int64(t0)*1000, int64(t0+hours*3600)*1000, labels.MustNewMatcher(labels.MatchEqual, "__name__", "bench_compaction"))
			if err != nil {
				b.Fatal(err)
			}
			n = 0
			for _, s := range got {
				n += len(s.Samples)
			}
		}
		if n != nSeries*rounds {
			b.Fatalf("read %d samples, want %d", n, nSeries*rounds)
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "samples/s")
	}
	size := func(b *testing.B) {
		kv, cells := e.kvBytes()
		b.ReportMetric(float64(kv), "kv-bytes")
		b.ReportMetric(float64(kv)/float64(nSeries*rounds), "kv-bytes/sample")
		b.ReportMetric(float64(cells), "cells")
		if d, ok := e.sstBytes(); ok {
			b.ReportMetric(float64(d), "sst-bytes")
			b.ReportMetric(float64(d)/float64(nSeries*rounds), "sst-bytes/sample")
		}
	}
	b.Run("before", func(b *testing.B) { read(b); size(b) })
	start = time.Now()
	st, err := e.c.CompactRange(context.Background(), time.Unix(t0, 0), time.Unix(t0+hours*3600, 0), nil)
	if err != nil || st.Errors > 0 || st.Compacted != nSeries*hours {
		b.Fatalf("compaction: %s, %v; want %d rows compacted", st, err, nSeries*hours)
	}
	took := time.Since(start)
	b.Logf("compacted in %s: %s", took.Round(time.Millisecond), st)
	b.Run("after", func(b *testing.B) {
		read(b)
		size(b)
		b.ReportMetric(float64(st.Compacted)/took.Seconds(), "compacted-rows/s")
		b.ReportMetric(float64(nSeries*rounds)/took.Seconds(), "compacted-samples/s")
	})
}

// kvBytes returns the size of the data table's cells in HBase's KeyValue
// format, and their number.
func (e *env) kvBytes() (int, int) {
	e.T.Helper()
	sc := e.Store.Scan(context.Background(), store.ScanRequest{Table: e.Tables.Data})
	defer sc.Close()
	total, cells := 0, 0
	for sc.Next() {
		r := sc.Row()
		for _, c := range r.Cells {
			// key length, value length, row length, family length, ts, type.
			total += 4 + 4 + 2 + len(r.Key) + 1 + len(c.Family) + len(c.Qualifier) + 8 + 1 + len(c.Value)
			cells++
		}
	}
	if err := sc.Err(); err != nil {
		e.T.Fatal(err)
	}
	return total, cells
}

// sstBytes returns the embedded store's sstable bytes once settled.
func (e *env) sstBytes() (uint64, bool) {
	e.T.Helper()
	d, ok := e.Store.(interface {
		CompactAll(context.Context) error
		SSTableBytes() uint64
	})
	if !ok {
		return 0, false
	}
	if err := d.CompactAll(context.Background()); err != nil {
		e.T.Fatal(err)
	}
	return d.SSTableBytes(), true
}

// BenchmarkCompactRows compacts 200 rows of an hour of 120 samples each
// (a sample every 30 s), written through the embedded store's row buffer
// and flushed into Pebble before the clock starts, as the scheduler finds
// them an hour later: a read of the row, the compacted cell's put (its
// version checked), a bounded delete of the sample cells.
func BenchmarkCompactRows(b *testing.B) {
	e := newEnv(b, mapping.DefaultLayout())
	flusher, ok := e.Store.(interface{ CompactAll(context.Context) error })
	if !ok {
		b.Skip("the store cannot flush its buffer; the benchmark is the embedded store's")
	}
	const rows, samples = 200, 120
	b.ReportAllocs()
	round := 0
	for b.Loop() {
		b.StopTimer()
		var ss []prompb.TimeSeries
		for i := range rows {
			var pts []prompb.Sample
			for j := range samples {
				// A fresh hour each round (of the 47 before the
				// compactor's clock), so that each compaction finds
				// one hour of samples, as the scheduler does.
				hour := int64(round % 47 * 3600)
				pts = append(pts, prompb.Sample{Timestamp: (t0+hour+int64(j)*30)*1000 + int64(round/47), Value: float64(i*samples + j + round)})
			}
			ss = append(ss, promSeries("compact_bench", []string{"instance", fmt.Sprint(i)}, pts...))
		}
		e.write(ss...)
		if err := flusher.CompactAll(context.Background()); err != nil {
			b.Fatal(err)
		}
		round++
		b.StartTimer()
		from := time.Unix(t0+int64((round-1)%47*3600), 0)
		st, err := e.c.CompactRange(context.Background(), from, from.Add(time.Hour), nil)
		if err != nil || st.Errors > 0 || st.Compacted != rows {
			b.Fatalf("compact the hour from %s: %s, %v", from, st, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
}
