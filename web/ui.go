package web

import (
	"embed"
	"encoding/json"
	"html/template"
	"io/fs"
	"net/http"
	"runtime"
	"runtime/metrics"
	"time"
)

// The web UI: its pages, their scripts and styles, and uPlot (MIT,
// ui/vendor/uplot/LICENSE), embedded in the binary; docs/ui.md.
//
//go:embed ui
var uiFiles embed.FS

// UIPage is a page of the web UI: its path (Prometheus's where Prometheus
// has the page) and its title.
type UIPage struct {
	Path, Title string
}

// UIPages are the web UI's pages, in the order of its navigation bar.
func UIPages() []UIPage {
	return []UIPage{
		{"/graph", "Query"},
		{"/alerts", "Alerts"},
		{"/rules", "Rules"},
		{"/tsdb-status", "Cardinality"},
		{"/status", "Status"},
		{"/flags", "Flags"},
		{"/setup", "Setup"},
	}
}

// UIPath reports whether path is the web UI's (a page, its files or its
// info): such requests need no tenant, as the page picks one for its
// API requests.
func UIPath(path string) bool {
	for _, p := range UIPages() {
		if path == p.Path {
			return true
		}
	}
	return len(path) > len("/ui/") && path[:len("/ui/")] == "/ui/"
}

// uiInfo is what /ui/info.json answers: the landing page's Info and the
// process's runtime, read at the request.
type uiInfo struct {
	Info
	Flags map[string]string `json:"flags"`
	// Started is when the web layer was built (the process's start,
	// within its wiring); Uptime is seconds since.
	Started    time.Time `json:"started"`
	Uptime     float64   `json:"uptimeSeconds"`
	GoVersion  string    `json:"goVersion"`
	GOMAXPROCS int       `json:"gomaxprocs"`
	Goroutines uint64    `json:"goroutines"`
	// MemoryBytes is what the Go runtime holds of the OS; HeapBytes the
	// heap's live and unswept objects.
	MemoryBytes uint64 `json:"memoryBytes"`
	HeapBytes   uint64 `json:"heapBytes"`
	GCCycles    uint64 `json:"gcCycles"`
	Pprof       bool   `json:"pprof"`
}

// runtimeSamples are the runtime/metrics uiInfo reports, in its order.
func runtimeSamples() []metrics.Sample {
	return []metrics.Sample{
		{Name: "/sched/goroutines:goroutines"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/cycles/total:gc-cycles"},
	}
}

// ui serves the web UI.
type ui struct {
	info    Info
	flags   map[string]string
	pprof   bool
	started time.Time
	page    *template.Template
	files   http.Handler
}

// newUI returns the UI of info; flags are what its flags page lists.
func newUI(info Info, flags map[string]string, pprof bool) (*ui, error) {
	sub, err := fs.Sub(uiFiles, "ui")
	if err != nil {
		return nil, err
	}
	page, err := template.ParseFS(sub, "page.html")
	if err != nil {
		return nil, err
	}
	return &ui{info: info, flags: flags, pprof: pprof, started: time.Now(), page: page,
		files: http.StripPrefix("/ui/", http.FileServerFS(sub))}, nil
}

// register adds the UI's routes to mux: its pages, /ui/ (its files and
// info.json) and / (a redirect to the query page).
func (u *ui) register(mux *http.ServeMux) {
	pages := UIPages()
	for _, p := range pages {
		if p.Path == "/setup" {
			continue // the landing page's template (web.go)
		}
		mux.HandleFunc("GET "+p.Path, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Cache-Control", "no-cache")
			_ = u.page.Execute(w, struct {
				Page    string
				Title   string
				Pages   []UIPage
				Version string
			}{p.Path[1:], p.Title, pages, u.info.Version})
		})
	}
	mux.HandleFunc("GET /ui/info.json", u.serveInfo)
	mux.HandleFunc("GET /ui/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		u.files.ServeHTTP(w, r)
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		// Relative, so that it holds below any prefix a proxy or
		// --web.route-prefix puts in front.
		w.Header().Set("Location", "graph")
		w.WriteHeader(http.StatusFound)
	})
}

// serveInfo answers /ui/info.json.
func (u *ui) serveInfo(w http.ResponseWriter, _ *http.Request) {
	s := runtimeSamples()
	metrics.Read(s)
	value := func(i int) uint64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return s[i].Value.Uint64()
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(uiInfo{
		Info: u.info, Flags: u.flags, Started: u.started, Uptime: time.Since(u.started).Seconds(),
		GoVersion: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		Goroutines: value(0), MemoryBytes: value(1), HeapBytes: value(2), GCCycles: value(3), Pprof: u.pprof,
	})
}
