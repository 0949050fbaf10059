package mapping

import (
	"context"
	"fmt"
	"testing"
	"unicode/utf8"

	"github.com/promhbase/promhbase/store"
)

func TestStoredName(t *testing.T) {
	for _, tc := range []struct {
		name, stored, legacy string // stored and legacy in hex
	}{
		{"cpu_usage", "6370755F7573616765", ""},
		{"café", "636166E9", "636166C3A9"},           // Latin-1, as OpenTSDB writes it
		{"zürich", "7AFC72696368", "7AC3BC72696368"}, // Latin-1
		{"Ã©", "C383C2A9", ""},                       // Latin-1 bytes C3 A9 would read as "é": UTF-8
		{"温度", "E6B8A9E5BAA6", ""},                   // beyond Latin-1: UTF-8
		{"a\u00A0b", "61A062", "61C2A062"},           // no-break space
		{"é温", "C3A9E6B8A9", ""},                     // mixed: UTF-8
		{"", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stored, legacy := storedName(tc.name)
			if got := fmt.Sprintf("%X", stored); got != tc.stored {
				t.Errorf("stored %s, want %s", got, tc.stored)
			}
			if got := fmt.Sprintf("%X", legacy); got != tc.legacy {
				t.Errorf("legacy %s, want %s", got, tc.legacy)
			}
			if back := nameFromStored([]byte(stored)); back != tc.name {
				t.Errorf("read back %q, want %q", back, tc.name)
			}
			if legacy != "" && nameFromStored([]byte(legacy)) != tc.name {
				t.Errorf("legacy form reads %q", nameFromStored([]byte(legacy)))
			}
		})
	}
	// Names OpenTSDB wrote in Latin-1 read as UTF-8.
	if got := nameFromStored([]byte("probe_tsd_caf\xe9")); got != "probe_tsd_café" || !utf8.ValidString(got) {
		t.Errorf("Latin-1 name reads %q", got)
	}
}

// FuzzStoredName: every UTF-8 name reads back unchanged from its stored
// form; every stored byte string reads as valid UTF-8.
func FuzzStoredName(f *testing.F) {
	for _, s := range []string{"café", "Ã©", "温度", "x", "\xff\xfe", "\u00ff\u0100"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			if got := nameFromStored([]byte(s)); !utf8.ValidString(got) {
				t.Fatalf("stored %X reads as invalid UTF-8 %q", s, got)
			}
			return
		}
		stored, legacy := storedName(s)
		if back := nameFromStored([]byte(stored)); back != s {
			t.Fatalf("%q stored as %X reads back %q", s, stored, back)
		}
		if legacy != "" && legacy != s {
			t.Fatalf("%q: legacy form %X is not its UTF-8", s, legacy)
		}
	})
}

// TestLegacyNames: a name earlier versions stored as UTF-8 keeps its UID;
// a new non-ASCII Latin-1 name is stored in Latin-1; a name OpenTSDB
// stored in Latin-1 is found by its UTF-8 spelling and reads back as UTF-8.
func TestLegacyNames(t *testing.T) {
	st := openUIDStore(t)
	layout := DefaultLayout()
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

// TestLabellessSeries: a series with only a name gets the reserved tag
// __name__=<name>, which reading hides; a row written without it (as
// earlier versions did) reads the same.
func TestLabellessSeries(t *testing.T) {
	st := openUIDStore(t)
	layout := DefaultLayout()
	u := newTestUIDs(t, st, layout)
	m := NewMapper(u, layout, 0)
	ctx := context.Background()
	s, err := m.Resolve(ctx, []byte("k"), []Label{{Name: []byte("__name__"), Value: []byte("scalar_result")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Tags) != layout.PairLen() {
		t.Fatalf("tags %X: want one pair", s.Tags)
	}
	k, _ := u.Name(ctx, KindTagK, s.Tags[:layout.TagKWidth])
	v, _ := u.Name(ctx, KindTagV, s.Tags[layout.TagKWidth:])
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
