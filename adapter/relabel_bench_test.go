package adapter

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/prometheus/prometheus/model/relabel"

	"github.com/promhbase/promhbase/ingest/relabelmemo"
)

// benchRelabelConfig is a 20-rule metric_relabel_configs of the kinds an
// operator writes: drops of debug metrics, label drops, renames, a
// hashmod shard, the port stripped from instance, a keep of the metrics
// sent. Every series of harnessLabels passes through all 20.
const benchRelabelConfig = `
- {source_labels: [__name__], regex: 'go_gc_.*', action: drop}
- {source_labels: [__name__], regex: 'debug_.*', action: drop}
- {source_labels: [__name__], regex: '.*_bucket_tmp', action: drop}
- {source_labels: [__name__], regex: 'scrape_.*', action: drop}
- {source_labels: [job, __name__], regex: 'test;.*', action: drop}
- {regex: request_id, action: labeldrop}
- {regex: trace_id, action: labeldrop}
- {regex: pod_template_hash, action: labeldrop}
- {regex: 'tmp_.*', action: labeldrop}
- {source_labels: [env], regex: production, target_label: env, replacement: prod}
- {source_labels: [datacenter], target_label: dc}
- {regex: datacenter, action: labeldrop}
- {source_labels: [instance], regex: '(.*):\d+', target_label: instance}
- {source_labels: [instance], modulus: 8, target_label: shard, action: hashmod}
- {source_labels: [mode], regex: iowait, target_label: mode, replacement: io}
- {source_labels: [device], regex: 'sd(.)', target_label: disk, replacement: 'disk_$1'}
- {regex: device, action: labeldrop}
- {source_labels: [rack], regex: 'r0[0-4]', target_label: zone, replacement: a}
- {source_labels: [rack], regex: 'r[1-3].', target_label: zone, replacement: b}
- {source_labels: [__name__], regex: 'load_.*|up', action: keep}
`

// relabelConfigs parses benchRelabelConfig.
func relabelConfigs(b *testing.B) []*relabel.Config {
	b.Helper()
	cfgs, err := relabelmemo.ParseConfigs([]byte(benchRelabelConfig))
	if err != nil {
		b.Fatal(err)
	}
	if len(cfgs) != 20 {
		b.Fatalf("%d rules, want 20", len(cfgs))
	}
	return cfgs
}

// BenchmarkRelabel: the write path with metric_relabel_configs of 0 and
// 20 rules (Options' metric relabeling, applied to the series missing
// from the series cache): requests of 2000 new series, as
// BenchmarkFirstContact's v1 (relabeling runs for each), and the same
// requests again once cached (it does not run). Reports ns per series.
func BenchmarkRelabel(b *testing.B) {
	for _, rules := range []int{0, 20} {
		b.Run(fmt.Sprintf("new/rules=%d", rules), func(b *testing.B) {
			h := firstContactHandler(b)
			if rules > 0 {
				h.w.SetRelabel(relabelConfigs(b))
			}
			next := 0
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				data, ct := firstContactBody(b, "v1", next)
				next += firstContactBatch
				b.StartTimer()
				if rec := postCT(h, ct, data); rec.Code != http.StatusNoContent {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(next), "ns/series")
		})
		b.Run(fmt.Sprintf("cached/rules=%d", rules), func(b *testing.B) {
			h := firstContactHandler(b)
			if rules > 0 {
				h.w.SetRelabel(relabelConfigs(b))
			}
			data, ct := firstContactBody(b, "v1", 0)
			if rec := postCT(h, ct, data); rec.Code != http.StatusNoContent {
				b.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			n := 0
			b.ReportAllocs()
			for b.Loop() {
				if rec := postCT(h, ct, data); rec.Code != http.StatusNoContent {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
				n += firstContactBatch
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/series")
		})
	}
}
