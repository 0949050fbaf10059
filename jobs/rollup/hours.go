package rollup

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/promhbase/promhbase/mapping"
)

// HourSpan is the hours [From, To) (Unix s, multiples of an hour).
type HourSpan struct{ From, To int64 }

// Hours is a set of hours (those whose rollups are built and current, for
// queries): spans in time order that neither overlap nor touch.
type Hours []HourSpan

// Contains reports whether h holds hour (Unix s, the start of an hour).
func (h Hours) Contains(hour int64) bool {
	i := sort.Search(len(h), func(i int) bool { return h[i].To > hour })
	return i < len(h) && h[i].From <= hour
}

// Clip returns the hours of h in [from, to) (Unix s, multiples of an
// hour).
func (h Hours) Clip(from, to int64) Hours {
	var out Hours
	for _, s := range h {
		if s.To <= from || s.From >= to {
			continue
		}
		out = append(out, HourSpan{From: max(s.From, from), To: min(s.To, to)})
	}
	return out
}

// Count returns the number of hours in h.
func (h Hours) Count() int64 {
	var n int64
	for _, s := range h {
		n += (s.To - s.From) / mapping.MaxTimespan
	}
	return n
}

// add returns h with hour added, hour after every hour of h.
func (h Hours) add(hour int64) Hours {
	if n := len(h); n > 0 && h[n-1].To == hour {
		h[n-1].To += mapping.MaxTimespan
		return h
	}
	return append(h, HourSpan{From: hour, To: hour + mapping.MaxTimespan})
}

// String writes h as ParseHours reads it: "from-to,from-to" (Unix s), ""
// for no hour.
func (h Hours) String() string {
	var b []byte
	for i, s := range h {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, s.From, 10)
		b = append(b, '-')
		b = strconv.AppendInt(b, s.To, 10)
	}
	return string(b)
}

var errBadHours = errors.New("rollup: bad hours")

// ParseHours reads what Hours.String writes: spans of whole hours, in time
// order, neither overlapping nor touching.
func ParseHours(s string) (Hours, error) {
	if s == "" {
		return nil, nil
	}
	var out Hours
	for part := range strings.SplitSeq(s, ",") {
		a, b, ok := strings.Cut(part, "-")
		from, err1 := strconv.ParseInt(a, 10, 64)
		to, err2 := strconv.ParseInt(b, 10, 64)
		if !ok || err1 != nil || err2 != nil || from < 0 || from >= to || from%mapping.MaxTimespan != 0 || to%mapping.MaxTimespan != 0 ||
			(len(out) > 0 && out[len(out)-1].To >= from) {
			return nil, fmt.Errorf("%w: %q", errBadHours, s)
		}
		out = append(out, HourSpan{From: from, To: to})
	}
	return out, nil
}
