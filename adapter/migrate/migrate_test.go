package migrate

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/mapping/wire"
)

// goldenLine is one JSON line, field by field:
//
//	{"metric":{"__name__":"up","job":"node"}   labels, in label order
//	"values":[1,0.5,-0,1e+300,                   shortest round-trip numbers
//	  "NaN","Infinity","-Infinity",null]         specials; null: a staleness marker
//	"timestamps":[0,...,4294967295999]}          Unix ms, 1970 to 2106
const goldenLine = `{"metric":{"__name__":"up","job":"node"},"values":[1,0.5,-0,1e+300,"NaN","Infinity","-Infinity",null],` +
	`"timestamps":[0,1000,2000,3000,4000,5000,6000,4294967295999]}` + "\n"

var goldenValues = []float64{1, 0.5, math.Copysign(0, -1), 1e300, math.NaN(), math.Inf(1), math.Inf(-1), math.Float64frombits(value.StaleNaN)}

func TestJSONLineGolden(t *testing.T) {
	ts := []int64{0, 1000, 2000, 3000, 4000, 5000, 6000, MaxTimestamp}
	got := string(AppendJSONLine(nil, labels.FromStrings("__name__", "up", "job", "node"), ts, goldenValues))
	if got != goldenLine {
		t.Fatalf("AppendJSONLine:\n%s\nwant\n%s", got, goldenLine)
	}
	series, err := ParseJSONLines(nil, []byte(goldenLine))
	if err != nil || len(series) != 1 {
		t.Fatalf("ParseJSONLines: %v, %d series", err, len(series))
	}
	s := series[0]
	if len(s.Labels) != 2 || s.Labels[0].Name != "__name__" || s.Labels[0].Value != "up" || s.Labels[1].Name != "job" || s.Labels[1].Value != "node" {
		t.Errorf("labels %v", s.Labels)
	}
	for i, smp := range s.Samples {
		want := goldenValues[i]
		same := math.Float64bits(smp.Value) == math.Float64bits(want) || (math.IsNaN(want) && !value.IsStaleNaN(want) && math.IsNaN(smp.Value) && !value.IsStaleNaN(smp.Value))
		if smp.Timestamp != ts[i] || !same {
			t.Errorf("sample %d: %d %v (%x), want %d %v (%x)", i, smp.Timestamp, smp.Value, math.Float64bits(smp.Value), ts[i], want, math.Float64bits(want))
		}
	}
}

func TestParseJSONLines(t *testing.T) {
	for _, c := range []struct {
		name, body string
		series     int
		samples    int
		errLine    int    // 0: no error
		errHas     string // in the error
	}{
		{"two lines and blanks", "\n" + `{"metric":{"__name__":"a"},"values":[1,2],"timestamps":[1,2]}` + "\n\n" +
			`{"metric":{"__name__":"b","x":"y"},"values":["Inf"],"timestamps":[1.0]}`, 2, 3, 0, ""},
		{"vmctl's bare special floats", `{"metric":{"__name__":"a","k":"NaN \"Inf\""},"values":[NaN,+Inf,-Inf,Inf,1],"timestamps":[1,2,3,4,5]}`, 1, 5, 0, ""},
		{"a bare word", `{"metric":{"__name__":"a"},"values":[Nope],"timestamps":[1]}`, 0, 0, 1, "not a number"},
		{"other keys skipped", `{"x":[1,{"y":"z"}],"metric":{"__name__":"a","k":"v\\u00e9"},"values":[2],"timestamps":[3],"z":null}`, 1, 1, 0, ""},
		{"a label twice", `{"metric":{"__name__":"a","k":"1","k":"2"},"values":[1],"timestamps":[1]}`, 0, 0, 1, "twice"},
		{"a control character", "{\"metric\":{\"__name__\":\"a\x01\"},\"values\":[1],\"timestamps\":[1]}", 0, 0, 1, "control character"},
		{"VictoriaMetrics's large numbers", `{"metric":{"__name__":"a"},"values":[-100000000000000000000000000000000000000],"timestamps":[5]}`, 1, 1, 0, ""},
		{"mismatched arrays", `{"metric":{"__name__":"a"},"values":[1],"timestamps":[1]}` + "\n" +
			`{"metric":{"__name__":"a"},"values":[1,2],"timestamps":[1]}`, 0, 0, 2, "must be as many"},
		{"no name", `{"metric":{"job":"a"},"values":[1],"timestamps":[1]}`, 0, 0, 1, "__name__"},
		{"timestamp out of range", `{"metric":{"__name__":"a"},"values":[1],"timestamps":[4294967296000]}`, 0, 0, 1, "out of range"},
		{"negative timestamp", `{"metric":{"__name__":"a"},"values":[1],"timestamps":[-1]}`, 0, 0, 1, "out of range"},
		{"fractional timestamp", `{"metric":{"__name__":"a"},"values":[1],"timestamps":[1.5]}`, 0, 0, 1, "whole number"},
		{"a string value", `{"metric":{"__name__":"a"},"values":["abc"],"timestamps":[1]}`, 0, 0, 1, "not a number"},
		{"an object value", `{"metric":{"__name__":"a"},"values":[{}],"timestamps":[1]}`, 0, 0, 1, "not a number"},
		{"truncated", `{"metric":{"__name__":"a"},"values":[1],"timest`, 0, 0, 1, "not a JSON object"},
		{"two objects", `{"metric":{"__name__":"a"},"values":[],"timestamps":[]} {}`, 0, 0, 1, "more than one"},
		{"not an object", `[1,2]`, 0, 0, 1, "not a JSON object"},
	} {
		t.Run(c.name, func(t *testing.T) {
			series, err := ParseJSONLines(nil, []byte(c.body))
			var le *LineError
			switch {
			case c.errLine == 0 && err != nil:
				t.Fatalf("error %v", err)
			case c.errLine != 0 && (!errors.As(err, &le) || le.Line != c.errLine || !strings.Contains(err.Error(), c.errHas) || !errors.Is(err, ErrMalformed)):
				t.Fatalf("error %v, want one of line %d with %q", err, c.errLine, c.errHas)
			case c.errLine != 0:
				return
			}
			n := 0
			for _, s := range series {
				n += len(s.Samples)
			}
			if len(series) != c.series || n != c.samples {
				t.Errorf("%d series, %d samples, want %d, %d", len(series), n, c.series, c.samples)
			}
		})
	}
}

