package opentsdb

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

// TestPutAnswer: /api/put bodies and their answers as a TSD 2.4.1 gives
// them (the ones test/e2e/interop's TestOpenTSDBPut found equal), every
// point taken as stored when it passed its checks.
func TestPutAnswer(t *testing.T) {
	ok := `{"metric":"put.http","timestamp":1795939200,"value":1,"tags":{"host":"a"}}`
	for _, tc := range []struct {
		name, body string
		params     PutParams
		code       int
		answer     string
	}{
		{"one point", ok, PutParams{}, 204, ""},
		{"summary", ok, PutParams{Summary: true}, 200, `{"success":1,"failed":0}`},
		{"details of none", "[" + ok + "]", PutParams{Details: true}, 200, `{"success":1,"failed":0,"errors":[]}`},
		{"a bad value", "[" + ok + `,{"metric":"put.http","timestamp":1795939200,"value":"x","tags":{"host":"a"}}]`, PutParams{Details: true}, 400,
			`{"success":1,"failed":1,"errors":[{"datapoint":{"metric":"put.http","timestamp":1795939200,"value":"x","tags":{"host":"a"}},"error":"Unable to parse value to a number"}]}`},
		{"no flags, a failure", `[{"metric":"m","timestamp":1,"value":true,"tags":{"a":"b"}}]`, PutParams{}, 400,
			`{"error":{"code":400,"message":"One or more data points had errors","details":"Please see the TSD logs or append \"details\" to the put request"}}`},
		{"missing fields", `[{"timestamp":1,"value":1,"tags":{"a":"b"}},{"metric":"m","value":1,"tags":{"a":"b"}},{"metric":"m","timestamp":1,"tags":{"a":"b"}},{"metric":"m","timestamp":1,"value":1}]`,
			PutParams{Details: true}, 400,
			`{"success":0,"failed":4,"errors":[{"datapoint":{"timestamp":1,"value":"1","tags":{"a":"b"}},"error":"Metric name was empty"},{"datapoint":{"metric":"m","timestamp":0,"value":"1","tags":{"a":"b"}},"error":"Invalid timestamp"},{"datapoint":{"metric":"m","timestamp":1,"tags":{"a":"b"}},"error":"Empty value"},{"datapoint":{"metric":"m","timestamp":1,"value":"1"},"error":"Missing tags"}]}`},
		{"a space in a tag name and null", `[{"metric":"put.http","timestamp":1795939200,"value":"7","tags":{"host":"a","bad key":"v"}},null]`, PutParams{Details: true}, 400,
			`{"success":0,"failed":2,"errors":[{"datapoint":{"metric":"put.http","timestamp":1795939200,"value":"7","tags":{"host":"a","bad key":"v"}},"error":"Invalid tag name with value [v] (\"bad key\"): illegal character:  "},{"datapoint":null,"error":"Unexpected null datapoint encountered in set."}]}`},
		{"sync_timeout", ok, PutParams{Summary: true, SyncTimeout: 10000}, 200, `{"success":1,"timeouts":0,"failed":0}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			items, err := ParsePutBody([]byte(tc.body), DefaultMaxTags)
			if err != nil {
				t.Fatal(err)
			}
			code, answer := PutAnswer(tc.params, items)
			if code != tc.code || string(answer) != tc.answer {
				t.Errorf("got %d %s\nwant %d %s", code, answer, tc.code, tc.answer)
			}
		})
	}
}

// TestPutBodyErrors: bodies refused whole.
func TestPutBodyErrors(t *testing.T) {
	for _, tc := range []struct{ body, message string }{
		{"", "Missing request content"},
		{"  \n", "Missing request content"},
		{"hello", "The JSON must start as an object or an array"},
		{"[]", "No datapoints found in content"},
		{"{bad json", "Unable to parse the given JSON"},
		{`[{"metric":{"a":1},"timestamp":1,"value":1,"tags":{"a":"b"}}]`, "Unable to parse the given JSON"},
		{`[1]`, "Unable to parse the given JSON"},
		{`{"metric":"m","timestamp":"x","value":1,"tags":{"a":"b"}}`, "Unable to parse the given JSON"},
	} {
		_, err := ParsePutBody([]byte(tc.body), DefaultMaxTags)
		var berr *BodyError
		if !errors.As(err, &berr) || berr.Message != tc.message {
			t.Errorf("%q: %v, want %q", tc.body, err, tc.message)
		}
	}
}

// FuzzParsePutBody: any body parses or is refused without a panic, and
// its answer is well-formed.
func FuzzParsePutBody(f *testing.F) {
	f.Add([]byte(`[{"metric":"m","timestamp":1292148123,"value":"0.5","tags":{"a":"b"}},null]`))
	f.Add([]byte(`{"metric":"m","timestamp":1.5e9,"value":1e3,"tags":{"a":"b","a":"c"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		items, err := ParsePutBody(body, DefaultMaxTags)
		if err != nil {
			var berr *BodyError
			if !errors.As(err, &berr) {
				t.Fatalf("error %v is no BodyError", err)
			}
			return
		}
		code, _ := PutAnswer(PutParams{Details: true}, items)
		if code != 200 && code != 400 {
			t.Fatalf("status %d", code)
		}
	})
}

// FuzzJSONGrammar: the put body's parser takes exactly the JSON texts
// encoding/json takes (RFC 8259), for texts of valid UTF-8 nested less
// than maxJSONDepth deep.
func FuzzJSONGrammar(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5e-3,-0,"x\u00e9\ud83d\ude00",true,null,{}]}`, `[01]`, `"\x"`, `{"a" 1}`, `1.`, `-`, `[1,]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !utf8.Valid(b) || bytes.Count(b, []byte("["))+bytes.Count(b, []byte("{")) >= maxJSONDepth {
			return
		}
		p := &jsonParser{b: b}
		err := p.skip()
		p.ws()
		ok := err == nil && p.i == len(p.b)
		if want := json.Valid(b); ok != want {
			t.Fatalf("%q: parsed %v (%v), encoding/json: %v", b, ok, err, want)
		}
	})
}
