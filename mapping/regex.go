package mapping

import (
	"slices"
	"strings"
	"unicode/utf8"
)

const lowerHex = "0123456789abcdef"

// AppendRegexQuoted appends to dst a regular-expression fragment that
// matches exactly the byte string b in a row key decoded as ISO-8859-1 (byte
// 0xHH is the code point U+00HH, the way HBase's RegexStringComparator reads
// keys with charset ISO-8859-1). Every byte is written as \xhh with two
// lowercase hex digits, which java.util.regex and Go's regexp both read as
// the literal code point U+00hh, whatever the byte and whatever follows, in
// or outside a character class. The fragment is pure ASCII.
//
// It deliberately avoids \Q...\E: OpenTSDB's quoting of UIDs inside \Q...\E
// does not match a UID containing the bytes 5C 45 45. Anchor whole-key
// patterns with (?s)^ and \z rather than $: without MULTILINE, Java's $ also
// matches before a final line terminator, and 0x0A, 0x0D and 0x85 are line
// terminators in a Latin-1 key. It appends 4*len(b) bytes and does not
// allocate when dst has room for them.
func AppendRegexQuoted(dst, b []byte) []byte {
	dst = slices.Grow(dst, 4*len(b))
	for _, c := range b {
		dst = append(dst, '\\', 'x', lowerHex[c>>4], lowerHex[c&0xF])
	}
	return dst
}

// AppendLatin1 appends b decoded as ISO-8859-1 and encoded as UTF-8: each
// byte 0xHH becomes the code point U+00HH (bytes below 0x80 stay as they are,
// the others take two bytes). This is the string a Go regexp must match to
// behave like a Java regex on a key read with charset ISO-8859-1. It does not
// allocate when dst has room for 2*len(b) more bytes.
func AppendLatin1(dst, b []byte) []byte {
	for _, c := range b {
		if c < utf8.RuneSelf {
			dst = append(dst, c)
		} else {
			dst = append(dst, 0xC0|c>>6, 0x80|c&0x3F)
		}
	}
	return dst
}

// Latin1String returns b decoded as ISO-8859-1 (see [AppendLatin1]).
func Latin1String(b []byte) string {
	n := len(b)
	for _, c := range b {
		if c >= utf8.RuneSelf {
			n++
		}
	}
	var sb strings.Builder
	sb.Grow(n)
	for _, c := range b {
		sb.WriteRune(rune(c))
	}
	return sb.String()
}