func TestParseText(t *testing.T) {
	body := "# HELP a A gauge.\n# TYPE a gauge\na{x=\"1\"} 1.5 1700000000000\na{x=\"2\"} NaN\n\nb_total 3 1700000001000\n"
	series, err := ParseText(nil, []byte(body), 42)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{__name__="a", x="1"} 1.5 @1700000000000`, `{__name__="a", x="2"} NaN @42`, `{__name__="b_total"} 3 @1700000001000`}
	if len(series) != len(want) {
		t.Fatalf("%d series, want %d", len(series), len(want))
	}
	for i, s := range series {
		l := labels.NewScratchBuilder(0)
		for _, p := range s.Labels {
			l.Add(p.Name, p.Value)
		}
		got := l.Labels().String() + " " + strconv.FormatFloat(s.Samples[0].Value, 'g', -1, 64) + " @" + strconv.FormatInt(s.Samples[0].Timestamp, 10)
		if got != want[i] {
			t.Errorf("series %d: %s, want %s", i, got, want[i])
		}
	}
	for _, c := range []struct{ body, has string }{
		{"a 1 1\nb{ 2\n", "line 2"},
		{"a 1 99999999999999\n", "out of range"},
		{"{x=\"1\"} 1\n", "line 1"},
	} {
		if _, err := ParseText(nil, []byte(c.body), 42); err == nil || !strings.Contains(err.Error(), c.has) || !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: error %v, want one with %q", c.body, err, c.has)
		}
	}
}

func FuzzParseJSONLines(f *testing.F) {
	f.Add([]byte(goldenLine))
	f.Add([]byte(`{"metric":{"__name__":"a"},"values":[1,null],"timestamps":[1,2]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		series, err := ParseJSONLines(nil, body)
		if err != nil {
			return
		}
		// What parses prints and parses again to the same samples.
		for _, s := range series {
			var sb labels.ScratchBuilder
			for _, l := range s.Labels {
				sb.Add(l.Name, l.Value)
			}
			ts, vs := make([]int64, len(s.Samples)), make([]float64, len(s.Samples))
			for i, smp := range s.Samples {
				ts[i], vs[i] = smp.Timestamp, smp.Value
			}
			again, err := ParseJSONLines(nil, AppendJSONLine(nil, sb.Labels(), ts, vs))
			if err != nil || len(again) != 1 || len(again[0].Samples) != len(s.Samples) {
				t.Fatalf("round trip of %v: %v", s, err)
			}
		}
	})
}

// refLine is the JSON line as encoding/json reads it: the reference of
// FuzzJSONLineReference.
type refLine struct {
	Metric     map[string]string `json:"metric"`
	Values     []float64         `json:"values"`
	Timestamps []int64           `json:"timestamps"`
}

