package uid

import (
	"context"
	"fmt"
	"testing"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// TestLegacyNames: a name earlier versions stored as UTF-8 keeps its UID;
// a new non-ASCII Latin-1 name is stored in Latin-1; a name OpenTSDB
// stored in Latin-1 is found by its UTF-8 spelling and reads back as UTF-8.
func TestLegacyNames(t *testing.T) {
	st := openUIDStore(t)
	layout := mapping.DefaultLayout()
	u := newTestUIDs(t, st, layout)
	ctx := context.Background()
	// What an earlier promhbase left: tagv "zürich" stored as UTF-8, uid 000007.
	put := func(row, fam, q, val string) {
		t.Helper()
		if err := st.Put(ctx, "tsdb-uid", []store.Put{{Row: []byte(row), Cells: []store.Cell{{Family: []byte(fam), Qualifier: []byte(q), Value: []byte(val)}}}}); err != nil {
			t.Fatal(err)
		}
	}
	put("z\xc3\xbcrich", "id", "tagv", "\x00\x00\x07")
	put("\x00\x00\x07", "name", "tagv", "z\xc3\xbcrich")
	// What a TSD left: metric "café" in Latin-1, uid 000009.
	put("caf\xe9", "id", "metrics", "\x00\x00\x09")
	put("\x00\x00\x09", "name", "metrics", "caf\xe9")

	// The batch path (one GetCells per kind and form on the embedded
	// store), on a cache of its own.
	reqs := []UIDRequest{{Kind: KindTagV, Name: []byte("zürich")}, {Kind: KindMetric, Name: []byte("café")}}
	newTestUIDs(t, st, layout).GetOrCreateBatch(ctx, reqs)
	for _, r := range reqs {
		if want := map[Kind]string{KindTagV: "000007", KindMetric: "000009"}[r.Kind]; r.Err != nil || fmt.Sprintf("%X", r.UID) != want || r.Created {
			t.Errorf("batch %s %q: uid %X, created %v, %v; want %s", r.Kind, r.Name, r.UID, r.Created, r.Err, want)
		}
	}
	uid, err := u.GetOrCreate(ctx, KindTagV, []byte("zürich"))
	if err != nil || fmt.Sprintf("%X", uid) != "000007" {
		t.Errorf("zürich: uid %X, %v; want the legacy 000007", uid, err)
	}
	uid, err = u.GetOrCreate(ctx, KindMetric, []byte("café"))
	if err != nil || fmt.Sprintf("%X", uid) != "000009" {
		t.Errorf("café: uid %X, %v; want the TSD's 000009", uid, err)
	}
	if n, err := u.Name(ctx, KindMetric, uid); err != nil || n != "café" {
		t.Errorf("name of 000009 = %q, %v", n, err)
	}
	// A new name goes in as Latin-1.
	uid, err = u.GetOrCreate(ctx, KindTagV, []byte("genève"))
	if err != nil {
		t.Fatal(err)
	}
	row, err := st.Get(ctx, "tsdb-uid", uid, "name")
	if err != nil || len(row.Cells) != 1 || string(row.Cells[0].Value) != "gen\xe8ve" {
		t.Errorf("reverse row of genève: %+v, %v; want Latin-1 bytes", row.Cells, err)
	}
	// Both forms present: a reader gets both UIDs, the stored form first.
	put("z\xfcrich", "id", "tagv", "\x00\x00\x08")
	put("\x00\x00\x08", "name", "tagv", "z\xfcrich")
	ids, err := u.IDs(ctx, KindTagV, "zürich")
	if err != nil || fmt.Sprintf("%X", ids) != "[000008 000007]" {
		t.Errorf("IDs(zürich) = %X, %v", ids, err)
	}
}
