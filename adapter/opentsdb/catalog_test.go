package opentsdb

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"testing"
)

// The golden answers were printed by OpenTSDB 2.4.1's own classes, its
// jar on the class path (tools/scripts/opentsdb.sh fetches it):
//
//	System.out.println(new String(JSON.serializeToBytes(Aggregators.set())));
//	System.out.println(new String(JSON.serializeToBytes(TagVFilter.loadedFilters())));
//
// TestOpenTSDBSuggest (test/e2e/interop) asks a running TSD as well.
func TestCatalogGolden(t *testing.T) {
	for _, tc := range []struct {
		file string
		got  []byte
	}{
		{"testdata/aggregators.json", AggregatorsBody()},
		{"testdata/filters.json", FiltersBody()},
	} {
		t.Run(tc.file, func(t *testing.T) {
			want, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(tc.got, want) {
				t.Errorf("got\n%s\nwant\n%s", tc.got, want)
			}
		})
	}
}

// TestVersionBody: the nine keys in the order Java 17's HashMap iterates
// them once put in BuildData's order (printed by java: [short_revision,
// repo, host, version, full_revision, repo_status, user, branch,
// timestamp]), each value a string.
func TestVersionBody(t *testing.T) {
	v := Version{Version: "1", ShortRevision: "abc", FullRevision: "abcdef", Timestamp: "17", RepoStatus: "MINT",
		User: "u", Host: "h", Repo: "r", Branch: "main"}
	want := `{"short_revision":"abc","repo":"r","host":"h","version":"1","full_revision":"abcdef",` +
		`"repo_status":"MINT","user":"u","branch":"main","timestamp":"17"}`
	if got := string(v.Body()); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestHTTPHandlerCatalog: the catalog's endpoints answer GET and POST
// (under /api/v1/ and in any case too) and refuse other methods as a TSD
// does; /api/put and /api/suggest go to promhbase's handler with the
// port's tenant; anything else is a TSD's 404.
func TestHTTPHandlerCatalog(t *testing.T) {
	var seen []string
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.URL.Path+" "+r.Header.Get("X-Scope-OrgID"))
	})
	h := HTTPHandler(inner, "team", Version{Version: "9"})
	for _, tc := range []struct {
		method, path string
		code         int
		body         string
	}{
		{"GET", "/api/aggregators", 200, string(AggregatorsBody())},
		{"POST", "/API/V1/Aggregators", 200, string(AggregatorsBody())},
		{"GET", "/api/config/filters", 200, string(FiltersBody())},
		{"GET", "/api/version", 200, string(Version{Version: "9"}.Body())},
		{"PUT", "/api/version", 405, `{"error":{"code":405,"message":"Method not allowed","details":"The HTTP method [PUT] is not permitted for this endpoint"}}`},
		{"GET", "/api/query/nothing", 404, `{"error":{"code":404,"message":"Endpoint not found"}}`},
		{"GET", "/api/suggest", 200, ""},
		{"POST", "/api/v1/put", 200, ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			if rec.Code != tc.code || rec.Body.String() != tc.body {
				t.Errorf("got %d %s, want %d %s", rec.Code, rec.Body, tc.code, tc.body)
			}
		})
	}
	if want := []string{"/api/suggest team", "/api/put team"}; !slices.Equal(seen, want) {
		t.Errorf("promhbase's handler saw %q, want %q", seen, want)
	}
	if !json.Valid(FiltersBody()) || !json.Valid(AggregatorsBody()) {
		t.Error("a catalog answer is not JSON")
	}
}

// TestJavaDouble: Double.toString's forms (checked with Java 17; it
// prints 9.2233720368547763E17 for the last, the same double).
func TestJavaDouble(t *testing.T) {
	for v, want := range map[float64]string{12: "12.0", 1e-5: "1.0E-5", 1.5e20: "1.5E20", 0.001: "0.001", 1e7: "1.0E7",
		-2.5: "-2.5", 9999999.5: "9999999.5", 0.1: "0.1", 0.002: "0.002", 9.223372036854776e17: "9.223372036854776E17"} {
		if got := javaDouble(v); got != want {
			t.Errorf("%v: got %s, want %s", v, got, want)
		}
	}
}
