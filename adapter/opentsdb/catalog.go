package opentsdb

import "net/http"

// aggregatorNames are the names of a TSD 2.4.1's aggregators in the order
// Aggregators' static block puts them into its HashMap: the functions,
// then the percentiles (p999 to p50, then estimates).
var aggregatorNames = []string{
	"sum", "min", "max", "avg", "none", "median", "mult", "dev", "diff", "count", "zimsum",
	"mimmin", "mimmax", "first", "last", "pfsum", "squareSum",
	"p999", "p99", "p95", "p90", "p75", "p50",
	"ep999r3", "ep99r3", "ep95r3", "ep90r3", "ep75r3", "ep50r3",
	"ep999r7", "ep99r7", "ep95r7", "ep90r7", "ep75r7", "ep50r7",
}

// AggregatorsBody is /api/aggregators' answer: the names as a TSD lists
// its HashMap's keys (hashMapOrder of their insertion order).
func AggregatorsBody() []byte {
	b := []byte{'['}
	for n, i := range hashMapOrder(aggregatorNames) {
		if n > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, aggregatorNames[i])
	}
	return append(b, ']')
}

// tagFilter is a tag value filter type as /api/config/filters describes
// it: the answer of the TSD's filter class's examples() and
// description(), which clients show as help.
type tagFilter struct{ name, examples, description string }

// tagFilters are the seven filter types of a TSD 2.4.1 in the order its
// filter map (TagVFilter) takes them; not_key is commented out there.
var tagFilters = []tagFilter{
	{"literal_or", orExamples("literal_or"), orDescription("contains any of them", "sensitive")},
	{"iliteral_or", orExamples("iliteral_or"), orDescription("contains any of them", "insensitive")},
	{"not_literal_or", orExamples("not_literal_or"), orDescription("does NOT contain any of them", "sensitive")},
	{"not_iliteral_or", orExamples("not_iliteral_or"), orDescription("does NOT contain any of them", "insensitive")},
	{"regexp", `host=regexp(.*)  {"type":"regexp","tagk":"host","filter":".*","groupBy":false}`,
		"Provides full, POSIX compliant regular expression using the built in Java Pattern class. " +
			"Note that an expression containing curly braces {} will not parse properly in URLs. " +
			"If the pattern is not a valid regular expression then an exception will be raised."},
	{"wildcard", globExamples("wildcard"), globDescription("sensitive", "")},
	{"iwildcard", globExamples("iwildcard"), globDescription("insensitive", "Case insensitivity is achieved by dropping all values to lower case. ")},
}

func orExamples(t string) string {
	return "host=" + t + "(web01),  host=" + t + "(web01|web02|web03)  " +
		`{"type":"` + t + `","tagk":"host","filter":"web01|web02|web03","groupBy":false}`
}

func orDescription(matches, sensitivity string) string {
	return "Accepts one or more exact values and matches if the series " + matches + ". " +
		"Multiple values can be included and must be separated by the | (pipe) character. " +
		"The filter is case " + sensitivity + " and will not allow characters that TSDB does not allow at write time."
}

func globExamples(t string) string {
	return "host=" + t + "(web*),  host=" + t + "(web*.tsdb.net)  " +
		`{"type":"` + t + `","tagk":"host","filter":"web*.tsdb.net","groupBy":false}`
}

func globDescription(sensitivity, lower string) string {
	return "Performs pre, post and in-fix glob matching of values. The globs are case " + sensitivity +
		" and multiple wildcards can be used. The wildcard character is the * (asterisk). " + lower +
		"At least one wildcard must be present in the filter value. " +
		"A wildcard by itself can be used as well to match on any value for the tag key."
}

// FiltersBody is /api/config/filters' answer: a HashMap of the filter
// types, each a map of its examples and description (a HashMap of two
// keys, made with capacity 1: "examples" comes first in its 4 buckets).
func FiltersBody() []byte {
	names := make([]string, len(tagFilters))
	for i, f := range tagFilters {
		names[i] = f.name
	}
	return appendJSONMap(nil, names, func(b []byte, i int) []byte {
		b = appendJSONString(append(b, `{"examples":`...), tagFilters[i].examples)
		b = appendJSONString(append(b, `,"description":`...), tagFilters[i].description)
		return append(b, '}')
	})
}

// Version is /api/version's answer, the strings a TSD takes from its
// BuildData (promhbase's build stamps).
type Version struct {
	Version, ShortRevision, FullRevision, Timestamp, RepoStatus, User, Host, Repo, Branch string
}

// Body returns v as a TSD writes its version map: a HashMap of the nine
// keys in the order the TSD puts them.
func (v Version) Body() []byte {
	keys := []string{"version", "short_revision", "full_revision", "timestamp", "repo_status", "user", "host", "repo", "branch"}
	vals := []string{v.Version, v.ShortRevision, v.FullRevision, v.Timestamp, v.RepoStatus, v.User, v.Host, v.Repo, v.Branch}
	return appendJSONMap(nil, keys, func(b []byte, i int) []byte { return appendJSONString(b, vals[i]) })
}

// allowGetPost answers a method other than GET and POST as a TSD's
// RpcUtil.allowedMethods does (405), reporting whether it did.
func allowGetPost(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodPost {
		return false
	}
	WriteJSON(w, http.StatusMethodNotAllowed, ErrorBody(http.StatusMethodNotAllowed, "Method not allowed",
		"The HTTP method ["+r.Method+"] is not permitted for this endpoint"))
	return true
}

// WriteJSON writes a TSD's JSON answer with its status.
func WriteJSON(w http.ResponseWriter, code int, body []byte) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}
