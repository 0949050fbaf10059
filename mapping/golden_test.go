package mapping

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/promhbase/promhbase/test/testkit/fixture"
)

// The golden files in testdata/ pin the byte layout. A failure here means
// promhbase no longer writes or reads what OpenTSDB 2.4 does: fix the code,
// not the fixture, unless the fixture itself is shown wrong against OpenTSDB.

// goldenEntry is one line of a golden file: its fields (split at '|' and
// trimmed) and where it came from.
type goldenEntry struct {
	name   string // file:line
	fields []string
}

// readGolden reads testdata/file: text after '#' is a comment, blank lines
// are skipped, and every remaining line must have between minFields and
// maxFields fields.
func readGolden(t *testing.T, file string, minFields, maxFields int) []goldenEntry {
	t.Helper()
	var out []goldenEntry
	for _, l := range fixture.Lines(t, file) {
		fields := strings.Split(l.Text, "|")
		for i := range fields {
			fields[i] = strings.TrimSpace(fields[i])
		}
		if len(fields) < minFields || len(fields) > maxFields {
			t.Fatalf("%s:%d: %d fields, want %d..%d", file, l.N, len(fields), minFields, maxFields)
		}
		out = append(out, goldenEntry{name: fmt.Sprintf("%s:%d", file, l.N), fields: fields})
	}
	if len(out) == 0 {
		t.Fatalf("%s: no entries", file)
	}
	return out
}

// forGolden runs test on the fields of every entry of readGolden(t, file,
// minFields, maxFields), each as a subtest named file:line.
func forGolden(t *testing.T, file string, minFields, maxFields int, test func(t *testing.T, f []string)) {
	for _, e := range readGolden(t, file, minFields, maxFields) {
		t.Run(e.name, func(t *testing.T) { test(t, e.fields) })
	}
}

// forGoldenKinds is forGolden with the test of each entry chosen by its
// first field, its kind; an entry of a kind not in kinds fails.
func forGoldenKinds(t *testing.T, file string, minFields, maxFields int, kinds map[string]func(t *testing.T, f []string)) {
	forGolden(t, file, minFields, maxFields, func(t *testing.T, f []string) {
		test, ok := kinds[f[0]]
		if !ok {
			t.Fatalf("unknown kind %q", f[0])
		}
		test(t, f)
	})
}

// unhex decodes a hex field; spaces are ignored and "-" is empty.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	if s == "-" {
		return []byte{}
	}
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

func parseUint(t *testing.T, s string, base, bits int) uint64 {
	t.Helper()
	u, err := strconv.ParseUint(s, base, bits)
	if err != nil {
		t.Fatalf("bad number %q: %v", s, err)
	}
	return u
}

// parseLayout parses salt width/salt buckets/metric/tagk/tagv widths.
func parseLayout(t *testing.T, s string) Layout {
	t.Helper()
	parts := strings.Split(s, "/")
	if len(parts) != 5 {
		t.Fatalf("bad layout %q", s)
	}
	var n [5]int
	for i, p := range parts {
		n[i] = int(parseUint(t, p, 10, 32))
	}
	l := Layout{SaltWidth: n[0], SaltBuckets: n[1], MetricWidth: n[2], TagKWidth: n[3], TagVWidth: n[4]}
	if err := l.Validate(); err != nil {
		t.Fatalf("layout %q: %v", s, err)
	}
	return l
}

// parseFloat parses a decimal or 0x + 16 hex digits of float64 bits.
func parseFloat(t *testing.T, s string) float64 {
	t.Helper()
	if h, ok := strings.CutPrefix(s, "0x"); ok {
		return math.Float64frombits(parseUint(t, h, 16, 64))
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("bad float %q: %v", s, err)
	}
	return v
}

