// Package web lays out promhbase's HTTP surface: the remote write and read
// endpoints, health, readiness and metrics (adapter's handler, or with
// tenants server.Tenants'), the Prometheus query API (promapi), the HA
// tracker's page, Mimir's ruler configuration API (ruler.ConfigAPI),
// the web UI (ui.go: the query page with its graph, alerts, rules, the
// cardinality explorer, status and flags; / redirects to it), the setup
// page at /setup and pprof; and it puts Retry-After on every 503 answer
// (RetryUnavailable).
package web

import (
	"html/template"
	"net/http"
	"net/http/pprof"
)

// Info is what the landing page shows.
// The web UI's status page shows it too (/ui/info.json).
type Info struct {
	Version       string `json:"version"`
	Backend       string `json:"backend"` // "embedded (dir)" or "hbase (quorum)"
	DataTable     string `json:"dataTable"`
	UIDTable      string `json:"uidTable"`
	ExemplarTable string `json:"exemplarTable"`
	// MetaTable and IndexTable are the series index's tables; empty when
	// the index is not kept (MetaTable also when it keeps no TSMeta rows).
	MetaTable   string `json:"metaTable"`
	IndexTable  string `json:"indexTable"`
	SaltWidth   int    `json:"saltWidth"`
	SaltBuckets int    `json:"saltBuckets"`
	UIDWidths   [3]int `json:"uidWidths"` // metric, tagk, tagv
	// ExternalURL is how clients reach promhbase, for the config
	// snippets; empty means http://<the request's host>.
	ExternalURL string `json:"externalURL"`
	// Tenants says that requests name their tenant (X-Scope-OrgID);
	// Tenant is the tenant of a page served for one.
	Tenants bool   `json:"tenants"`
	Tenant  string `json:"tenant"`
}

// Options are the handlers the layout routes to.
type Options struct {
	// Remote serves /api/v1/write, /api/v1/read, /metrics, /-/healthy,
	// /-/ready, OTLP metrics (adapter.OTLPPaths), and the migration
	// tools' /api/v1/import, /api/v1/import/prometheus, /api/v1/export
	// and /health.
	Remote http.Handler
	// API serves the rest of /api/v1/, and /prometheus/api/v1/ (the
	// prefix stripped), as Grafana Mimir's Prometheus prefix.
	API http.Handler
	// Pprof exposes /debug/pprof/.
	Pprof bool
	// HATracker serves /distributor/ha_tracker (nil: the HA tracker is
	// off).
	HATracker http.Handler
	// RulerConfig serves Mimir's ruler configuration API,
	// /config/v1/rules and /prometheus/config/v1/rules and the paths
	// below them, the paths whole (ruler.ConfigAPI); nil: the ruler is
	// off and they get 404, as from Mimir without its ruler.
	RulerConfig http.Handler
	// RuntimeConfig serves GET /runtime_config, the runtime configuration
	// in force, as Mimir's endpoint of this path (nil: 404, no runtime
	// configuration).
	RuntimeConfig http.Handler
	Info          Info
	// Flags are what the web UI's flags page lists (every flag of
	// serve with its value).
	Flags map[string]string
}

