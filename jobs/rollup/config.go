package rollup

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/promhbase/promhbase/mapping"
)

// Limits of a configuration.
const (
	// MaxConfigBytes is the largest configuration file Parse and Read
	// accept (1 MiB).
	MaxConfigBytes = 1 << 20
	// FirstReservedID is the first aggregation id reserved for promhbase's
	// own aggregates; a configuration may use ids 0..FirstReservedID-1.
	FirstReservedID = 64
)

// ErrInvalidConfig is wrapped by every error of Parse, Read and New.
var ErrInvalidConfig = errors.New("rollup: invalid config")

// Aggregation is one entry of aggregationIds: an OpenTSDB aggregator and
// the id that starts its rollup qualifiers.
type Aggregation struct {
	// Name is the aggregator's name, lower case ("sum").
	Name string
	// ID is the qualifier's first byte, 0..FirstReservedID-1.
	ID byte
}

// Interval is one entry of intervals. The exported fields are the file's;
// a Config's intervals also carry what they parse to.
type Interval struct {
	// Table is the rollup table ("table"); for the default interval, the
	// raw data table.
	Table string
	// PreAggregationTable is the table of pre-aggregated points
	// ("preAggregationTable").
	PreAggregationTable string
	// Name is the interval as the file spells it ("interval"), "5m".
	Name string
	// RowSpan is the tables' row span ("rowSpan"), "1d".
	RowSpan string
	// Default marks the raw data table ("defaultInterval").
	Default bool

	seconds int64
	span    mapping.RowSpan
	count   int
}

// Seconds is the interval's length in seconds; 0 for an Interval that did
// not come from a Config.
func (iv Interval) Seconds() int64 { return iv.seconds }

// Span is the row span of the interval's tables.
func (iv Interval) Span() mapping.RowSpan { return iv.span }

// Count is the number of intervals in a row span as OpenTSDB counts them
// (see mapping.CheckRollupInterval); every index is below it.
func (iv Interval) Count() int { return iv.count }

// Locate returns where the rollup point of the interval starting at second
// ts goes: the base time of its row and its index in the row (see
// mapping.RollupIndex), below Count. It returns an error only for an
// Interval that did not come from a Config.
func (iv Interval) Locate(ts uint32) (base uint32, index int, err error) {
	base = iv.span.BaseTime(ts)
	index, err = mapping.RollupIndex(ts, base, iv.seconds)
	return base, index, err
}

// Config is a validated rollup configuration. Make one with Parse, Read,
// New or Default; it is not changed after, and is safe for concurrent use.
type Config struct {
	aggs      []Aggregation // by ID
	intervals []Interval    // as given
	rollups   []Interval    // the non-default intervals, by length
	def       int           // index of the default interval
}

// Default returns promhbase's built-in configuration:
//
//   - aggregation ids sum 0, count 1, max 2, min 3, the ids OpenTSDB's own
//     tests use, so that a TSD given the same file reads promhbase's
//     rollups (ids from FirstReservedID on are left to promhbase's own
//     aggregates);
//   - the raw table tsdb as the default interval, 1m in 1h rows, as
//     OpenTSDB expects of its raw table;
//   - 5m in 1d rows (tsdb-rollup-5m, tsdb-rollup-agg-5m): 288 intervals a
//     row;
//   - 1h in 1n rows (tsdb-rollup-1h, tsdb-rollup-agg-1h): 768 intervals
//     as OpenTSDB counts a month (32 days), indexes 0..743 in a 31-day
//     month, well below 3840, so a month is one row. (1y rows would
//     hold 8784 intervals, more than OpenTSDB's 7774.)
//
// The 5m and 1h resolutions are Thanos's. Each call returns a new Config.
func Default() *Config {
	c, err := New(
		[]Aggregation{{"sum", 0}, {"count", 1}, {"max", 2}, {"min", 3}},
		[]Interval{
			{Table: mapping.DefaultDataTable, PreAggregationTable: "tsdb-agg", Name: "1m", RowSpan: "1h", Default: true},
			{Table: "tsdb-rollup-5m", PreAggregationTable: "tsdb-rollup-agg-5m", Name: "5m", RowSpan: "1d"},
			{Table: "tsdb-rollup-1h", PreAggregationTable: "tsdb-rollup-agg-1h", Name: "1h", RowSpan: "1n"},
		})
	if err != nil {
		panic(fmt.Sprintf("rollup: the built-in configuration is invalid: %v", err))
	}
	return c
}

