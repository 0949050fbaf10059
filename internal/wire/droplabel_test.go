package wire

import (
	"testing"

	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// TestDropLabel: the label named goes from the key of both protocols'
// series wherever it stands, every other label stays in order, and the
// key equals that of the series sent without it.
func TestDropLabel(t *testing.T) {
	const name = "__replica__"
	for _, tc := range []struct {
		name     string
		labels   [][2]string
		want     [][2]string
		dropped  bool
		longName bool
	}{
		{"last", [][2]string{{"__name__", "up"}, {"cluster", "c"}, {name, "a"}}, [][2]string{{"__name__", "up"}, {"cluster", "c"}}, true, false},
		{"first", [][2]string{{name, "a"}, {"__name__", "up"}}, [][2]string{{"__name__", "up"}}, true, false},
		{"middle", [][2]string{{"__name__", "up"}, {name, "b"}, {"job", "x"}}, [][2]string{{"__name__", "up"}, {"job", "x"}}, true, false},
		{"only label", [][2]string{{name, "a"}}, nil, true, false},
		{"empty value", [][2]string{{"__name__", "up"}, {name, ""}}, [][2]string{{"__name__", "up"}}, true, false},
		{"long value", [][2]string{{"__name__", "up"}, {name, string(make([]byte, 300))}}, [][2]string{{"__name__", "up"}}, true, false},
		{"absent", [][2]string{{"__name__", "up"}, {"replica", "a"}}, [][2]string{{"__name__", "up"}, {"replica", "a"}}, false, false},
		{"as a value", [][2]string{{"__name__", name}}, [][2]string{{"__name__", name}}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			series := []genSeries{{labels: tc.labels, samples: []writev2.Sample{{Value: 1, Timestamp: 1}}}}
			bare := []genSeries{{labels: tc.want, samples: []writev2.Sample{{Value: 1, Timestamp: 1}}}}
			for _, proto := range []string{"1.0", "2.0", "2.0 without label name ids"} {
				names := NewLabelNames() // one process's: both keys share it
				key := func(gs []genSeries, drop bool) (string, bool) {
					var out string
					var dropped bool
					fn := func(s *Series) error {
						if drop {
							var err error
							if dropped, err = s.DropLabel([]byte(name)); err != nil {
								t.Fatal(err)
							}
						}
						if got, want := keyLabels(t, s), pairLabels(tc.want); drop && got != want {
							t.Errorf("%s: labels %s after the drop, want %s", proto, got, want)
						}
						out = string(s.Key)
						return nil
					}
					var err error
					switch proto {
					case "1.0":
						err = ParseWriteRequest(encodeV1(t, gs), &Series{}, nil, fn)
					case "2.0":
						st := V2State{names: names}
						err = ParseWriteRequestV2(encodeV2(t, gs, false), &st, &Series{}, fn)
					default:
						err = ParseWriteRequestV2(encodeV2(t, gs, false), &V2State{}, &Series{}, fn)
					}
					if err != nil {
						t.Fatal(err)
					}
					return out, dropped
				}
				got, dropped := key(series, true)
				if dropped != tc.dropped {
					t.Errorf("%s: dropped %v, want %v", proto, dropped, tc.dropped)
				}
				if want, _ := key(bare, false); got != want && len(tc.want) > 0 {
					t.Errorf("%s: key %x after the drop, %x sent without it", proto, got, want)
				}
			}
		})
	}
}

// FuzzDropLabel: DropLabel never panics on a key of either form, and what
// it leaves decodes.
func FuzzDropLabel(f *testing.F) {
	f.Add([]byte{0x0A, 0x05, 0x0A, 0x01, 'a', 0x12, 0x00}, []byte("a"))
	f.Add([]byte{keyFormV2, 0x00, 0x01, 'a', 0x01, 'v'}, []byte("a"))
	f.Add([]byte{keyFormV2, 0x01, 0x01, 'v'}, []byte("__name__"))
	f.Fuzz(func(t *testing.T, key, name []byte) {
		names := NewLabelNames()
		names.id([]byte("__name__"))
		s := &Series{Key: key, names: names}
		if _, err := s.Labels(); err != nil {
			return
		}
		if _, err := s.DropLabel(name); err != nil {
			t.Fatalf("key %x decodes but DropLabel fails: %v", key, err)
		}
		if _, err := s.Labels(); err != nil {
			t.Fatalf("key %x after dropping %q: %v", s.Key, name, err)
		}
	})
}
