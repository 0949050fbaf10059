package query

import (
	"testing"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded"
)

// openStore opens an embedded store without syncs in a directory of the
// test's, closed at its end; opts.Tables nil holds tsdb and tsdb-uid.
func openStore(t testing.TB, opts embedded.Options) *embedded.Store {
	t.Helper()
	opts.NoSync = true
	if opts.Tables == nil {
		opts.Tables = []string{"tsdb", "tsdb-uid"}
	}
	es, err := embedded.Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { es.Close() })
	return es
}

// coldMapper returns a mapper over st whose caches are empty, as after a
// restart.
func coldMapper(t testing.TB, st store.Store) *series.Mapper {
	t.Helper()
	return layoutMapper(t, st, mapping.DefaultLayout(), uid.UIDOptions{})
}

// layoutMapper is coldMapper in layout, its UIDs as opts says.
func layoutMapper(t testing.TB, st store.Store, layout mapping.Layout, opts uid.UIDOptions) *series.Mapper {
	t.Helper()
	uids, err := uid.NewUIDs(st, layout, opts)
	if err != nil {
		t.Fatal(err)
	}
	return series.NewMapper(uids, layout, 0)
}

// warmStore opens an embedded store and a mapper that writes into it.
func warmStore(t *testing.T) (*embedded.Store, *series.Mapper) {
	t.Helper()
	es := openStore(t, embedded.Options{})
	return es, coldMapper(t, es)
}

// newQuerier opens an embedded store, a mapper that writes into it and a
// Querier that reads it through the same mapper.
func newQuerier(t testing.TB) (*Querier, *series.Mapper, store.Store) {
	t.Helper()
	st := openStore(t, embedded.Options{})
	m := coldMapper(t, st)
	return New(st, m, Options{}), m, st
}

// reportSamples fails a benchmark whose last round read other than the
// 360 000 samples of its 1000 series × 1 hour of 10 s samples, and reports
// the samples read a second.
func reportSamples(b *testing.B, n int) {
	b.Helper()
	if n != 360000 {
		b.Fatalf("%d samples", n)
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "samples/s")
}