// New validates aggregations and intervals (see the package documentation
// for the rules) and returns a Config holding copies of them, aggregation
// names lower-cased and in id order, intervals in the order given. It
// returns an error wrapping ErrInvalidConfig naming the first entry that
// breaks a rule.
func New(aggs []Aggregation, intervals []Interval) (*Config, error) {
	if len(aggs) == 0 {
		return nil, fmt.Errorf("%w: no aggregation ids", ErrInvalidConfig)
	}
	if len(intervals) == 0 {
		return nil, fmt.Errorf("%w: no intervals", ErrInvalidConfig)
	}
	c := &Config{aggs: make([]Aggregation, len(aggs)), intervals: make([]Interval, len(intervals)), def: -1}
	names := make(map[string]bool, len(aggs))
	ids := make(map[byte]string, len(aggs))
	for i, a := range aggs {
		if err := checkAggregationName(a.Name); err != nil {
			return nil, fmt.Errorf("%w: aggregation %q: %w", ErrInvalidConfig, a.Name, err)
		}
		name := strings.ToLower(a.Name)
		if names[name] {
			return nil, fmt.Errorf("%w: aggregation %q given twice", ErrInvalidConfig, name)
		}
		if a.ID >= FirstReservedID {
			return nil, fmt.Errorf("%w: aggregation %q: id %d, want 0..%d (%d..%d are reserved for promhbase's own aggregates)",
				ErrInvalidConfig, name, a.ID, FirstReservedID-1, FirstReservedID, mapping.MaxRollupAggID)
		}
		if other, ok := ids[a.ID]; ok {
			return nil, fmt.Errorf("%w: aggregations %q and %q both have id %d", ErrInvalidConfig, other, name, a.ID)
		}
		names[name], ids[a.ID] = true, name
		c.aggs[i] = Aggregation{Name: name, ID: a.ID}
	}
	slices.SortFunc(c.aggs, func(a, b Aggregation) int { return cmp.Compare(a.ID, b.ID) })

	byName := make(map[string]bool, len(intervals))
	bySeconds := make(map[int64]string, len(intervals))
	tables := make(map[string]string, 2*len(intervals))
	for i, iv := range intervals {
		iv, err := compileInterval(iv)
		if err != nil {
			return nil, fmt.Errorf("%w: interval %d (%q): %w", ErrInvalidConfig, i, iv.Name, err)
		}
		if iv.Default {
			if c.def >= 0 {
				return nil, fmt.Errorf("%w: intervals %q and %q are both the default, want one", ErrInvalidConfig, c.intervals[c.def].Name, iv.Name)
			}
			c.def = i
		}
		if byName[iv.Name] {
			return nil, fmt.Errorf("%w: interval %q given twice", ErrInvalidConfig, iv.Name)
		}
		if other, ok := bySeconds[iv.seconds]; ok {
			return nil, fmt.Errorf("%w: intervals %q and %q are both %d s long", ErrInvalidConfig, other, iv.Name, iv.seconds)
		}
		byName[iv.Name], bySeconds[iv.seconds] = true, iv.Name
		for _, table := range []string{iv.Table, iv.PreAggregationTable} {
			if other, ok := tables[table]; ok && other != iv.Name {
				return nil, fmt.Errorf("%w: table %q serves intervals %q and %q", ErrInvalidConfig, table, other, iv.Name)
			}
			tables[table] = iv.Name
		}
		c.intervals[i] = iv
	}
	if c.def < 0 {
		return nil, fmt.Errorf("%w: no default interval (the raw data table), want one", ErrInvalidConfig)
	}
	for i, iv := range c.intervals {
		if i != c.def {
			c.rollups = append(c.rollups, iv)
		}
	}
	slices.SortFunc(c.rollups, func(a, b Interval) int { return cmp.Compare(a.seconds, b.seconds) })
	return c, nil
}

// compileInterval checks one interval on its own and fills in what it
// parses to.
func compileInterval(iv Interval) (Interval, error) {
	for _, t := range [...]struct{ key, name string }{{"table", iv.Table}, {"preAggregationTable", iv.PreAggregationTable}} {
		if err := checkTableName(t.name); err != nil {
			return iv, fmt.Errorf("%s %q: %w", t.key, t.name, err)
		}
	}
	seconds, err := mapping.ParseRollupInterval(iv.Name)
	if err != nil {
		return iv, err
	}
	span, err := mapping.ParseRowSpan(iv.RowSpan)
	if err != nil {
		return iv, err
	}
	if iv.Default && span.String() != "1h" {
		return iv, fmt.Errorf("the default interval's row span is %s, want 1h (the raw table's rows)", span)
	}
	count, err := mapping.CheckRollupInterval(span, seconds)
	if err != nil {
		return iv, err
	}
	iv.seconds, iv.span, iv.count = seconds, span, count
	return iv, nil
}

// checkAggregationName accepts 1 to 64 ASCII letters, digits, '_' and '-'.
func checkAggregationName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("a name of %d bytes, want 1..64", len(name))
	}
	for i := range len(name) {
		if c := name[i]; !isAlnum(c) && c != '_' && c != '-' {
			return fmt.Errorf("byte %#x at %d, want ASCII letters, digits, '_' and '-'", c, i)
		}
	}
	return nil
}

