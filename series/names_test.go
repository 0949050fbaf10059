package series

import (
	"context"
	"testing"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series/uid"
)

// TestLabellessSeries: a series with only a name gets the reserved tag
// __name__=<name>, which reading hides; a row written without it (as
// earlier versions did) reads the same.
func TestLabellessSeries(t *testing.T) {
	layout := mapping.DefaultLayout()
	m := testMapper(t, layout, 0)
	u := m.UIDs()
	ctx := context.Background()
	s, err := m.Resolve(ctx, []byte("k"), []mapping.Label{{Name: []byte("__name__"), Value: []byte("scalar_result")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Tags) != layout.PairLen() {
		t.Fatalf("tags %X: want one pair", s.Tags)
	}
	k, _ := u.Name(ctx, uid.KindTagK, s.Tags[:layout.TagKWidth])
	v, _ := u.Name(ctx, uid.KindTagV, s.Tags[layout.TagKWidth:])
	if k != "__name__" || v != "scalar_result" {
		t.Errorf("reserved tag %s=%s", k, v)
	}
	for _, tags := range [][]byte{s.Tags, nil} {
		lbls, err := m.Labels(ctx, s.Metric, tags)
		if err != nil || lbls.String() != `{__name__="scalar_result"}` {
			t.Errorf("labels of tags %X: %s, %v", tags, lbls, err)
		}
	}
}
