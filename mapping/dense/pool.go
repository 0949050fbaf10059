package dense

import (
	"sync"

	"github.com/promhbase/promhbase/store"
)

// Pool is a Codec safe for concurrent use, as a store that packs and
// reads rows from many goroutines needs it (store/embedded's RowCodec):
// each call borrows a Codec, with its scratch memory, from a sync.Pool.
// The zero value is ready to use; a Pool must not be copied after use.
//
// Unlike Codec, Pool packs only columns of two samples or more: a cell of
// one sample is what every fresh write is, and packing it would cost the
// store's flush about 0.4 µs a row (BenchmarkEncode's single-sample case
// measured 340-450 ns) to save a few bytes until compaction turns the
// row's cells into one column, which Pool packs.
type Pool struct{ codecs sync.Pool }

func (p *Pool) get() *Codec {
	if c, ok := p.codecs.Get().(*Codec); ok {
		return c
	}
	return new(Codec)
}

// Encode is Codec.Encode on a borrowed Codec.
func (p *Pool) Encode(dst, row []byte, cells []store.Cell) ([]byte, bool) {
	if len(cells) != 1 || oneSample(cells[0].Qualifier) {
		return dst, false
	}
	c := p.get()
	defer p.codecs.Put(c)
	return c.Encode(dst, row, cells)
}

// Decode is Codec.Decode on a borrowed Codec.
func (p *Pool) Decode(dst []store.Cell, buf, row, v []byte) ([]store.Cell, []byte, error) {
	c := p.get()
	defer p.codecs.Put(c)
	return c.Decode(dst, buf, row, v)
}

// Family is Codec.Family.
func (p *Pool) Family(v []byte) string { return (*Codec)(nil).Family(v) }

// oneSample reports whether q is the qualifier of a single sample: two
// bytes (seconds), or four whose first nibble is 0xF (milliseconds; four
// bytes not so marked are two second qualifiers).
func oneSample(q []byte) bool {
	return len(q) == 2 || len(q) == 4 && q[0]&0xF0 == 0xF0
}
