// Package tenant holds tenant IDs as Mimir knows them: the rules an ID
// follows, the X-Scope-OrgID header (one tenant, or several joined by `|`
// for a federated read), and the reversible mapping of an ID to the name
// of the HBase namespace that holds the tenant's tables.
//
// Namespace names. HBase takes only [a-zA-Z0-9_] in a namespace name,
// Mimir's IDs also `! - . * ' ( )`. A tenant's namespace is `t_` followed
// by the ID with every letter and digit kept and every other byte b
// written as `_` and two lowercase hex digits (`_` itself is `_5f`):
//
//	team-a      -> t_team_2da
//	Prod.EU     -> t_Prod_2eEU
//	a_b         -> t_a_5fb
//
// The prefix keeps tenants out of HBase's own namespaces (`default`,
// `hbase`); the mapping is one to one, so a namespace names its tenant
// back (IDFromNamespace). An ID whose name would pass MaxNamespaceLength
// (an ID of more than 82 bytes made of punctuation only) is refused.
package tenant

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// MaxIDLength is the longest tenant ID, in bytes (Mimir's).
const MaxIDLength = 150

// MaxNamespaceLength bounds a tenant's namespace name: HBase keeps a
// namespace as a directory, whose name a filesystem bounds at 255 bytes.
const MaxNamespaceLength = 250

// NamespacePrefix starts every tenant's namespace name.
const NamespacePrefix = "t_"

// Header is the HTTP header that names the tenant.
const Header = "X-Scope-OrgID"

// Separator joins the tenants of a federated read in Header.
const Separator = "|"

// reserved are IDs Mimir keeps for itself.
var reserved = []string{"__mimir_cluster"}

// ErrInvalidID means an ID breaks the rules (400); ErrNoID that a request
// names none (401).
var (
	ErrInvalidID = errors.New("invalid tenant ID")
	ErrNoID      = errors.New("no org id")
)

// ValidateID checks id against Mimir's rules: 1 to 150 bytes of
// `0-9 a-z A-Z ! - _ . * ' ( )`, not `.` or `..`, not a reserved ID; and
// that its namespace name fits.
func ValidateID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty", ErrInvalidID)
	case len(id) > MaxIDLength:
		return fmt.Errorf("%w: %d bytes, at most %d", ErrInvalidID, len(id), MaxIDLength)
	case id == "." || id == "..":
		return fmt.Errorf("%w: %q", ErrInvalidID, id)
	case slices.Contains(reserved, id):
		return fmt.Errorf("%w: %q is reserved", ErrInvalidID, id)
	}
	for i := 0; i < len(id); i++ {
		if !allowed(id[i]) {
			return fmt.Errorf("%w: %q has the character %q at byte %d (allowed: letters, digits and ! - _ . * ' ( ))", ErrInvalidID, id, rune(id[i]), i)
		}
	}
	if n := namespaceLength(id); n > MaxNamespaceLength {
		return fmt.Errorf("%w: %q would name an HBase namespace of %d characters, at most %d", ErrInvalidID, id, n, MaxNamespaceLength)
	}
	return nil
}

func allowed(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!-_.*'()", c) >= 0
}

func alnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func namespaceLength(id string) int {
	n := len(NamespacePrefix)
	for i := 0; i < len(id); i++ {
		if alnum(id[i]) {
			n++
		} else {
			n += 3
		}
	}
	return n
}

// ParseOrgID returns the tenants a header value names: one, or several
// joined by `|` (sorted, each once), each valid. An empty value is ErrNoID.
func ParseOrgID(v string) ([]string, error) {
	if v == "" {
		return nil, ErrNoID
	}
	ids := strings.Split(v, Separator)
	for _, id := range ids {
		if err := ValidateID(id); err != nil {
			return nil, err
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

const hexDigits = "0123456789abcdef"

// AppendNamespace appends the namespace name of id, a valid ID, to dst.
func AppendNamespace(dst []byte, id string) []byte {
	dst = append(dst, NamespacePrefix...)
	for i := 0; i < len(id); i++ {
		c := id[i]
		if alnum(c) {
			dst = append(dst, c)
			continue
		}
		dst = append(dst, '_', hexDigits[c>>4], hexDigits[c&0xF])
	}
	return dst
}

// Namespace returns the namespace name of id, a valid ID.
func Namespace(id string) string { return string(AppendNamespace(nil, id)) }

// IDFromNamespace returns the tenant whose namespace is ns, or an error
// when ns is not a tenant's namespace.
func IDFromNamespace(ns string) (string, error) {
	rest, ok := strings.CutPrefix(ns, NamespacePrefix)
	if !ok {
		return "", fmt.Errorf("namespace %q is not a tenant's: no %q prefix", ns, NamespacePrefix)
	}
	id := make([]byte, 0, len(rest))
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if alnum(c) {
			id = append(id, c)
			continue
		}
		if c != '_' || i+2 >= len(rest) {
			return "", fmt.Errorf("namespace %q is not a tenant's: byte %d", ns, len(NamespacePrefix)+i)
		}
		hi, lo := strings.IndexByte(hexDigits, rest[i+1]), strings.IndexByte(hexDigits, rest[i+2])
		if hi < 0 || lo < 0 {
			return "", fmt.Errorf("namespace %q is not a tenant's: escape at byte %d", ns, len(NamespacePrefix)+i)
		}
		id = append(id, byte(hi<<4|lo))
		i += 2
	}
	s := string(id)
	if err := ValidateID(s); err != nil {
		return "", fmt.Errorf("namespace %q: %w", ns, err)
	}
	if Namespace(s) != ns {
		return "", fmt.Errorf("namespace %q is not a tenant's: not in the canonical form", ns)
	}
	return s, nil
}
