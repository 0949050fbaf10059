package dense

import (
	"sync"

	"github.com/promhbase/promhbase/store"
)

// Pool is a Codec safe for concurrent use, as a store that packs and
// reads rows from many goroutines needs it (store/embedded's RowCodec):
// each call borrows a Codec, with its scratch memory, from a sync.Pool.
// The zero value is ready to use; a Pool must not be copied after use.
type Pool struct{ codecs sync.Pool }

func (p *Pool) get() *Codec {
	if c, ok := p.codecs.Get().(*Codec); ok {
		return c
	}
	return new(Codec)
}

// Encode is Codec.Encode on a borrowed Codec.
func (p *Pool) Encode(dst, row []byte, cells []store.Cell) ([]byte, bool) {
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
