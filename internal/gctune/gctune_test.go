package gctune

import (
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name                           string
		gogc                           int
		minHeadroom, maxHeadroom, live uint64
		want                           int
	}{
		{"no bound", 75, 0, 0, 1000 * mib, 75},
		{"small heap keeps gogc", 75, 0, 64 * mib, 40 * mib, 75},
		{"at the bound", 75, 0, 75 * mib, 100 * mib, 75},
		{"large heap", 75, 0, 64 * mib, 256 * mib, 25},
		{"huge heap stops at the floor", 75, 0, 64 * mib, 10_000 * mib, minPercent},
		{"gogc below the floor is kept", 5, 0, 1 * mib, 10_000 * mib, 5},
		{"gc off stays off", -1, 32 * mib, 64 * mib, 10_000 * mib, -1},
		{"nothing live yet", 75, 32 * mib, 64 * mib, 0, 75},
		{"huge gogc does not overflow", 1 << 40, 0, 64 * mib, 1 << 40, minPercent},
		{"huge bound", 75, 0, 1 << 62, 1 << 62, 75},
		{"just over the bound", 100, 0, 99, 100, 99},
		// The lower bound.
		{"small heap raised", 75, 32 * mib, 32 * mib, 16 * mib, 200},
		{"raised, rounded up", 75, 32 * mib, 0, 30 * mib, 107},
		{"enough headroom already", 75, 32 * mib, 64 * mib, 64 * mib, 75},
		{"just enough", 100, 32 * mib, 0, 32 * mib, 100},
		{"large heap lowered, not raised", 75, 32 * mib, 32 * mib, 256 * mib, 12},
		{"tiny heap: the runtime's floor caps it", 75, 32 * mib, 0, 1 * mib, 825},
		{"the lower bound above the upper one", 75, 64 * mib, 16 * mib, 16 * mib, 100},
		{"huge lower bound saturates", 75, 1 << 63, 0, 1, math.MaxInt32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Percent(tc.gogc, tc.minHeadroom, tc.maxHeadroom, tc.live); got != tc.want {
				t.Errorf("Percent(%d, %d, %d, %d) = %d, want %d", tc.gogc, tc.minHeadroom, tc.maxHeadroom, tc.live, got, tc.want)
			}
		})
	}
}

// TestTunerFollowsLiveHeap: with a live heap well over the bound, the
// tuner lowers GOGC after a collection; once the heap is gone it restores
// it.
func TestTunerFollowsLiveHeap(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	tu := Start(75, 0, 4<<20)
	defer tu.Stop()
	live := make([]byte, 64<<20) // noscan, live across the collections below
	for i := range live {
		live[i] = byte(i)
	}
	waitPercent(t, tu, func(p int) bool { return p < 75 && p >= minPercent }, "below 75 with 64 MiB live and a 4 MiB bound")
	runtime.KeepAlive(live) // live is garbage from here on
	waitPercent(t, tu, func(p int) bool { return p == 75 }, "75 once the heap is small again")
}

// TestTunerRaisesForSmallHeap: with a small live heap and a lower bound
// far over GOGC's headroom, the tuner raises GOGC after a collection.
func TestTunerRaisesForSmallHeap(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	tu := Start(75, 256<<20, 512<<20)
	defer tu.Stop()
	waitPercent(t, tu, func(p int) bool { return p > 75 }, "above 75 with a small live heap and a 256 MiB lower bound")
}

// TestTunerStop: after Stop the tuner sets GOGC no more.
func TestTunerStop(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	tu := Start(75, 0, 4<<20)
	tu.Stop()
	debug.SetGCPercent(33)
	live := make([]byte, 64<<20)
	for range 5 {
		collect(t)
	}
	runtime.KeepAlive(live)
	if got := debug.SetGCPercent(100); got != 33 {
		t.Errorf("GOGC %d after Stop and collections with 64 MiB live, want the 33 set after Stop", got)
	}
}

// waitPercent collects until the tuner's GOGC satisfies ok, for at most
// 10 s.
func waitPercent(t *testing.T, tu *Tuner, ok func(int) bool, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok(tu.Percent()) {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC %d, want %s", tu.Percent(), want)
		}
		collect(t)
	}
}

// marker is garbage whose finalizer tells that a collection's finalizers
// run. It holds a pointer, so the tiny allocator never batches it.
type marker struct{ p *int }

// collect runs a collection and waits until the finalizers it queued run
// (the marker's has): those of the collections before, the tuner's
// sentinels among them, have all run then (one goroutine runs them, a
// collection's batch after the one before).
func collect(t *testing.T) {
	t.Helper()
	ran := make(chan struct{})
	runtime.SetFinalizer(&marker{p: new(int)}, func(*marker) { close(ran) })
	runtime.GC()
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("no finalizer ran 10 s after a collection")
	}
}

func TestDefaultHeadroom(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		procs int
		want  uint64
	}{
		{procs: -1, want: 32 * mib},
		{procs: 0, want: 32 * mib},
		{procs: 1, want: 32 * mib},
		{procs: 2, want: 32 * mib},
		{procs: 3, want: 48 * mib},
		{procs: 8, want: 128 * mib},
		{procs: 15, want: 240 * mib},
		{procs: 16, want: 256 * mib},
		{procs: 17, want: 256 * mib},
		{procs: 64, want: 256 * mib},
		{procs: math.MaxInt32, want: 256 * mib},
	} {
		t.Run(fmt.Sprint(tc.procs), func(t *testing.T) {
			if got := DefaultHeadroom(tc.procs); got != tc.want {
				t.Errorf("DefaultHeadroom(%d) = %d MiB, want %d MiB", tc.procs, got/mib, tc.want/mib)
			}
		})
	}
}
