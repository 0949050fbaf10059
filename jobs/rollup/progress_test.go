package rollup_test

import (
	"context"
	"encoding/hex"
	"sync"
	"testing"
	"time"

	"github.com/promhbase/promhbase/jobs/rollup"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// scanHook is a store that calls onScan (once) when a scan of table
// starts: a write that lands while a build reads its hour.
type scanHook struct {
	store.Store
	table  string
	once   sync.Once
	onScan func()
}

func (s *scanHook) Scan(ctx context.Context, req store.ScanRequest) store.Scanner {
	if req.Table == s.table {
		s.once.Do(s.onScan)
	}
	return s.Store.Scan(ctx, req)
}

// TestBuildRecordsHours: an hour built is recorded in the progress row
// (the day's cell, its bytes pinned); a write into it makes it stale
// until it is built again; a write that lands while the hour is built
// leaves it unbuilt (the build may have missed it), and so does a build
// of an hour that ended less than MinBuildAge ago; marking hours no build
// recorded changes nothing.
func TestBuildRecordsHours(t *testing.T) {
	t.Parallel()
	g := newRig(t, mapping.DefaultLayout())
	ctx := ctxFor(t)
	const hour = mapping.MaxTimespan
	g.write(promSeries("m", "a", []sample{{h0*1000 + 1000, 1}, {(h0 + hour) * 1000, 2}}))
	b := g.builder()
	progress := func() *rollup.Progress {
		t.Helper()
		p, err := rollup.ReadProgress(ctx, g.Store, g.Tables.Rollup5m)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	t.Run("built", func(t *testing.T) {
		st, err := b.BuildHour(ctx, h0)
		if err != nil || st.Recorded != 1 || st.Rebuilt != 0 {
			t.Fatalf("build: %+v, %v; want recorded, not rebuilt", st, err)
		}
		if p := progress(); !p.Built(h0) || p.Stale(h0) || p.Built(h0-hour) || p.Built(h0+hour) {
			t.Errorf("hours built %v, want h0 alone", p.Hours())
		}
		// h0 is 2023-11-14T23:00Z: bit 23 of the day's cell.
		row, err := g.Store.Get(ctx, g.Tables.Rollup5m, []byte{0}, rollup.Family)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, c := range row.Cells {
			got[string(c.Qualifier)] = hex.EncodeToString(c.Value)
		}
		if v := got["promhbase.hours.2023-11-14"]; v != "008000000000000000000000" {
			t.Errorf("cell promhbase.hours.2023-11-14 = %q, want 008000000000000000000000 (cells %v)", v, got)
		}
	})
	t.Run("written", func(t *testing.T) {
		changed, err := b.MarkWritten(ctx, []int64{h0, h0 + 5*hour})
		if err != nil || !changed {
			t.Fatalf("mark: %v, %v; want changed", changed, err)
		}
		if p := progress(); p.Built(h0) || !p.Stale(h0) || p.Stale(h0+5*hour) || p.StaleCount() != 1 {
			t.Errorf("after a write: built %v, stale %d, want h0 stale alone", p.Hours(), p.StaleCount())
		}
		if changed, err := b.MarkWritten(ctx, []int64{h0, h0 + 5*hour}); err != nil || changed {
			t.Errorf("marked again: %v, %v; want nothing changed", changed, err)
		}
		st, err := b.BuildHour(ctx, h0)
		if err != nil || st.Recorded != 1 || st.Rebuilt != 1 {
			t.Fatalf("build again: %+v, %v; want recorded, rebuilt", st, err)
		}
		if p := progress(); !p.Built(h0) || p.StaleCount() != 0 {
			t.Errorf("built again: built %v, stale %d", p.Hours(), p.StaleCount())
		}
	})
	t.Run("written while built", func(t *testing.T) {
		var hooked *rollup.Builder
		hs := &scanHook{Store: g.Store, table: g.Tables.Data}
		hs.onScan = func() {
			g.write(promSeries("m", "a", []sample{{(h0+hour)*1000 + 5000, 3}}))
			if _, err := hooked.MarkWritten(ctx, []int64{h0 + hour}); err != nil {
				t.Error(err)
			}
		}
		var err error
		hooked, err = rollup.NewBuilder(hs, rollup.Options{Config: g.Rollups, DataTable: g.Tables.Data, UIDTable: g.Tables.UID, Layout: g.Layout})
		if err != nil {
			t.Fatal(err)
		}
		if st, err := hooked.BuildHour(ctx, h0+hour); err != nil || st.Recorded != 0 {
			t.Fatalf("build with a write meanwhile: %+v, %v; want not recorded", st, err)
		}
		if p := progress(); p.Built(h0+hour) || !p.Stale(h0+hour) {
			t.Errorf("written while built: built %v, want h0+1h stale", p.Hours())
		}
		if st, err := b.BuildHour(ctx, h0+hour); err != nil || st.Recorded != 1 {
			t.Fatalf("build after the write: %+v, %v; want recorded", st, err)
		}
	})
	t.Run("too young", func(t *testing.T) {
		young := g.Builder(rollup.Options{Now: func() time.Time { return time.Unix(h0+3*hour+rollup.MinBuildAge.Milliseconds()/1000-1, 0) }})
		if st, err := young.BuildHour(ctx, h0+2*hour); err != nil || st.Recorded != 0 {
			t.Fatalf("build of an hour that ended %v ago: %+v, %v; want not recorded", rollup.MinBuildAge-time.Second, st, err)
		}
		if p := progress(); p.Built(h0 + 2*hour) {
			t.Errorf("hours built %v, want h0+2h not among them", p.Hours())
		}
	})
	if h := progress().Hours(); h.String() != rollup.Hours([]rollup.HourSpan{{From: h0, To: h0 + 2*hour}}).String() {
		t.Errorf("hours built %v, want [h0, h0+2h)", h)
	}
	if p := progress(); p.HaveWant {
		t.Errorf("oldest hour written %d recorded by builds, want none", p.Want)
	}
}

// TestHours: the set of hours built that queries get, and its form in a
// downsampling marker.
func TestHours(t *testing.T) {
	t.Parallel()
	const hour = mapping.MaxTimespan
	h := rollup.Hours{{From: 0, To: 2 * hour}, {From: 5 * hour, To: 6 * hour}}
	for _, c := range []struct {
		hour int64
		want bool
	}{{0, true}, {hour, true}, {2 * hour, false}, {4 * hour, false}, {5 * hour, true}, {6 * hour, false}} {
		if got := h.Contains(c.hour); got != c.want {
			t.Errorf("Contains(%d) = %v, want %v", c.hour, got, c.want)
		}
	}
	if got := h.Clip(hour, 10*hour).String(); got != "3600-7200,18000-21600" {
		t.Errorf("Clip = %q", got)
	}
	if got := h.Count(); got != 3 {
		t.Errorf("Count = %d, want 3", got)
	}
	for _, c := range []struct {
		in string
		ok bool
	}{{"", true}, {"0-7200,18000-21600", true}, {"0-7200,7200-10800", false}, {"7200-3600", false}, {"1-3600", false}, {"x", false}, {"0-3600,", false}} {
		t.Run(c.in, func(t *testing.T) {
			got, err := rollup.ParseHours(c.in)
			if (err == nil) != c.ok || (c.ok && got.String() != c.in) {
				t.Errorf("ParseHours(%q) = %v, %v; want ok %v and the same text back", c.in, got, err, c.ok)
			}
		})
	}
}
