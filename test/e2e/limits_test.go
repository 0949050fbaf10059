package e2e

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/ingest/limits"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testserver"
)

// TestWideSeries: a series of 10 000 labels, whose row key (60 001 bytes)
// HBase cannot hold, gets 400 naming it, quickly and before any UID is
// assigned, with the default limits and with every limit off; the series
// beside it in the request is written and reads back. Run it with
// PROMHBASE_TEST_BACKEND=hbase to see HBase never asked.
func TestWideSeries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		lim  *limits.Config
	}{
		{"default limits", nil},
		{"no limits", &limits.Config{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarnessWith(t, mapping.DefaultLayout(), testserver.Options{Limits: tc.lim})
			wide := lbl("__name__", "e2e_wide")
			for i := 1; i < 10_000; i++ {
				wide = append(wide, prompb.Label{Name: fmt.Sprintf("l%05d", i), Value: "v"})
			}
			narrow := lbl("__name__", "e2e_narrow", "job", "e2e")
			start := time.Now()
			err := remoteWrite(t.Context(), h.url, []prompb.TimeSeries{
				{Labels: narrow, Samples: []prompb.Sample{{Timestamp: t0, Value: 7}}},
				{Labels: wide, Samples: []prompb.Sample{{Timestamp: t0, Value: 1}}},
			})
			t.Logf("backend %s: answered in %s: %v", testbackend.Name(), time.Since(start).Round(time.Microsecond), err)
			if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), `__name__="e2e_wide"`) ||
				!strings.Contains(err.Error(), "more than HBase's 32767") {
				t.Fatalf("want a 400 naming e2e_wide and HBase's bound, got %v", err)
			}
			nl := labels.FromStrings("__name__", "e2e_narrow", "job", "e2e")
			h.model[nl.String()] = &modelSeries{lbls: nl, samples: map[int64]float64{t0: 7}}
			h.check("narrow", t0, t0+1000, eq("__name__", "e2e_narrow"))
			h.check("wide", t0, t0+1000, eq("__name__", "e2e_wide"))
			if n := h.mapper.UIDs().Capacity(uid.KindTagK) - h.mapper.UIDs().Headroom(uid.KindTagK); n > 1 {
				t.Errorf("%d tag-name UIDs assigned: the wide series' labels got UIDs", n)
			}
		})
	}
}

// TestRowKeyBoundOfStore: mapping.MaxRowKeyBytes is the longest row key
// the store takes: a row of exactly that length is written and read back;
// on HBase one byte more is refused.
func TestRowKeyBoundOfStore(t *testing.T) {
	t.Parallel()
	st, tb := testbackend.New(t)
	ctx := t.Context()
	row := bytes.Repeat([]byte{0x01}, mapping.MaxRowKeyBytes)
	put := func(row []byte) error {
		return st.Put(ctx, tb.Data, []store.Put{{Row: row, Cells: []store.Cell{{Family: []byte("t"), Qualifier: []byte{0xf0, 0, 0, 0}, Value: []byte{1}}}}})
	}
	if err := put(row); err != nil {
		t.Fatalf("row of %d bytes: %v", len(row), err)
	}
	got, err := st.Get(ctx, tb.Data, row, "t")
	if err != nil || len(got.Cells) != 1 {
		t.Fatalf("row of %d bytes read back: %v, %v", len(row), got, err)
	}
	err = put(append(row, 0x01))
	t.Logf("backend %s: row of %d bytes: %.200v", testbackend.Name(), len(row)+1, err)
	if testbackend.Name() == "hbase" && err == nil {
		t.Fatalf("HBase took a row key of %d bytes", len(row)+1)
	}
}
