package opentsdb

import (
	"bytes"
	"strconv"
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
	tagNull         map[int]bool // tags[i] was JSON null; nil: none
	hasTags, isNull bool         // a tags object was sent; the element was null
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
	p := &jsonParser{b: content}
	items := make([]Item, 0, bytes.Count(content, []byte(`"metric"`)))
	var err error
	if content[0] == '{' {
		var it Item
		if it, err = p.point(); err == nil {
			items = append(items, it)
		}
	} else {
		items, err = p.array(items)
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

// array reads an array of data points (or nulls). What follows it is
// not read, as Jackson leaves trailing content alone.
func (p *jsonParser) array(items []Item) ([]Item, error) {
	err := p.elements(func() error {
		switch c := p.ws(); c {
		case 'n':
			if err := p.literal("null"); err != nil {
				return err
			}
			items = append(items, Item{isNull: true})
		case '{':
			it, err := p.point()
			if err != nil {
				return err
			}
			items = append(items, it)
		default:
			return p.errorf("cannot deserialize a data point from '%c'", c)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return items, nil
}

// point reads one data point object: the fields an IncomingDataPoint
// binds (a field sent twice: the later), the others skipped.
func (p *jsonParser) point() (Item, error) {
	var it Item
	err := p.members(func(name string) error {
		var err error
		switch name {
		case "metric":
			it.metric, err = p.scalar(name)
		case "value":
			it.value, err = p.scalar(name)
		case "timestamp":
			it.timestamp, err = p.timestamp()
		case "tags":
			err = p.tags(&it)
		default:
			err = p.skip()
		}
		return err
	})
	return it, err
}

// tags reads the tags object (null: none), keeping the order sent; a key
// sent again keeps its place and takes the later value.
func (p *jsonParser) tags(it *Item) error {
	if p.ws() == 'n' {
		it.hasTags, it.tags, it.tagNull = false, nil, nil
		return p.literal("null")
	}
	if p.ws() != '{' {
		if p.i >= len(p.b) {
			return errJSONEnd
		}
		return p.errorf("cannot deserialize a tag map from '%c'", p.b[p.i])
	}
	// The tags of every point share one array (a later one's growth
	// leaves the earlier points' slices as they are).
	start := len(p.tagBuf)
	it.hasTags, it.tags, it.tagNull = true, nil, nil
	defer func() { it.tags = p.tagBuf[start:len(p.tagBuf):len(p.tagBuf)] }()
	return p.members(func(k string) error {
		v, err := p.scalar("tags")
		if err != nil {
			return err
		}
		tag, null := Tag{Key: k}, v == nil
		if v != nil {
			tag.Value = *v
		}
		i := indexTag(p.tagBuf[start:], k)
		if i < 0 {
			i = len(p.tagBuf) - start
			p.tagBuf = append(p.tagBuf, tag)
		} else {
			p.tagBuf[start+i] = tag
		}
		switch {
		case null:
			if it.tagNull == nil {
				it.tagNull = map[int]bool{}
			}
			it.tagNull[i] = true
		case it.tagNull != nil:
			delete(it.tagNull, i)
		}
		return nil
	})
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
	for i := range it.tags {
		if it.tagNull[i] {
			it.Err = argumentError("Invalid tag value with key [" + it.tags[i].Key + "]: null")
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
