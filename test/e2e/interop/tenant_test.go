package interop

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/server/tenant"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/hbase"
	"github.com/promhbase/promhbase/test/testkit/promremote"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testserver"
)

// TestOpenTSDBReadsTenant proves that a tenant's namespace is an ordinary
// OpenTSDB schema: a multi-tenant promhbase writes two tenants' data (the
// same metric and labels with different values, and a metric of each
// one's own); a real TSD whose data, UID and meta tables are tenant A's
// namespaced tables (ns:table) answers /api/query, /api/suggest and
// /api/search/lookup with A's data exactly and nothing of B's. What the
// TSD writes there (a put, its read-path compaction) promhbase reads as
// A and not as B; OpenTSDB's fsck and uid fsck find A's tables clean;
// the tables of the default namespace stay empty.
func TestOpenTSDBReadsTenant(t *testing.T) {
	t.Parallel()
	layout := mapping.DefaultLayout() // tenants' tables are unsalted (testbackend.ProvisionTenant)
	st := testbackend.NewHBaseStore(t)
	tables, sfx := tenantTables(t, st)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	srv := testserver.Start(t, st, tables, layout, testserver.Options{Tenants: &testserver.TenantOptions{AutoCreate: true}})

	// IDs with bytes the namespace mapping escapes.
	idA, idB := "interop-a."+sfx, "interop_b!"+sfx
	nsA, nsB := tenant.Namespace(idA), tenant.Namespace(idB)
	inA := func(table string) string { return store.NamespacedTable(nsA, table) }
	inB := func(table string) string { return store.NamespacedTable(nsB, table) }
	phA, phB := tenantPromhbase(t, srv.URL, idA), tenantPromhbase(t, srv.URL, idB)

	h0 := time.Now().Add(-4 * time.Hour).Truncate(time.Hour).UnixMilli()
	const hour = int64(3600_000)
	shared := func(v func(i int) float64) (prompb.TimeSeries, []point) {
		ts := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "tenant_shared"}, {Name: "host", Value: "h1"}, {Name: "job", Value: "j"}}}
		var pts []point
		for i := range 24 {
			p := point{h0 + int64(i)*5*60_000 + int64(i*13), v(i)}
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: p.t, Value: p.v})
			pts = append(pts, p)
		}
		return ts, pts
	}
	own := func(name, label string, v float64) prompb.TimeSeries {
		return prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: name}, {Name: "job", Value: "j"}, {Name: label, Value: "x"}},
			Samples: []prompb.Sample{{Timestamp: h0 + 60_000, Value: v}}}
	}
	sharedA, wantA := shared(func(i int) float64 { return float64(i)*1.5 - 4 })
	sharedB, wantB := shared(func(i int) float64 { return 1000 + float64(i)*0.1 })
	// B's own metric first, so that the two tenants' UIDs differ too.
	phB.send(t, []prompb.TimeSeries{own("tenant_only_b", "label_only_b", 77)})
	phB.send(t, []prompb.TimeSeries{sharedB})
	phA.send(t, []prompb.TimeSeries{sharedA, own("tenant_only_a", "label_only_a", 5)})
	// promhbase itself keeps them apart.
	samePoints(t, "promhbase as B", phB.readSeries(t, h0-hour, h0+4*hour, nameEqual("tenant_shared"))[`{__name__="tenant_shared", host="h1", job="j"}`], wantB)

	d := startTSD(t, testbackend.Tables{Data: inA(tables.Data), UID: inA(tables.UID), Meta: inA(tables.Meta)}, layout)

	// /api/query: A's series, exactly, and only it.
	samePoints(t, "OpenTSDB reading A's namespace", d.query(t, h0-hour, h0+4*hour, "tenant_shared", map[string]string{"host": "h1", "job": "j"}), wantA)
	if res := d.queryFull(t, h0-hour, h0+4*hour, "tenant_shared", nil); len(res) != 1 || res[0].Tags["host"] != "h1" || len(res[0].DPS) != len(wantA) {
		t.Errorf("OpenTSDB tenant_shared without tags: %+v, want A's one series of %d points", res, len(wantA))
	}
	samePoints(t, "OpenTSDB reading A's own metric", d.query(t, h0-hour, h0+4*hour, "tenant_only_a", map[string]string{"label_only_a": "x"}), []point{{h0 + 60_000, 5}})
	// B's metric is no name the TSD knows.
	code, raw := d.post(t, "/api/query", fmt.Sprintf(`{"start":%d,"end":%d,"queries":[{"aggregator":"none","metric":"tenant_only_b","tags":{}}]}`, h0-hour, h0+4*hour))
	if code != http.StatusBadRequest || !strings.Contains(raw, "No such name") {
		t.Errorf("OpenTSDB query of B's metric: %d %s, want 400 No such name", code, tail(raw, 5))
	}

	// /api/suggest lists A's UIDs only.
	for _, tc := range []struct {
		typ  string
		want []string
	}{
		{"metrics", []string{"tenant_only_a", "tenant_shared"}},
		{"tagk", []string{"host", "job", "label_only_a"}},
		{"tagv", []string{"h1", "j", "x"}},
	} {
		var got []string
		if code, raw, err := getJSON(d.url+"/api/suggest?max=1000&type="+tc.typ, &got); err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("OpenTSDB suggest %s: %d %v %s, want %q", tc.typ, code, err, raw, tc.want)
		}
	}

	// /api/search/lookup scans A's meta table: A's series only.
	d.checkLookup(t, "tenant_shared", 1)
	d.checkLookup(t, "tenant_only_a", 1)
	var lk struct {
		Results []struct {
			Metric string            `json:"metric"`
			Tags   map[string]string `json:"tags"`
		} `json:"results"`
	}
	if code, raw, err := getJSON(d.url+"/api/search/lookup?limit=1000&m="+url.QueryEscape("{job=j}"), &lk); err != nil {
		t.Errorf("OpenTSDB lookup {job=j}: %d %v %s", code, err, raw)
	} else {
		var ms []string
		for _, r := range lk.Results {
			ms = append(ms, r.Metric)
		}
		slices.Sort(ms)
		if !slices.Equal(ms, []string{"tenant_only_a", "tenant_shared"}) {
			t.Errorf("OpenTSDB lookup {job=j}: metrics %q, want A's two: %s", ms, raw)
		}
	}
	if code, raw := d.get(t, "/api/search/lookup?m=tenant_only_b"); code != http.StatusNotFound || !strings.Contains(raw, "No such name") {
		t.Errorf("OpenTSDB lookup of B's metric: %d %.300s, want 404 No such name", code, raw)
	}

	// The TSD writes into A's namespace: promhbase reads it as A, not as B.
	s0 := h0 / 1000
	d.putSync(t, fmt.Sprintf(`[{"metric":"otsdb_put","timestamp":%d,"value":42,"tags":{"host":"tsd"}},
	  {"metric":"otsdb_put","timestamp":%d,"value":2.5,"tags":{"host":"tsd"}}]`, s0+10, (s0+3600)*1000+250))
	wantPut := []point{{(s0 + 10) * 1000, 42}, {(s0+3600)*1000 + 250, 2.5}}
	const putSeries = `{__name__="otsdb_put", host="tsd"}`
	got := phA.readUntil(t, h0-hour, h0+4*hour, putSeries, len(wantPut), nameEqual("otsdb_put"))
	samePoints(t, "promhbase as A reading the TSD's put", got[putSeries], wantPut)
	if got := phB.readSeries(t, h0-hour, h0+4*hour, nameEqual("otsdb_put")); len(got) != 0 {
		t.Errorf("promhbase as B reads the TSD's put into A: %v", got)
	}
	if row, err := st.Get(ctx, inB(tables.UID), []byte("otsdb_put"), "id"); err != nil || len(row.Cells) != 0 {
		t.Errorf("B's UID table has the TSD's metric: %v %v", row.Cells, err)
	}

	// The TSD compacted A's rows it read; both still read A's values, B's
	// are untouched.
	waitCompacted(t, st, inA(tables.Data), layout)
	samePoints(t, "OpenTSDB reading A's compacted rows", d.query(t, h0-hour, h0+4*hour, "tenant_shared", map[string]string{"host": "h1", "job": "j"}), wantA)
	samePoints(t, "promhbase as A after OpenTSDB's compaction", phA.readSeries(t, h0-hour, h0+4*hour, nameEqual("tenant_shared"))[`{__name__="tenant_shared", host="h1", job="j"}`], wantA)
	samePoints(t, "promhbase as B after OpenTSDB's compaction", phB.readSeries(t, h0-hour, h0+4*hour, nameEqual("tenant_shared"))[`{__name__="tenant_shared", host="h1", job="j"}`], wantB)

	// Nothing went to the default namespace's tables.
	for _, tb := range []string{tables.Data, tables.UID, tables.Meta, tables.Index, tables.Exemplar} {
		if n := countRows(t, st, tb); n != 0 {
			t.Errorf("default namespace table %s has %d rows", tb, n)
		}
	}

	// OpenTSDB's fsck and uid fsck, and promhbase's uid fsck, over A's
	// tables.
	fsckAll(t, d, st, inA(tables.Data))
	out, err := d.script("uid-fsck")
	if err != nil || !strings.Contains(out, "No errors found") {
		t.Errorf("OpenTSDB uid fsck: %v\n%s", err, tail(out, 40))
	}
	rep, err := uid.UIDFsck(ctx, st, inA(tables.UID), layout)
	if err != nil || len(rep.Errors) > 0 {
		t.Errorf("promhbase uid fsck: %v %v", err, rep.Errors)
	}
}

