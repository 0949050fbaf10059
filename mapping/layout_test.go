package mapping

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRowKeyLayout freezes the widths of OpenTSDB's row key (Const.java:
// TIMESTAMP_BYTES = 4, MAX_TIMESPAN = 3600, SALT_WIDTH = 0, SALT_BUCKETS = 20,
// default UID widths 3). A failure means a format break.
func TestRowKeyLayout(t *testing.T) {
	l := DefaultLayout()
	if err := l.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"TimestampBytes", TimestampBytes, 4},
		{"MaxTimespan", MaxTimespan, 3600},
		{"default salt width", l.SaltWidth, 0},
		{"default salt buckets", l.SaltBuckets, 20},
		{"default metric width", l.MetricWidth, 3},
		{"default tagk width", l.TagKWidth, 3},
		{"default tagv width", l.TagVWidth, 3},
		{"PrefixLen", l.PrefixLen(), 7},
		{"PairLen", l.PairLen(), 6},
		{"RowKeyLen(2)", l.RowKeyLen(2), 19},
		{"salted PrefixLen", Layout{SaltWidth: 1, SaltBuckets: 20, MetricWidth: 3, TagKWidth: 3, TagVWidth: 3}.PrefixLen(), 8},
		{"FlagFloat", int(FlagFloat), 0x8},
		{"LengthMask", int(LengthMask), 0x7},
		{"FlagsMask", int(FlagsMask), 0xF},
		{"MsByteFlag", int(MsByteFlag), 0xF0},
		{"MsFlag", int(MsFlag), 0xF0000000},
		{"MetaMixed", int(MetaMixed), 0x01},
		{"AppendPrefix", int(AppendPrefix), 0x05},
		{"AnnotationPrefix", int(AnnotationPrefix), 0x01},
		{"HistogramPrefix", int(HistogramPrefix), 0x06},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
	if !bytes.Equal(AppendColumnQualifier(), []byte{5, 0, 0}) {
		t.Errorf("AppendColumnQualifier = %X", AppendColumnQualifier())
	}
}

func TestValidate(t *testing.T) {
	valid := DefaultLayout()
	for _, c := range []struct {
		name   string
		modify func(*Layout)
		errSub string // "" = valid
	}{
		{"default", func(*Layout) {}, ""},
		{"salt 1 byte 256 buckets", func(l *Layout) { l.SaltWidth, l.SaltBuckets = 1, 256 }, ""},
		{"salt 8 bytes", func(l *Layout) { l.SaltWidth = 8 }, ""},
		{"widths 1 and 8", func(l *Layout) { l.MetricWidth, l.TagKWidth, l.TagVWidth = 1, 8, 8 }, ""},
		{"negative salt width", func(l *Layout) { l.SaltWidth = -1 }, "salt width -1 not in 0..8"},
		{"salt width 9", func(l *Layout) { l.SaltWidth = 9 }, "salt width 9 not in 0..8"},
		{"zero buckets", func(l *Layout) { l.SaltBuckets = 0 }, "salt buckets 0 not in 1.."},
		{"zero buckets, salt off", func(l *Layout) { l.SaltWidth, l.SaltBuckets = 0, 0 }, "salt buckets 0"},
		{"buckets beyond int32", func(l *Layout) { l.SaltBuckets = math.MaxInt32 + 1 }, "salt buckets 2147483648"},
		{"257 buckets in 1 byte", func(l *Layout) { l.SaltWidth, l.SaltBuckets = 1, 257 }, "257 salt buckets do not fit in 1 salt byte(s)"},
		{"65537 buckets in 2 bytes", func(l *Layout) { l.SaltWidth, l.SaltBuckets = 2, 65537 }, "65537 salt buckets do not fit in 2"},
		{"zero metric width", func(l *Layout) { l.MetricWidth = 0 }, "metric UID width 0 not in 1..8"},
		{"tagk width 9", func(l *Layout) { l.TagKWidth = 9 }, "tagk UID width 9"},
		{"tagv width 0", func(l *Layout) { l.TagVWidth = 0 }, "tagv UID width 0"},
		{"zero layout", func(l *Layout) { *l = Layout{} }, "salt buckets 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := valid
			c.modify(&l)
			err := l.Validate()
			if c.errSub == "" {
				if err != nil {
					t.Fatalf("Validate(%+v) = %v, want nil", l, err)
				}
				return
			}
			wantError(t, err, ErrInvalidLayout, c.errSub)
		})
	}
}

