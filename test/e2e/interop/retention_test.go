package interop

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/server"
	"github.com/promhbase/promhbase/server/tenant"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/poll"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testserver"
)

// TestOpenTSDBReadsTenantRetention: a tenant whose runtime overrides keep
// 6h (retention_period) and {env="dev"} 2h (retention_stream), with no
// global retention, keeps exactly the whole hours each series should
// after its retention cycles: a dev series from the hour of now-2h on,
// the others their samples of the last 6h (older ones are dropped at
// their write already, the writes' horizon being the longest time kept);
// another tenant, without overrides, keeps everything; a
// real TSD reading the tenant's namespace answers the same points.
func TestOpenTSDBReadsTenantRetention(t *testing.T) {
	t.Parallel()
	layout := mapping.DefaultLayout()
	st := testbackend.NewHBaseStore(t)
	tables, sfx := tenantTables(t, st)
	idA, idB := "ret-a-"+sfx, "ret-b-"+sfx
	runtime := filepath.Join(t.TempDir(), "runtime.yaml")
	body := fmt.Sprintf("overrides:\n  %q:\n    retention_period: 6h\n    retention_stream:\n      - selector: '{env=\"dev\"}'\n        priority: 1\n        period: 2h\n", idA)
	if err := os.WriteFile(runtime, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := testserver.Start(t, st, tables, layout, testserver.Options{
		Tenants:   &testserver.TenantOptions{AutoCreate: true, RuntimeFile: runtime},
		Retention: &server.RetentionConfig{Interval: 200 * time.Millisecond}})
	phA, phB := tenantPromhbase(t, srv.URL, idA), tenantPromhbase(t, srv.URL, idB)

	// A sample every 20 minutes over the last 10 hours, per series.
	now := time.Now()
	first := now.Add(-10 * time.Hour).Truncate(time.Hour).UnixMilli()
	series := func(env string) (prompb.TimeSeries, []point) {
		ts := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "ret_metric"}, {Name: "env", Value: env}}}
		var pts []point
		for at := first; at <= now.UnixMilli(); at += 20 * 60_000 {
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: at, Value: float64(at / 1000 % 977)})
			pts = append(pts, point{at, float64(at / 1000 % 977)})
		}
		return ts, pts
	}
	dev, devAll := series("dev")
	prod, prodAll := series("prod")
	phA.send(t, []prompb.TimeSeries{dev, prod})
	phB.send(t, []prompb.TimeSeries{dev, prod})
	from := func(pts []point, keep time.Duration) []point { // the whole hours a stream keeps
		cut := now.Add(-keep).Truncate(time.Hour).UnixMilli()
		var out []point
		for _, p := range pts {
			if p.t >= cut {
				out = append(out, p)
			}
		}
		return out
	}
	// The others keep what their write kept: samples younger than 6h
	// (the writes' horizon is by the sample's time, not whole hours).
	var wantProd []point
	for _, p := range prodAll {
		if p.t >= now.Add(-6*time.Hour).UnixMilli() {
			wantProd = append(wantProd, p)
		}
	}
	wantDev := from(devAll, 2*time.Hour)
	const devSeries, prodSeries = `{__name__="ret_metric", env="dev"}`, `{__name__="ret_metric", env="prod"}`
	start, end := first-3600_000, now.UnixMilli()+3600_000
	poll.Until(t, time.Minute, 200*time.Millisecond, "the tenant's retention applied", func() (bool, string) {
		got := phA.readSeries(t, start, end, nameEqual("ret_metric"))
		return len(got[devSeries]) == len(wantDev) && len(got[prodSeries]) == len(wantProd), fmt.Sprintf("dev %d points, prod %d", len(got[devSeries]), len(got[prodSeries]))
	})
	got := phA.readSeries(t, start, end, nameEqual("ret_metric"))
	samePoints(t, "promhbase: the tenant's dev series", got[devSeries], wantDev)
	samePoints(t, "promhbase: the tenant's prod series", got[prodSeries], wantProd)
	gotB := phB.readSeries(t, start, end, nameEqual("ret_metric"))
	samePoints(t, "promhbase: the other tenant's dev series", gotB[devSeries], devAll)
	samePoints(t, "promhbase: the other tenant's prod series", gotB[prodSeries], prodAll)

	inA := func(table string) string { return store.NamespacedTable(tenant.Namespace(idA), table) }
	d := startTSD(t, testbackend.Tables{Data: inA(tables.Data), UID: inA(tables.UID), Meta: inA(tables.Meta)}, layout)
	samePoints(t, "OpenTSDB: the tenant's dev series", d.query(t, start, end, "ret_metric", map[string]string{"env": "dev"}), wantDev)
	samePoints(t, "OpenTSDB: the tenant's prod series", d.query(t, start, end, "ret_metric", map[string]string{"env": "prod"}), wantProd)
}
