package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// promQuery is one PromQL query at fixed times: an instant query at `at`
// when step is 0, else a range query over [start, end] every step.
type promQuery struct {
	expr       string
	at         time.Time
	start, end time.Time
	step       time.Duration
	// wantEmpty: the reference must answer with no series; otherwise it must
	// answer with at least one, so that agreement is never vacuous.
	wantEmpty bool
	// check, if set, inspects the reference's answer further.
	check func(promResult) error
}

func (q promQuery) kind() string {
	if q.step == 0 {
		return "instant"
	}
	return "range"
}

// point is one value of a result: Unix ms and value, or for a native
// histogram its JSON object as the API printed it (compacted).
type point struct {
	t int64
	v float64
	h string
}

// promResult is a parsed answer of the HTTP query API: the series keyed by
// their label set (a scalar or string has the key "scalar" or "string").
type promResult struct {
	resultType string
	series     map[string][]point
	warnings   []string
}

// seriesKeys returns the result's series keys, sorted.
func (r promResult) seriesKeys() []string {
	keys := make([]string, 0, len(r.series))
	for k := range r.series {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// promAPI is a client of a Prometheus server's HTTP query API.
type promAPI struct {
	name   string
	base   string // http://host:port
	client *http.Client
}

// query runs q and parses the answer.
func (p promAPI) query(ctx context.Context, q promQuery) (promResult, error) {
	form := url.Values{"query": {q.expr}}
	path := "/api/v1/query"
	if q.step == 0 {
		form.Set("time", formatTime(q.at))
	} else {
		path = "/api/v1/query_range"
		form.Set("start", formatTime(q.start))
		form.Set("end", formatTime(q.end))
		form.Set("step", strconv.FormatFloat(q.step.Seconds(), 'f', -1, 64))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		return promResult{}, fmt.Errorf("%s: %w", p.name, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := p.client.Do(req)
	if err != nil {
		return promResult{}, fmt.Errorf("%s: %w", p.name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return promResult{}, fmt.Errorf("%s: read answer: %w", p.name, err)
	}
	res, err := parseAPIResponse(body)
	if err != nil {
		return promResult{}, fmt.Errorf("%s: HTTP %d: %w", p.name, resp.StatusCode, err)
	}
	return res, nil
}

func formatTime(t time.Time) string {
	ms := t.UnixMilli()
	return fmt.Sprintf("%d.%03d", ms/1000, ms%1000)
}

// apiResponse is the envelope of the query API's JSON answer.
type apiResponse struct {
	Status    string   `json:"status"`
	ErrorType string   `json:"errorType"`
	Error     string   `json:"error"`
	Warnings  []string `json:"warnings"`
	Data      struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	} `json:"data"`
}

// apiSeries is one element of a vector or matrix result.
type apiSeries struct {
	Metric     map[string]string    `json:"metric"`
	Value      *[2]json.RawMessage  `json:"value"`
	Values     [][2]json.RawMessage `json:"values"`
	Histogram  json.RawMessage      `json:"histogram"`
	Histograms json.RawMessage      `json:"histograms"`
}

func parseAPIResponse(body []byte) (promResult, error) {
	var ar apiResponse
	if err := json.Unmarshal(body, &ar); err != nil {
		return promResult{}, fmt.Errorf("decode answer %.200q: %w", body, err)
	}
	if ar.Status != "success" {
		return promResult{}, fmt.Errorf("query failed: %s: %s", ar.ErrorType, ar.Error)
	}
	res := promResult{resultType: ar.Data.ResultType, series: map[string][]point{}, warnings: ar.Warnings}
	switch ar.Data.ResultType {
	case "vector", "matrix":
		var ss []apiSeries
		if err := json.Unmarshal(ar.Data.Result, &ss); err != nil {
			return promResult{}, fmt.Errorf("decode %s: %w", ar.Data.ResultType, err)
		}
		for _, s := range ss {
			key := labels.FromMap(s.Metric).String()
			if _, dup := res.series[key]; dup {
				return promResult{}, fmt.Errorf("series %s twice in one answer", key)
			}
			raw := s.Values
			if s.Value != nil {
				raw = [][2]json.RawMessage{*s.Value}
			}
			pts, err := parsePoints(raw)
			if err != nil {
				return promResult{}, fmt.Errorf("series %s: %w", key, err)
			}
			hs, err := parseHistogramPoints(s.Histogram, s.Histograms)
			if err != nil {
				return promResult{}, fmt.Errorf("series %s: %w", key, err)
			}
			pts = append(pts, hs...)
			slices.SortStableFunc(pts, func(a, b point) int { return int(a.t - b.t) })
			res.series[key] = pts
		}
	case "scalar", "string":
		var p [2]json.RawMessage
		if err := json.Unmarshal(ar.Data.Result, &p); err != nil {
			return promResult{}, fmt.Errorf("decode %s: %w", ar.Data.ResultType, err)
		}
		pts, err := parsePoints([][2]json.RawMessage{p})
		if err != nil {
			return promResult{}, err
		}
		res.series[ar.Data.ResultType] = pts
	default:
		return promResult{}, fmt.Errorf("unknown result type %q", ar.Data.ResultType)
	}
	return res, nil
}

// parsePoints parses [time, "value"] pairs; the time is seconds with at
// most three decimals, kept exactly as milliseconds.
func parsePoints(raw [][2]json.RawMessage) ([]point, error) {
	pts := make([]point, 0, len(raw))
	for _, r := range raw {
		t, err := parseAPITime(string(r[0]))
		if err != nil {
			return nil, err
		}
		var s string
		if err := json.Unmarshal(r[1], &s); err != nil {
			return nil, fmt.Errorf("value %s: %w", r[1], err)
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("value %q: %w", s, err)
		}
		pts = append(pts, point{t: t, v: v})
	}
	return pts, nil
}

// parseHistogramPoints parses the native histograms of a vector element
// ("histogram": [time, {...}]) or a matrix series ("histograms": [[time,
// {...}], ...]); each histogram is kept as its compacted JSON, which the
// comparison checks byte for byte.
func parseHistogramPoints(one, many json.RawMessage) ([]point, error) {
	var raw [][2]json.RawMessage
	if one != nil {
		var p [2]json.RawMessage
		if err := json.Unmarshal(one, &p); err != nil {
			return nil, fmt.Errorf("histogram %s: %w", one, err)
		}
		raw = append(raw, p)
	}
	if many != nil {
		if err := json.Unmarshal(many, &raw); err != nil {
			return nil, fmt.Errorf("histograms: %w", err)
		}
	}
	pts := make([]point, 0, len(raw))
	for _, r := range raw {
		t, err := parseAPITime(string(r[0]))
		if err != nil {
			return nil, err
		}
		var b bytes.Buffer
		if err := json.Compact(&b, r[1]); err != nil {
			return nil, fmt.Errorf("histogram %s: %w", r[1], err)
		}
		pts = append(pts, point{t: t, h: b.String()})
	}
	return pts, nil
}

func parseAPITime(s string) (int64, error) {
	sec, frac, _ := strings.Cut(s, ".")
	if len(frac) > 3 {
		return 0, fmt.Errorf("timestamp %s has sub-millisecond digits", s)
	}
	n, err := strconv.ParseInt(sec+frac+strings.Repeat("0", 3-len(frac)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("timestamp %s: %w", s, err)
	}
	return n, nil
}

// diffResults lists how got differs from want: result type, warnings,
// series (label sets), timestamps and values (NaN equals NaN). It returns
// at most a handful of lines.
func diffResults(want, got promResult) []string {
	const maxLines = 8
	var out []string
	add := func(format string, args ...any) {
		if len(out) < maxLines {
			out = append(out, fmt.Sprintf(format, args...))
		}
	}
	if want.resultType != got.resultType {
		add("result type %s, want %s", got.resultType, want.resultType)
	}
	if !slices.Equal(want.warnings, got.warnings) {
		add("warnings %q, want %q", got.warnings, want.warnings)
	}
	for _, key := range want.seriesKeys() {
		g, ok := got.series[key]
		if !ok {
			add("missing series %s", key)
			continue
		}
		w := want.series[key]
		if len(g) != len(w) {
			add("series %s: %d points, want %d (first %v, want %v; last %v, want %v)", key, len(g), len(w), first(g), first(w), last(g), last(w))
			continue
		}
		for i := range w {
			if g[i].t != w[i].t || !sameValue(g[i].v, w[i].v) || g[i].h != w[i].h {
				add("series %s point %d: (%d, %v), want (%d, %v)", key, i, g[i].t, g[i].v, w[i].t, w[i].v)
				break
			}
		}
	}
	for _, key := range got.seriesKeys() {
		if _, ok := want.series[key]; !ok {
			add("unexpected series %s", key)
		}
	}
	return out
}

func sameValue(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || (math.IsNaN(a) && math.IsNaN(b))
}

func first(p []point) any {
	if len(p) == 0 {
		return nil
	}
	return p[0]
}

func last(p []point) any {
	if len(p) == 0 {
		return nil
	}
	return p[len(p)-1]
}

// summary describes a result in a few words for the log table.
func (r promResult) summary() string {
	n := 0
	for _, p := range r.series {
		n += len(p)
	}
	return fmt.Sprintf("%s, %d series, %d points", r.resultType, len(r.series), n)
}

// getData GETs path of the API with form as its query and decodes the
// answer's data into out; an answer that is not a success is an error.
func (p promAPI) getData(ctx context.Context, path string, form url.Values, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path+"?"+form.Encode(), nil)
	if err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s: read answer: %w", p.name, err)
	}
	var env struct {
		Status, ErrorType, Error string
		Data                     json.RawMessage
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("%s %s: HTTP %d: decode %.200q: %w", p.name, path, resp.StatusCode, body, err)
	}
	if env.Status != "success" {
		return fmt.Errorf("%s %s: HTTP %d: %s: %s", p.name, path, resp.StatusCode, env.ErrorType, env.Error)
	}
	return json.Unmarshal(env.Data, out)
}

// seriesSet is the answer of /api/v1/series as sorted label-set strings.
func (p promAPI) seriesSet(ctx context.Context, match string, start, end time.Time) ([]string, error) {
	var data []map[string]string
	form := url.Values{"match[]": {match}, "start": {formatTime(start)}, "end": {formatTime(end)}}
	if err := p.getData(ctx, "/api/v1/series", form, &data); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(data))
	for _, m := range data {
		out = append(out, labels.FromMap(m).String())
	}
	slices.Sort(out)
	return out, nil
}

// strings answers a path whose data is a list of strings (labels, label
// values), sorted.
func (p promAPI) stringList(ctx context.Context, path string, form url.Values) ([]string, error) {
	var data []string
	if err := p.getData(ctx, path, form, &data); err != nil {
		return nil, err
	}
	slices.Sort(data)
	return data, nil
}

// missingFrom returns the elements of sub (sorted) that super (sorted)
// lacks.
func missingFrom(sub, super []string) []string {
	var out []string
	for _, s := range sub {
		if _, found := slices.BinarySearch(super, s); !found {
			out = append(out, s)
		}
	}
	return out
}
