package uid

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/test/testkit/testproc"
)

// TestUIDHeadroom: the headroom gauges follow assignments, a second
// process's assignments show after RefreshCounters, and the log warns
// once when a kind passes 90 % of its capacity.
func TestUIDHeadroom(t *testing.T) {
	st := openUIDStore(t)
	l := mapping.DefaultLayout()
	l.TagVWidth = 1 // 255 tag-value UIDs
	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	u, err := NewUIDs(st, l, UIDOptions{Registerer: reg, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	other := newTestUIDs(t, st, l) // a second writer of the same table
	ctx := context.Background()
	gauge := func(name, kind string) float64 {
		t.Helper()
		return testproc.GatherSum(t, reg, name, "kind", kind)
	}
	if got := gauge("promhbase_uid_headroom", "tagv"); got != 255 {
		t.Fatalf("fresh table: tagv headroom %v", got)
	}
	if got := gauge("promhbase_uid_headroom", "metrics"); got != 1<<24-1 {
		t.Fatalf("fresh table: metrics headroom %v", got)
	}
	for i := range 200 {
		if _, err := u.GetOrCreate(ctx, KindTagV, []byte(fmt.Sprint("v", i))); err != nil {
			t.Fatal(err)
		}
	}
	if got := gauge("promhbase_uid_headroom", "tagv"); got != 55 {
		t.Fatalf("after 200: tagv headroom %v", got)
	}
	if logs.Len() != 0 {
		t.Fatalf("warned at 200 of 255: %s", logs.String())
	}
	for i := range 30 {
		if _, err := other.GetOrCreate(ctx, KindTagV, []byte(fmt.Sprint("w", i))); err != nil {
			t.Fatal(err)
		}
	}
	if got := gauge("promhbase_uid_headroom", "tagv"); got != 55 {
		t.Fatalf("before refresh: tagv headroom %v", got)
	}
	if err := u.RefreshCounters(ctx); err != nil {
		t.Fatal(err)
	}
	if got := gauge("promhbase_uid_headroom", "tagv"); got != 25 {
		t.Fatalf("after refresh: tagv headroom %v", got)
	}
	if got := gauge("promhbase_uid_used_ratio", "tagv"); got != 230.0/255 {
		t.Fatalf("after refresh: tagv used ratio %v", got)
	}
	t.Logf("log: %s", logs.String())
	if n := strings.Count(logs.String(), "uids running out"); n != 1 || !strings.Contains(logs.String(), "kind=tagv assigned=230 capacity=255") {
		t.Fatalf("want one warning for tagv at 230 of 255, got:\n%s", logs.String())
	}
	for i := range 40 { // to exhaustion and past it
		_, _ = u.GetOrCreate(ctx, KindTagV, []byte(fmt.Sprint("x", i))) // errors past exhaustion are the point
	}
	if got := gauge("promhbase_uid_headroom", "tagv"); got != 0 {
		t.Fatalf("exhausted: tagv headroom %v", got)
	}
	if n := strings.Count(logs.String(), "uids running out"); n != 1 {
		t.Fatalf("warned %d times", n)
	}
}
