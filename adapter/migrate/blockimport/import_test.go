package blockimport

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunks"
)

// fakeSender records the samples it is sent, in any order, after a
// random delay; it fails its failAt-th request.
type fakeSender struct {
	mu     sync.Mutex
	got    map[string]bool // "labels@t"
	n      atomic.Int32
	failAt int32
}

func (f *fakeSender) Send(_ context.Context, req *prompb.WriteRequest) error {
	n := f.n.Add(1)
	time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
	if n == f.failAt {
		return errOutage
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ts := range req.Timeseries {
		for _, s := range ts.Samples {
			f.got[fmt.Sprintf("%s@%d", ts.Labels[len(ts.Labels)-1].Value, s.Timestamp)] = true
		}
	}
	return nil
}

// TestImportResumes: two blocks of 40 series, sent 4 requests at once by
// batches of 100 samples; the 23rd request fails (an outage), and the
// import stops; run again with the same progress file, it goes on from
// the series every request before the first unacknowledged one sent, and
// every sample arrives (some twice: the same cells). The sender's random
// delays, which shuffle the order its requests end in, are on a synctest
// bubble's clock.
func TestImportResumes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		want := 0
		for b := range 2 {
			var ss []storage.Series
			for i := range 40 {
				var smp []chunks.Sample
				for k := range 60 {
					smp = append(smp, fsample{int64(b*1_000_000 + k*1000), float64(i*k) + 0.5})
				}
				want += len(smp)
				ss = append(ss, seriesM(i, smp))
			}
			createBlock(t, dir, ss)
		}
		f := &fakeSender{got: map[string]bool{}, failAt: 23}
		opts := Options{Paths: []string{dir}, MinT: -1 << 62, MaxT: 1 << 62, BatchSamples: 100, Concurrency: 4,
			ProgressFile: filepath.Join(t.TempDir(), "p.json"), Job: "test"}
		st, err := Import(context.Background(), f, opts)
		if !errors.Is(err, errOutage) {
			t.Fatalf("first run: %v, want the outage", err)
		}
		first := st.Samples
		st, err = Import(context.Background(), f, opts)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Resumed || st.BlocksSkipped+int(st.SeriesSkipped) == 0 || first == 0 {
			t.Errorf("second run: %+v (first sent %d): want it resumed", st, first)
		}
		if len(f.got) != want {
			t.Errorf("%d distinct samples arrived, want %d", len(f.got), want)
		}
	})
}
