package mapping

import (
	"unicode/utf8"
)

// How names are stored in tsdb-uid.
//
// OpenTSDB encodes every metric, tag name and tag value in ISO-8859-1
// (Latin-1): one byte per character U+0000..U+00FF. Prometheus names are
// UTF-8. promhbase stores a name so that every name OpenTSDB can represent
// has the same bytes on both sides, and every other name stays readable:
//
//   - a name of ASCII characters only: its bytes (the same in both);
//   - a name whose characters are all in U+0000..U+00FF: its Latin-1
//     bytes, as OpenTSDB writes it (café is 63 61 66 E9), unless those
//     bytes happen to be valid UTF-8 (Ã© is C3 A9, which reads as é):
//     then its UTF-8 bytes, so that the name reads back unchanged;
//   - any other name (a character beyond U+00FF, which OpenTSDB cannot
//     represent: it writes '?'): its UTF-8 bytes.
//
// A stored name is read as UTF-8 when its bytes are valid UTF-8 and as
// Latin-1 otherwise. Reading what promhbase writes gives the name back in
// every case. A name OpenTSDB wrote in Latin-1 reads correctly unless its
// Latin-1 bytes are valid UTF-8 (non-ASCII characters that only appear in
// mojibake, such as Ã followed by ©); those read as the UTF-8 text.
//
// Versions of promhbase before this rule stored every name as UTF-8. Such
// a name (café as 63 61 66 C3 A9) is its legacy form: lookups by name try
// the stored form first, then the legacy form, and a name that exists in
// legacy form keeps its UID for new writes, so its series do not split.

// StoredNames returns the bytes name is stored as in tsdb-uid, and its
// legacy form when that differs (see above).
func StoredNames(name string) (stored, legacy string) {
	ascii, latin1 := true, true
	for _, r := range name {
		if r >= utf8.RuneSelf {
			ascii = false
		}
		if r > 0xFF {
			latin1 = false
			break
		}
	}
	if ascii || !latin1 {
		return name, ""
	}
	b := make([]byte, 0, len(name))
	for _, r := range name {
		b = append(b, byte(r))
	}
	if utf8.Valid(b) {
		return name, ""
	}
	return string(b), name
}

// NameFromStored returns the name whose stored bytes are b (a tsdb-uid
// row key or name cell): b as UTF-8 when valid, else b as Latin-1.
func NameFromStored(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r)
}

// NameLenFromStored returns len(NameFromStored(b)) without making the
// string.
func NameLenFromStored(b []byte) int {
	if utf8.Valid(b) {
		return len(b)
	}
	n := len(b)
	for _, c := range b {
		if c >= utf8.RuneSelf {
			n++ // a Latin-1 byte above 0x7F is two bytes in UTF-8
		}
	}
	return n
}

// StoredName returns the bytes name is written as in tsdb-uid.
func StoredName(name string) []byte {
	s, _ := StoredNames(name)
	return []byte(s)
}
