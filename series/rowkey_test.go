package series

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series/uid"
)

// TestResolveRowKeyBound: a series whose row key would pass HBase's 32767
// bytes is refused before any UID is assigned, on every backend, with an
// error wrapping ErrInvalidSeries (so a 400); one pair fewer resolves.
func TestResolveRowKeyBound(t *testing.T) {
	l := mapping.DefaultLayout()
	m := testMapper(t, l, 0)
	u := m.UIDs()
	wide := func(n int) []mapping.Label {
		lbls := []mapping.Label{{Name: []byte(mapping.MetricLabel), Value: []byte("wide")}}
		for i := range n {
			lbls = append(lbls, mapping.Label{Name: []byte(fmt.Sprintf("l%05d", i)), Value: []byte("v")})
		}
		return lbls
	}
	start := time.Now()
	_, err := m.Resolve(context.Background(), []byte("k10000"), wide(10_000))
	t.Logf("10000 labels refused in %s: %v", time.Since(start), err)
	if !errors.Is(err, mapping.ErrRowKeyTooLong) || !errors.Is(err, mapping.ErrInvalidSeries) {
		t.Fatalf("got %v", err)
	}
	for k := range uid.NumKinds {
		if h := u.Headroom(k); h != u.Capacity(k) {
			t.Fatalf("%s: %d uids assigned for a refused series", k, u.Capacity(k)-h)
		}
	}
	fit := (mapping.MaxRowKeyBytes - l.PrefixLen()) / l.PairLen()
	if _, err := m.Resolve(context.Background(), []byte("fit"), wide(fit)); err != nil {
		t.Fatalf("%d pairs: %v", fit, err)
	}
	if _, err := m.Resolve(context.Background(), []byte("over"), wide(fit+1)); !errors.Is(err, mapping.ErrRowKeyTooLong) {
		t.Fatalf("%d pairs: %v", fit+1, err)
	}
}
