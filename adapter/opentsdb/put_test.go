package opentsdb

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/promhbase/promhbase/mapping"
)

// TestParseTelnetPut: each telnet put line's answer, as a TSD 2.4.1
// gives it (checked against the real TSD by test/e2e/interop's
// TestOpenTSDBPut; these are its lines), and the cell of each good one.
func TestParseTelnetPut(t *testing.T) {
	for _, tc := range []struct {
		line      string
		err       string // the answer line without "put: " and "\n"
		qual, val string // the cell, in the row of hour 1292148000
	}{
		{line: "put", err: "illegal argument: not enough arguments (need least 4, got 0)"},
		{line: "put m", err: "illegal argument: not enough arguments (need least 4, got 1)"},
		{line: "put  1292148123 1 host=a", err: "illegal argument: empty metric name"},
		{line: "put m notatime 1 host=a", err: "invalid value: Invalid character 'n' in notatime"},
		{line: "put m -5 1 host=a", err: "illegal argument: invalid timestamp: -5"},
		{line: "put m 0 1 host=a", err: "illegal argument: invalid timestamp: 0"},
		{line: "put m 1292148123  host=a", err: "illegal argument: empty value"},
		{line: "put m 1292148123 1 hosta", err: "illegal argument: invalid tag: hosta"},
		{line: "put m 1292148123 1 host=a=b", err: "illegal argument: invalid tag: host=a=b"},
		{line: "put m 1292148123 1 host=a host=b", err: "illegal argument: duplicate tag: host=b, tags={host=a}"},
		{line: "put m 1292148123 NaN host=a", err: "invalid value: Invalid character 'N' in NaN"},
		{line: "put m 1292148123 1.2.3 host=a", err: "invalid value: multiple points"},
		{line: "put m 1292148123 1e host=a", err: `invalid value: For input string: "1e"`},
		{line: "put m 1292148123 - host=a", err: "invalid value: Just a sign, no value: -"},
		{line: "put m 1292148123 0x1p3 host=a", err: "invalid value: Invalid character 'x' in 0x1p3"},
		{line: "put m 1292148123 1e999 host=a", err: "illegal argument: value is NaN or Infinite: Infinity for metric=m timestamp=1292148123"},
		{line: "put m 1292148123 -1e999 host=a", err: "illegal argument: value is NaN or Infinite: -Infinity for metric=m timestamp=1292148123"},
		{line: "put m 1292148123 12345678901234567890 host=a", err: "invalid value: Value too long: 12345678901234567890"},
		{line: "put m 1292148123 9223372036854775808 host=a", err: "invalid value: Overflow in 9223372036854775808"},
		{line: "put m 1292148123 1 a=b c=d e=f g=h i=j k=l m=n o=p q=r", err: "illegal argument: Too many tags: 9 maximum allowed: 8, tags: {a=b, q=r, c=d, e=f, g=h, i=j, k=l, m=n, o=p}"},
		{line: "put m!x 1292148123 1 host=a", err: "illegal argument: Invalid metric name (\"m!x\"): illegal character: !"},
		{line: "put m 99999999999999 1 host=a", err: "illegal argument: bad timestamp=99999999999999 when trying to add value=[1]/0 to metric=m, tags={host=a}"},
		{line: "put m 1292148123 1 h@st=a", err: "illegal argument: Invalid tag name with value [a] (\"h@st\"): illegal character: @"},
		{line: "put m 1292148123 1 host=@", err: "illegal argument: Invalid tag value with key [host] (\"@\"): illegal character: @"},
		{line: "put m 1292148123 1 ", err: "illegal argument: Need at least one tag (metric=m, tags={})"},
		// Good lines: seconds get 2-byte qualifiers, milliseconds 4-byte
		// ones; integers the fewest bytes, floats 4 bytes when exact.
		{line: "put m 1292148123 42 host=a", qual: "07b0", val: "2a"},
		{line: "put m 1292148123 -129 host=a dc=x", qual: "07b1", val: "ff7f"},
		{line: "put m 1292148123 40000 host=a", qual: "07b3", val: "00009c40"},
		{line: "put m 1292148123 -9223372036854775808 host=a", qual: "07b7", val: "8000000000000000"},
		{line: "put m 1292148123 0.5 host=a", qual: "07bb", val: "3f000000"},
		{line: "put m 1292148123 1.0 host=a", qual: "07bb", val: "3f800000"},
		{line: "put m 1292148123 42.0d host=a", qual: "07bb", val: "42280000"},
		{line: "put m 1292148123 0.1 host=a", qual: "07bf", val: "3fb999999999999a"},
		{line: "put m 1292148123 3.4028235E38 host=a", qual: "07bf", val: "47efffffe54daff8"},
		{line: "put m 1292148123456 7 host=a", qual: "f0789000", val: "07"},
		{line: "put m 1292148123.456 7 host=a", qual: "f0789000", val: "07"},
		{line: "put m +1292148123 7 host=a host=a", qual: "07b0", val: "07"},
	} {
		t.Run(tc.line, func(t *testing.T) {
			p, perr := ParseTelnetPut(strings.Split(tc.line, " "), DefaultMaxTags)
			if tc.err != "" {
				if perr == nil {
					t.Fatalf("no error, want %q", tc.err)
				}
				if got := perr.Line(); got != "put: "+tc.err+"\n" {
					t.Errorf("answer %q, want %q", got, "put: "+tc.err+"\n")
				}
				return
			}
			if perr != nil {
				t.Fatalf("error %v", perr)
			}
			q, v := mapping.AppendEncodedCell(nil, 1292148000, p.Sample)
			if hex.EncodeToString(q) != tc.qual || hex.EncodeToString(v) != tc.val {
				t.Errorf("cell %x=%x, want %s=%s", q, v, tc.qual, tc.val)
			}
		})
	}
}