// tenantPromhbase returns remote write and read clients of a multi-tenant
// promhbase that send as tenant id (X-Scope-OrgID).
func tenantPromhbase(t *testing.T, base, id string) *promhbase {
	t.Helper()
	o := promremote.Options{Headers: map[string]string{tenant.Header: id}}
	wc, rc := promremote.Clients(t, "interop-"+id, base, o)
	return &promhbase{url: base, write: wc, read: rc}
}

// get GETs path of the TSD and returns the status and answer.
func (d *tsd) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(d.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// countRows counts the rows of a table.
func countRows(t *testing.T, st store.Store, table string) int {
	t.Helper()
	sc := st.Scan(context.Background(), store.ScanRequest{Table: table})
	defer sc.Close()
	n := 0
	for sc.Next() {
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scan %s: %v", table, err)
	}
	return n
}

// tenantTables creates the default namespace's tables of a multi-tenant
// server on st, names of their own (dropped at the test's end), and
// returns them with their suffix; every tenant's tables are the same
// names in its namespace.
func tenantTables(t *testing.T, st *hbase.Store) (testbackend.Tables, string) {
	t.Helper()
	sfx := fmt.Sprintf("%d_%d", os.Getpid(), time.Now().UnixNano()%1e9)
	tables := testbackend.Tables{Data: "tsdb_tenant_" + sfx, UID: "tsdb-uid_tenant_" + sfx, Exemplar: "tsdb-exemplar_tenant_" + sfx,
		Meta: "tsdb-meta_tenant_" + sfx, Index: "tsdb-index_tenant_" + sfx}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := st.CreateTables(ctx, hbase.TablesConfig{DataTable: tables.Data, UIDTable: tables.UID, ExemplarTable: tables.Exemplar,
		MetaTable: tables.Meta, IndexTable: tables.Index}); err != nil {
		testbackend.HBaseMissing(t, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := st.DropTables(ctx, tables.Data, tables.UID, tables.Exemplar, tables.Meta, tables.Index); err != nil {
			t.Logf("drop tables: %v", err)
		}
	})
	return tables, sfx
}
