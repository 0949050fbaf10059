package mapping

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestResolveRowKeyBound: a series whose row key would pass HBase's 32767
// bytes is refused before any UID is assigned, on every backend, with an
// error wrapping ErrInvalidSeries (so a 400); one pair fewer resolves.
func TestResolveRowKeyBound(t *testing.T) {
	st := openUIDStore(t)
	l := DefaultLayout()
	u := newTestUIDs(t, st, l)
	m := NewMapper(u, l, 0)
	wide := func(n int) []Label {
		lbls := []Label{{Name: []byte(MetricLabel), Value: []byte("wide")}}
		for i := range n {
			lbls = append(lbls, Label{Name: []byte(fmt.Sprintf("l%05d", i)), Value: []byte("v")})
		}
		return lbls
	}
	start := time.Now()
	_, err := m.Resolve(context.Background(), []byte("k10000"), wide(10_000))
	t.Logf("10000 labels refused in %s: %v", time.Since(start), err)
	if !errors.Is(err, ErrRowKeyTooLong) || !errors.Is(err, ErrInvalidSeries) {
		t.Fatalf("got %v", err)
	}
	for k := range numKinds {
		if h := u.Headroom(k); h != u.Capacity(k) {
			t.Fatalf("%s: %d uids assigned for a refused series", k, u.Capacity(k)-h)
		}
	}
	fit := (MaxRowKeyBytes - l.PrefixLen()) / l.PairLen()
	if _, err := m.Resolve(context.Background(), []byte("fit"), wide(fit)); err != nil {
		t.Fatalf("%d pairs: %v", fit, err)
	}
	if _, err := m.Resolve(context.Background(), []byte("over"), wide(fit+1)); !errors.Is(err, ErrRowKeyTooLong) {
		t.Fatalf("%d pairs: %v", fit+1, err)
	}
}