// TestHashMapOrder: java.util.HashMap's iteration order of the keys put
// (as printed by Java 17: new HashMap<>() and put in this order).
func TestHashMapOrder(t *testing.T) {
	for _, tc := range []struct {
		keys []string
		want string
	}{
		{[]string{"a", "c", "e", "g", "i", "k", "m", "o", "q"}, "a q c e g i k m o"},
		{[]string{"host", "dc"}, "host dc"},
		{[]string{"success", "failed"}, "success failed"},
		{[]string{"timeouts", "success", "failed", "errors"}, "success timeouts failed errors"},
		{[]string{"host", "bad key"}, "host bad key"},
		// 13 keys: the table doubles to 32 buckets.
		{[]string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "q"}, "a b c d e f g h i j k l q"},
		{[]string{"error", "datapoint"}, "datapoint error"},
	} {
		var got []string
		for _, i := range hashMapOrder(tc.keys) {
			got = append(got, tc.keys[i])
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%q: %q, want %q", tc.keys, got, tc.want)
		}
	}
}

// FuzzParseTelnetPut: any line parses or is refused without a panic; a
// good point's cell decodes to the value's text.
func FuzzParseTelnetPut(f *testing.F) {
	for _, s := range []string{"put m 1292148123 42 host=a", "put m 1292148123.5 0.1 a=b c=d", "put m 1 1e999 a=b", "put  x", "put m 1 0x1.8p3 a=b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		p, perr := ParseTelnetPut(strings.Split(latin1([]byte(line)), " "), DefaultMaxTags)
		if perr != nil {
			if !strings.HasSuffix(perr.Line(), "\n") {
				t.Fatalf("answer %q", perr.Line())
			}
			return
		}
		q, v := mapping.AppendEncodedCell(nil, mapping.HourBase(p.Sample.T), p.Sample)
		if _, flags, n, err := mapping.ParseQualifier(q); err != nil || n != len(q) || mapping.ValueLen(flags) != len(v) {
			t.Fatalf("cell %x=%x: %v", q, v, err)
		}
		if _, err := mapping.DecodeValue(q[len(q)-1], v); err != nil {
			t.Fatalf("value %x: %v", v, err)
		}
	})
}