// checkTableName accepts an HBase table name: [namespace:]qualifier, the
// namespace of ASCII letters, digits and '_', the qualifier of those and
// '-' and '.', not starting with '-' or '.'.
func checkTableName(name string) error {
	if name == "" {
		return errors.New("empty table name")
	}
	if len(name) > 255 {
		return fmt.Errorf("a table name of %d bytes, want at most 255", len(name))
	}
	qualifier := name
	if ns, q, ok := strings.Cut(name, ":"); ok {
		if ns == "" {
			return errors.New("empty namespace")
		}
		for i := range len(ns) {
			if c := ns[i]; !isAlnum(c) && c != '_' {
				return fmt.Errorf("byte %#x at %d of the namespace, want ASCII letters, digits and '_'", c, i)
			}
		}
		qualifier = q
	}
	if qualifier == "" {
		return errors.New("empty table qualifier")
	}
	if qualifier[0] == '-' || qualifier[0] == '.' {
		return fmt.Errorf("starts with %q", qualifier[0])
	}
	for i := range len(qualifier) {
		if c := qualifier[i]; !isAlnum(c) && c != '_' && c != '-' && c != '.' {
			return fmt.Errorf("byte %#x at %d of the qualifier, want ASCII letters, digits, '_', '-' and '.'", c, i)
		}
	}
	return nil
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// Aggregations returns the aggregation ids, in id order. The slice is a
// copy.
func (c *Config) Aggregations() []Aggregation { return slices.Clone(c.aggs) }

// Intervals returns every interval, the default one too, in the order of
// the file. The slice is a copy.
func (c *Config) Intervals() []Interval { return slices.Clone(c.intervals) }

// RollupIntervals returns the rollup intervals, all but the default one,
// shortest first. The slice is a copy.
func (c *Config) RollupIntervals() []Interval { return slices.Clone(c.rollups) }

// DefaultInterval returns the default interval: the raw data table.
func (c *Config) DefaultInterval() Interval { return c.intervals[c.def] }

// Interval returns the interval the file spells name ("5m"); ok is false
// when there is none.
func (c *Config) Interval(name string) (iv Interval, ok bool) {
	for _, iv := range c.intervals {
		if iv.Name == name {
			return iv, true
		}
	}
	return Interval{}, false
}

// AggregationID returns the id of the aggregator name, matched lower-cased
// as OpenTSDB matches it; ok is false when the file has none.
func (c *Config) AggregationID(name string) (id byte, ok bool) {
	name = strings.ToLower(name)
	for _, a := range c.aggs {
		if a.Name == name {
			return a.ID, true
		}
	}
	return 0, false
}

// AggregationName returns the name of the aggregator with id id (masked
// with mapping.RollupAggIDMask, as readers take a qualifier's first
// byte); ok is false when the file has none.
func (c *Config) AggregationName(id byte) (name string, ok bool) {
	id &= mapping.RollupAggIDMask
	for _, a := range c.aggs {
		if a.ID == id {
			return a.Name, true
		}
	}
	return "", false
}

// AppendJSON appends c in the file's JSON format to dst: indented by two
// spaces, a newline at the end, aggregation ids in id order, intervals in
// the Config's order with their keys as table, preAggregationTable,
// interval, rowSpan and, only when true, defaultInterval. Parse reads it
// back to an equal Config.
func (c *Config) AppendJSON(dst []byte) []byte {
	dst = append(dst, "{\n  \"aggregationIds\": {"...)
	for i, a := range c.aggs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, "\n    "...)
		dst = appendJSONString(dst, a.Name)
		dst = append(dst, ": "...)
		dst = strconv.AppendUint(dst, uint64(a.ID), 10)
	}
	dst = append(dst, "\n  },\n  \"intervals\": ["...)
	for i, iv := range c.intervals {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, "\n    {"...)
		for j, kv := range [...][2]string{
			{"table", iv.Table}, {"preAggregationTable", iv.PreAggregationTable},
			{"interval", iv.Name}, {"rowSpan", iv.RowSpan},
		} {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, "\n      \""...)
			dst = append(dst, kv[0]...)
			dst = append(dst, "\": "...)
			dst = appendJSONString(dst, kv[1])
		}
		if iv.Default {
			dst = append(dst, ",\n      \"defaultInterval\": true"...)
		}
		dst = append(dst, "\n    }"...)
	}
	return append(dst, "\n  ]\n}\n"...)
}

// appendJSONString appends s as a JSON string. Every string of a Config
// is validated ASCII without quotes or backslashes, so this is for safety
// only.
func appendJSONString(dst []byte, s string) []byte {
	b, err := json.Marshal(s)
	if err != nil { // a string always marshals
		return append(dst, `""`...)
	}
	return append(dst, b...)
}

