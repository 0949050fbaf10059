package interop

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
)

// compareNameAnswers asks a TSD (tsd) and promhbase's OpenTSDB port
// (port), after the same puts, OpenTSDB's name and catalog endpoints and
// wants the same status and body from each: /api/suggest by GET and POST
// (kinds, prefixes, limits, every refusal), /api/aggregators and
// /api/config/filters (GET, POST, a refused method), and /api/version's
// keys (its values are each server's build).
func compareNameAnswers(t *testing.T, tsd, port string) {
	t.Helper()
	type req struct{ path, method, query, body string }
	var reqs []req
	for _, q := range []string{"type=metrics", "type=metrics&q=put", "type=metrics&q=put.", "type=tagk", "type=tagv",
		"type=tagv&q=w", "type=tagv&q=web&max=1", "type=tagv&max=2", "type=tagv&max=0", "type=tagv&max=-1",
		"type=tagv&max=%2B3", "type=tagv&max=40000", "type=tagv&q=zz", "type=tagk&q=h&type=tagv",
		"type=tagv&max=abc", "type=tagv&max=2.0", "type=tags", "q=put", "type=", "type=metrics&q=%C3%A9",
		"type=tagv&q=cache.eu%2F"} {
		reqs = append(reqs, req{"/api/suggest", "GET", q, ""})
	}
	for _, b := range []string{`{"type":"tagv","q":"web","max":"1"}`, `{"type":"tagk"}`, `{"type":"metrics","max":2,"x":[1]}`,
		`{"q":"a"}`, `{"type":"tagv","q":null}`, ``, `[]`, `{"type":{}}`, `{"type":"metrics"`, `{"type":"bogus"}`} {
		reqs = append(reqs, req{"/api/suggest", "POST", "", b})
	}
	reqs = append(reqs, req{"/api/v1/suggest", "GET", "type=metrics", ""}, req{"/api/suggest", "PUT", "type=metrics", ""},
		req{"/api/suggest", "DELETE", "", ""})
	for _, p := range []string{"/api/aggregators", "/api/config/filters", "/api/v1/aggregators"} {
		reqs = append(reqs, req{p, "GET", "", ""}, req{p, "POST", "", "{}"}, req{p, "PUT", "", ""})
	}
	reqs = append(reqs, req{"/api/version", "DELETE", "", ""}, req{"/api/nothing/here", "GET", "", ""})
	for _, r := range reqs {
		pr := putRequest{r.method, r.query, r.body}
		wantCode, wantBody := requestPath(t, tsd, r.path, pr)
		gotCode, gotBody := requestPath(t, port, r.path, pr)
		if strings.Contains(wantBody, "Unable to parse the given JSON") {
			// The details quote Jackson's parser; compare the rest.
			wantBody, gotBody = cutDetails(wantBody), cutDetails(gotBody)
		}
		if r.query == "type=tagv" && !strings.Contains(wantBody, `"web01"`) {
			t.Errorf("the TSD suggests tag values %s, without the ones put", wantBody)
		}
		if gotCode != wantCode || gotBody != wantBody {
			t.Errorf("%s %s?%s %q:\n got %d %s\nwant %d %s", r.method, r.path, r.query, r.body, gotCode, gotBody, wantCode, wantBody)
		}
	}
	// /api/version: the same keys in the same order, every value a string.
	keys := func(base string) []string {
		code, body := requestPath(t, base, "/api/version", putRequest{"GET", "", ""})
		var m map[string]string
		if err := json.Unmarshal([]byte(body), &m); code != 200 || err != nil {
			t.Fatalf("%s/api/version: %d %s %v", base, code, body, err)
		}
		order := slices.Collect(maps.Keys(m))
		slices.SortFunc(order, func(a, b string) int { return strings.Index(body, `"`+a+`"`) - strings.Index(body, `"`+b+`"`) })
		return order
	}
	if got, want := keys(port), keys(tsd); !slices.Equal(got, want) {
		t.Errorf("/api/version keys %q, want %q", got, want)
	}
	t.Logf("%d name and catalog requests answered alike", len(reqs))
}
