package mapping

import (
	"bytes"
	"regexp"
	"testing"
	"unicode/utf8"
)

// exactPattern compiles (?s)^<quoted b>\z.
func exactPattern(t testing.TB, b []byte) *regexp.Regexp {
	t.Helper()
	p := append([]byte(`(?s)^`), AppendRegexQuoted(nil, b)...)
	p = append(p, `\z`...)
	re, err := regexp.Compile(string(p))
	if err != nil {
		t.Fatalf("compile %q: %v", p, err)
	}
	return re
}

func TestAppendRegexQuoted(t *testing.T) {
	keys := []struct {
		name string
		key  []byte
	}{
		{"newline", []byte{0x00, 0x0A, 0x01}},
		{"NEL 0x85", []byte{0x00, 0x85, 0x00}},
		{`\E`, []byte{0x5C, 0x45, 0x00}},
		{`\EE (breaks OpenTSDB's quoting)`, []byte{0x5C, 0x45, 0x45}},
		{`\\E`, []byte{0x5C, 0x5C, 0x45}},
		{`\E\`, []byte{0x5C, 0x45, 0x5C}},
		{`\Q`, []byte{0x5C, 0x51, 0x00}},
		{"zeros", []byte{0x00, 0x00, 0x00}},
		{"0xFF", []byte{0xFF, 0xFF, 0xFF}},
		{"metacharacters", []byte(`.*+?()[]{}|^$`)},
		{"every byte", func() []byte {
			b := make([]byte, 256)
			for i := range b {
				b[i] = byte(i)
			}
			return b
		}()},
		{"empty", nil},
	}
	for _, k := range keys {
		t.Run(k.name, func(t *testing.T) {
			quoted := AppendRegexQuoted(nil, k.key)
			if len(quoted) != 4*len(k.key) {
				t.Fatalf("quoted %X as %d bytes, want %d", k.key, len(quoted), 4*len(k.key))
			}
			for _, c := range quoted {
				if c >= utf8.RuneSelf {
					t.Fatalf("quoted pattern %q is not ASCII", quoted)
				}
			}
			re := exactPattern(t, k.key)
			if !re.MatchString(Latin1String(k.key)) {
				t.Fatalf("%s does not match its own key %X", re, k.key)
			}
			for _, o := range keys {
				if bytes.Equal(o.key, k.key) {
					continue
				}
				if re.MatchString(Latin1String(o.key)) {
					t.Fatalf("%s matches the other key %X", re, o.key)
				}
			}
			// A key one byte longer or shorter does not match either.
			if re.MatchString(Latin1String(append(bytes.Clone(k.key), 0x45))) {
				t.Fatalf("%s matches a longer key", re)
			}
			if len(k.key) > 0 && re.MatchString(Latin1String(k.key[1:])) {
				t.Fatalf("%s matches a shorter key", re)
			}
		})
	}
}

// TestRegexRowKeyShape runs the OpenTSDB-shaped row-key filter over keys
// whose UIDs hold the awkward bytes: with (?s) every key byte is one '.'.
func TestRegexRowKeyShape(t *testing.T) {
	l := Layout{SaltWidth: 1, SaltBuckets: 256, MetricWidth: 3, TagKWidth: 3, TagVWidth: 3}
	tagk, tagv := []byte{0x5C, 0x45, 0x45}, []byte{0x0A, 0x85, 0xFF}
	p := []byte(`(?s)^.{8}(?:.{6})*`)
	p = AppendRegexQuoted(p, tagk)
	p = AppendRegexQuoted(p, tagv)
	p = append(p, `(?:.{6})*\z`...)
	re := regexp.MustCompile(string(p))
	for _, c := range []struct {
		name string
		tags []byte
		want bool
	}{
		{"only pair", append(bytes.Clone(tagk), tagv...), true},
		{"among others", bytes.Join([][]byte{{0, 0, 0x0A, 0x0A, 0x0A, 0x0A}, tagk, tagv, {0xFF, 0xFF, 0xFF, 0x85, 0x85, 0x85}}, nil), true},
		{"other value", append(bytes.Clone(tagk), 0x0A, 0x85, 0xFE), false},
		{"misaligned", bytes.Join([][]byte{{0, 0, 0}, tagk, tagv, {0, 0, 0}}, nil), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			key := l.AppendRowKey(nil, []byte{0x0A, 0x5C, 0x45}, 0x0A0A0A00, c.tags)
			if got := re.MatchString(Latin1String(key)); got != c.want {
				t.Fatalf("%s on %X = %v, want %v", re, key, got, c.want)
			}
		})
	}
}

func TestLatin1(t *testing.T) {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	runes := make([]rune, 256)
	for i := range runes {
		runes[i] = rune(i)
	}
	want := string(runes)
	if got := Latin1String(b); got != want {
		t.Fatalf("Latin1String = %q, want %q", got, want)
	}
	if got := AppendLatin1([]byte("x"), b); string(got) != "x"+want {
		t.Fatalf("AppendLatin1 = %q", got)
	}
	if Latin1String(nil) != "" {
		t.Fatal("Latin1String(nil) not empty")
	}
}
