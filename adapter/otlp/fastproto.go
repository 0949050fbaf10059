package otlp

import (
	"bytes"
	"encoding/binary"
	"math"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"google.golang.org/protobuf/encoding/protowire"
)

// field is a protobuf field as read: its number, wire type, and its value
// (u: a varint's or a fixed one's; b: a length-delimited one's).
type field struct {
	num protowire.Number
	typ protowire.Type
	u   uint64
	b   []byte
}

// nextField reads the field at the start of b and returns it with the
// bytes after it; false for bytes that are not a field (groups included).
// One-byte tags, lengths and varints are read inline.
func nextField(b []byte) (field, []byte, bool) {
	var f field
	if len(b) > 0 && b[0] >= 8 && b[0] < 0x80 {
		f.num, f.typ = protowire.Number(b[0]>>3), protowire.Type(b[0]&7)
		b = b[1:]
	} else {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return field{}, nil, false
		}
		f.num, f.typ, b = num, typ, b[n:]
	}
	n := -1
	switch f.typ {
	case protowire.BytesType:
		if len(b) > 0 && b[0] < 0x80 {
			if l := int(b[0]); l < len(b) {
				f.b = b[1 : 1+l : 1+l]
				return f, b[1+l:], true
			}
			return field{}, nil, false
		}
		f.b, n = protowire.ConsumeBytes(b)
	case protowire.Fixed64Type:
		if len(b) >= 8 {
			f.u = binary.LittleEndian.Uint64(b)
			return f, b[8:], true
		}
	case protowire.VarintType:
		if len(b) > 0 && b[0] < 0x80 {
			f.u = uint64(b[0])
			return f, b[1:], true
		}
		f.u, n = protowire.ConsumeVarint(b)
	case protowire.Fixed32Type:
		var v uint32
		v, n = protowire.ConsumeFixed32(b)
		f.u = uint64(v)
	}
	if n < 0 {
		return field{}, nil, false
	}
	return f, b[n:], true
}

// fields calls fn with each field of msg, in order; false when msg does
// not decode or fn returns false. (The per-point readers loop over
// nextField themselves: a closure call a field costs there.)
func fields(msg []byte, fn func(field) bool) bool {
	for len(msg) > 0 {
		f, rest, ok := nextField(msg)
		if !ok || !fn(f) {
			return false
		}
		msg = rest
	}
	return true
}

// readAttrs appends the attributes (KeyValue fields numbered num) of msg
// to dst in wire order; false for a value the fast path does not take or
// more than the attributes allowed.
func (r *fastRun) readAttrs(dst []attr, msg []byte, num protowire.Number) ([]attr, bool) {
	start := len(dst)
	tag := byte(num)<<3 | byte(protowire.BytesType)
	for b := msg; len(b) > 0; {
		if len(b) > 2 && b[0] == tag && b[1] < 0x80 && int(b[1]) < len(b)-1 {
			if a, ok := plainKeyValue(b[2 : 2+b[1]]); ok {
				dst = append(dst, a)
				b = b[2+int(b[1]):]
				continue
			}
		}
		f, rest, ok := nextField(b)
		if !ok {
			return dst, false
		}
		b = rest
		if f.num != num {
			continue
		}
		a, ok := r.keyValue(f.b)
		if !ok || f.typ != protowire.BytesType {
			return dst, false
		}
		dst = append(dst, a)
	}
	return dst, len(dst)-start <= r.maxAttrs
}

// plainKeyValue reads the common KeyValue at once: a key and a string
// value, each one field with a one-byte length, in either order (pdata
// writes the value first):
//
//	0x0a len key ‖ 0x12 len AnyValue{0x0a len string}, or the two swapped
//
// false for any other (keyValue's to read).
func plainKeyValue(kv []byte) (attr, bool) {
	var a attr
	for n := 0; n < 2; n++ {
		if len(kv) < 2 || kv[1] >= 0x80 || 2+int(kv[1]) > len(kv) {
			return attr{}, false
		}
		v, tag := kv[2:2+int(kv[1]):2+int(kv[1])], kv[0]
		kv = kv[2+len(v):]
		switch {
		case tag == 0x0a && a.name == nil && len(v) > 0:
			a.name = v
		case tag == 0x12 && a.value == nil && len(v) >= 2 && v[0] == 0x0a && 2+int(v[1]) == len(v):
			a.value = v[2:]
		default:
			return attr{}, false
		}
	}
	return a, len(kv) == 0
}