func TestGoldenRowKeys(t *testing.T) {
	forGoldenKinds(t, "rowkeys.txt", 4, 6, map[string]func(*testing.T, []string){
		"ok": func(t *testing.T, f []string) {
			l := parseLayout(t, f[1])
			if len(f) != 6 {
				t.Fatalf("ok entry has %d fields, want 6", len(f))
			}
			metric, tags, want := unhex(t, f[2]), unhex(t, f[4]), unhex(t, f[5])
			base := uint32(parseUint(t, f[3], 10, 32))
			l.SortTags(tags)
			if err := l.CheckSeries(metric, tags); err != nil {
				t.Fatalf("CheckSeries: %v", err)
			}
			got := l.AppendRowKey(nil, metric, base, tags)
			if !bytes.Equal(got, want) {
				t.Fatalf("AppendRowKey = %X, want %X", got, want)
			}
			salt, m, b, tg, err := l.ParseRowKey(want)
			if err != nil {
				t.Fatalf("ParseRowKey: %v", err)
			}
			if !bytes.Equal(salt, want[:l.SaltWidth]) || !bytes.Equal(m, metric) || b != base || !bytes.Equal(tg, tags) {
				t.Fatalf("ParseRowKey = %X %X %d %X, want %X %X %d %X", salt, m, b, tg, want[:l.SaltWidth], metric, base, tags)
			}
		},
		"bad": func(t *testing.T, f []string) {
			l := parseLayout(t, f[1])
			if len(f) != 4 {
				t.Fatalf("bad entry has %d fields, want 4", len(f))
			}
			_, _, _, _, err := l.ParseRowKey(unhex(t, f[2]))
			wantError(t, err, ErrMalformedRowKey, f[3])
		},
	})
}

func TestGoldenValues(t *testing.T) {
	forGoldenKinds(t, "values.txt", 4, 4, map[string]func(*testing.T, []string){
		"enc": func(t *testing.T, f []string) {
			bits := parseUint(t, f[1], 16, 64)
			wantFlags := byte(parseUint(t, f[2], 16, 8))
			want := unhex(t, f[3])
			got, flags := AppendValue(nil, math.Float64frombits(bits))
			if !bytes.Equal(got, want) || flags != wantFlags {
				t.Fatalf("AppendValue(%#016x) = %X, flags %#x; want %X, flags %#x", bits, got, flags, want, wantFlags)
			}
			v, err := DecodeValue(flags, got)
			if err != nil {
				t.Fatalf("DecodeValue: %v", err)
			}
			if math.Float64bits(v) != bits {
				t.Fatalf("DecodeValue = %#016x, want %#016x", math.Float64bits(v), bits)
			}
		},
		"dec": func(t *testing.T, f []string) {
			flags := byte(parseUint(t, f[1], 16, 8))
			v, err := DecodeValue(flags, unhex(t, f[2]))
			if err != nil {
				t.Fatalf("DecodeValue: %v", err)
			}
			if want := parseUint(t, f[3], 16, 64); math.Float64bits(v) != want {
				t.Fatalf("DecodeValue = %#016x, want %#016x", math.Float64bits(v), want)
			}
		},
		"bad": func(t *testing.T, f []string) {
			flags := byte(parseUint(t, f[1], 16, 8))
			_, err := DecodeValue(flags, unhex(t, f[2]))
			wantError(t, err, ErrMalformedValue, f[3])
		},
	})
}

func TestGoldenQualifiers(t *testing.T) {
	forGolden(t, "qualifiers.txt", 6, 6, func(t *testing.T, f []string) {
		ts := int64(parseUint(t, f[1], 10, 63))
		base := uint32(parseUint(t, f[2], 10, 32))
		off := uint32(parseUint(t, f[3], 10, 32))
		flags := byte(parseUint(t, f[4], 16, 8))
		q := unhex(t, f[5])
		switch f[0] {
		case "s":
			if len(q) != 2 {
				t.Fatalf("second qualifier of %d bytes", len(q))
			}
			if got := uint32(ts - int64(base)); got*1000 != off {
				t.Fatalf("fixture: timestamp %d - base %d = %d s, offset says %d ms", ts, base, got, off)
			}
		case "ms":
			gotBase, gotOff, err := SplitMs(ts)
			if err != nil || gotBase != base || gotOff != off {
				t.Fatalf("SplitMs(%d) = %d, %d, %v; want %d, %d", ts, gotBase, gotOff, err, base, off)
			}
			if got := AppendMsQualifier(nil, off, flags); !bytes.Equal(got, q) {
				t.Fatalf("AppendMsQualifier(%d, %#x) = %X, want %X", off, flags, got, q)
			}
		default:
			t.Fatalf("unknown kind %q", f[0])
		}
		gotOff, gotFlags, n, err := ParseQualifier(q)
		if err != nil || gotOff != off || gotFlags != flags || n != len(q) {
			t.Fatalf("ParseQualifier(%X) = %d, %#x, %d, %v; want %d, %#x, %d", q, gotOff, gotFlags, n, err, off, flags, len(q))
		}
	})
}

