package promjson

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string // the vector's values; nil: Vector fails
	}{
		{"vector", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"b"},"value":[1.5,"2.25"]},{"metric":{},"value":[1.5,"NaN"]}]}}`, []string{"2.25", "NaN"}},
		{"matrix", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"1"]]}]}}`, nil},
		{"error", `{"status":"error","errorType":"bad_data","error":"parse error"}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Decode(strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			ss, err := a.Vector()
			if (err == nil) != (tc.want != nil) {
				t.Fatalf("Vector: %v, want an error: %v", err, tc.want == nil)
			}
			var got []string
			for _, s := range ss {
				got = append(got, s.ValueString())
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("values %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := Decode(strings.NewReader("{")); err == nil {
		t.Error("Decode of a cut answer: no error")
	}
}

func TestPoints(t *testing.T) {
	a, err := Decode(strings.NewReader(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1.5,"2"],[1700000000.123,"NaN"]]}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := a.Data.Result[0].Points()
	if err != nil || len(ps) != 2 || ps[0] != (Point{1500, 2}) || ps[1].T != 1700000000123 || ps[1].V == ps[1].V {
		t.Errorf("Points = %v, %v; want [{1500 2} {1700000000123 NaN}]", ps, err)
	}
	bad := Series{Values: [][2]json.RawMessage{{json.RawMessage("1"), json.RawMessage(`"x"`)}}}
	if _, err := bad.Points(); err == nil {
		t.Error("Points of a value that is no number: no error")
	}
}
