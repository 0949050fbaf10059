package cachelog

import (
	"context"
	"encoding/hex"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/storetest"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testclock"
)

func TestGoldenBytes(t *testing.T) {
	writer := [8]byte{0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8}
	key := AppendKey(nil, 1764100000123, writer, 7)
	const wantKey = "58" + // 'X': the log's rows
		"0000019abc8dc97b" + // 1764100000123 ms, big-endian
		"a1a2a3a4a5a6a7a8" + // the writer
		"00000007" // its seventh append
	if got := hex.EncodeToString(key); got != wantKey {
		t.Fatalf("key %s, want %s", got, wantKey)
	}
	val := AppendValue(nil, Event{Kind: Rollups, Mint: -1, Maxt: 1764100000000})
	const wantVal = "01" + // kind: rollups
		"ffffffffffffffff" + // mint -1
		"0000019abc8dc900" // maxt 1764100000000
	if got := hex.EncodeToString(val); got != wantVal {
		t.Fatalf("value %s, want %s", got, wantVal)
	}
	ms, w, err := ParseKey(key)
	if err != nil || ms != 1764100000123 || w != writer {
		t.Fatalf("ParseKey = %d, %x, %v", ms, w, err)
	}
	ev, err := ParseValue(val)
	if err != nil || ev != (Event{Kind: Rollups, Mint: -1, Maxt: 1764100000000}) {
		t.Fatalf("ParseValue = %+v, %v", ev, err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  string
		val  string
	}{
		{name: "short key", key: "58000001"},
		{name: "key of another row kind", key: "530000019abcc3e97ba1a2a3a4a5a6a7a800000007"},
		{name: "short value", val: "00ff"},
		{name: "unknown kind", val: "020000000000000000" + "0000000000000001"},
		{name: "mint after maxt", val: "00" + "0000000000000002" + "0000000000000001"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.key != "" {
				b, _ := hex.DecodeString(tc.key)
				_, _, err = ParseKey(b)
			} else {
				b, _ := hex.DecodeString(tc.val)
				_, err = ParseValue(b)
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err = %v, want ErrCorrupt", err)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add(AppendKey(nil, 5, [8]byte{1}, 1), AppendValue(nil, Event{Mint: 1, Maxt: 2}))
	f.Add([]byte{'X'}, []byte{0})
	f.Fuzz(func(t *testing.T, k, v []byte) {
		if ms, w, err := ParseKey(k); err == nil {
			if got := AppendKey(nil, ms, w, 0); !slices.Equal(got[:17], k[:17]) {
				t.Fatalf("key %x parsed as %d %x", k, ms, w)
			}
		}
		if ev, err := ParseValue(v); err == nil {
			if got := AppendValue(nil, ev); !slices.Equal(got, v) {
				t.Fatalf("value %x parsed as %+v, appends %x", v, ev, got)
			}
		}
	})
}

// TestAppendPoll: two writers over one table see each other's appends
// once, never their own, including rows of a writer whose clock is behind
// by less than the window; rows older than Keep are deleted.
func TestAppendPoll(t *testing.T) {
	st, tb := testbackend.New(t)
	ctx := context.Background()
	clk := testclock.New(time.UnixMilli(1_764_100_000_000))
	behind := func() time.Time { return clk.Now().Add(-20 * time.Second) }
	a := New(st, Options{Table: tb.Index, Window: time.Minute, Keep: 2 * time.Minute, Now: clk.Now})
	b := New(st, Options{Table: tb.Index, Window: time.Minute, Keep: 2 * time.Minute, Now: behind})

	poll := func(l *Log) []Event {
		t.Helper()
		evs, skipped, err := l.Poll(ctx)
		if err != nil || skipped != 0 {
			t.Fatalf("Poll: %v, %d skipped", err, skipped)
		}
		return evs
	}
	if evs := poll(a); len(evs) != 0 {
		t.Fatalf("empty log polled %v", evs)
	}
	t.Run("seen once by the other writer", func(t *testing.T) {
		if err := a.Append(ctx, Event{Kind: Samples, Mint: 10, Maxt: 20}); err != nil {
			t.Fatal(err)
		}
		if err := b.Append(ctx, Event{Kind: Rollups, Mint: 30, Maxt: 40}); err != nil {
			t.Fatal(err)
		}
		if got, want := poll(b), []Event{{Kind: Samples, Mint: 10, Maxt: 20}}; !slices.Equal(got, want) {
			t.Fatalf("b polled %v, want %v", got, want)
		}
		if got, want := poll(a), []Event{{Kind: Rollups, Mint: 30, Maxt: 40}}; !slices.Equal(got, want) {
			t.Fatalf("a polled %v (b's clock 20s behind), want %v", got, want)
		}
		if got := poll(a); len(got) != 0 {
			t.Fatalf("a polled %v again", got)
		}
		if got := poll(b); len(got) != 0 {
			t.Fatalf("b polled %v again", got)
		}
	})
	t.Run("concurrent appends merged per kind", func(t *testing.T) {
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				if err := a.Append(ctx, Event{Kind: Kind(i % 2), Mint: int64(100 + i), Maxt: int64(200 + i)}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		got := poll(b)
		// Each event of a kind is covered by one polled event of its kind.
		for i := range 20 {
			covered := false
			for _, ev := range got {
				covered = covered || ev.Kind == Kind(i%2) && ev.Mint <= int64(100+i) && int64(200+i) <= ev.Maxt
			}
			if !covered {
				t.Fatalf("event %d not covered by %v", i, got)
			}
		}
		if len(got) > 20 {
			t.Fatalf("%d rows for 20 appends", len(got))
		}
	})
	t.Run("rows older than keep deleted", func(t *testing.T) {
		clk.Add(3 * time.Minute)
		poll(a)
		if n := storetest.CountRows(t, st, store.ScanRequest{Table: tb.Index, Start: []byte{'X'}, Stop: []byte{'Y'}, Family: mapping.IndexFamily}); n != 0 {
			t.Fatalf("%d rows left older than keep", n)
		}
	})
}

// TestAppendFails: a store that fails the Put fails the Append, with the
// table named.
func TestAppendFails(t *testing.T) {
	st, tb := testbackend.New(t)
	l := New(failPut{st}, Options{Table: tb.Index})
	err := l.Append(context.Background(), Event{Mint: 1, Maxt: 2})
	if err == nil || !errors.Is(err, errPut) {
		t.Fatalf("err = %v, want errPut", err)
	}
}

var errPut = errors.New("put refused")

type failPut struct{ store.Store }

func (failPut) Put(context.Context, string, []store.Put) error { return errPut }

func BenchmarkAppend(b *testing.B) {
	st, tb := testbackend.New(b)
	l := New(st, Options{Table: tb.Index})
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := l.Append(ctx, Event{Mint: 1, Maxt: 2}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// TestPutMergesOverlapsOnly: the events of one batch become a row per
// kind and run of overlapping or touching ranges, so that a retention
// cycle's open range and a write far from it stay apart.
func TestPutMergesOverlapsOnly(t *testing.T) {
	st, tb := testbackend.New(t)
	ctx := context.Background()
	a := New(st, Options{Table: tb.Index})
	b := New(st, Options{Table: tb.Index})
	err := a.put(ctx, []Event{
		{Kind: Samples, Mint: math.MinInt64, Maxt: 1000},
		{Kind: Samples, Mint: 50_000, Maxt: 60_000},
		{Kind: Samples, Mint: 60_001, Maxt: 61_000}, // touches the one before
		{Kind: Rollups, Mint: 0, Maxt: 3_600_000},
		{Kind: Samples, Mint: 55_000, Maxt: 56_000}, // inside
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := b.Poll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{{Kind: Samples, Mint: math.MinInt64, Maxt: 1000}, {Kind: Samples, Mint: 50_000, Maxt: 61_000}, {Kind: Rollups, Mint: 0, Maxt: 3_600_000}}
	if !slices.Equal(got, want) {
		t.Fatalf("polled %v, want %v", got, want)
	}
}
