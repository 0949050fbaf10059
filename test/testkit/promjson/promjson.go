// Package promjson holds the answers of Prometheus's HTTP query API
// (/api/v1/query, /api/v1/query_range), as promhbase and Prometheus give
// them, for tests to decode. It is for tests only.
package promjson

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"
)

// QueryAnswer is an answer of /api/v1/query or /api/v1/query_range.
type QueryAnswer struct {
	Status    string `json:"status"`
	Error     string `json:"error"`
	ErrorType string `json:"errorType"`
	Data      struct {
		ResultType string   `json:"resultType"`
		Result     []Series `json:"result"`
	} `json:"data"`
}

// Series is one series of a vector answer (Value) or a matrix answer
// (Values): [time, "value"] pairs as the API prints them.
type Series struct {
	Metric map[string]string    `json:"metric"`
	Value  [2]json.RawMessage   `json:"value"`
	Values [][2]json.RawMessage `json:"values"`
}

// Decode reads a QueryAnswer from r.
func Decode(r io.Reader) (QueryAnswer, error) {
	var a QueryAnswer
	if err := json.NewDecoder(r).Decode(&a); err != nil {
		return a, fmt.Errorf("query answer: %w", err)
	}
	return a, nil
}

// Vector returns the series of a successful vector answer, or an error
// saying what the answer is instead.
func (a QueryAnswer) Vector() ([]Series, error) {
	if a.Status != "success" || a.Data.ResultType != "vector" {
		return nil, fmt.Errorf("query answer: status %q (%s), result type %q, want a successful vector", a.Status, a.Error, a.Data.ResultType)
	}
	return a.Data.Result, nil
}

// ValueString is a vector sample's value as the API printed it ("1.5",
// "NaN"); empty when it is not a string.
func (s Series) ValueString() string {
	var v string
	_ = json.Unmarshal(s.Value[1], &v)
	return v
}

// Point is one [time, "value"] pair of a matrix answer.
type Point struct {
	T int64 // Unix ms
	V float64
}

// Points returns s's Values (a matrix answer's series): each time, given
// in seconds, as Unix ms (truncated), each value parsed.
func (s Series) Points() ([]Point, error) {
	out := make([]Point, 0, len(s.Values))
	for _, p := range s.Values {
		var secs float64
		var v string
		if err := json.Unmarshal(p[0], &secs); err != nil {
			return nil, fmt.Errorf("point time %s: %w", p[0], err)
		}
		if err := json.Unmarshal(p[1], &v); err != nil {
			return nil, fmt.Errorf("point value %s: %w", p[1], err)
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("point value: %w", err)
		}
		out = append(out, Point{T: int64(secs * 1000), V: f})
	}
	return out, nil
}

// RulesAnswer is an answer of /api/v1/rules.
type RulesAnswer struct {
	Status string `json:"status"`
	Data   struct {
		Groups []RuleGroup `json:"groups"`
	} `json:"data"`
}

// RuleGroup is one group of /api/v1/rules: its rules' health, the last
// evaluation of the group.
type RuleGroup struct {
	Name           string    `json:"name"`
	File           string    `json:"file"`
	LastEvaluation time.Time `json:"lastEvaluation"`
	Rules          []struct {
		Name      string `json:"name"`
		Health    string `json:"health"`
		LastError string `json:"lastError"`
	} `json:"rules"`
}