// TestSalt checks the salt against Java's Arrays.hashCode ground truth
// (OpenTSDB 2.4's src/core/RowKey.java, prefixKeyWithSalt; docs/storage-format.md).
func TestSalt(t *testing.T) {
	for _, c := range []struct {
		name         string
		metric       string
		tags         string
		hash         int32
		b20, b256    int
		salt1, salt2 string // salt bytes for 1 and 2 bytes of width, 20 buckets
	}{
		{"all ones", "000001", "000001000001", 691019968, 8, 192, "08", "0008"},
		{"two tags", "000002", "000001000001000002000003", -406290430, 10, 254, "0A", "000A"},
		{"high bytes", "FFFFFF", "8000017FFFFE", -388785285, 5, 133, "05", "0005"},
		{"empty", "", "", 1, 1, 1, "01", "0001"},
	} {
		t.Run(c.name, func(t *testing.T) {
			metric, tags := unhex(t, c.metric), unhex(t, c.tags)
			if h := SaltHash(metric, tags); h != c.hash {
				t.Fatalf("SaltHash = %d, want %d", h, c.hash)
			}
			// The hash runs over metric ‖ tags however they are split.
			if h := SaltHash(append(slices.Clone(metric), tags...), nil); h != c.hash {
				t.Fatalf("SaltHash(joined) = %d, want %d", h, c.hash)
			}
			for _, lc := range []struct {
				width, buckets, want int
				salt                 string
			}{{1, 20, c.b20, c.salt1}, {1, 256, c.b256, ""}, {2, 20, c.b20, c.salt2}} {
				l := Layout{SaltWidth: lc.width, SaltBuckets: lc.buckets, MetricWidth: 3, TagKWidth: 3, TagVWidth: 3}
				b := l.SaltBucket(metric, tags)
				if b != lc.want {
					t.Fatalf("SaltBucket(%d buckets) = %d, want %d", lc.buckets, b, lc.want)
				}
				if lc.salt != "" {
					if got := l.AppendSalt(nil, b); !bytes.Equal(got, unhex(t, lc.salt)) {
						t.Fatalf("AppendSalt(%d) width %d = %X, want %s", b, lc.width, got, lc.salt)
					}
				}
			}
		})
	}
}

// TestAppendSaltWidths pins RowKey.getSaltBytes for every width, including
// the Java int-shift wrap above 4 bytes.
func TestAppendSaltWidths(t *testing.T) {
	for _, c := range []struct {
		width, bucket int
		want          string
	}{
		{0, 7, ""},
		{1, 0x7F, "7F"},
		{1, 0x1FF, "FF"}, // OpenTSDB truncates; Validate refuses such layouts
		{2, 0x0102, "0102"},
		{3, 0x010203, "010203"},
		{4, 0x01020304, "01020304"},
		{5, 0x01020304, "04 01020304"},
		{6, 0x0102, "0102 00000102"},
		{7, 0x01020304, "020304 01020304"},
		{8, 0x7FFFFFFF, "7FFFFFFF 7FFFFFFF"},
	} {
		l := Layout{SaltWidth: c.width, SaltBuckets: 1, MetricWidth: 3, TagKWidth: 3, TagVWidth: 3}
		if got := l.AppendSalt([]byte{0xAA}, c.bucket); !bytes.Equal(got, append([]byte{0xAA}, unhex(t, c.want)...)) {
			t.Errorf("width %d bucket %#x: AppendSalt = %X, want AA %s", c.width, c.bucket, got, c.want)
		}
	}
}

// TestSaltBucketRange checks that buckets stay in [0, SaltBuckets) for many
// random series and bucket counts, including Java's abs of a negative
// remainder.
func TestSaltBucketRange(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 64)
	for i := range 10000 {
		n := 1 + rng.IntN(1000)
		if i%10 == 0 {
			n = 1 + int(rng.Int32())
		}
		l := Layout{SaltWidth: 4, SaltBuckets: n, MetricWidth: 3, TagKWidth: 3, TagVWidth: 3}
		b := buf[:rng.IntN(len(buf))]
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		got := l.SaltBucket(b, nil)
		h := int64(SaltHash(b, nil))
		want := h % int64(n)
		if want < 0 {
			want = -want
		}
		if got < 0 || got >= n || int64(got) != want {
			t.Fatalf("SaltBucket(%X, %d buckets) = %d, want %d", b, n, got, want)
		}
	}
}

func TestSortTags(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, l := range []Layout{
		DefaultLayout(),
		{SaltBuckets: 1, MetricWidth: 1, TagKWidth: 1, TagVWidth: 1},
		{SaltBuckets: 1, MetricWidth: 8, TagKWidth: 8, TagVWidth: 8},
		{SaltBuckets: 1, MetricWidth: 3, TagKWidth: 2, TagVWidth: 5},
	} {
		pair := l.PairLen()
		for _, n := range []int{0, 1, 2, 3, 8, 12, 13, 20, 64, 200} {
			for range 20 {
				tags := make([]byte, n*pair)
				for i := range tags {
					// Few distinct bytes, so that equal prefixes and
					// high bytes both occur.
					tags[i] = []byte{0x00, 0x01, 0x7F, 0x80, 0xFF}[rng.IntN(5)]
				}
				want := sortPairsRef(tags, pair)
				l.SortTags(tags)
				if !bytes.Equal(tags, want) {
					t.Fatalf("pair %d, %d tags: SortTags = %X, want %X", pair, n, tags, want)
				}
			}
		}
	}
	t.Run("partial pair left in place", func(t *testing.T) {
		l := DefaultLayout()
		tags := unhex(t, "000002000003 000001000009 AABB")
		l.SortTags(tags)
		if want := unhex(t, "000001000009 000002000003 AABB"); !bytes.Equal(tags, want) {
			t.Fatalf("SortTags = %X, want %X", tags, want)
		}
	})
}

