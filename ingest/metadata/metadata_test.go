package metadata

import (
	"context"
	"strings"
	"testing"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/test/testkit/testuid"
)

// TestMetas: metadata is written once, merged into an OpenTSDB user's
// fields, and rewritten only when it changes.
func TestMetas(t *testing.T) {
	st := testuid.Store(t)
	u := testuid.UIDs(t, st, mapping.DefaultLayout())
	ms := NewMetas(u, st, 0)
	ctx := context.Background()
	md := Metadata{Type: "counter", Help: "Requests.", Unit: ""}
	if ch, err := ms.Update(ctx, "http_requests_total", md); err != nil || !ch {
		t.Fatalf("first update: %v %v", ch, err)
	}
	if ch, err := ms.Update(ctx, "http_requests_total", md); err != nil || ch {
		t.Fatalf("same again: %v %v", ch, err)
	}
	got, ok, err := ms.Get(ctx, "http_requests_total")
	if err != nil || !ok || got != md {
		t.Fatalf("Get = %+v %v %v", got, ok, err)
	}
	uid, _ := u.ID(ctx, uid.KindMetric, "http_requests_total")
	row, _ := st.Get(ctx, "tsdb-uid", uid, "name")
	var cell string
	for _, c := range row.Cells {
		if string(c.Qualifier) == "metric_meta" {
			cell = string(c.Value)
		}
	}
	if !strings.HasPrefix(cell, `{"type":"METRIC","displayName":"","description":"Requests.","notes":"","created":`) || !strings.HasSuffix(cell, `,"custom":{"type":"counter"}}`) {
		t.Errorf("stored %s", cell)
	}
	// A second process sees a change and merges.
	ms2 := NewMetas(u, st, 0)
	if ch, err := ms2.Update(ctx, "http_requests_total", Metadata{Type: "counter", Help: "All requests.", Unit: "requests"}); err != nil || !ch {
		t.Fatalf("change: %v %v", ch, err)
	}
	got, _, _ = ms.Get(ctx, "http_requests_total")
	if got.Help != "All requests." || got.Unit != "requests" {
		t.Errorf("after change: %+v", got)
	}
}

func TestFamilyName(t *testing.T) {
	for _, tc := range [][3]string{
		{"rpc_seconds_bucket", "histogram", "rpc_seconds"},
		{"rpc_seconds_count", "summary", "rpc_seconds"},
		{"requests_total", "counter", "requests_total"},
		{"x_bucket", "gauge", "x_bucket"},
		{"_sum", "summary", "_sum"},
	} {
		if got := FamilyName(tc[0], tc[1]); got != tc[2] {
			t.Errorf("FamilyName(%s, %s) = %s, want %s", tc[0], tc[1], got, tc[2])
		}
	}
}
