package opentsdb

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// BodyError is an /api/put body refused whole: its message and details,
// as the TSD's 400 says them.
type BodyError struct{ Message, Details string }

func (e *BodyError) Error() string {
	if e.Details == "" {
		return e.Message
	}
	return e.Message + ": " + e.Details
}

// Item is a data point of an /api/put body: what was sent (for the
// answer's details) and, when Err is nil, the point.
type Item struct {
	Point Point
	Err   *PointError
	// The data point as Jackson bound it, echoed in the details.
	metric, value   *string
	timestamp       int64
	tags            []Tag
	tagNull         []bool // tags[i] was JSON null
	hasTags, isNull bool   // a tags object was sent; the element was null
}

// ParsePutBody parses an /api/put body as HttpJsonSerializer.parsePutV1
// and IncomingDataPoint bind it (one object or an array of them; a
// string field takes any scalar's text, a number's as written; the
// timestamp an integer, a float truncated, or a string of one; unknown
// fields ignored), then checks each point as PutDataPointRpc does:
// IncomingDataPoint.validate, the value, then TSDB.addPoint's checks. A
// point's error is its Item's Err; the body's is a *BodyError.
func ParsePutBody(body []byte, maxTags int) ([]Item, error) {
	content := bytes.TrimFunc(body, func(r rune) bool { return r <= ' ' })
	if len(content) == 0 {
		return nil, &BodyError{Message: "Missing request content"}
	}
	if content[0] != '{' && content[0] != '[' {
		return nil, &BodyError{Message: "The JSON must start as an object or an array"}
	}
	dec := json.NewDecoder(bytes.NewReader(content))
	dec.UseNumber()
	var items []Item
	var err error
	if content[0] == '{' {
		var first json.Token
		if first, err = dec.Token(); err == nil {
			var it Item
			if it, err = decodePoint(dec, first); err == nil {
				items = append(items, it)
			}
		}
	} else {
		items, err = decodeArray(dec)
	}
	if err != nil {
		return nil, &BodyError{Message: "Unable to parse the given JSON", Details: err.Error()}
	}
	if len(items) == 0 {
		return nil, &BodyError{Message: "No datapoints found in content"}
	}
	for i := range items {
		items[i].check(maxTags)
	}
	return items, nil
}

// decodeArray decodes an array of data points (or nulls).
func decodeArray(dec *json.Decoder) ([]Item, error) {
	if _, err := dec.Token(); err != nil { // [
		return nil, err
	}
	var items []Item
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		if tok == nil {
			items = append(items, Item{isNull: true})
			continue
		}
		it, err := decodePoint(dec, tok)
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	if _, err := dec.Token(); err != nil { // ]
		return nil, err
	}
	return items, nil
}

// decodePoint decodes one data point object, whose first token is
// first.
func decodePoint(dec *json.Decoder, first json.Token) (Item, error) {
	var it Item
	if first != json.Delim('{') {
		return it, fmt.Errorf("cannot deserialize a data point from %v", first)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return it, err
		}
		key, _ := tok.(string)
		switch key {
		case "metric":
			it.metric, err = scalarText(dec, key)
		case "value":
			it.value, err = scalarText(dec, key)
		case "timestamp":
			it.timestamp, err = timestamp(dec)
		case "tags":
			err = it.decodeTags(dec)
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return it, err
		}
	}
	_, err := dec.Token() // }
	return it, err
}

// scalarText is a String field's value: a string as it is, a number's
// text, true or false; nil for null. An object or array is an error.
func scalarText(dec *json.Decoder, field string) (*string, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	var s string
	switch v := tok.(type) {
	case nil:
		return nil, nil
	case string:
		s = v
	case json.Number:
		s = v.String()
	case bool:
		s = strconv.FormatBool(v)
	default:
		return nil, fmt.Errorf("cannot deserialize a String of field %q from %v", field, tok)
	}
	return &s, nil
}

// timestamp is the long timestamp field: an integer, a float truncated
// toward zero, a string of an integer ("" and null are 0).
func timestamp(dec *json.Decoder) (int64, error) {
	tok, err := dec.Token()
	if err != nil {
		return 0, err
	}
	switch v := tok.(type) {
	case nil:
		return 0, nil
	case json.Number:
		if i, err := strconv.ParseInt(v.String(), 10, 64); err == nil {
			return i, nil
		}
		f, err := strconv.ParseFloat(v.String(), 64)
		if err != nil || math.IsInf(f, 0) || f >= 0x1p63 || f < -0x1p63 {
			return 0, fmt.Errorf("numeric value (%s) out of range of long", v)
		}
		return int64(f), nil
	case string:
		s := strings.TrimSpace(v)
		if s == "" {
			return 0, nil
		}
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cannot deserialize value of type `long` from String %q: not a valid Long value", v)
		}
		return i, nil
	}
	return 0, fmt.Errorf("cannot deserialize value of type `long` from %v", tok)
}

// decodeTags decodes the tags object (null: none), keeping the order
// sent; a key sent again keeps its place and takes the later value.
func (it *Item) decodeTags(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		it.hasTags, it.tags, it.tagNull = false, nil, nil
		return nil
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("cannot deserialize a tag map from %v", tok)
	}
	it.hasTags, it.tags, it.tagNull = true, it.tags[:0], it.tagNull[:0]
	for dec.More() {
		ktok, err := dec.Token()
		if err != nil {
			return err
		}
		k, _ := ktok.(string)
		v, err := scalarText(dec, "tags")
		if err != nil {
			return err
		}
		tag, null := Tag{Key: k}, v == nil
		if v != nil {
			tag.Value = *v
		}
		if i := indexTag(it.tags, k); i >= 0 {
			it.tags[i], it.tagNull[i] = tag, null
			continue
		}
		it.tags, it.tagNull = append(it.tags, tag), append(it.tagNull, null)
	}
	_, err = dec.Token() // }
	return err
}

