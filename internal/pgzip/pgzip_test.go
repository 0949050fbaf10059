package pgzip

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/klauspost/compress/flate"
	kgzip "github.com/klauspost/compress/gzip"
)

// jsonLike returns n bytes of a query answer's shape: timestamps and
// decimal values in brackets.
func jsonLike(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := []byte(`{"status":"success","data":{"resultType":"matrix","result":[`)
	for t := 1795759488; len(b) < n; t += 288 {
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(t), 10)
		b = append(b, `,"`...)
		b = strconv.AppendFloat(b, r.Float64()*1e8, 'f', -1, 64)
		b = append(b, `"],`...)
	}
	return b[:n]
}

// gunzip reads one gzip member (no multistream) and checks that nothing
// follows it.
func gunzip(t *testing.T, z []byte) []byte {
	t.Helper()
	r, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		t.Fatalf("gzip header: %v", err)
	}
	r.Multistream(false)
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("gunzip: %v", err)
	}
	if rest, _ := io.ReadAll(r); len(rest) != 0 {
		t.Fatalf("%d bytes after the member", len(rest))
	}
	return got
}

// TestRoundTrip: what is written reads back as one gzip member, whatever
// the sizes, the writes' cuts and the goroutines; a reset Writer writes
// a new member.
func TestRoundTrip(t *testing.T) {
	for _, size := range []int{0, 1, SmallLen, SmallLen + 1, PartLen - 1, PartLen, PartLen + 1, 3*PartLen + 17, 9*PartLen + 5} {
		for _, procs := range []int{1, 2, 4} {
			for _, write := range []int{0, 1000, PartLen + 3} { // 0: one write
				t.Run(fmt.Sprintf("size=%d/procs=%d/write=%d", size, procs, write), func(t *testing.T) {
					data := jsonLike(size, uint64(size))
					var out bytes.Buffer
					z, err := NewWriter(&out, flate.BestSpeed, procs)
					if err != nil {
						t.Fatal(err)
					}
					for round := range 2 {
						out.Reset()
						z.Reset(&out)
						rest := data
						for len(rest) > 0 {
							n := len(rest)
							if write > 0 {
								n = min(n, write)
							}
							if k, err := z.Write(rest[:n]); err != nil || k != n {
								t.Fatalf("write %d: %d, %v", n, k, err)
							}
							rest = rest[n:]
						}
						if err := z.Close(); err != nil {
							t.Fatalf("close: %v", err)
						}
						if got := gunzip(t, out.Bytes()); !bytes.Equal(got, data) {
							t.Fatalf("round %d: read back %d bytes, want %d", round, len(got), len(data))
						}
					}
				})
			}
		}
	}
}

// TestRatio: the parts cost a few percent against one deflater at the
// same level.
func TestRatio(t *testing.T) {
	data := jsonLike(8*PartLen, 7)
	var one, par bytes.Buffer
	k, _ := kgzip.NewWriterLevel(&one, kgzip.BestSpeed)
	_, _ = k.Write(data)
	_ = k.Close()
	z, _ := NewWriter(&par, flate.BestSpeed, 4)
	_, _ = z.Write(data)
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if float64(par.Len()) > 1.1*float64(one.Len()) {
		t.Fatalf("%d bytes in parts against %d in one stream", par.Len(), one.Len())
	}
}

type failWriter struct{ after int }

var errFull = errors.New("disk full")

func (f *failWriter) Write(p []byte) (int, error) {
	if f.after < len(p) {
		return 0, errFull
	}
	f.after -= len(p)
	return len(p), nil
}

