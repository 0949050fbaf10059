package promapi

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	jsoniter "github.com/json-iterator/go"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	v1 "github.com/prometheus/prometheus/web/api/v1"
)

// minParallelPoints is the fewest points of a matrix answer encoded in
// parts at once: below it the helpers cost more than they save.
const minParallelPoints = 2048

// parallelJSON is the query API's codec: Prometheus's JSON codec
// (v1.JSONCodec), whose bytes it gives, with a matrix answer (a range
// query's) written here, its series in parts on up to procs goroutines
// at once when it is large. Formatting the floats of a range answer is most of
// what a results-cache hit costs, after its compression.
//
// Each part is its run of series encoded by Prometheus's own encoder of a
// matrix (registered with jsoniter by package v1), into a buffer sized
// for it beforehand (growing one took a third of the time), and the
// parts' lists of series are joined into one answer: the bytes of a
// series do not depend on the series beside it. An answer with
// statistics, warnings or infos, or of another type, is encoded whole by
// Prometheus's codec.
type parallelJSON struct{ procs int }

func (parallelJSON) ContentType() v1.MIMEType { return v1.JSONCodec{}.ContentType() }

func (parallelJSON) CanEncode(resp *v1.Response) bool { return v1.JSONCodec{}.CanEncode(resp) }

// The bytes around the series of a successful matrix answer with nothing
// but its result.
const (
	matrixHead = `{"status":"success","data":{"resultType":"matrix","result":[`
	matrixTail = `]}}`
)

// Encode encodes resp as Prometheus's JSON codec does.
func (c parallelJSON) Encode(resp *v1.Response) ([]byte, error) {
	m, ok := plainMatrix(resp)
	if !ok || len(m) == 0 {
		return v1.JSONCodec{}.Encode(resp)
	}
	procs := c.procs
	if procs <= 0 {
		procs = runtime.GOMAXPROCS(0)
	}
	cuts := cutByPoints(m, procs)
	outs, err := encodeParts(m, cuts)
	if err != nil {
		return nil, err
	}
	return joinParts(outs, resp)
}

// plainMatrix returns the series of resp when it is a successful matrix
// answer with nothing else (no statistics, warnings or infos).
func plainMatrix(resp *v1.Response) (promql.Matrix, bool) {
	if resp.Status != "success" || resp.ErrorType != "" || resp.Error != "" || len(resp.Warnings) > 0 || len(resp.Infos) > 0 {
		return nil, false
	}
	qd, ok := resp.Data.(*v1.QueryData)
	if !ok || qd == nil || qd.Stats != nil || qd.ResultType != parser.ValueTypeMatrix {
		return nil, false
	}
	m, ok := qd.Result.(promql.Matrix)
	return m, ok
}

// cutByPoints returns the ends of up to procs runs of m's series of
// about equal points (a histogram counted as 8): one run when m has fewer
// than minParallelPoints.
func cutByPoints(m promql.Matrix, procs int) []int {
	weight := func(s promql.Series) int { return 1 + len(s.Floats) + 8*len(s.Histograms) }
	total := 0
	for _, s := range m {
		total += weight(s)
	}
	if total < minParallelPoints {
		return []int{len(m)}
	}
	parts := max(min(procs, len(m)), 1)
	var cuts []int
	sum := 0
	for i, s := range m {
		sum += weight(s)
		if len(cuts) < parts-1 && sum*parts >= total*(len(cuts)+1) && i < len(m)-1 {
			cuts = append(cuts, i+1)
		}
	}
	return append(cuts, len(m))
}

// encodeParts encodes the runs of m's series that end at cuts, each as
// a JSON array, on the caller's goroutine and as many others at once.
func encodeParts(m promql.Matrix, cuts []int) ([][]byte, error) {
	outs := make([][]byte, len(cuts))
	errs := make([]error, len(cuts))
	// Runs are claimed in order by the caller and by the helpers, so
	// that a helper that starts late (its core asleep) finds them taken
	// and the caller never waits for one to start.
	var claim atomic.Int32
	work := func() {
		for {
			i := int(claim.Add(1)) - 1
			if i >= len(cuts) {
				return
			}
			lo := 0
			if i > 0 {
				lo = cuts[i-1]
			}
			outs[i], errs[i] = appendSeriesList(make([]byte, 0, encodedSize(m[lo:cuts[i]])), m[lo:cuts[i]])
		}
	}
	var wg sync.WaitGroup
	for range len(cuts) - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("encode a matrix answer: %w", err)
		}
	}
	return outs, nil
}