// New returns the handler of every promhbase endpoint; other paths get 404.
// Every 503 it answers carries Retry-After (RetryUnavailable).
func New(opts Options) http.Handler {
	mux := http.NewServeMux()
	u, err := newUI(opts.Info, opts.Flags, opts.Pprof)
	if err != nil {
		panic("web: the embedded UI: " + err.Error()) // its files are the binary's own
	}
	u.register(mux)
	for _, p := range []string{"/api/v1/write", "/api/v1/read", "/metrics", "/-/healthy", "/-/ready",
		"/api/v1/import", "/api/v1/import/prometheus", "/api/v1/import/chunks", "/api/v1/export", "/health",
		"/api/v1/otlp/v1/metrics", "/otlp/v1/metrics", "/opentelemetry/v1/metrics", "/api/put", "/api/suggest", "/api/query", "/api/search/lookup"} {
		mux.Handle(p, opts.Remote)
	}
	if opts.API != nil {
		mux.Handle("/api/v1/", opts.API)
		// Grafana Mimir's Prometheus prefix: a Grafana data source whose
		// URL is <promhbase>/prometheus, as for Mimir, reaches the same
		// API (and remote read, as Mimir's /prometheus/api/v1/read).
		// Mimir serves status/flags only at its root: below the prefix it
		// answers 404, and so does promhbase, so that Grafana's Alerting
		// (before its current version) does not take it for a Thanos.
		mux.Handle("/prometheus/api/v1/", http.StripPrefix("/prometheus", opts.API))
		mux.Handle("/prometheus/api/v1/read", http.StripPrefix("/prometheus", opts.Remote))
		mux.Handle("/prometheus/api/v1/status/flags", http.NotFoundHandler())
	}
	if opts.HATracker != nil {
		mux.Handle("GET /distributor/ha_tracker", opts.HATracker)
	}
	if opts.RuntimeConfig != nil {
		mux.Handle("GET /runtime_config", opts.RuntimeConfig)
	}
	if opts.RulerConfig != nil {
		for _, p := range []string{"/config/v1/rules", "/prometheus/config/v1/rules"} {
			mux.Handle(p, opts.RulerConfig)
			mux.Handle(p+"/", opts.RulerConfig)
		}
	}
	if opts.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	mux.HandleFunc("GET /setup", func(w http.ResponseWriter, r *http.Request) {
		base := opts.Info.ExternalURL
		if base == "" {
			base = "http://" + r.Host
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = landing.Execute(w, struct {
			Info
			Base  string
			Pprof bool
			Pages []UIPage
		}{opts.Info, base, opts.Pprof, UIPages()})
	})
	return RetryUnavailable(mux)
}

var landing = template.Must(template.New("landing").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>promhbase</title>
<style>body{font-family:sans-serif;max-width:52em;margin:2em auto;padding:0 1em}pre{background:#f4f4f4;padding:.8em;overflow:auto}td{padding:.1em 1em .1em 0}</style>
</head><body>
<p>{{range $i, $p := .Pages}}{{if ne $p.Path "/setup"}}{{if $i}} · {{end}}<a href="{{slice $p.Path 1}}">{{$p.Title}}</a>{{end}}{{end}}</p>
<h1>promhbase</h1>
<p>Prometheus remote storage on HBase, in OpenTSDB's table schema. Version {{.Version}}.</p>
<h2>Storage</h2>
<table>
<tr><td>backend</td><td>{{.Backend}}</td></tr>
{{if .Tenants}}<tr><td>tenants</td><td>on: each request names its tenant in X-Scope-OrgID (or by its login); its tables are those below in the tenant's namespace</td></tr>{{end}}
{{if .Tenant}}<tr><td>tenant</td><td>{{.Tenant}}</td></tr>{{end}}
<tr><td>data table</td><td>{{.DataTable}}</td></tr>
<tr><td>UID table</td><td>{{.UIDTable}}</td></tr>
<tr><td>exemplar table</td><td>{{if .ExemplarTable}}{{.ExemplarTable}}{{else}}(exemplars not kept){{end}}</td></tr>
<tr><td>series index tables</td><td>{{if .IndexTable}}{{if .MetaTable}}{{.MetaTable}} (OpenTSDB TSMeta), {{end}}{{.IndexTable}}{{else}}(no series index){{end}}</td></tr>
<tr><td>salt</td><td>{{if .SaltWidth}}{{.SaltWidth}} byte(s), {{.SaltBuckets}} buckets{{else}}none{{end}}</td></tr>
<tr><td>UID widths (metric, tagk, tagv)</td><td>{{index .UIDWidths 0}}, {{index .UIDWidths 1}}, {{index .UIDWidths 2}} bytes</td></tr>
</table>
<h2>Endpoints</h2>
<ul>
<li><code>POST /api/v1/write</code>: Prometheus remote write 1.0 and 2.0</li>
<li><code>POST /api/v1/read</code>: Prometheus remote read (samples and streamed chunks)</li>
<li><code>POST /api/v1/otlp/v1/metrics</code> (also <code>/otlp/v1/metrics</code>, <code>/opentelemetry/v1/metrics</code>): OpenTelemetry metrics over OTLP/HTTP, translated as Prometheus's receiver translates them</li>
<li><code>POST /api/put</code>: OpenTSDB's put, as a TSD 2.4.1 answers it (also on <code>--opentsdb.listen-address</code>, with telnet's put lines)</li>
<li><code>POST /api/query</code>, <code>GET /api/suggest</code>: OpenTSDB's queries and name suggestions, as a TSD 2.4.1 answers them</li>
<li><code>POST /api/v1/import</code> (JSON lines), <code>/api/v1/import/prometheus</code> (text), <code>/api/v1/export</code>: as VictoriaMetrics answers them, for vmctl and migrations</li>
<li>Prometheus query API: <a href="api/v1/query?query=up">/api/v1/query</a>, <code>/api/v1/query_range</code>, <a href="api/v1/series?match[]=up">/api/v1/series</a>, <a href="api/v1/labels">/api/v1/labels</a>, <a href="api/v1/label/__name__/values">/api/v1/label/&lt;name&gt;/values</a>, <a href="api/v1/metadata">/api/v1/metadata</a>, <code>/api/v1/query_exemplars</code>, <code>/api/v1/format_query</code>, <code>/api/v1/parse_query</code>, <a href="api/v1/status/buildinfo">/api/v1/status/buildinfo</a>, <a href="api/v1/status/flags">/api/v1/status/flags</a>, <a href="api/v1/rules">/api/v1/rules</a>, <a href="api/v1/alerts">/api/v1/alerts</a>; the same below <code>/prometheus</code> (a Grafana data source URL as Mimir's)</li>
<li><a href="metrics">/metrics</a>, <a href="-/healthy">/-/healthy</a>, <a href="-/ready">/-/ready</a>{{if .Pprof}}, <a href="debug/pprof/">/debug/pprof/</a>{{end}}</li>
</ul>
<h2>Prometheus</h2>
<pre>remote_write:
  - url: {{.Base}}/api/v1/write
    protobuf_message: io.prometheus.write.v2.Request  # or prometheus.WriteRequest (1.0)
    send_native_histograms: true
    send_exemplars: true
remote_read:
  - url: {{.Base}}/api/v1/read
    read_recent: true</pre>
<h2>Grafana</h2>
<p>Add a data source of type <em>Prometheus</em> whose URL is promhbase's:</p>
<pre>apiVersion: 1
datasources:
  - name: promhbase
    type: prometheus
    access: proxy
    url: {{.Base}}
    jsonData:
      httpMethod: POST</pre>
</body></html>
`))