// TestErrors: a level out of range is refused; the underlying writer's
// error comes back from Write or Close, and stays.
func TestErrors(t *testing.T) {
	if _, err := NewWriter(io.Discard, 42, 2); err == nil {
		t.Fatal("level 42 taken")
	}
	for _, after := range []int{0, 10, 100} {
		t.Run(strconv.Itoa(after), func(t *testing.T) {
			z, _ := NewWriter(&failWriter{after: after}, flate.BestSpeed, 2)
			_, werr := z.Write(jsonLike(4*PartLen, 1))
			cerr := z.Close()
			if !errors.Is(werr, errFull) && !errors.Is(cerr, errFull) {
				t.Fatalf("write: %v, close: %v; want %v", werr, cerr, errFull)
			}
			if _, err := z.Write([]byte("x")); !errors.Is(err, errFull) {
				t.Fatalf("write after the error: %v", err)
			}
		})
	}
}

// FuzzRoundTrip: any bytes, cut anywhere, read back.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("hello"), uint16(3), uint8(2))
	f.Add(jsonLike(PartLen+100, 2), uint16(5000), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, cut uint16, procs uint8) {
		var out bytes.Buffer
		z, err := NewWriter(&out, flate.BestSpeed, int(procs%5))
		if err != nil {
			t.Fatal(err)
		}
		c := min(int(cut), len(data))
		_, _ = z.Write(data[:c])
		_, _ = z.Write(data[c:])
		if err := z.Close(); err != nil {
			t.Fatal(err)
		}
		if got := gunzip(t, out.Bytes()); !bytes.Equal(got, data) {
			t.Fatalf("read back %d bytes, want %d", len(got), len(data))
		}
	})
}

// BenchmarkCompress: a 256 KiB answer, one Write and Close, against
// klauspost's gzip at the same level.
func BenchmarkCompress(b *testing.B) {
	data := jsonLike(256<<10, 3)
	for _, procs := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("pgzip/procs=%d", procs), func(b *testing.B) {
			z, _ := NewWriter(io.Discard, flate.BestSpeed, procs)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				z.Reset(io.Discard)
				_, _ = z.Write(data)
				if err := z.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("gzip", func(b *testing.B) {
		k, _ := kgzip.NewWriterLevel(io.Discard, kgzip.BestSpeed)
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			k.Reset(io.Discard)
			_, _ = k.Write(data)
			_ = k.Close()
		}
	})
}

// TestBounded: a Writer given a large body in one write, or in pieces,
// holds at most procs parts of it and of its output.
func TestBounded(t *testing.T) {
	data := jsonLike(40*PartLen+123, 5)
	for _, write := range []int{len(data), 3*PartLen + 1, 1000} {
		t.Run(strconv.Itoa(write), func(t *testing.T) {
			var out bytes.Buffer
			z, _ := NewWriter(&out, flate.BestSpeed, 3)
			for rest := data; len(rest) > 0; {
				n := min(write, len(rest))
				if _, err := z.Write(rest[:n]); err != nil {
					t.Fatal(err)
				}
				rest = rest[n:]
			}
			if err := z.Close(); err != nil {
				t.Fatal(err)
			}
			if b := z.batch(); cap(z.pending) > b || len(z.outs) > b/PartLen {
				t.Fatalf("holds %d bytes pending and %d parts' output; want at most %d and %d", cap(z.pending), len(z.outs), b, b/PartLen)
			}
			if got := gunzip(t, out.Bytes()); !bytes.Equal(got, data) {
				t.Fatalf("read back %d bytes, want %d", len(got), len(data))
			}
		})
	}
}

// TestClosed: Close twice writes nothing more; Write after Close fails.
func TestClosed(t *testing.T) {
	var out bytes.Buffer
	z, _ := NewWriter(&out, flate.BestSpeed, 2)
	_, _ = z.Write([]byte("hello"))
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	n := out.Len()
	if err := z.Close(); err != nil || out.Len() != n {
		t.Fatalf("second close: %v, %d bytes more", err, out.Len()-n)
	}
	if _, err := z.Write([]byte("x")); err == nil {
		t.Fatal("write after close taken")
	}
	if got := gunzip(t, out.Bytes()); string(got) != "hello" {
		t.Fatalf("read back %q", got)
	}
	z.Reset(&out)
	if _, err := z.Write([]byte("x")); err != nil {
		t.Fatalf("write after reset: %v", err)
	}
}