func indexTag(tags []Tag, k string) int {
	for i, t := range tags {
		if t.Key == k {
			return i
		}
	}
	return -1
}

// check sets Err or Point: IncomingDataPoint.validate, then the value and
// TSDB.addPoint's checks.
func (it *Item) check(maxTags int) {
	switch {
	case it.isNull:
		it.Err = &PointError{kind: kindArgument, msg: "Unexpected null datapoint encountered in set."}
	case it.metric == nil || *it.metric == "":
		it.Err = &PointError{kind: kindArgument, msg: "Metric name was empty"}
	case it.timestamp <= 0:
		it.Err = &PointError{kind: kindArgument, msg: "Invalid timestamp"}
	case it.value == nil || *it.value == "":
		it.Err = &PointError{kind: kindArgument, msg: "Empty value"}
	case !it.hasTags || len(it.tags) == 0:
		it.Err = &PointError{kind: kindArgument, msg: "Missing tags"}
	}
	if it.Err != nil {
		return
	}
	for i, null := range it.tagNull {
		if null {
			k := it.tags[i].Key
			it.Err = argumentError("Invalid tag value with key [" + k + "]: null")
			return
		}
	}
	it.Point = Point{Metric: *it.metric, Tags: it.tags, Timestamp: it.timestamp, Value: *it.value}
	it.Err = it.Point.encode(maxTags, true)
}

// PutParams are /api/put's query parameters, each on by its presence.
type PutParams struct {
	Summary, Details, Sync bool
	// SyncTimeout is sync_timeout in milliseconds; 0 when not given.
	SyncTimeout int
}

// PutAnswer is the answer to an /api/put whose points were checked
// (items) and written (the others than those with an Err, all stored),
// as GroupCB of a synchronous put writes it: without summary or
// details, 204 and no body, or 400 "One or more data points had errors";
// with either, 200 (400 when a point failed) and
// {"success":N,"failed":M}, details adding "errors" with each refused
// point and why, a sync_timeout "timeouts":0; members in the order the
// TSD's HashMap gives them.
func PutAnswer(p PutParams, items []Item) (status int, body []byte) {
	failed := 0
	for _, it := range items {
		if it.Err != nil {
			failed++
		}
	}
	if !p.Summary && !p.Details {
		if failed > 0 {
			return 400, ErrorBody(400, "One or more data points had errors",
				`Please see the TSD logs or append "details" to the put request`)
		}
		return 204, nil
	}
	keys := []string{"success", "failed"}
	if p.SyncTimeout > 0 {
		keys = append([]string{"timeouts"}, keys...)
	}
	if p.Details {
		keys = append(keys, "errors")
	}
	body = appendJSONMap(nil, keys, func(dst []byte, i int) []byte {
		switch keys[i] {
		case "success":
			return strconv.AppendInt(dst, int64(len(items)-failed), 10)
		case "failed":
			return strconv.AppendInt(dst, int64(failed), 10)
		case "timeouts":
			return append(dst, '0')
		}
		return appendErrors(dst, items)
	})
	if failed > 0 {
		return 400, body
	}
	return 200, body
}

// appendErrors appends details' "errors": [{"datapoint":…,"error":…}]
// for each refused point, in the body's order.
func appendErrors(dst []byte, items []Item) []byte {
	dst = append(dst, '[')
	n := 0
	for i := range items {
		it := &items[i]
		if it.Err == nil {
			continue
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		keys := []string{"error", "datapoint"}
		dst = appendJSONMap(dst, keys, func(dst []byte, k int) []byte {
			if keys[k] == "error" {
				return appendJSONString(dst, it.Err.Detail())
			}
			return it.appendDatapoint(dst)
		})
	}
	return append(dst, ']')
}

// appendDatapoint appends the data point as Jackson writes an
// IncomingDataPoint (its fields in their order, nulls left out).
func (it *Item) appendDatapoint(dst []byte) []byte {
	if it.isNull {
		return append(dst, "null"...)
	}
	dst = append(dst, '{')
	if it.metric != nil {
		dst = appendJSONString(append(dst, `"metric":`...), *it.metric)
		dst = append(dst, ',')
	}
	dst = strconv.AppendInt(append(dst, `"timestamp":`...), it.timestamp, 10)
	if it.value != nil {
		dst = appendJSONString(append(dst, `,"value":`...), *it.value)
	}
	if it.hasTags {
		keys := make([]string, len(it.tags))
		for i, t := range it.tags {
			keys[i] = t.Key
		}
		dst = append(dst, `,"tags":`...)
		dst = appendJSONMap(dst, keys, func(dst []byte, i int) []byte {
			if it.tagNull[i] {
				return append(dst, "null"...)
			}
			return appendJSONString(dst, it.tags[i].Value)
		})
	}
	return append(dst, '}')
}

// ErrorBody is a TSD's error JSON, {"error":{"code":…,"message":…,
// "details":…}} (details left out when empty; no Java stack trace).
func ErrorBody(code int, message, details string) []byte {
	b := strconv.AppendInt(append([]byte(nil), `{"error":{"code":`...), int64(code), 10)
	b = appendJSONString(append(b, `,"message":`...), message)
	if details != "" {
		b = appendJSONString(append(b, `,"details":`...), details)
	}
	return append(b, "}}"...)
}
