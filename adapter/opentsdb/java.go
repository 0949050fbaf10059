package opentsdb

import (
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// javaHashCode is java.lang.String.hashCode: s's UTF-16 code units
// c[0]*31^(n-1) + ... + c[n-1], in 32-bit arithmetic.
func javaHashCode(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			hi, lo := utf16.EncodeRune(r)
			h = 31*h + hi
			h = 31*h + lo
			continue
		}
		h = 31*h + r
	}
	return h
}

// hashMapOrder returns the order in which a java.util.HashMap made with
// its default capacity iterates keys put in that order (distinct).
func hashMapOrder(keys []string) []int { return hashMapOrderCap(keys, 16) }

// hashMapOrderCap is hashMapOrder for a HashMap made with capacity
// initial: by bucket, (h ^ h>>>16) & (capacity-1), and in a bucket by
// insertion. The table starts at the power of two at or above initial
// (1 for 0) and doubles each time a put leaves more keys than three
// quarters of it (its threshold truncated). (Buckets of 8 keys or more
// turn into trees in tables of 64 and more; no map here is that large.)
func hashMapOrderCap(keys []string, initial int) []int {
	capacity := 1
	for capacity < initial {
		capacity *= 2
	}
	for len(keys) > capacity*3/4 {
		capacity *= 2
	}
	bucket := func(k string) int {
		h := uint32(javaHashCode(k))
		return int((h ^ h>>16) & uint32(capacity-1))
	}
	order := make([]int, 0, len(keys))
	for b := 0; b < capacity; b++ {
		for i, k := range keys {
			if bucket(k) == b {
				order = append(order, i)
			}
		}
	}
	return order
}

// Tag is a tag of a point, as sent.
type Tag struct{ Key, Value string }

// tagsString renders tags as a java.util.HashMap of them prints:
// {k=v, k2=v2} in hashMapOrder.
func tagsString(tags []Tag) string {
	keys := make([]string, len(tags))
	for i, t := range tags {
		keys[i] = t.Key
	}
	var sb strings.Builder
	sb.WriteByte('{')
	for n, i := range hashMapOrder(keys) {
		if n > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(tags[i].Key)
		sb.WriteByte('=')
		sb.WriteString(tags[i].Value)
	}
	sb.WriteByte('}')
	return sb.String()
}

// appendJSONString appends s as a JSON string the way Jackson writes it:
// '"' and '\' escaped, control characters as \b \t \n \f \r or \u00XX,
// everything else (non-ASCII included) as it is.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			dst = utf8.AppendRune(dst, r)
			i += n
			continue
		}
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\r':
			dst = append(dst, '\\', 'r')
		default:
			if c < 0x20 {
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			} else {
				dst = append(dst, c)
			}
		}
		i++
	}
	return append(dst, '"')
}

// appendJSONMap appends the object of keys and their values (each
// appended by val), its members in hashMapOrder, as Jackson writes a
// HashMap.
func appendJSONMap(dst []byte, keys []string, val func(dst []byte, i int) []byte) []byte {
	dst = append(dst, '{')
	for n, i := range hashMapOrder(keys) {
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, keys[i])
		dst = append(dst, ':')
		dst = val(dst, i)
	}
	return append(dst, '}')
}

// javaBytes renders b as java.util.Arrays.toString(byte[]) does: signed
// bytes, "[1, -2]".
func javaBytes(b []byte) string {
	var sb strings.Builder
	sb.WriteByte('[')
	for i, c := range b {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(strconv.Itoa(int(int8(c))))
	}
	sb.WriteByte(']')
	return sb.String()
}

// latin1 decodes b as ISO-8859-1, as a TSD decodes a telnet line: each
// byte one character.
func latin1(b []byte) string {
	ascii := true
	for _, c := range b {
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return string(b)
	}
	rs := make([]rune, len(b))
	for i, c := range b {
		rs[i] = rune(c)
	}
	return string(rs)
}