// sortPairsRef sorts pairs with the standard library, as a reference.
func sortPairsRef(tags []byte, pair int) []byte {
	var pairs [][]byte
	for i := 0; i+pair <= len(tags); i += pair {
		pairs = append(pairs, tags[i:i+pair])
	}
	slices.SortFunc(pairs, bytes.Compare)
	return bytes.Join(pairs, nil)
}

func TestCheckSeries(t *testing.T) {
	l := DefaultLayout()
	for _, c := range []struct {
		name, metric, tags, errSub string
	}{
		{"ok", "000001", "000001000002 000002000001", ""},
		{"no tags", "000001", "", ""},
		{"short metric", "0001", "000001000002", "metric UID of 2 bytes, want 3"},
		{"partial pair", "000001", "000001000002 0000", "tags of 8 bytes, want a multiple of 6"},
		{"unsorted", "000001", "000002000001 000001000002", "tagk 000001 at pair 1 out of order"},
		{"repeated tagk", "000001", "000001000001 000001000002", "tagk 000001 at pair 1 repeated"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := l.CheckSeries(unhex(t, c.metric), unhex(t, c.tags))
			if c.errSub == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantError(t, err, ErrMalformedRowKey, c.errSub)
		})
	}
}

// TestParseRowKeyPrefixes feeds every prefix of a valid key: only the
// lengths that are prefix + whole pairs parse.
func TestParseRowKeyPrefixes(t *testing.T) {
	l := Layout{SaltWidth: 1, SaltBuckets: 20, MetricWidth: 3, TagKWidth: 3, TagVWidth: 2}
	key := l.AppendRowKey(nil, []byte{0, 0, 1}, 1292148000, unhex(t, "0000010001 0000020002 0000030003"))
	for i := range len(key) + 1 {
		_, metric, base, tags, err := l.ParseRowKey(key[:i])
		ok := i >= 8 && (i-8)%5 == 0
		if ok != (err == nil) {
			t.Fatalf("ParseRowKey(%d bytes): err = %v, want ok=%v", i, err, ok)
		}
		if err != nil {
			if !errors.Is(err, ErrMalformedRowKey) {
				t.Fatalf("error %v does not wrap ErrMalformedRowKey", err)
			}
			continue
		}
		if !bytes.Equal(metric, []byte{0, 0, 1}) || base != 1292148000 || len(tags) != i-8 {
			t.Fatalf("ParseRowKey(%d bytes) = %X %d %X", i, metric, base, tags)
		}
		// The parts are capped: appending to one cannot overwrite the key.
		if cap(metric) != len(metric) || cap(tags) != len(tags) {
			t.Fatalf("parts not capped: cap(metric) %d, cap(tags) %d", cap(metric), cap(tags))
		}
	}
	if _, _, _, _, err := (Layout{}).ParseRowKey(key); !errors.Is(err, ErrInvalidLayout) {
		t.Fatalf("zero layout: err = %v, want ErrInvalidLayout", err)
	}
}

func TestSplitMs(t *testing.T) {
	for _, c := range []struct {
		t         int64
		base, off uint32
		errSub    string
	}{
		{0, 0, 0, ""},
		{999, 0, 999, ""},
		{3599999, 0, 3599999, ""},
		{3600000, 3600, 0, ""},
		{1292148123456, 1292148000, 123456, ""},
		{1297574486000, 1297573200, 1286000, ""},
		{math.MaxUint32*1000 + 999, 4294965600, 1695999, ""},
		{-1, 0, 0, "-1 ms"},
		{math.MaxUint32*1000 + 1000, 0, 0, "4294967296000 ms"},
		{math.MinInt64, 0, 0, "out of range"},
		{math.MaxInt64, 0, 0, "out of range"},
	} {
		base, off, err := SplitMs(c.t)
		if c.errSub != "" {
			wantError(t, err, ErrTimestampRange, c.errSub)
			continue
		}
		if err != nil || base != c.base || off != c.off {
			t.Errorf("SplitMs(%d) = %d, %d, %v; want %d, %d", c.t, base, off, err, c.base, c.off)
		}
	}
}