// FuzzJSONLineReference: a line of plain numbers that encoding/json reads
// is read by ParseJSONLines to the same series.
func FuzzJSONLineReference(f *testing.F) {
	f.Add([]byte(`{"metric":{"__name__":"a","b":"c\u00e9"},"values":[1,2.5e3],"timestamps":[1,2]}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var ref refLine
		if bytes.ContainsAny(line, "\n") || json.Unmarshal(line, &ref) != nil || ref.Metric["__name__"] == "" ||
			len(ref.Values) != len(ref.Timestamps) || len(ref.Values) == 0 {
			return
		}
		for _, ts := range ref.Timestamps {
			if ts < MinTimestamp || ts > MaxTimestamp {
				return
			}
		}
		series, err := ParseJSONLines(nil, line)
		if err != nil {
			if strings.Contains(err.Error(), "twice") || !utf8.Valid(line) {
				return // encoding/json keeps the last of a repeated key; invalid UTF-8 it replaces
			}
			t.Fatalf("encoding/json reads %q, ParseJSONLines fails: %v", line, err)
		}
		s := series[0]
		if len(s.Labels) != len(ref.Metric) || len(s.Samples) != len(ref.Values) {
			t.Fatalf("%q: %v, encoding/json %+v", line, s, ref)
		}
		for _, l := range s.Labels {
			if ref.Metric[l.Name] != l.Value {
				t.Fatalf("%q: label %s=%q, encoding/json %q", line, l.Name, l.Value, ref.Metric[l.Name])
			}
		}
		for i, smp := range s.Samples {
			if smp.Timestamp != ref.Timestamps[i] || math.Float64bits(smp.Value) != math.Float64bits(ref.Values[i]) {
				t.Fatalf("%q: sample %d %v, encoding/json %d %v", line, i, smp, ref.Timestamps[i], ref.Values[i])
			}
		}
	})
}

func FuzzParseText(f *testing.F) {
	f.Add([]byte("# TYPE a gauge\na{x=\"1\"} 1.5 1700000000000\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		_, _ = ParseText(nil, body, 0)
	})
}

// FuzzDecimal: decimal's fast path gives strconv.ParseFloat's bits
// wherever it takes a token.
func FuzzDecimal(f *testing.F) {
	for _, s := range []string{"0", "-0", "1.5", "123456.789", "9007199254740992", "9007199254740993", "0.1", "1.0000000000000000000001", "12345678901234567", "-42.", ".5", "1e5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := decimal([]byte(s))
		if !ok {
			return
		}
		want, err := strconv.ParseFloat(s, 64)
		if err != nil || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("decimal(%q) = %v (%x), strconv %v (%x) %v", s, got, math.Float64bits(got), want, math.Float64bits(want), err)
		}
	})
}

func TestBatchKeysAndOrder(t *testing.T) {
	var b Batch
	body := `{"timestamps":[1,2],"metric":{"job":"a\u00e9","__name__":"up"},"values":[1.5,-2]}` + "\n" +
		`{"metric":{"__name__":"x"},"values":[3],"timestamps":[7]}`
	if err := b.ParseJSONLines([]byte(body)); err != nil {
		t.Fatal(err)
	}
	if _, first := b.Series(0); b.Len() != 2 || b.Samples() != 3 || len(first) != 2 {
		t.Fatalf("%d series, %d samples", b.Len(), b.Samples())
	}
	key, pts := b.Series(0)
	// Label{name "__name__", value "up"}, then Label{name "job", value "aé"}.
	want := "0a0e0a085f5f6e616d655f5f1202" + "7570" + "0a0a0a036a6f6212" + "0361c3a9"
	if got := hex.EncodeToString(key); got != want {
		t.Errorf("key %s, want %s", got, want)
	}
	if len(pts) != 2 || pts[0] != (mapping.Point{T: 1, V: 1.5}) || pts[1] != (mapping.Point{T: 2, V: -2}) {
		t.Errorf("samples %v", pts)
	}
	for _, c := range []struct{ name, line, has string }{
		{"values twice", `{"metric":{"__name__":"a"},"values":[1],"Values":[2],"timestamps":[1]}`, `"values" twice`},
		{"timestamps twice", `{"metric":{"__name__":"a"},"values":[1],"timestamps":[1],"timestamps":[1]}`, `"timestamps" twice`},
		{"metric twice", `{"metric":{"__name__":"a"},"metric":{"__name__":"b"},"values":[1],"timestamps":[1]}`, `"metric" twice`},
		{"timestamps first, fewer values", `{"timestamps":[1,2],"metric":{"__name__":"a"},"values":[1]}`, "must be as many"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := b.Samples()
			if err := b.ParseJSONLines([]byte(c.line)); err == nil || !strings.Contains(err.Error(), c.has) {
				t.Fatalf("error %v, want %q", err, c.has)
			}
			if b.Len() != 2 || b.Samples() != before {
				t.Errorf("a bad line left %d series, %d samples", b.Len(), b.Samples())
			}
		})
	}
}

// TestBatchManyLabels: a line of many labels out of order (past the
// insertion sort's few) gets the key of its labels in name order.
func TestBatchManyLabels(t *testing.T) {
	var line strings.Builder
	line.WriteString(`{"metric":{`)
	var sb labels.ScratchBuilder
	for i := 40; i > 0; i-- {
		fmt.Fprintf(&line, `"l%02d":"v%d",`, i, i)
		sb.Add(fmt.Sprintf("l%02d", i), fmt.Sprintf("v%d", i))
	}
	line.WriteString(`"__name__":"many"},"values":[1],"timestamps":[1]}`)
	sb.Add("__name__", "many")
	sb.Sort()
	var b Batch
	if err := b.ParseJSONLines([]byte(line.String())); err != nil {
		t.Fatal(err)
	}
	key, _ := b.Series(0)
	if want := wire.AppendLabels(nil, sb.Labels()); !bytes.Equal(key, want) {
		t.Errorf("key\n%x\nwant\n%x", key, want)
	}
}

// streamed parses body with a JSONLinesStream fed step bytes at a time
// after what it left of the bytes before, as a read loop feeds it, then
// End with what it left.
func streamed(body []byte, step int) (*Batch, error) {
	b := &Batch{}
	s := &JSONLinesStream{B: b}
	var buf []byte
	for n := 0; n < len(body); n += step {
		buf = append(buf, body[n:min(n+step, len(body))]...)
		took, err := s.Feed(buf)
		if err != nil {
			return b, err
		}
		buf = buf[took:]
	}
	return b, s.End(buf)
}

// sameBatch reports how two batches differ: keys, then samples bit for
// bit; "" when they do not.
func sameBatch(a, b *Batch) string {
	if a.Len() != b.Len() {
		return fmt.Sprintf("%d series, want %d", a.Len(), b.Len())
	}
	for i := range a.Len() {
		ka, pa := a.Series(i)
		kb, pb := b.Series(i)
		if !bytes.Equal(ka, kb) || len(pa) != len(pb) {
			return fmt.Sprintf("series %d: key %x, %d samples; want %x, %d", i, ka, len(pa), kb, len(pb))
		}
		for j := range pa {
			if pa[j].T != pb[j].T || math.Float64bits(pa[j].V) != math.Float64bits(pb[j].V) {
				return fmt.Sprintf("series %d sample %d: %v, want %v", i, j, pa[j], pb[j])
			}
		}
	}
	return ""
}

// TestJSONLinesStream: a body parsed while it arrives, in reads of any
// size, gives the series and the errors (the line named) that
// ParseJSONLines gives it whole.
func TestJSONLinesStream(t *testing.T) {
	good := `{"metric":{"__name__":"a","job":"x"},"values":[1,2.5],"timestamps":[1000,2000]}`
	other := `{"metric":{"__name__":"b"},"values":[null],"timestamps":[3000]}`
	bodies := []struct{ name, body string }{
		{"lines", good + "\n" + other + "\n"},
		{"no last newline", good + "\n" + other},
		{"blank lines and CRLF", "\n" + good + "\r\n\r\n  \n" + other + "\n\n"},
		{"a bad third line", good + "\n\n" + `{"metric":{"__name__":"c"},"values":[1],"timestamps":[]}` + "\n" + other + "\n"},
		{"a bad last line without newline", good + "\n" + `{"metric":`},
		{"empty", ""},
	}
	for _, c := range bodies {
		want := &Batch{}
		wantErr := want.ParseJSONLines([]byte(c.body))
		for _, step := range []int{1, 2, 7, 64, len(c.body) + 1} {
			t.Run(fmt.Sprintf("%s/reads of %d", c.name, step), func(t *testing.T) {
				got, err := streamed([]byte(c.body), step)
				if fmt.Sprint(err) != fmt.Sprint(wantErr) {
					t.Fatalf("error %v, want %v", err, wantErr)
				}
				if err == nil {
					if d := sameBatch(got, want); d != "" {
						t.Error(d)
					}
				}
			})
		}
	}
}

// FuzzJSONLinesStream: as TestJSONLinesStream, on any body and read size.
func FuzzJSONLinesStream(f *testing.F) {
	f.Add([]byte(goldenLine+"\n"+goldenLine), 5)
	f.Add([]byte("\n{\"metric\":{}}\n"), 1)
	f.Fuzz(func(t *testing.T, body []byte, step int) {
		step = 1 + int(uint(step)%uint(len(body)+1))
		want := &Batch{}
		wantErr := want.ParseJSONLines(body)
		got, err := streamed(body, step)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Fatalf("error %v, want %v", err, wantErr)
		}
		if err == nil {
			if d := sameBatch(got, want); d != "" {
				t.Fatal(d)
			}
		}
	})
}