func TestGoldenCells(t *testing.T) {
	forGolden(t, "cells.txt", 4, 4, func(t *testing.T, f []string) {
		base := uint32(parseUint(t, f[0], 10, 32))
		q, v := unhex(t, f[1]), unhex(t, f[2])
		sentinel := []Point{{T: -1, V: -1}}
		got, err := AppendPoints(sentinel, base, q, v)
		switch want := f[3]; {
		case strings.HasPrefix(want, "error:"):
			wantError(t, err, ErrMalformedCell, strings.TrimSpace(strings.TrimPrefix(want, "error:")))
			if len(got) != 1 {
				t.Fatalf("AppendPoints returned %d points with its error, want dst unchanged", len(got))
			}
		case want == "skip" || want == "none":
			if err != nil || len(got) != 1 {
				t.Fatalf("AppendPoints = %v, %v; want dst unchanged, nil error", got, err)
			}
		default:
			if err != nil {
				t.Fatalf("AppendPoints: %v", err)
			}
			wantPts := sentinel
			for _, pv := range strings.Fields(want) {
				o, val, ok := strings.Cut(pv, "=")
				if !ok {
					t.Fatalf("bad point %q", pv)
				}
				wantPts = append(wantPts, Point{
					T: int64(base)*1000 + int64(parseUint(t, o, 10, 32)),
					V: parseFloat(t, val),
				})
			}
			requirePoints(t, got, wantPts)
		}
	})
}

// wantError fails unless err wraps sentinel and its text contains substr.
func wantError(t *testing.T, err, sentinel error, substr string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", substr)
	}
	if !errors.Is(err, sentinel) {
		t.Fatalf("error %q does not wrap %q", err, sentinel)
	}
	if !strings.Contains(err.Error(), substr) {
		t.Fatalf("error %q does not contain %q", err, substr)
	}
}

// requirePoints fails unless got and want hold the same points, values
// compared bit for bit.
func requirePoints(t *testing.T, got, want []Point) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d points %v, want %d %v", len(got), got, len(want), want)
	}
	for i := range got {
		if got[i].T != want[i].T || math.Float64bits(got[i].V) != math.Float64bits(want[i].V) {
			t.Fatalf("point %d = {%d %#016x}, want {%d %#016x}", i,
				got[i].T, math.Float64bits(got[i].V), want[i].T, math.Float64bits(want[i].V))
		}
	}
}

func TestGoldenIndex(t *testing.T) {
	forGoldenKinds(t, "index.txt", 4, 6, map[string]func(*testing.T, []string){
		"key": func(t *testing.T, f []string) {
			day := uint32(parseUint(t, f[2], 10, 32))
			var got []byte
			switch f[1] {
			case "S":
				got = AppendIndexSeriesKey(nil, day, unhex(t, f[3]), unhex(t, f[4]))
				d, rest, ok := IndexSeriesRowOf(got)
				if want := append(unhex(t, f[3]), IndexSeriesBucket(unhex(t, f[4]))); !ok || d != day || !bytes.Equal(rest, want) {
					t.Errorf("IndexSeriesRowOf(%x) = %d, %x, %v", got, d, rest, ok)
				}
			case "V":
				got = AppendIndexValueKey(nil, day, unhex(t, f[3]), unhex(t, f[4]))
				if tagv := unhex(t, f[4]); len(tagv) > 0 {
					v, ok := IndexValueOf(got, len(unhex(t, f[3])), len(tagv))
					if !ok || !bytes.Equal(v, tagv) {
						t.Errorf("IndexValueOf(%x) = %x, %v", got, v, ok)
					}
				}
			default:
				got = AppendIndexDayKey(nil, f[1][0], day)
			}
			if want := unhex(t, f[5]); !bytes.Equal(got, want) {
				t.Errorf("key %x, want %x", got, want)
			}
		},
		"tsmeta": func(t *testing.T, f []string) {
			created := int64(parseUint(t, f[2], 10, 63))
			if got := string(AppendTSMetaJSON(nil, unhex(t, f[1]), created)); got != f[3] {
				t.Errorf("ts_meta\n%s\nwant\n%s", got, f[3])
			}
		},
	})
}
