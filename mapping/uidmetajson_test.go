package mapping

import (
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
