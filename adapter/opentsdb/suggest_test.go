package opentsdb

import (
	"bytes"
	"net/url"
	"testing"
)

// sug is a Suggest of kind for the rows in [start, stop), at most max.
func sug(kind string, start, stop []byte, max int) Suggest {
	return Suggest{Kind: kind, Start: start, Stop: stop, Max: max}
}

func TestParseSuggest(t *testing.T) {
	for _, tc := range []struct {
		name, method, query, body string
		want                      Suggest
		err                       string // the JSON error the TSD answers
	}{
		{name: "get", method: "GET", query: "type=metrics&q=sys.c&max=3", want: sug("metrics", []byte("sys.c"), []byte("sys.d"), 3)},
		{name: "no q: every printable name", method: "GET", query: "type=tagk", want: sug("tagk", []byte("!"), []byte("~"), 25)},
		{name: "the last of each", method: "GET", query: "type=tagk&type=tagv&q=a&q=b", want: sug("tagv", []byte("b"), []byte("c"), 25)},
		{name: "max 0 and below: 25", method: "GET", query: "type=tagv&max=-4", want: sug("tagv", []byte("!"), []byte("~"), 25)},
		{name: "max with a sign", method: "GET", query: "type=tagv&max=%2B7", want: sug("tagv", []byte("!"), []byte("~"), 7)},
		{name: "max in Arabic-Indic digits", method: "GET", query: "type=tagv&max=%D9%A3%D9%A0", want: sug("tagv", []byte("!"), []byte("~"), 30)},
		{name: "max past a short: every name", method: "GET", query: "type=tagv&max=40000", want: sug("tagv", []byte("!"), []byte("~"), 0)},
		{name: "q beyond Latin-1", method: "GET", query: "type=metrics&q=%E2%82%ACx", want: sug("metrics", []byte("?x"), []byte("?y"), 25)},
		{name: "q in Latin-1", method: "GET", query: "type=metrics&q=%C3%A9", want: sug("metrics", []byte{0xE9}, []byte{0xEA}, 25)},
		{name: "q ending in U+00FF: no rows", method: "GET", query: "type=metrics&q=a%C3%BF", want: sug("metrics", []byte{'a', 0xFF}, []byte{'a', 0}, 25)},
		{name: "post", method: "POST", body: `{"type":"tagk","q":"ho","max":2}`, want: sug("tagk", []byte("ho"), []byte("hp"), 2)},
		{name: "post: null q, unknown fields", method: "POST", body: `{"q":null,"x":true,"type":"metrics"}`, want: sug("metrics", []byte("!"), []byte("~"), 25)},
		{name: "get without type", method: "GET", query: "q=a", err: `{"error":{"code":400,"message":"Missing parameter <code>type</code>"}}`},
		{name: "get with an empty type", method: "GET", query: "type=", err: `{"error":{"code":400,"message":"Missing parameter <code>type</code>"}}`},
		{name: "bad type", method: "GET", query: "type=metric", err: `{"error":{"code":400,"message":"Invalid 'type' parameter:metric"}}`},
		{name: "bad max", method: "GET", query: "type=metrics&max=5.0", err: `{"error":{"code":400,"message":"Unable to parse 'max' as a number"}}`},
		{name: "max past an int", method: "GET", query: "type=metrics&max=2147483648", err: `{"error":{"code":400,"message":"Unable to parse 'max' as a number"}}`},
		{name: "max checked before type", method: "GET", query: "type=x&max=y", err: `{"error":{"code":400,"message":"Unable to parse 'max' as a number"}}`},
		{name: "post without type", method: "POST", body: `{"q":"a"}`, err: `{"error":{"code":400,"message":"Missing 'type' parameter"}}`},
		{name: "post without a body", method: "POST", err: `{"error":{"code":400,"message":"Missing message content","details":"Supply valid JSON formatted data in the body of your request"}}`},
		{name: "put", method: "PUT", err: `{"error":{"code":405,"message":"Method not allowed","details":"The HTTP method [PUT] is not permitted for this endpoint"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			got, herr := ParseSuggest(tc.method, q, []byte(tc.body))
			if tc.err != "" {
				if herr == nil || string(herr.Body()) != tc.err {
					t.Fatalf("got %+v %v, want the error %s", got, herr, tc.err)
				}
				return
			}
			if herr != nil {
				t.Fatalf("error %s", herr.Body())
			}
			if got.Kind != tc.want.Kind || got.Max != tc.want.Max || !bytes.Equal(got.Start, tc.want.Start) || !bytes.Equal(got.Stop, tc.want.Stop) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestParseSuggestBadJSON: a body that is not an object of scalars is
// Jackson's "Unable to parse the given JSON" (its details are Jackson's
// own words; TestOpenTSDBSuggest compares the rest with a TSD's).
func TestParseSuggestBadJSON(t *testing.T) {
	for _, body := range []string{`[]`, `{"type":{}}`, `{"type":"metrics"`, ` `, `{"type":[1]}`, `"metrics"`} {
		t.Run(body, func(t *testing.T) {
			_, herr := ParseSuggest("POST", nil, []byte(body))
			if herr == nil || herr.Code != 400 || herr.Message != "Unable to parse the given JSON" || herr.Details == "" {
				t.Errorf("got %+v", herr)
			}
		})
	}
}

func TestSuggestBody(t *testing.T) {
	got := SuggestBody([][]byte{[]byte("sys.cpu"), {0xC3, 0xA9}, []byte(`a"b`)})
	// Each byte one character (ISO-8859-1), written as UTF-8.
	want := `["sys.cpu","Ã©","a\"b"]`
	if string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got := SuggestBody(nil); string(got) != "[]" {
		t.Errorf("no names: %s", got)
	}
}

// FuzzParseSuggest: any query and body get a question or a TSD's error,
// never a panic; a question's range is a prefix's.
func FuzzParseSuggest(f *testing.F) {
	f.Add("GET", "type=metrics&q=a&max=3", "")
	f.Add("POST", "", `{"type":"tagv","q":"x","max":"1"}`)
	f.Add("POST", "", `{"type":1}`)
	f.Fuzz(func(t *testing.T, method, query, body string) {
		q, _ := url.ParseQuery(query)
		s, herr := ParseSuggest(method, q, []byte(body))
		if herr != nil {
			if herr.Code != 400 && herr.Code != 405 {
				t.Fatalf("status %d", herr.Code)
			}
			return
		}
		if len(s.Start) == 0 || len(s.Start) != len(s.Stop) || !bytes.Equal(s.Start[:len(s.Start)-1], s.Stop[:len(s.Stop)-1]) {
			t.Fatalf("range %q %q", s.Start, s.Stop)
		}
		if s.Max < 0 || s.Max > 32767 {
			t.Fatalf("max %d", s.Max)
		}
	})
}
