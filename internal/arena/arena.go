// Package arena hands out byte slices from large chunks that are never
// reallocated, so a slice handed out stays valid (and does not move) until
// Reset. Chunks are kept and reused after Reset. The zero Arena is ready,
// with chunks of DefaultChunkSize. Not safe for concurrent use.
package arena

// DefaultChunkSize is the size of a chunk when Arena.ChunkSize is 0.
const DefaultChunkSize = 256 << 10

// Arena is a set of chunks slices are cut from.
type Arena struct {
	// ChunkSize is the size of a new chunk (larger when one slice needs
	// more); 0 means DefaultChunkSize.
	ChunkSize int

	chunks [][]byte
	cur    int // the chunk slices are cut from; earlier ones are full
}

// Alloc returns an empty slice of capacity n, cut from a chunk: appending
// up to n bytes to it writes into the arena, past n reallocates.
func (a *Arena) Alloc(n int) []byte {
	for a.cur < len(a.chunks) {
		c := a.chunks[a.cur]
		if cap(c)-len(c) >= n {
			start := len(c)
			a.chunks[a.cur] = c[:start+n]
			return c[start : start : start+n]
		}
		a.cur++
	}
	size := a.ChunkSize
	if size <= 0 {
		size = DefaultChunkSize
	}
	c := make([]byte, n, max(size, n))
	a.chunks = append(a.chunks, c)
	return c[0:0:n]
}

// Copy returns a copy of b in the arena, its capacity clipped to its
// length.
func (a *Arena) Copy(b []byte) []byte { return append(a.Alloc(len(b)), b...) }

// Size is the bytes of the arena's chunks.
func (a *Arena) Size() int {
	n := 0
	for _, c := range a.chunks {
		n += cap(c)
	}
	return n
}

// Reset makes every chunk free again; the slices handed out before must no
// longer be used.
func (a *Arena) Reset() {
	for i := range a.chunks {
		a.chunks[i] = a.chunks[i][:0]
	}
	a.cur = 0
}
