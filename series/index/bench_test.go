package index

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
)

// BenchmarkLabels1M: the label questions Grafana asks, answered from the
// index of 1 000 000 series (1000 metrics × 1000 instances, 10 labels:
// job with 10 values, zone with 3, pod and instance unique) written on one
// day, on the embedded store. Build once (about a minute), then each
// question. The unique labels' values have UIDs without names: the
// questions below never name them.
func BenchmarkLabels1M(b *testing.B) {
	ctx := context.Background()
	g := newRig(b)
	const d0, metrics, instances = 19700, 1000, 1000
	uidOf := func(kind uid.Kind, name string) []byte {
		u, err := g.mapper.UIDs().GetOrCreate(ctx, kind, []byte(name))
		if err != nil {
			b.Fatal(err)
		}
		return u
	}
	var metricUIDs [][]byte
	for m := range metrics {
		metricUIDs = append(metricUIDs, uidOf(uid.KindMetric, fmt.Sprintf("metric_%d", m)))
	}
	names := []string{"cluster", "env", "instance", "job", "namespace", "pod", "region", "team", "zone"}
	tagks := map[string][]byte{}
	for _, n := range names {
		tagks[n] = uidOf(uid.KindTagK, n)
	}
	small := func(name string, n int) [][]byte {
		var out [][]byte
		for i := range n {
			out = append(out, uidOf(uid.KindTagV, fmt.Sprintf("%s-%d", name, i)))
		}
		return out
	}
	jobs, zones, shared := small("job", 10), small("zone", 3), small("v", 1)[0]
	synthetic := func(i int) []byte { // a tagv UID without a name
		return binary.BigEndian.AppendUint32(nil, uint32(1<<23+i))[1:]
	}
	layout := mapping.DefaultLayout()
	var batch []Entry
	for m := range metrics {
		for i := range instances {
			var tags []byte
			for _, n := range names {
				v := shared
				switch n {
				case "job":
					v = jobs[m%10]
				case "zone":
					v = zones[i%3]
				case "instance":
					v = synthetic(i)
				case "pod":
					v = synthetic(instances + m*instances + i)
				}
				tags = append(append(tags, tagks[n]...), v...)
			}
			layout.SortTags(tags)
			batch = append(batch, Entry{Series: series.Series{Metric: metricUIDs[m], Tags: tags}, Day: d0})
		}
		if err := g.w.Write(ctx, batch); err != nil {
			b.Fatal(err)
		}
		batch = batch[:0]
	}
	start, end := int64(d0)*day+3600_000, int64(d0)*day+7200_000
	for _, tc := range []struct {
		name string
		fn   func() (int, error)
	}{
		{"label_names", func() (int, error) { v, err := g.r.LabelNames(ctx, start, end); return len(v), err }},
		{"job_values", func() (int, error) { v, err := g.r.LabelValues(ctx, "job", start, end); return len(v), err }},
		{"metric_names", func() (int, error) { v, err := g.r.LabelValues(ctx, "__name__", start, end); return len(v), err }},
		{"metrics_of_job", func() (int, error) {
			ms, _ := parser.NewParser(parser.Options{}).ParseMetricSelector(`{job="job-3"}`)
			v, err := g.r.MetricNames(ctx, start, end, ms)
			return len(v), err
		}},
		{"metrics_of_job_regex", func() (int, error) {
			ms, _ := parser.NewParser(parser.Options{}).ParseMetricSelector(`{job=~"job-[0-4]", zone="zone-1"}`)
			v, err := g.r.MetricNames(ctx, start, end, ms)
			return len(v), err
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				var err error
				if n, err = tc.fn(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n), "answers")
		})
	}
}

// discardStore accepts every Put and holds no rows: the index Writer's
// own cost, without a store's.
type discardStore struct{}

func (discardStore) Put(context.Context, string, []store.Put) error { return nil }

// discardDeferredStore is a discardStore with PutDeferred, as the
// embedded store has.
type discardDeferredStore struct{ discardStore }

func (discardDeferredStore) PutDeferred(context.Context, string, []store.Put) error { return nil }
func (discardStore) Get(context.Context, string, []byte, string) (store.Row, error) {
	return store.Row{}, nil
}

// BenchmarkWriteNewSeries: the index writes of a remote-write request of
// 2000 series never seen (the harness's labels: 100 metrics, 9 tags, one
// of them unique per series), into a store that discards them: with
// TSMeta rows (HBase, Put) and without (the embedded store, PutDeferred).
// Reports ns per series.
func BenchmarkWriteNewSeries(b *testing.B) {
	for _, skip := range []bool{false, true} {
		name := "tsmeta"
		if skip {
			name = "cells"
		}
		b.Run(name, func(b *testing.B) { benchWriteNewSeries(b, skip) })
	}
}

func benchWriteNewSeries(b *testing.B, skipTSMeta bool) {
	layout := mapping.DefaultLayout()
	// Without TSMeta rows as the embedded store writes (PutDeferred, with
	// the writes that follow a request's samples); with them as HBase.
	var st writeStore = discardStore{}
	write := func(w *Writer, entries []Entry) error { return w.Write(context.Background(), entries) }
	if skipTSMeta {
		st = discardDeferredStore{}
	}
	w := NewWriter(st, Options{MetaTable: metaTable, IndexTable: indexTable, Layout: layout, SkipTSMeta: skipTSMeta}, nil)
	uid := func(dst []byte, v int) []byte { return append(dst, byte(v>>16), byte(v>>8), byte(v)) }
	const batch = 2000
	entries := make([]Entry, batch)
	// The entries' UIDs, rewritten each round (the Writer keeps none), so
	// that the allocations reported are the Writer's.
	buf := make([]byte, 0, batch*(3+9*6))
	next := 0
	b.ReportAllocs()
	for b.Loop() {
		buf = buf[:0]
		for i := range entries {
			n := next + i
			at := len(buf)
			buf = uid(buf, n%100)
			for k, v := range [...]int{n % 16, n % 3, n % 8, 0, n / 100, 0, n % 4, n % 40, n} {
				buf = uid(uid(buf, k+1), v+1)
			}
			entries[i] = Entry{Series: series.Series{Metric: buf[at : at+3], Tags: buf[at+3:]}, Day: 19700}
		}
		next += batch
		if err := write(w, entries); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/series")
}
