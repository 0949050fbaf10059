package mapping

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf16"
)

// UIDMeta is OpenTSDB's UID metadata (src/meta/UIDMeta.java) as stored in
// the name:<kind>_meta cell of a UID's reverse row in tsdb-uid. The stored
// JSON is OpenTSDB's storage form, fields in this order, uid and name never
// written:
//
//	{"type":"METRIC","displayName":"","description":"","notes":"","created":1500000000,"custom":null}
//
// created is in Unix seconds; custom is null or an object of strings whose
// keys come in the iteration order of the java.util.HashMap OpenTSDB keeps
// them in. OpenTSDB's UIDMeta writes compare the raw bytes they read, so
// matching its bytes is a courtesy, not a requirement.
type UIDMeta struct {
	Type        string // METRIC, TAGK or TAGV
	DisplayName string
	Description string
	Notes       string
	Created     int64
	Custom      map[string]string // nil is written as null
	// order is the key order Custom was read in, for HashMap ties.
	order []string
}

// AppendUIDMetaJSON appends m in OpenTSDB's storage form, escaped as
// Jackson escapes strings: `"` and `\`, \b \t \n \f \r, other control
// characters as \u00XX; everything else, non-ASCII included, raw UTF-8.
func AppendUIDMetaJSON(dst []byte, m *UIDMeta) []byte {
	typ := m.Type
	if typ == "" {
		typ = "METRIC"
	}
	dst = append(dst, `{"type":`...)
	dst = appendJacksonString(dst, typ)
	dst = append(dst, `,"displayName":`...)
	dst = appendJacksonString(dst, m.DisplayName)
	dst = append(dst, `,"description":`...)
	dst = appendJacksonString(dst, m.Description)
	dst = append(dst, `,"notes":`...)
	dst = appendJacksonString(dst, m.Notes)
	dst = append(dst, `,"created":`...)
	dst = strconv.AppendInt(dst, m.Created, 10)
	dst = append(dst, `,"custom":`...)
	if m.Custom == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '{')
		for i, k := range javaHashMapOrder(m.Custom, m.order) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJacksonString(dst, k)
			dst = append(dst, ':')
			dst = appendJacksonString(dst, m.Custom[k])
		}
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

const hexDigits = "0123456789ABCDEF"

func appendJacksonString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\b':
			dst = append(dst, '\\', 'b')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\f':
			dst = append(dst, '\\', 'f')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// javaHashMapOrder returns the keys of m in the order a java.util.HashMap
// built as OpenTSDB builds its custom map (new HashMap<>(source): a table
// of the next power of two at or above size/0.75+1) iterates them: by
// bucket, the spread String.hashCode (h ^ h>>>16) masked to the table;
// within a bucket in insertion order, taken here as the order of the
// source, a HashMap of the default 16 buckets filled in the order keys were
// read (order; then by name for keys not in it). Trees of colliding keys
// (8 or more in a bucket) are not modelled.
func javaHashMapOrder(m map[string]string, order []string) []string {
	keys := make([]string, 0, len(m))
	for _, k := range order {
		if _, ok := m[k]; ok && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	var rest []string
	for k := range m {
		if !slices.Contains(keys, k) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	keys = append(keys, rest...)
	table := 1
	for float64(table) < float64(int(float64(len(m))/0.75+1)) {
		table <<= 1
	}
	src := func(k string) uint32 { return javaSpreadHash(k) & 15 }
	dst := func(k string) uint32 { return javaSpreadHash(k) & uint32(table-1) }
	// Source order: a default HashMap (16 buckets) of keys in read order.
	slices.SortStableFunc(keys, func(a, b string) int { return int(src(a)) - int(src(b)) })
	slices.SortStableFunc(keys, func(a, b string) int { return int(dst(a)) - int(dst(b)) })
	return keys
}

// javaSpreadHash is java.util.HashMap's hash of a String key:
// String.hashCode over UTF-16 code units, then h ^ (h >>> 16).
func javaSpreadHash(s string) uint32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	uh := uint32(h)
	return uh ^ uh>>16
}

// ParseUIDMeta parses a stored UIDMeta as OpenTSDB reads it: unknown fields
// are ignored, missing ones keep their zero value, a missing type is
// METRIC; custom must be null or an object of strings.
func ParseUIDMeta(b []byte) (UIDMeta, error) {
	var raw struct {
		Type        *string         `json:"type"`
		DisplayName string          `json:"displayName"`
		Description string          `json:"description"`
		Notes       string          `json:"notes"`
		Created     int64           `json:"created"`
		Custom      json.RawMessage `json:"custom"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return UIDMeta{}, fmt.Errorf("uid meta %.100q: %w", b, err)
	}
	m := UIDMeta{Type: "METRIC", DisplayName: raw.DisplayName, Description: raw.Description, Notes: raw.Notes, Created: raw.Created}
	if raw.Type != nil {
		switch *raw.Type {
		case "METRIC", "TAGK", "TAGV":
			m.Type = *raw.Type
		default:
			return UIDMeta{}, fmt.Errorf("uid meta: type %q, want METRIC, TAGK or TAGV", *raw.Type)
		}
	}
	if len(raw.Custom) > 0 && string(raw.Custom) != "null" {
		if err := json.Unmarshal(raw.Custom, &m.Custom); err != nil {
			return UIDMeta{}, fmt.Errorf("uid meta: custom %.100s: %w", raw.Custom, err)
		}
		// The order keys were read in, for the HashMap's ties.
		m.order = customKeyOrder(raw.Custom)
	}
	return m, nil
}

// SetPrometheus records Prometheus metadata: description = help, custom
// "type" and "unit" (removed when empty), everything else kept. changed
// reports whether anything differs from before.
func (m *UIDMeta) SetPrometheus(typ, help, unit string) (changed bool) {
	if m.Description != help {
		m.Description, changed = help, true
	}
	for _, kv := range [2][2]string{{"type", typ}, {"unit", unit}} {
		k, v := kv[0], kv[1]
		old, had := m.Custom[k]
		switch {
		case v == "" && had:
			delete(m.Custom, k)
			changed = true
		case v != "" && (!had || old != v):
			if m.Custom == nil {
				m.Custom = map[string]string{}
			}
			m.Custom[k] = v
			changed = true
		}
	}
	return changed
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// customKeyOrder returns the keys of the JSON object custom in the order
// they appear, for the HashMap's ties. It is best effort: the keys read
// before a token that does not parse (Unmarshal accepted the object, so
// none should) are returned.
func customKeyOrder(custom []byte) []string {
	var order []string
	dec := json.NewDecoder(bytesReader(custom))
	if _, err := dec.Token(); err != nil {
		return nil
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return order
		}
		if k, ok := tok.(string); ok {
			order = append(order, k)
		}
		if _, err := dec.Token(); err != nil {
			return order
		}
	}
	return order
}
