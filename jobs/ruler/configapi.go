package ruler

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"

	"github.com/promhbase/promhbase/store"
)

// DefaultMaxRuleGroupBytes is ConfigAPIOptions.MaxBodyBytes's default:
// the largest body of a POST, one rule group's YAML.
const DefaultMaxRuleGroupBytes = 1 << 20

// Limits are one tenant's limits on its rule groups, as Mimir's
// runtime-configuration names them; 0 means no limit.
type Limits struct {
	// MaxRuleGroupsPerTenant is ruler_max_rule_groups_per_tenant: the
	// most groups the tenant may have, every namespace together.
	MaxRuleGroupsPerTenant int
	// MaxRulesPerRuleGroup is ruler_max_rules_per_rule_group: the most
	// rules one group may hold.
	MaxRulesPerRuleGroup int
}

// StoreFunc returns the GroupStore and limits of a request's tenant. Its
// error is answered 503 when it wraps store.ErrUnavailable, 500
// otherwise.
type StoreFunc func(r *http.Request) (GroupStore, Limits, error)

// ConfigAPIOptions configure a ConfigAPI.
type ConfigAPIOptions struct {
	// MaxBodyBytes bounds a POST's body; a larger one is refused (413)
	// before it is decoded. 0: DefaultMaxRuleGroupBytes.
	MaxBodyBytes int64
	// Parser parses the rules' expressions; nil: PromQL's parser with
	// the duration expressions the query API takes.
	Parser parser.Parser
	// NameValidation is how record names and label names are checked;
	// the zero value: model.UTF8Validation, as Prometheus 3.
	NameValidation model.ValidationScheme
	// Logger logs the stores' failures; nil discards.
	Logger *slog.Logger
}

// ConfigAPI serves Mimir's ruler configuration API over the GroupStore
// of each request's tenant, under /config/v1/rules and under
// /prometheus/config/v1/rules (Grafana's Mimir data source URL ends in
// /prometheus); path segments are URL-decoded, so a name may hold any
// byte but 0x00 (%2F for a slash). Answers, as Grafana Mimir 2.x answers
// them (pkg/ruler/api.go):
//
//	GET    .../rules              200 YAML namespace -> [group] ({} when none)
//	GET    .../rules/{ns}         200 YAML {ns: [group]} ({} when none)
//	GET    .../rules/{ns}/{group} 200 the group's YAML; 404 "group does not exist"
//	POST   .../rules/{ns}         202 {"status":"success",...}; 400 text naming the problem
//	DELETE .../rules/{ns}/{group} 202; 404 "group does not exist"
//	DELETE .../rules/{ns}         202; 404 "group namespace does not exist"
//
// A POST's body is one rule group in Prometheus's rule-file format, YAML
// or JSON (YAML's subset); it is checked whole (rulefmt's checks: rule
// names, PromQL expressions, labels, annotation templates; the names;
// the tenant's Limits) before anything is stored. Other methods get 405,
// other paths 404. Its methods are safe for concurrent use.
type ConfigAPI struct {
	stores StoreFunc
	opts   ConfigAPIOptions
}

// NewConfigAPI returns the handler of the configuration API over stores.
func NewConfigAPI(stores StoreFunc, opts ConfigAPIOptions) *ConfigAPI {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxRuleGroupBytes
	}
	if opts.Parser == nil {
		opts.Parser = parser.NewParser(parser.Options{ExperimentalDurationExpr: true})
	}
	if opts.NameValidation == model.UnsetValidation {
		opts.NameValidation = model.UTF8Validation
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &ConfigAPI{stores: stores, opts: opts}
}

// The paths the API answers under; the segments after them name the
// namespace and the group.
const (
	configPath       = "/config/v1/rules"
	prometheusPrefix = "/prometheus"
)

// The texts of Mimir's answers (pkg/ruler/api.go, pkg/ruler/rulestore):
// Grafana's rule editor reads a 404 whose text holds errGroupNotFound or
// "no rule groups found" as "none", any other 404 as "no ruler here".
const (
	errGroupNotFound          = "group does not exist"
	errGroupNamespaceNotFound = "group namespace does not exist"
	errBadRuleGroup           = "unable to decode rule group"
	errMaxRuleGroups          = "per-user rule groups limit (limit: %d actual: %d) exceeded"
	errMaxRulesPerRuleGroup   = "per-user rules per rule group limit (limit: %d actual: %d) exceeded"
)

