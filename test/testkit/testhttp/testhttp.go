// Package testhttp sends the plain HTTP requests of tests (an API call, a
// body posted by hand) and hands back the whole answer. It is for tests
// only.
package testhttp

import (
	"bytes"
	"io"
	"net/http"
	"testing"
)

// Request is one request a test sends.
type Request struct {
	// Method is GET when empty.
	Method string
	URL    string
	Body   []byte
	// Header holds headers set on the request (Content-Type,
	// X-Scope-OrgID, ...); an empty value sets none.
	Header map[string]string
	// User and Password are sent as basic auth when User is set.
	User, Password string
}

// Do sends r with the test's context and returns the answer's status,
// body and header; it fails t when the request cannot be made or no
// answer comes.
func Do(t testing.TB, r Request) (int, []byte, http.Header) {
	t.Helper()
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(t.Context(), method, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range r.Header {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	if r.User != "" {
		req.SetBasicAuth(r.User, r.Password)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read the answer: %v", method, r.URL, err)
	}
	return resp.StatusCode, b, resp.Header
}

// Expect is Do failing t unless the answer's status is want; it returns
// the answer's body.
func Expect(t testing.TB, r Request, want int) []byte {
	t.Helper()
	code, b, _ := Do(t, r)
	if code != want {
		t.Fatalf("%s %s: status %d, want %d: %s", r.Method, r.URL, code, want, b)
	}
	return b
}
