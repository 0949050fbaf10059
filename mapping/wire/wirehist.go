package wire

import (
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/histogram"
)

// Histogram is a decoded Histogram message, the same in remote write
// 1.0 (prometheus.Histogram) and 2.0 (io.prometheus.write.v2.Histogram):
//
//	Histogram { oneof count { uint64 count_int = 1; double count_float = 2; }
//	            double sum = 3; sint32 schema = 4; double zero_threshold = 5;
//	            oneof zero_count { uint64 zero_count_int = 6; double zero_count_float = 7; }
//	            repeated BucketSpan negative_spans = 8; repeated sint64 negative_deltas = 9;
//	            repeated double negative_counts = 10; repeated BucketSpan positive_spans = 11;
//	            repeated sint64 positive_deltas = 12; repeated double positive_counts = 13;
//	            ResetHint reset_hint = 14; int64 timestamp = 15;
//	            repeated double custom_values = 16; int64 start_timestamp = 17; }
//	BucketSpan { sint32 offset = 1; uint32 length = 2; }
//
// It is an integer histogram unless count_float is set (as prompb's
// IsFloatHistogram decides). Its slices are reused between messages.
type Histogram struct {
	T       int64
	IsFloat bool
	H       histogram.Histogram
	FH      histogram.FloatHistogram

	// Buffers reused between messages; H and FH get them, or nil when
	// empty (Prometheus's validation tells nil custom bounds from none).
	pSpans, nSpans   []histogram.Span
	pDeltas, nDeltas []int64
	pCounts, nCounts []float64
	custom           []float64
}

// ParseHistogram decodes msg into w, reusing w's slices. Repeated numbers
// may come packed or not; every length is checked before slicing.
func ParseHistogram(msg []byte, w *Histogram) error {
	h, fh := &w.H, &w.FH
	*h, *fh = histogram.Histogram{}, histogram.FloatHistogram{}
	w.pSpans, w.nSpans = w.pSpans[:0], w.nSpans[:0]
	w.pDeltas, w.nDeltas = w.pDeltas[:0], w.nDeltas[:0]
	w.pCounts, w.nCounts, w.custom = w.pCounts[:0], w.nCounts[:0], w.custom[:0]
	w.T, w.IsFloat = 0, false
	for rest := msg; len(rest) > 0; {
		f, n, err := readField(rest, "Histogram")
		if err != nil {
			return err
		}
		rest = rest[n:]
		switch f.num() {
		case 1, 6, 14, 15: // varints
			if f.wt() != wireVarint {
				continue
			}
			switch f.num() {
			case 1: // a oneof: the last of count_int and count_float wins
				h.Count, fh.Count, w.IsFloat = f.uint(), 0, false
			case 6: // a oneof: the last of zero_count_int and _float wins
				h.ZeroCount, fh.ZeroCount = f.uint(), 0
			case 14:
				h.CounterResetHint = histogram.CounterResetHint(f.uint())
			case 15:
				w.T = int64(f.uint())
			}
		case 2, 3, 5, 7: // doubles
			if f.wt() != wireFixed64 {
				continue
			}
			switch v := f.float64(); f.num() {
			case 2:
				fh.Count, h.Count, w.IsFloat = v, 0, true
			case 3:
				h.Sum = v
			case 5:
				h.ZeroThreshold = v
			case 7:
				fh.ZeroCount, h.ZeroCount = v, 0
			}
		case 4:
			if f.wt() != wireVarint {
				continue
			}
			s := zigzag(f.uint())
			if s < math.MinInt32 || s > math.MaxInt32 {
				return fmt.Errorf("%w: Histogram schema %d", ErrMalformed, s)
			}
			h.Schema = int32(s)
		case 8, 11:
			if f.wt() != wireBytes {
				continue
			}
			sp, err := parseSpan(f.b)
			if err != nil {
				return err
			}
			if f.num() == 8 {
				w.nSpans = append(w.nSpans, sp)
			} else {
				w.pSpans = append(w.pSpans, sp)
			}
		case 9, 12:
			dst := &w.nDeltas
			if f.num() == 12 {
				dst = &w.pDeltas
			}
			if *dst, err = appendSint64s(*dst, f); err != nil {
				return fmt.Errorf("%w: Histogram field %d: %w", ErrMalformed, f.num(), err)
			}
		case 10, 13, 16:
			dst := &w.nCounts
			switch f.num() {
			case 13:
				dst = &w.pCounts
			case 16:
				dst = &w.custom
			}
			if *dst, err = appendDoubles(*dst, f); err != nil {
				return fmt.Errorf("%w: Histogram field %d: %w", ErrMalformed, f.num(), err)
			}
		}
	}
	h.PositiveSpans, h.NegativeSpans, h.CustomValues = orNil(w.pSpans), orNil(w.nSpans), orNil(w.custom)
	h.PositiveBuckets, h.NegativeBuckets = orNil(w.pDeltas), orNil(w.nDeltas)
	// Fields shared by both kinds were read into h.
	if w.IsFloat {
		fh.CounterResetHint, fh.Schema, fh.ZeroThreshold, fh.Sum = h.CounterResetHint, h.Schema, h.ZeroThreshold, h.Sum
		fh.PositiveSpans, fh.NegativeSpans, fh.CustomValues = h.PositiveSpans, h.NegativeSpans, h.CustomValues
		fh.PositiveBuckets, fh.NegativeBuckets = orNil(w.pCounts), orNil(w.nCounts)
	}
	// As prompb converts: an integer histogram takes zero_count_int, a
	// float one zero_count_float, whatever else was sent.
	return nil
}

// Validate checks what Prometheus's receiver checks of a histogram: a
// schema Prometheus accepts (-4..8, or -53 with custom bounds) and buckets,
// spans and counts that agree.
func (w *Histogram) Validate() error {
	schema := w.H.Schema
	if !histogram.IsValidSchema(schema) {
		return fmt.Errorf("histogram schema %d is not one of -4..8 or -53", schema)
	}
	if w.IsFloat {
		return w.FH.Validate()
	}
	return w.H.Validate()
}

func parseSpan(buf []byte) (histogram.Span, error) {
	var sp histogram.Span
	for rest := buf; len(rest) > 0; {
		f, n, err := readField(rest, "BucketSpan")
		if err != nil {
			return sp, err
		}
		rest = rest[n:]
		switch {
		case f.is(1, wireVarint):
			o := zigzag(f.uint())
			if o < math.MinInt32 || o > math.MaxInt32 {
				return sp, fmt.Errorf("%w: BucketSpan offset %d", ErrMalformed, o)
			}
			sp.Offset = int32(o)
		case f.is(2, wireVarint):
			l := f.uint()
			if l > math.MaxUint32 {
				return sp, fmt.Errorf("%w: BucketSpan length %d", ErrMalformed, l)
			}
			sp.Length = uint32(l)
		}
	}
	return sp, nil
}

// orNil returns s, or nil when it is empty.
func orNil[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}
