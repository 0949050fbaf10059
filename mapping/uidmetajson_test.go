package mapping

import (
	"context"
	"strings"
	"testing"
)

func TestUIDMetaJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    UIDMeta
		want string
	}{
		{"default", UIDMeta{Type: "METRIC", Created: 1500000000},
			`{"type":"METRIC","displayName":"","description":"","notes":"","created":1500000000,"custom":null}`},
		// OpenTSDB's own bytes for keys zeta, alpha, owner (a 3-key HashMap
		// of 8 buckets iterates zeta, owner, alpha).
		{"hashmap order", UIDMeta{Type: "METRIC", Custom: map[string]string{"zeta": "1", "alpha": "2", "owner": "3"}, order: []string{"zeta", "alpha", "owner"}},
			`{"type":"METRIC","displayName":"","description":"","notes":"","created":0,"custom":{"zeta":"1","owner":"3","alpha":"2"}}`},
		// Prometheus metadata: a 2-key HashMap of 4 buckets puts "type"
		// (spread hash ...1100) in bucket 0 and "unit" (...0010) in 2.
		{"prometheus", UIDMeta{Type: "METRIC", Description: "Total requests.", Created: 7, Custom: map[string]string{"unit": "seconds", "type": "counter"}},
			`{"type":"METRIC","displayName":"","description":"Total requests.","notes":"","created":7,"custom":{"type":"counter","unit":"seconds"}}`},
		{"escapes", UIDMeta{Type: "TAGV", Description: "a\"b\\c\nd\te\x01f/<>&é\u2028"},
			`{"type":"TAGV","displayName":"","description":"a\"b\\c\nd\te\u0001f/<>&é` + "\u2028" + `","notes":"","created":0,"custom":null}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(AppendUIDMetaJSON(nil, &tc.m))
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			back, err := ParseUIDMeta([]byte(got))
			if err != nil {
				t.Fatal(err)
			}
			if again := string(AppendUIDMetaJSON(nil, &back)); again != got {
				t.Errorf("re-encoded %s", again)
			}
		})
	}
	for _, bad := range []string{`{`, `{"type":"FOO"}`, `{"custom":{"a":{"b":"c"}}}`} {
		if _, err := ParseUIDMeta([]byte(bad)); err == nil {
			t.Errorf("ParseUIDMeta(%s) accepted", bad)
		}
	}
	m, err := ParseUIDMeta([]byte(`{"uid":"000001","custom":{"owner":"ops"},"extra":1}`))
	if err != nil || m.Type != "METRIC" || m.Custom["owner"] != "ops" {
		t.Errorf("lenient parse: %+v, %v", m, err)
	}
	if !m.SetPrometheus("gauge", "h", "") || m.Custom["owner"] != "ops" || m.Custom["type"] != "gauge" || m.Description != "h" {
		t.Errorf("SetPrometheus: %+v", m)
	}
	if m.SetPrometheus("gauge", "h", "") {
		t.Error("SetPrometheus reports a change for the same metadata")
	}
}

func FuzzParseUIDMeta(f *testing.F) {
	f.Add([]byte(`{"type":"METRIC","displayName":"","description":"","notes":"","created":1500000000,"custom":null}`))
	f.Add([]byte(`{"custom":{"zeta":"1","alpha":"2"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseUIDMeta(b)
		if err != nil {
			return
		}
		out := AppendUIDMetaJSON(nil, &m)
		back, err := ParseUIDMeta(out)
		if err != nil {
			t.Fatalf("%s re-encoded as %s does not parse: %v", b, out, err)
		}
		if string(AppendUIDMetaJSON(nil, &back)) != string(out) {
			t.Fatalf("not stable: %s", out)
		}
	})
}

// TestMetas: metadata is written once, merged into an OpenTSDB user's
// fields, and rewritten only when it changes.
func TestMetas(t *testing.T) {
	st := openUIDStore(t)
	u := newTestUIDs(t, st, DefaultLayout())
	ms := NewMetas(u, 0)
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
	uid, _ := u.ID(ctx, KindMetric, "http_requests_total")
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
	ms2 := NewMetas(u, 0)
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