// keyValue reads a KeyValue (key 1, value 2), its value as pcommon's
// Value.AsString gives it.
func (r *fastRun) keyValue(msg []byte) (attr, bool) {
	var a attr
	keys, values := 0, 0
	for len(msg) > 0 {
		f, rest, ok := nextField(msg)
		if !ok {
			return a, false
		}
		msg = rest
		switch f.num {
		case 1:
			keys++
			a.name = f.b
			if f.typ != protowire.BytesType {
				return a, false
			}
		case 2:
			values++
			if a.value, ok = r.anyValue(f.b); !ok || f.typ != protowire.BytesType {
				return a, false
			}
		case 3: // key_strindex (profiles' dictionary): the general path's
			return a, false
		}
	}
	return a, keys <= 1 && values <= 1 && len(a.name) > 0
}

// anyValue reads an AnyValue of a string (1), a bool (2), an int (3) or
// a double (4) as its string; none is "".
func (r *fastRun) anyValue(msg []byte) ([]byte, bool) {
	st := r.st
	if len(msg) == 0 {
		return nil, true
	}
	f, rest, ok := nextField(msg)
	if !ok || len(rest) > 0 {
		return nil, false // not one field: the general path's
	}
	n := len(st.values)
	switch {
	case f.num == 1 && f.typ == protowire.BytesType:
		return f.b, true
	case f.num == 2 && f.typ == protowire.VarintType:
		st.values = strconv.AppendBool(st.values, f.u != 0)
	case f.num == 3 && f.typ == protowire.VarintType:
		st.values = strconv.AppendInt(st.values, int64(f.u), 10)
	case f.num == 4 && f.typ == protowire.Fixed64Type:
		st.values = append(st.values, pcommon.NewValueDouble(math.Float64frombits(f.u)).AsString()...)
	case f.num >= 5 && f.num <= 7 && f.typ == protowire.BytesType:
		// An array, a map or bytes: rare, and pdata's AsString of what
		// they hold (JSON, base64) made from the same raw values.
		raw, ok := rawValue(msg, 0)
		if !ok {
			return nil, false
		}
		v := pcommon.NewValueEmpty()
		if err := v.FromRaw(raw); err != nil {
			return nil, false
		}
		st.values = append(st.values, v.AsString()...)
	default:
		return nil, false
	}
	return st.values[n:], true
}

// maxRawDepth bounds the nesting of the arrays and maps rawValue reads;
// deeper ones are the general path's.
const maxRawDepth = 32

// rawValue reads an AnyValue as pcommon's Value.AsRaw gives it: a
// string, bool, int64, float64, []byte, []any (ArrayValue: values 1), a
// map[string]any (KeyValueList: values 1, a later key over an earlier
// one), nil for none. False for a value of more than one field, an
// unknown kind, or too deep.
func rawValue(msg []byte, depth int) (any, bool) {
	if len(msg) == 0 {
		return nil, true
	}
	f, rest, ok := nextField(msg)
	if !ok || len(rest) > 0 || depth > maxRawDepth {
		return nil, false
	}
	switch {
	case f.num == 1 && f.typ == protowire.BytesType:
		return string(f.b), true
	case f.num == 2 && f.typ == protowire.VarintType:
		return f.u != 0, true
	case f.num == 3 && f.typ == protowire.VarintType:
		return int64(f.u), true
	case f.num == 4 && f.typ == protowire.Fixed64Type:
		return math.Float64frombits(f.u), true
	case f.num == 7 && f.typ == protowire.BytesType:
		return bytes.Clone(f.b), true
	case f.num == 5 && f.typ == protowire.BytesType:
		out := []any{}
		ok := fields(f.b, func(g field) bool {
			if g.num != 1 {
				return true
			}
			v, ok := rawValue(g.b, depth+1)
			out = append(out, v)
			return ok && g.typ == protowire.BytesType
		})
		return out, ok
	case f.num == 6 && f.typ == protowire.BytesType:
		out := map[string]any{}
		ok := fields(f.b, func(g field) bool {
			if g.num != 1 {
				return true
			}
			k, v, ok := rawKeyValue(g.b, depth+1)
			out[k] = v
			return ok && g.typ == protowire.BytesType
		})
		return out, ok
	}
	return nil, false
}

// rawKeyValue reads a KeyValue of a map (key 1, value 2) for rawValue.
func rawKeyValue(msg []byte, depth int) (string, any, bool) {
	var k string
	var v any
	ok := fields(msg, func(f field) bool {
		switch f.num {
		case 1:
			k = string(f.b)
			return f.typ == protowire.BytesType
		case 2:
			var ok bool
			v, ok = rawValue(f.b, depth)
			return ok && f.typ == protowire.BytesType
		case 3: // key_strindex: the general path's
			return false
		}
		return true
	})
	return k, v, ok
}