// response is the JSON body of Mimir's ruler API answers (Prometheus's
// API envelope).
type response struct {
	Status    string `json:"status"`
	Data      any    `json:"data"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
}

// ServeHTTP routes a request of the configuration API.
func (a *ConfigAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	segs, ok := splitPath(r.URL.EscapedPath())
	if !ok {
		http.NotFound(w, r)
		return
	}
	names := make([]string, len(segs))
	for i, s := range segs {
		n, err := url.PathUnescape(s)
		if err == nil {
			err = CheckName([]string{"namespace", "group name"}[i], n)
		}
		if err != nil {
			respondError(w, http.StatusBadRequest, "bad_data", err.Error())
			return
		}
		names[i] = n
	}
	var allow []string
	switch len(names) {
	case 0:
		allow = []string{http.MethodGet}
	case 1:
		allow = []string{http.MethodGet, http.MethodPost, http.MethodDelete}
	default:
		allow = []string{http.MethodGet, http.MethodDelete}
	}
	if !slices.Contains(allow, r.Method) {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
		return
	}
	gs, lim, err := a.stores(r)
	if err != nil {
		a.storeFailed(w, r, err)
		return
	}
	switch {
	case r.Method == http.MethodGet && len(names) < 2:
		a.list(w, r, gs, names)
	case r.Method == http.MethodGet:
		a.get(w, r, gs, names[0], names[1])
	case r.Method == http.MethodPost:
		a.create(w, r, gs, lim, names[0])
	case len(names) == 2:
		a.deleted(w, r, gs.DeleteGroup(r.Context(), names[0], names[1]), errGroupNotFound)
	default:
		a.deleted(w, r, gs.DeleteNamespace(r.Context(), names[0]), errGroupNamespaceNotFound)
	}
}

// splitPath returns the escaped segments after .../config/v1/rules in p
// (none, the namespace, or the namespace and the group), and false for a
// path the API does not answer (an empty segment, more than two).
func splitPath(p string) ([]string, bool) {
	p = strings.TrimPrefix(p, prometheusPrefix)
	rest, ok := strings.CutPrefix(p, configPath)
	if !ok {
		return nil, false
	}
	if rest == "" {
		return nil, true
	}
	if rest[0] != '/' {
		return nil, false // "/config/v1/rulesX"
	}
	segs := strings.Split(rest[1:], "/")
	if len(segs) > 2 || slices.Contains(segs, "") {
		return nil, false
	}
	return segs, true
}

// list answers the groups of every namespace, or of names[0].
func (a *ConfigAPI) list(w http.ResponseWriter, r *http.Request, gs GroupStore, names []string) {
	all, err := gs.ListGroups(r.Context())
	if err != nil {
		a.storeFailed(w, r, err)
		return
	}
	if len(names) == 1 {
		groups, ok := all[names[0]]
		all = map[string][]rulefmt.RuleGroup{}
		if ok {
			all[names[0]] = groups
		}
	}
	// Mimir answers 200 and an empty map for no groups (since 2.0,
	// grafana/mimir#456), for a namespace too.
	respondYAML(w, all)
}

// get answers one group.
func (a *ConfigAPI) get(w http.ResponseWriter, r *http.Request, gs GroupStore, ns, group string) {
	g, err := gs.GetGroup(r.Context(), ns, group)
	if errors.Is(err, ErrGroupNotFound) {
		http.Error(w, errGroupNotFound, http.StatusNotFound)
		return
	}
	if err != nil {
		a.storeFailed(w, r, err)
		return
	}
	respondYAML(w, &g)
}

// deleted answers a delete that err ended: 404 with notFound when
// nothing was stored, 202 once it is done.
func (a *ConfigAPI) deleted(w http.ResponseWriter, r *http.Request, err error, notFound string) {
	switch {
	case errors.Is(err, ErrGroupNotFound):
		http.Error(w, notFound, http.StatusNotFound)
	case err != nil:
		a.storeFailed(w, r, err)
	default:
		respondAccepted(w)
	}
}

// create checks the group of the body and stores it under ns.
func (a *ConfigAPI) create(w http.ResponseWriter, r *http.Request, gs GroupStore, lim Limits, ns string) {
	body, err := io.ReadAll(io.LimitReader(r.Body, a.opts.MaxBodyBytes+1))
	if err != nil {
		http.Error(w, fmt.Sprintf("read the rule group: %v", err), http.StatusBadRequest)
		return
	}
	if int64(len(body)) > a.opts.MaxBodyBytes {
		// 400, not 413: the body is a rule group that can never be
		// stored, as every other bad group (Mimir sets no limit).
		http.Error(w, fmt.Sprintf("invalid rules configuration: rule group body larger than %d bytes", a.opts.MaxBodyBytes), http.StatusBadRequest)
		return
	}
	g, errs := a.parseGroup(body)
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		http.Error(w, strings.Join(msgs, ", "), http.StatusBadRequest)
		return
	}
	if n := lim.MaxRulesPerRuleGroup; n > 0 && len(g.Rules) > n {
		http.Error(w, fmt.Sprintf(errMaxRulesPerRuleGroup, n, len(g.Rules)), http.StatusBadRequest)
		return
	}
	if n := lim.MaxRuleGroupsPerTenant; n > 0 {
		all, err := gs.ListGroups(r.Context())
		if err != nil {
			a.storeFailed(w, r, err)
			return
		}
		count := 1 // the group posted, unless it replaces one
		for gns, groups := range all {
			for _, og := range groups {
				if gns != ns || og.Name != g.Name {
					count++
				}
			}
		}
		if count > n {
			http.Error(w, fmt.Sprintf(errMaxRuleGroups, n, count), http.StatusBadRequest)
			return
		}
	}
	if err := gs.SetGroup(r.Context(), ns, g); err != nil {
		a.storeFailed(w, r, err)
		return
	}
	respondAccepted(w)
}

// parseGroup decodes and checks a POST's body: one rule group, YAML (or
// JSON). It returns every problem found, as Mimir's ValidateRuleGroup
// and Prometheus's rulefmt find them.
func (a *ConfigAPI) parseGroup(body []byte) (rulefmt.RuleGroup, []error) {
	var g rulefmt.RuleGroup
	if err := yaml.Unmarshal(body, &g); err != nil {
		return g, []error{fmt.Errorf("%s: %w", errBadRuleGroup, err)}
	}
	// The same body as nodes, for the lines and columns of rulefmt's
	// errors: it decoded above, so it decodes here.
	var node rulefmt.RuleGroupNode
	if err := yaml.Unmarshal(body, &node); err != nil || len(node.Rules) != len(g.Rules) {
		return g, []error{fmt.Errorf("%s: %w", errBadRuleGroup, err)}
	}
	if g.Name == "" {
		if err := ruleFileBody(body); err != nil {
			return g, []error{err}
		}
		return g, []error{errors.New("invalid rules configuration: rule group name must not be empty")}
	}
	if err := CheckName("group name", g.Name); err != nil {
		return g, []error{fmt.Errorf("invalid rules configuration: %w", err)}
	}
	if len(g.Rules) == 0 {
		return g, []error{fmt.Errorf("invalid rules configuration: rule group '%s' has no rules", g.Name)}
	}
	var errs []error
	for k, v := range g.Labels {
		if !a.opts.NameValidation.IsValidLabelName(k) || k == model.MetricNameLabel {
			errs = append(errs, fmt.Errorf("invalid rules configuration: rule group '%s': invalid label name: %s", g.Name, k))
		}
		if !model.LabelValue(v).IsValid() {
			errs = append(errs, fmt.Errorf("invalid rules configuration: rule group '%s': invalid label value: %s", g.Name, v))
		}
	}
	for i := range g.Rules {
		rl := &g.Rules[i]
		name := rl.Alert
		if name == "" {
			name = rl.Record
		}
		for _, we := range rl.Validate(node.Rules[i], a.opts.NameValidation, a.opts.Parser) {
			errs = append(errs, &rulefmt.Error{Group: g.Name, Rule: i + 1, RuleName: name, Err: we})
		}
	}
	return g, errs
}

// ruleFileBody returns the error of a body that is a rule file (a
// "groups" list) instead of one group: its repeated group names named,
// as Prometheus's rule files refuse them, or that groups are posted one
// at a time. nil: the body is not a rule file.
func ruleFileBody(body []byte) error {
	var f rulefmt.RuleGroups
	// A body that does not decode as a rule file is not one: its own
	// decoding error is the group's (parseGroup).
	if isFile := yaml.Unmarshal(body, &f) == nil && len(f.Groups) > 0; !isFile {
		return nil
	}
	seen := make(map[string]bool, len(f.Groups))
	var dup []string
	for _, g := range f.Groups {
		if seen[g.Name] && !slices.Contains(dup, g.Name) {
			dup = append(dup, g.Name)
		}
		seen[g.Name] = true
	}
	if len(dup) > 0 {
		return fmt.Errorf("invalid rules configuration: a rule file, not a rule group, and group names repeated in it: %q; post each group, with a name of its own in the namespace, on its own", dup)
	}
	return fmt.Errorf("invalid rules configuration: a rule file of %d groups, not a rule group: post each group (its name, interval and rules) on its own, as Mimir's ruler API takes them", len(f.Groups))
}

// storeFailed answers a store's failure: 503 (with Retry-After from
// web.RetryUnavailable) when it may pass later, 500 otherwise, with
// Mimir's JSON error body.
func (a *ConfigAPI) storeFailed(w http.ResponseWriter, r *http.Request, err error) {
	a.opts.Logger.Error("ruler configuration API: store failed", "method", r.Method, "path", r.URL.Path, "err", err)
	if errors.Is(err, store.ErrUnavailable) {
		respondError(w, http.StatusServiceUnavailable, "unavailable", err.Error())
		return
	}
	respondError(w, http.StatusInternalServerError, "server_error", err.Error())
}

// respondYAML answers 200 with v as YAML, as Mimir's marshalAndSend.
func respondYAML(w http.ResponseWriter, v any) {
	b, err := yaml.Marshal(v)
	if err != nil {
		respondError(w, http.StatusInternalServerError, "server_error", fmt.Sprintf("encode the answer: %v", err))
		return
	}
	w.Header().Set("Content-Type", "application/yaml")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// respondAccepted answers 202 with Mimir's success body: the change is
// stored; the ruler takes it up at its next sync.
func respondAccepted(w http.ResponseWriter) {
	b, _ := json.Marshal(response{Status: "success"})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write(b)
}

// respondError answers status with Mimir's JSON error body.
func respondError(w http.ResponseWriter, status int, errorType, msg string) {
	b, _ := json.Marshal(response{Status: "error", ErrorType: errorType, Error: msg})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
