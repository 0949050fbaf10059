package mapping

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"
)

// MetricLabel is the label that carries a series' metric name.
const MetricLabel = "__name__"

// MaxNameBytes is the longest metric name, label name or label value that
// can be stored: each becomes the row key of its forward mapping in the UID
// table, and HBase row keys are at most 32767 bytes.
const MaxNameBytes = 32767

// ErrInvalidSeries means a label set can never be stored: no metric name,
// a repeated label name, a label that is not valid UTF-8.
var ErrInvalidSeries = errors.New("invalid series")

// ErrRowKeyTooLong wraps ErrInvalidSeries: the series' row key would be
// longer than MaxRowKeyBytes.
var ErrRowKeyTooLong = fmt.Errorf("%w: row key too long", ErrInvalidSeries)

// MaxRowKeyBytes is the longest row key HBase stores (Java's
// Short.MAX_VALUE); every backend keeps to it, so that data written on one
// can be copied to HBase.
const MaxRowKeyBytes = 32767

// TagPairs returns how many tag pairs the row key of lbls has: one per
// label with a non-empty value other than __name__, and at least one (see
// Mapper). It does not allocate.
func TagPairs(lbls []Label) int {
	n := 0
	for _, l := range lbls {
		if len(l.Value) > 0 && string(l.Name) != MetricLabel {
			n++
		}
	}
	return max(n, 1)
}

// CheckRowKey returns an error wrapping ErrRowKeyTooLong when the row key
// of lbls under layout would exceed MaxRowKeyBytes. It only counts labels,
// so it is cheap enough to run before any UID is looked up or assigned.
func CheckRowKey(layout Layout, lbls []Label) error {
	pairs := TagPairs(lbls)
	if n := layout.RowKeyLen(pairs); n > MaxRowKeyBytes {
		return fmt.Errorf("%w: %d tag pairs make a %d-byte row key, more than HBase's %d (at most %d labels with this layout): %s",
			ErrRowKeyTooLong, pairs, n, MaxRowKeyBytes, (MaxRowKeyBytes-layout.PrefixLen())/layout.PairLen(), FormatLabelsMax(lbls, maxFormattedLabels))
	}
	return nil
}

// Label is a label as it arrives on the wire: name and value bytes that may
// point into a request buffer.
type Label struct {
	Name, Value []byte
}

// ValidateLabels checks what Resolve checks, without touching UIDs.
func ValidateLabels(lbls []Label) error {
	var name []byte
	for i, l := range lbls {
		if len(l.Name) == 0 {
			return fmt.Errorf("%w: empty label name in %s", ErrInvalidSeries, FormatLabels(lbls))
		}
		if len(l.Name) > MaxNameBytes || len(l.Value) > MaxNameBytes {
			return fmt.Errorf("%w: label %.64q (%d bytes) or its value (%d bytes) is longer than %d bytes, the most an HBase row key holds, in %s",
				ErrInvalidSeries, l.Name, len(l.Name), len(l.Value), MaxNameBytes, FormatLabels(lbls))
		}
		if ReservedName(l.Name) || ReservedName(l.Value) {
			return fmt.Errorf("%w: label %q or its value is the single byte 0x00, the key of the UID table's counter row, in %s", ErrInvalidSeries, l.Name, FormatLabels(lbls))
		}
		if !utf8.Valid(l.Name) || !utf8.Valid(l.Value) {
			return fmt.Errorf("%w: label %q is not valid UTF-8 in %s", ErrInvalidSeries, l.Name, FormatLabels(lbls))
		}
		for _, o := range lbls[:i] {
			if bytes.Equal(o.Name, l.Name) {
				return fmt.Errorf("%w: label %q repeated in %s", ErrInvalidSeries, l.Name, FormatLabels(lbls))
			}
		}
		if string(l.Name) == MetricLabel {
			name = l.Value
		}
	}
	if len(name) == 0 {
		return fmt.Errorf("%w: no %s label in %s", ErrInvalidSeries, MetricLabel, FormatLabels(lbls))
	}
	return nil
}

// maxFormattedValue bounds each name and value FormatLabels prints, so that
// error messages stay short whatever the labels.
const maxFormattedValue = 128

// FormatLabels renders wire labels for error messages, in Prometheus's
// {a="b"} notation, invalid UTF-8 shown escaped, names and values longer
// than 128 bytes cut (with their length).
func FormatLabels(lbls []Label) string {
	sorted := slices.Clone(lbls)
	slices.SortFunc(sorted, func(a, b Label) int { return bytes.Compare(a.Name, b.Name) })
	var sb []byte
	sb = append(sb, '{')
	for i, l := range sorted {
		if i > 0 {
			sb = append(sb, ", "...)
		}
		sb = appendCut(sb, l.Name, false)
		sb = append(sb, '=')
		sb = appendCut(sb, l.Value, true)
	}
	sb = append(sb, '}')
	return string(sb)
}

// maxFormattedLabels is how many labels error messages about series with
// too many labels show.
const maxFormattedLabels = 10

// FormatLabelsMax is FormatLabels for at most max labels: the metric name
// and the first others, then how many were left out. Messages about series
// of thousands of labels stay short.
func FormatLabelsMax(lbls []Label, max int) string {
	if len(lbls) <= max {
		return FormatLabels(lbls)
	}
	shown := make([]Label, 0, max)
	for _, l := range lbls {
		if string(l.Name) == MetricLabel {
			shown = append(shown, l)
			break
		}
	}
	for _, l := range lbls {
		if len(shown) == max {
			break
		}
		if string(l.Name) != MetricLabel {
			shown = append(shown, l)
		}
	}
	s := FormatLabels(shown)
	return s[:len(s)-1] + fmt.Sprintf(", ... %d more}", len(lbls)-len(shown))
}

func appendCut(dst, b []byte, quote bool) []byte {
	cut := len(b) > maxFormattedValue
	v := b
	if cut {
		v = b[:maxFormattedValue]
	}
	if quote {
		dst = fmt.Appendf(dst, "%q", v)
	} else {
		dst = append(dst, v...)
	}
	if cut {
		dst = fmt.Appendf(dst, "…(%d bytes)", len(b))
	}
	return dst
}

// ReservedName reports whether name can never have a forward mapping: the
// single byte 0x00 is the row of the max-id counters.
func ReservedName(name []byte) bool { return len(name) == 1 && name[0] == 0 }
