package query

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// TestReadLimits: the clamp of a selection's range and the count of
// distinct series, each label set once.
func TestReadLimits(t *testing.T) {
	t.Run("none", func(t *testing.T) {
		ctx := WithReadLimits(context.Background(), NoMinTime, 0)
		if readLimitsOf(ctx) != nil {
			t.Fatal("limits without a bound")
		}
		if s, ok := readLimitsOf(ctx).clamp(-5, 10); s != -5 || !ok {
			t.Errorf("clamp: %d %v", s, ok)
		}
		if err := readLimitsOf(ctx).addSeries(labels.FromStrings("a", "1")); err != nil {
			t.Error(err)
		}
	})
	t.Run("clamp", func(t *testing.T) {
		l := readLimitsOf(WithReadLimits(context.Background(), 100, 0))
		for _, tc := range []struct {
			start, end, want int64
			ok               bool
		}{
			{0, 50, 0, false},
			{0, 100, 100, true},
			{150, 200, 150, true},
		} {
			if s, ok := l.clamp(tc.start, tc.end); s != tc.want || ok != tc.ok {
				t.Errorf("clamp(%d, %d) = %d %v, want %d %v", tc.start, tc.end, s, ok, tc.want, tc.ok)
			}
		}
	})
	t.Run("series", func(t *testing.T) {
		l := readLimitsOf(WithReadLimits(context.Background(), NoMinTime, 2))
		for i, ls := range []labels.Labels{labels.FromStrings("a", "1"), labels.FromStrings("a", "2"), labels.FromStrings("a", "1")} {
			if err := l.addSeries(ls); err != nil {
				t.Fatalf("series %d: %v", i, err)
			}
		}
		err := l.addSeries(labels.FromStrings("a", "3"))
		var sle *SeriesLimitError
		if !errors.Is(err, ErrTooManySeries) || !errors.As(err, &sle) || sle.Limit != 2 ||
			!strings.HasPrefix(err.Error(), "the query exceeded the maximum number of series (limit: 2 series) (err-mimir-max-series-per-query).") {
			t.Errorf("third series: %v", err)
		}
	})
}