// appendSeriesList appends to b the JSON array of series as Prometheus
// encodes a matrix: each series an object of its "metric" (labels, by
// Prometheus's encoder) and its "values", [time, "value"] pairs written
// here as Prometheus's jsonutil writes them (a series with histograms
// by Prometheus's encoder whole).
func appendSeriesList(b []byte, series promql.Matrix) ([]byte, error) {
	stream := jsoniter.NewStream(jsoniter.ConfigCompatibleWithStandardLibrary, nil, 0)
	viaStream := func(v any) {
		stream.SetBuffer(b)
		stream.WriteVal(v)
		b = stream.Buffer()
	}
	var stamps timestampMemo
	if len(series) > 1 {
		n := len(series[0].Floats)
		stamps.ts, stamps.ends, stamps.text = make([]int64, 0, n), make([]int32, 0, n), make([]byte, 0, 16*n)
	}
	b = append(b, '[')
	for i, s := range series {
		if i > 0 {
			b = append(b, ',')
		}
		if len(s.Histograms) > 0 {
			viaStream(s)
			continue
		}
		b = append(b, `{"metric":`...)
		viaStream(s.Metric)
		for j, p := range s.Floats {
			if j == 0 {
				b = append(b, `,"values":[`...)
			} else {
				b = append(b, ',')
			}
			b = append(b, '[')
			if len(series) > 1 {
				b = stamps.append(b, j, p.T)
			} else {
				b = appendTimestamp(b, p.T)
			}
			b = append(b, ',', '"')
			b = appendFloat(b, p.F)
			b = append(b, '"', ']')
		}
		if len(s.Floats) > 0 {
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	return append(b, ']'), stream.Error
}

// timestampMemo keeps the timestamps of a range answer's points as
// written (appendTimestamp), by their index in a series: the series of a
// range answer share its steps, so every series but the first copies
// them, and a series with gaps finds each of its steps by a binary
// search. Its zero value is ready.
type timestampMemo struct {
	ts   []int64 // ascending: the first series' steps and any later ones past them
	ends []int32 // ends[i]: where ts[i]'s text ends in text
	text []byte
}

// append appends t, the time of a series' point j, as appendTimestamp
// does.
func (m *timestampMemo) append(b []byte, j int, t int64) []byte {
	i := j
	if i >= len(m.ts) || m.ts[i] != t {
		var found bool
		if i, found = slices.BinarySearch(m.ts, t); !found {
			if i < len(m.ts) || len(m.text) > maxMemoText {
				return appendTimestamp(b, t) // between two known: left out
			}
			m.text = appendTimestamp(m.text, t)
			m.ts, m.ends = append(m.ts, t), append(m.ends, int32(len(m.text)))
		}
	}
	start := int32(0)
	if i > 0 {
		start = m.ends[i-1]
	}
	return append(b, m.text[start:m.ends[i]]...)
}

// maxMemoText bounds a timestampMemo's text (about 20 bytes a step: the
// 11 000 steps Prometheus allows a range query).
const maxMemoText = 256 << 10

// appendTimestamp appends t (ms) as seconds with up to three decimals, as
// jsonutil.MarshalTimestamp writes it.
func appendTimestamp(b []byte, t int64) []byte {
	if t < 0 {
		b = append(b, '-')
		t = -t
	}
	b = appendInt64(b, t/1000)
	if frac := t % 1000; frac != 0 {
		b = append(b, '.')
		if frac < 100 {
			b = append(b, '0')
		}
		if frac < 10 {
			b = append(b, '0')
		}
		b = appendInt64(b, frac)
	}
	return b
}

// appendInt64 appends n in decimal as jsoniter's WriteInt64 does.
func appendInt64(b []byte, n int64) []byte {
	if n < 0 {
		return strconv.AppendUint(append(b, '-'), uint64(-n), 10)
	}
	return strconv.AppendUint(b, uint64(n), 10)
}

// appendFloat appends f as jsonutil.MarshalFloat writes it between its
// quotes: the shortest decimal that reads back as f, in exponent form
// below 1e-6 and from 1e21 on (NaN, +Inf and -Inf by name). A value
// that is the double nearest a decimal of at most 15 significant digits
// and 9 places (most gauges and counters as exporters write them) is
// written from that decimal (appendShortDecimal); others by strconv.
func appendFloat(b []byte, f float64) []byte {
	form := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		form = 'e'
	}
	if form == 'f' {
		if out, ok := appendShortDecimal(b, f); ok {
			return out
		}
	}
	return strconv.AppendFloat(b, f, form, -1, 64)
}

// appendShortDecimal appends f in fixed notation when f is the double
// nearest m/10^k for an integer 0 < |m| < 10^15 and k <= 9, found as the
// first k for which f*10^k is a whole m and m/10^k (a correctly rounded
// division of two exact doubles) is f again; ok is false otherwise, and
// for zero (whose sign strconv keeps). The result is strconv's 'f', -1:
// a decimal of at most 15 significant digits reads back as the one
// double nearest it (DBL_DIG), so no other such decimal reads back as f,
// and the shortest that does is m/10^k without its trailing zeros.
func appendShortDecimal(b []byte, f float64) ([]byte, bool) {
	if f == 0 {
		return b, false
	}
	// A first test rejects most other values (a rate's) at once: such a
	// decimal times 10^9 is within two roundings (2^-52 of it) of a
	// whole number.
	if t := f * 1e9; math.Abs(t-math.Round(t)) > math.Abs(t)*0x1p-51 {
		return b, false
	}
	pow10 := [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9} // each exact in a float64
	for k, p := range pow10 {
		t := f * p
		if t != math.Trunc(t) {
			continue
		}
		if math.Abs(t) >= 1e15 || float64(int64(t))/p != f {
			return b, false
		}
		m := int64(t)
		if m < 0 {
			b = append(b, '-')
			m = -m
		}
		for k > 0 && m%10 == 0 {
			m /= 10
			k--
		}
		return appendScaled(b, uint64(m), k), true
	}
	return b, false
}

// appendScaled appends m/10^k in fixed notation: m's digits with a point
// k from their end, and zeros before them when they are fewer than k+1.
func appendScaled(b []byte, m uint64, k int) []byte {
	if k == 0 {
		return strconv.AppendUint(b, m, 10)
	}
	var digits [20]byte
	d := strconv.AppendUint(digits[:0], m, 10)
	if len(d) <= k {
		b = append(b, '0', '.')
		for range k - len(d) {
			b = append(b, '0')
		}
		return append(b, d...)
	}
	b = append(b, d[:len(d)-k]...)
	b = append(b, '.')
	return append(b, d[len(d)-k:]...)
}

// encodedSize is about the bytes of the JSON of series, on the high
// side for a range answer: 40 a point (a timestamp of milliseconds and a
// value of 17 digits, quoted, bracketed), 200 a histogram.
func encodedSize(series promql.Matrix) int {
	n := 2
	for _, s := range series {
		n += 32 + 40*len(s.Floats) + 200*len(s.Histograms)
		s.Metric.Range(func(l labels.Label) { n += len(l.Name) + len(l.Value) + 6 })
	}
	return n
}

// joinParts returns the answer whose series are those of the parts'
// arrays, in order; resp encoded whole by Prometheus's codec when a part
// is not an array.
func joinParts(outs [][]byte, resp *v1.Response) ([]byte, error) {
	size := len(matrixHead) + len(matrixTail)
	for _, o := range outs {
		if len(o) < 2 || o[0] != '[' || o[len(o)-1] != ']' {
			return v1.JSONCodec{}.Encode(resp)
		}
		size += len(o) - 1
	}
	b := make([]byte, 0, size)
	b = append(b, matrixHead...)
	for i, o := range outs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, o[1:len(o)-1]...)
	}
	return append(b, matrixTail...), nil
}
