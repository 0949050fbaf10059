package promapi

import (
	"net/http"
	"net/url"

	"github.com/prometheus/prometheus/rules"
	v1 "github.com/prometheus/prometheus/web/api/v1"
)

// The ruler's endpoints, as Grafana reads them.
//
// /api/v1/rules, /api/v1/alerts and /api/v1/alertmanagers are Prometheus's
// own handlers (web/api/v1) over Options.Rules and Options.Alertmanagers;
// with the ruler off they answer empty lists, never 404: Grafana's
// Alerting pages and a Prometheus data source's rule list call
// /api/v1/rules (through Grafana's pkg/services/ngalert/api/lotex_prom.go,
// the query string kept) and show a 404 as an error.
//
// Grafana decides what a Prometheus data source is from
// /api/v1/status/buildinfo (public/app/features/alerting/unified/api/
// buildInfo.ts, discoverDataSourceFeatures): no answer (404) is Cortex;
// an answer without "features" is Prometheus (no ruler API); an answer
// with "features" is Mimir, whose ruler configuration API
// (/config/v1/rules, Grafana's ruler proxy with subtype=mimir) Grafana
// edits rules through when features.ruler_config_api is "true". Grafana
// releases before that version also asked /api/v1/status/flags after a
// buildinfo answer, and took any 2xx answer there for a Thanos (whatever
// its keys), before looking at "features"; Grafana Mimir serves flags
// only at its root, not below its Prometheus prefix, so a data source
// pointed at Mimir's /prometheus gets 404 there. So, with the ruler's
// configuration API on (Options.RulerConfigAPI), buildinfo answers as
// Grafana Mimir's (pkg/util/version/info_handler.go, features as
// pkg/mimir/modules.go sets them) and status/flags answers 404, as
// Mimir's at /prometheus/api/v1/status/flags; with it off, both answer
// as Prometheus's.

// mimirApplication is the "application" of Grafana Mimir's buildinfo;
// Grafana's Alerting before its current version compares it, exactly, to
// tell Mimir from an unknown flavour.
const mimirApplication = "Grafana Mimir"

// mimirBuildInfo is the "data" of Grafana Mimir's
// /api/v1/status/buildinfo, its fields in Mimir's order.
type mimirBuildInfo struct {
	Application string        `json:"application"`
	Version     string        `json:"version"`
	Revision    string        `json:"revision"`
	Branch      string        `json:"branch"`
	GoVersion   string        `json:"goVersion"`
	Features    mimirFeatures `json:"features"`
}

// mimirFeatures are the features Mimir's buildinfo announces, each
// "true" or "false" (strings, as Mimir writes them and Grafana compares
// them).
type mimirFeatures struct {
	// RulerConfigAPI: the ruler's configuration API (/config/v1/rules).
	RulerConfigAPI string `json:"ruler_config_api"`
	// AlertmanagerConfigAPI: Mimir's multi-tenant Alertmanager's
	// configuration API; promhbase has no Alertmanager of its own.
	AlertmanagerConfigAPI string `json:"alertmanager_config_api"`
	// QuerySharding: the query-frontend's sharded queries.
	QuerySharding string `json:"query_sharding"`
	// FederatedRules: rule groups that query several tenants
	// (source_tenants).
	FederatedRules string `json:"federated_rules"`
}

// serveMimirBuildInfo answers /api/v1/status/buildinfo as Grafana Mimir
// does with its ruler's configuration API on.
func (a *API) serveMimirBuildInfo(w http.ResponseWriter, _ *http.Request) {
	serveMimirBuildInfo(w, a.opts.Build)
}

// BuildInfo returns a handler answering /api/v1/status/buildinfo alone
// (any other path: 404), as an API of New answers it, Grafana Mimir's
// answer when rulerConfigAPI (Options.RulerConfigAPI): for servers with
// tenants, which answer it without one, as Mimir does (Grafana asks it
// before it knows which tenant to name).
func BuildInfo(build v1.PrometheusVersion, rulerConfigAPI bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path != "/api/v1/status/buildinfo":
			writeError(w, http.StatusNotFound, "not_found", "promhbase does not serve "+r.URL.Path+" without a tenant")
		case r.Method != http.MethodGet && r.Method != http.MethodHead:
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, "bad_data", "method "+r.Method+" not allowed")
		case rulerConfigAPI:
			serveMimirBuildInfo(w, build)
		default:
			writeJSON(w, http.StatusOK, struct {
				Status string               `json:"status"`
				Data   v1.PrometheusVersion `json:"data"`
			}{"success", build})
		}
	})
}

func serveMimirBuildInfo(w http.ResponseWriter, build v1.PrometheusVersion) {
	writeJSON(w, http.StatusOK, struct {
		Status string         `json:"status"`
		Data   mimirBuildInfo `json:"data"`
	}{"success", mimirBuildInfo{
		Application: mimirApplication,
		Version:     build.Version,
		Revision:    build.Revision,
		Branch:      build.Branch,
		GoVersion:   build.GoVersion,
		Features: mimirFeatures{
			RulerConfigAPI:        "true",
			AlertmanagerConfigAPI: "false",
			QuerySharding:         "false",
			FederatedRules:        "false",
		},
	}})
}

// serveNoFlags answers /api/v1/status/flags with the ruler's
// configuration API on: 404, as Grafana Mimir's Prometheus prefix
// answers it, so that Grafana's Alerting does not take promhbase for a
// Thanos (see above).
func serveNoFlags(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotFound, "not_found", "promhbase does not serve "+r.URL.Path+" with the ruler on, as Grafana Mimir below /prometheus: Grafana would take promhbase for a Thanos")
}

// noRules is the rules retriever of a server whose ruler is off: no rule
// groups, no alerting rules.
type noRules struct{}

func (noRules) RuleGroups() []*rules.Group { return nil }

func (noRules) AlertingRules() []*rules.AlertingRule { return nil }

// noAlertmanagers is the Alertmanager retriever of a server that sends
// no alerts: no Alertmanager, active or dropped.
type noAlertmanagers struct{}

func (noAlertmanagers) Alertmanagers() []*url.URL { return nil }

func (noAlertmanagers) DroppedAlertmanagers() []*url.URL { return nil }
