package tsd

import (
	"strconv"
)

// Query is a /api/query request, validated: its range in Unix
// milliseconds (both ends in the answer) and its sub-queries.
type Query struct {
	Start, End int64
	Subs       []SubQuery
}

// SubQuery is one of a query's sub-queries.
type SubQuery struct {
	Aggregator string
	Metric     string
	// DownsampleMs and DownsampleFn: buckets of that many ms, each the
	// function over its points; 0: none.
	DownsampleMs int64
	DownsampleFn string
	// DownsampleFill is the fill policy, lower case: none (or ""), nan,
	// null, zero, scalar.
	DownsampleFill string
	Rate           bool
	RateOptions    RateOptions
	Filters        []Filter
	ExplicitTags   bool
}

// Filter is a tag value filter: its type (literal_or, wildcard, ...), tag
// key, expression, and whether the answer is grouped by its tag.
type Filter struct {
	Type, Tagk, Expr string
	GroupBy          bool
}

// Result is one series of the answer: a group of a sub-query.
type Result struct {
	// Sub is the index of its sub-query.
	Sub    int
	Metric string
	// Tags are the tags with one value across the group's series (in the
	// order a TSD writes them), AggregateTags the tag keys whose values
	// differ among them.
	Tags          []Tag
	AggregateTags []string
	// Points are in time order, in [Query.Start, Query.End].
	Points []Point
	// NullFill: the sub-query fills with null, and a NaN is written as
	// null (a TSD checks the sub-query's policy, not where the NaN came
	// from).
	NullFill bool
}

// Tag is a tag of an answer.
type Tag struct{ Key, Value string }

// Error is a query a TSD refuses or fails: its HTTP status (400 unless
// set) and message.
type Error struct {
	Code    int
	Message string
}

func (e *Error) Error() string { return e.Message }

// Status is the HTTP status of e.
func (e *Error) Status() int {
	if e.Code == 0 {
		return 400
	}
	return e.Code
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
