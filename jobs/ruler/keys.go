package ruler

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxNameBytes is the longest rule namespace or group name, in bytes: two
// of them and the kind byte stay far below HBase's row-key limit
// (32767 bytes), and an object store's key as Mimir names a group
// (base64 of each, 1024 bytes in S3) holds names of about this size.
const MaxNameBytes = 1024

// RowKindGroup and RowKindLease are the kinds of the rows of a group: its
// rule-file YAML, and its evaluation lease (see the package doc).
const (
	RowKindGroup = rowKindGroup
	RowKindLease = rowKindLease
)

var (
	// ErrInvalidKey is wrapped by ParseKey's errors.
	ErrInvalidKey = errors.New("ruler: invalid rules row key")
	// ErrInvalidName is wrapped by CheckName's errors.
	ErrInvalidName = errors.New("ruler: invalid name")
)

// CheckName reports whether s can be a rule namespace or group name
// (what names which one, for the error): not empty, valid UTF-8, no 0x00
// byte (the key separator), at most MaxNameBytes bytes. The error wraps
// ErrInvalidName.
func CheckName(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%s is empty: %w", what, ErrInvalidName)
	case len(s) > MaxNameBytes:
		return fmt.Errorf("%s of %d bytes is longer than %d: %w", what, len(s), MaxNameBytes, ErrInvalidName)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s %q is not valid UTF-8: %w", what, s, ErrInvalidName)
	case strings.IndexByte(s, keySeparator) >= 0:
		return fmt.Errorf("%s %q holds a 0x00 byte: %w", what, s, ErrInvalidName)
	}
	return nil
}

// AppendKey appends to dst the row key of a group's row of kind
// (RowKindGroup or RowKindLease) and returns the extended slice:
//
//	kind      1 byte: 'g' (the group) or 'l' (its lease)
//	namespace the rule namespace's UTF-8 bytes (no 0x00)
//	0x00      1 byte: the separator
//	group     the group name's UTF-8 bytes (no 0x00), to the key's end
//
// Keys of one kind sort by namespace, then by group name (bytewise): a
// namespace's groups are the rows that start with kind, namespace and
// 0x00 (NamespacePrefix). The names must pass CheckName; AppendKey does
// not check them.
func AppendKey(dst []byte, kind byte, namespace, group string) []byte {
	dst = append(dst, kind)
	dst = append(dst, namespace...)
	dst = append(dst, keySeparator)
	return append(dst, group...)
}

// AppendNamespacePrefix appends to dst the prefix that every row key of
// kind in namespace starts with: kind, namespace, 0x00.
func AppendNamespacePrefix(dst []byte, kind byte, namespace string) []byte {
	dst = append(dst, kind)
	dst = append(dst, namespace...)
	return append(dst, keySeparator)
}

// ParseKey splits a row key that AppendKey made. The strings are copies
// (the key's memory may be reused). It fails, wrapping ErrInvalidKey, on
// a key of another kind than 'g' or 'l', without the separator, with an
// empty, too long or not UTF-8 name, or with a second 0x00.
func ParseKey(key []byte) (kind byte, namespace, group string, err error) {
	if len(key) < 4 { // kind, one byte of namespace, 0x00, one byte of group
		return 0, "", "", fmt.Errorf("%d bytes, fewer than 4: %w", len(key), ErrInvalidKey)
	}
	kind = key[0]
	if kind != RowKindGroup && kind != RowKindLease {
		return 0, "", "", fmt.Errorf("key %x: kind 0x%02x is neither 'g' nor 'l': %w", key, kind, ErrInvalidKey)
	}
	rest := key[1:]
	i := bytes.IndexByte(rest, keySeparator)
	if i < 0 {
		return 0, "", "", fmt.Errorf("key %x: no 0x00 after the namespace: %w", key, ErrInvalidKey)
	}
	ns, g := rest[:i], rest[i+1:]
	if err := CheckName("namespace", string(ns)); err != nil {
		return 0, "", "", fmt.Errorf("key %x: %w: %w", key, ErrInvalidKey, err)
	}
	if err := CheckName("group", string(g)); err != nil {
		return 0, "", "", fmt.Errorf("key %x: %w: %w", key, ErrInvalidKey, err)
	}
	return kind, string(ns), string(g), nil
}