// Read reads a configuration file from r, at most MaxConfigBytes of it,
// and parses it (see Parse). A longer file is refused without being
// decoded.
func Read(r io.Reader) (*Config, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: reading: %w", ErrInvalidConfig, err)
	}
	return Parse(b)
}

// Parse parses a configuration file in OpenTSDB's tsd.rollups.config
// format and validates it (see New and the package documentation). It
// refuses input longer than MaxConfigBytes before decoding it. Every error
// wraps ErrInvalidConfig.
func Parse(b []byte) (*Config, error) {
	if len(b) > MaxConfigBytes {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrInvalidConfig, MaxConfigBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var aggs []Aggregation
	var intervals []Interval
	err := decodeObject(dec, func(key string) error {
		switch key {
		case "aggregationIds":
			return decodeObject(dec, func(name string) error {
				id, err := decodeID(dec)
				if err != nil {
					return fmt.Errorf("aggregation %q: %w", name, err)
				}
				aggs = append(aggs, Aggregation{Name: name, ID: id})
				return nil
			})
		case "intervals":
			return decodeArray(dec, func(i int) error {
				iv, err := decodeInterval(dec)
				if err != nil {
					return fmt.Errorf("interval %d: %w", i, err)
				}
				intervals = append(intervals, iv)
				return nil
			})
		}
		return skipValue(dec)
	})
	if errors.Is(err, io.EOF) { // the decoder's word for input that ends before the object does
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return nil, fmt.Errorf("%w: at byte %d: %w", ErrInvalidConfig, dec.InputOffset(), err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: data after the object at byte %d", ErrInvalidConfig, dec.InputOffset())
	}
	return New(aggs, intervals)
}

// decodeInterval decodes one object of intervals.
func decodeInterval(dec *json.Decoder) (Interval, error) {
	var iv Interval
	err := decodeObject(dec, func(key string) error {
		switch key {
		case "table":
			return decodeString(dec, &iv.Table)
		case "preAggregationTable":
			return decodeString(dec, &iv.PreAggregationTable)
		case "interval":
			return decodeString(dec, &iv.Name)
		case "rowSpan":
			return decodeString(dec, &iv.RowSpan)
		case "defaultInterval":
			return decodeBool(dec, &iv.Default)
		}
		return skipValue(dec)
	})
	return iv, err
}

// decodeObject reads a JSON object, calling field with each key once the
// decoder is at its value; field must consume the value. A key given twice
// is an error.
func decodeObject(dec *json.Decoder, field func(key string) error) error {
	if err := expectDelim(dec, '{', "an object"); err != nil {
		return err
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, ok := tok.(string)
		if !ok { // the decoder allows only strings here; for safety
			return fmt.Errorf("key %v is not a string", tok)
		}
		if seen[key] {
			return fmt.Errorf("key %q given twice", key)
		}
		seen[key] = true
		if err := field(key); err != nil {
			return err
		}
	}
	_, err := dec.Token() // the closing brace
	return err
}

// decodeArray reads a JSON array, calling elem with the index of each
// element once the decoder is at it; elem must consume it.
func decodeArray(dec *json.Decoder, elem func(i int) error) error {
	if err := expectDelim(dec, '[', "an array"); err != nil {
		return err
	}
	for i := 0; dec.More(); i++ {
		if err := elem(i); err != nil {
			return err
		}
	}
	_, err := dec.Token() // the closing bracket
	return err
}

func expectDelim(dec *json.Decoder, want json.Delim, what string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("%s, want %s", describeToken(tok), what)
	}
	return nil
}

// describeToken names a token for an error message.
func describeToken(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		return fmt.Sprintf("%q", string(v))
	case string:
		return fmt.Sprintf("string %.40q", v)
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}

func decodeString(dec *json.Decoder, dst *string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	s, ok := tok.(string)
	if !ok {
		return fmt.Errorf("%s, want a string", describeToken(tok))
	}
	*dst = s
	return nil
}

func decodeBool(dec *json.Decoder, dst *bool) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch b := tok.(type) {
	case bool:
		*dst = b
	case nil: // false, as Jackson reads null into a boolean
		*dst = false
	default:
		return fmt.Errorf("%s, want true or false", describeToken(tok))
	}
	return nil
}

// decodeID reads an aggregation id: a JSON integer 0..MaxRollupAggID,
// written without fraction or exponent.
func decodeID(dec *json.Decoder) (byte, error) {
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n < 0 || n > mapping.MaxRollupAggID {
		return 0, fmt.Errorf("id %.40s, want an integer 0..%d", raw, mapping.MaxRollupAggID)
	}
	return byte(n), nil
}

// skipValue consumes the value of a key this package does not know.
func skipValue(dec *json.Decoder) error {
	var raw json.RawMessage
	return dec.Decode(&raw)
}
