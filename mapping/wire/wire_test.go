package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/gogo/protobuf/proto"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/mapping"
)

func TestParseWriteRequestMatchesGogo(t *testing.T) {
	wr := &prompb.WriteRequest{
		Timeseries: []prompb.TimeSeries{
			{Labels: []prompb.Label{{Name: "__name__", Value: "x"}, {Name: "a", Value: "ü\n"}}, Samples: []prompb.Sample{{Timestamp: 5, Value: 1.5}, {Timestamp: -3, Value: -2}}},
			{Labels: []prompb.Label{{Name: "__name__", Value: "y"}}, Histograms: []prompb.Histogram{{Timestamp: 1}}},
		},
		Metadata: []prompb.MetricMetadata{{MetricFamilyName: "x", Help: "h"}},
	}
	data, err := proto.Marshal(wr)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	err = ParseWriteRequest(data, &Series{}, nil, func(s *Series) error {
		lbls, err := s.Labels()
		if err != nil {
			return err
		}
		got = append(got, fmt.Sprintf("%s %v h=%d", mapping.FormatLabels(lbls), s.Samples, len(s.Hists)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{__name__="x", a="ü\n"} [{5 1.5} {-3 -2}] h=0`, `{__name__="y"} [] h=1`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("parsed\n%q\nwant\n%q", got, want)
	}
}

// FuzzParseWriteRequest: the hand-written decoder never panics, and on
// input gogo accepts it yields the same series.
func FuzzParseWriteRequest(f *testing.F) {
	seed, _ := proto.Marshal(&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		{Labels: []prompb.Label{{Name: "__name__", Value: "x"}}, Samples: []prompb.Sample{{Timestamp: 5, Value: 1.5}}},
	}})
	f.Add(seed)
	f.Add([]byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var ours []string
		var next nextKeys
		err := ParseWriteRequest(data, &Series{}, nil, func(s *Series) error {
			next.check(t, s)
			lbls, err := s.Labels()
			if err != nil {
				return err
			}
			ours = append(ours, fmt.Sprintf("%q %v", lbls, s.Samples))
			return nil
		})
		var wr prompb.WriteRequest
		if gerr := wr.Unmarshal(data); gerr != nil || err != nil {
			return // both may reject differently on malformed input
		}
		if len(ours) != len(wr.Timeseries) {
			t.Fatalf("%d series, gogo %d", len(ours), len(wr.Timeseries))
		}
		for i, ts := range wr.Timeseries {
			var lbls []mapping.Label
			for _, l := range ts.Labels {
				lbls = append(lbls, mapping.Label{Name: []byte(l.Name), Value: []byte(l.Value)})
			}
			var smp []mapping.Point
			for _, s := range ts.Samples {
				smp = append(smp, mapping.Point{T: s.Timestamp, V: s.Value})
			}
			if want := fmt.Sprintf("%q %v", lbls, smp); want != ours[i] && !strings.Contains(want, "NaN") {
				t.Fatalf("series %d = %s, gogo %s", i, ours[i], want)
			}
		}
	})
}

// nextKeys checks each series' NextKey against the next series' Key: a
// prefix of it, at the same bytes of the request when the Key aliases it.
type nextKeys struct {
	prev []byte
	seen int
}

func (n *nextKeys) check(t *testing.T, s *Series) {
	t.Helper()
	if p := n.prev; p != nil {
		if !bytes.HasPrefix(s.Key, p) {
			t.Fatalf("series %d: key %x, the NextKey before it %x", n.seen, s.Key, p)
		}
		if !s.copied && unsafe.SliceData(s.Key) != unsafe.SliceData(p) {
			t.Fatalf("series %d: NextKey %x not at the key's bytes", n.seen, p)
		}
	}
	n.prev = s.NextKey
	n.seen++
}

// TestNextKey: a series' NextKey is the next series' key when its labels
// come first and are short, a prefix of it when a long label or another
// field follows, nil when a sample comes first or none follows.
func TestNextKey(t *testing.T) {
	field := func(num byte, msg []byte) []byte {
		b := append([]byte{num<<3 | 2}, binary.AppendUvarint(nil, uint64(len(msg)))...)
		return append(b, msg...)
	}
	lbl := func(n, v string) []byte {
		b, _ := (&prompb.Label{Name: n, Value: v}).Marshal()
		return field(1, b)
	}
	smp, _ := (&prompb.Sample{Timestamp: 7, Value: 2}).Marshal()
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	short := cat(lbl("__name__", "x"), lbl("a", "b"))
	long := lbl("c", strings.Repeat("v", 200))
	for _, tc := range []struct {
		name string
		next []byte // the second series
		want []byte // the first's NextKey
	}{
		{"short labels", cat(short, field(2, smp)), short},
		{"a long label after them", cat(short, long, field(2, smp)), short},
		{"a sample between labels", cat(short, field(2, smp), lbl("d", "e")), short},
		{"a sample first", cat(field(2, smp), short), nil},
		{"a long label first", cat(long, short), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := cat(field(1, cat(lbl("__name__", "y"), field(2, smp))), field(1, tc.next))
			var keys [][]byte
			var next nextKeys
			err := ParseWriteRequest(req, &Series{}, nil, func(s *Series) error {
				next.check(t, s)
				keys = append(keys, s.NextKey)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(keys) != 2 || !bytes.Equal(keys[0], tc.want) || (keys[0] == nil) != (tc.want == nil) || keys[1] != nil {
				t.Errorf("NextKeys %x, want %x then none", keys, tc.want)
			}
		})
	}
}

// TestParseInterleavedLabels: labels separated by samples (legal protobuf,
// never sent by Prometheus) still form one key and decode right.
func TestParseInterleavedLabels(t *testing.T) {
	field := func(num byte, msg []byte) []byte {
		return append([]byte{num<<3 | 2, byte(len(msg))}, msg...)
	}
	lbl := func(n, v string) []byte {
		b, _ := (&prompb.Label{Name: n, Value: v}).Marshal()
		return field(1, b)
	}
	smp, _ := (&prompb.Sample{Timestamp: 7, Value: 2}).Marshal()
	var ts []byte
	ts = append(ts, field(2, smp)...)
	ts = append(ts, lbl("__name__", "x")...)
	ts = append(ts, field(2, smp)...)
	ts = append(ts, lbl("a", "b")...)
	ts = append(ts, lbl("c", "d")...)
	req := field(1, ts)
	var got []string
	err := ParseWriteRequest(req, &Series{}, nil, func(s *Series) error {
		lbls, err := s.Labels()
		if err != nil {
			return err
		}
		got = append(got, fmt.Sprintf("%s %v %x", mapping.FormatLabels(lbls), s.Samples, s.Key))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`{__name__="x", a="b", c="d"} [{7 2} {7 2}] %x`, append(append(lbl("__name__", "x"), lbl("a", "b")...), lbl("c", "d")...))
	if len(got) != 1 || got[0] != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// TestLabelsOfBadKey: Labels of a key that does not parse (a tag that
// never ends, a length past the end) is an error, never a panic.
func TestLabelsOfBadKey(t *testing.T) {
	for _, key := range [][]byte{{0x80}, {0x0A, 0x05, 0x0A}, {0x0A}, {0xFF, 0x80}} {
		s := &Series{Key: key}
		if _, err := s.Labels(); err == nil {
			t.Errorf("key %x: no error", key)
		}
	}
}
