// Package pgzip writes one gzip member (RFC 1952) whose deflate stream is
// compressed in parts on several goroutines at once: a query answer of a
// few hundred kilobytes of JSON is compressed on every core instead of
// one, in about 1/cores of the time.
//
// The stream is the concatenation of independently deflated parts
// (RFC 1951): each part but the last ends with an empty stored block (a
// sync flush), which leaves the stream byte-aligned between parts, and
// no part refers back into the one before it, so any inflater reads the
// whole as one stream. The last part ends with the final block. The
// member's CRC-32 and length cover all the bytes written. A part starts
// with an empty window, so the output is a few percent larger than one
// deflater's.
package pgzip

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/flate"
)

// PartLen is the bytes a part holds (the last one of a stream: up to
// this).
const PartLen = 64 << 10

// parallelMin is the fewest bytes compressed on more than the caller's
// goroutine: a helper on an idle core starts 0.1-0.6 ms late on the
// 2-core machine, as long as compressing a 200 KB answer alone takes,
// and parts of a shorter run cost it ratio for nothing.
const parallelMin = 4 * PartLen

// SmallLen is the longest stream compressed by entropy coding alone
// (flate.HuffmanOnly) whatever the Writer's level: a query answer of a
// few series. Matching a 10 KB answer (flate.BestSpeed) took 3.8 KB
// against 5.2 KB, but three times as long in serve (its hash table
// reset and warmed for each answer), longer than the 1.4 KB take to send.
const SmallLen = 32 << 10

// appendHeader appends the header of every member a Writer writes: ID1,
// ID2, CM (8: deflate), FLG (none), MTIME (0: none), XFL (4: the fastest
// compression), OS (255: unknown).
func appendHeader(b []byte) []byte { return append(b, 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 255) }

// Writer compresses what is written to it into one gzip member on up to
// procs goroutines; it is for one goroutine, and reusable after Close
// with Reset.
type Writer struct {
	w       io.Writer
	level   int
	procs   int
	pending []byte // written, not yet compressed: less than procs parts
	crc     uint32
	size    uint32 // the bytes written, modulo 2^32 (ISIZE)
	started bool   // the header is out
	closed  bool
	err     error

	encs  []*flate.Writer // one a goroutine, made at their first use
	small *flate.Writer   // a stream of at most SmallLen's, made at its first use
	outs  [][]byte        // each part's deflated bytes
}

// NewWriter returns a Writer onto w at a flate level (flate.BestSpeed:
// the fastest that matches) using up to procs goroutines (1: the
// caller's alone).
func NewWriter(w io.Writer, level, procs int) (*Writer, error) {
	if level < flate.HuffmanOnly || level > flate.BestCompression {
		return nil, fmt.Errorf("pgzip: compression level %d out of range", level)
	}
	return &Writer{w: w, level: level, procs: max(procs, 1)}, nil
}

// Reset makes z write a new member onto w, keeping its buffers.
func (z *Writer) Reset(w io.Writer) {
	z.w, z.pending, z.crc, z.size, z.started, z.closed, z.err = w, z.pending[:0], 0, 0, false, false, nil
}

// errClosed is what Write answers after Close.
var errClosed = errors.New("pgzip: write after close")

// Write compresses p: its whole parts straight from p when nothing is
// pending, a batch at a time; else a copy, compressed once a batch is
// pending (at Close, the rest). So a Writer holds about two batches
// whatever it is given.
func (z *Writer) Write(p []byte) (int, error) {
	if z.closed {
		return 0, errClosed
	}
	if z.err != nil {
		return 0, z.err
	}
	z.crc = crc32.Update(z.crc, crc32.IEEETable, p)
	z.size += uint32(len(p))
	n, batch := len(p), z.batch()
	for len(p) > 0 && z.err == nil {
		if len(z.pending) == 0 && len(p) >= PartLen {
			whole := len(p) / PartLen * PartLen
			z.deflate(p[:whole], false)
			p = p[whole:]
			continue
		}
		if cap(z.pending) < batch {
			z.pending = append(make([]byte, 0, batch), z.pending...)
		}
		take := min(batch-len(z.pending), len(p))
		z.pending = append(z.pending, p[:take]...)
		p = p[take:]
		if len(z.pending) == batch {
			z.deflate(z.pending, false)
			z.pending = z.pending[:0]
		}
	}
	if z.err != nil {
		return 0, z.err
	}
	return n, nil
}

// Close compresses what is pending, ending the stream, and writes the
// member's trailer; it does not close the underlying writer.
func (z *Writer) Close() error {
	if z.closed || z.err != nil {
		return z.err
	}
	z.closed = true
	if !z.started && len(z.pending) <= SmallLen && z.level != flate.NoCompression {
		z.deflateSmall(z.pending)
	} else {
		z.deflate(z.pending, true)
	}
	z.pending = z.pending[:0]
	if z.err != nil {
		return z.err
	}
	var trailer [8]byte
	binary.LittleEndian.PutUint32(trailer[:4], z.crc)
	binary.LittleEndian.PutUint32(trailer[4:], z.size)
	_, z.err = z.w.Write(trailer[:])
	return z.err
}

// deflate compresses data, procs parts at a time, and writes them in
// order (after the header, the first time); final ends the stream with
// the last part (an empty one when data is).
func (z *Writer) deflate(data []byte, final bool) {
	if !z.started {
		z.started = true
		var header [10]byte
		if _, z.err = z.w.Write(appendHeader(header[:0])); z.err != nil {
			return
		}
	}
	batch := z.batch()
	for z.err == nil {
		chunk := data[:min(len(data), batch)]
		data = data[len(chunk):]
		z.deflateParts(chunk, final && len(data) == 0)
		if len(data) == 0 {
			return
		}
	}
}

// deflateSmall writes the header and data, the whole stream, compressed by
// entropy coding alone (see SmallLen).
func (z *Writer) deflateSmall(data []byte) {
	z.started = true
	if z.small == nil {
		if z.small, z.err = flate.NewWriter(nil, flate.HuffmanOnly); z.err != nil {
			return
		}
	}
	for len(z.outs) < 1 {
		z.outs = append(z.outs, nil)
	}
	z.outs[0] = appendHeader(z.outs[0][:0])
	if z.outs[0], z.err = compressPart(z.small, z.outs[0], data, true); z.err != nil {
		z.err = fmt.Errorf("pgzip: %w", z.err)
		return
	}
	_, z.err = z.w.Write(z.outs[0])
}

// batch is the bytes compressed at once: procs parts, at least
// parallelMin.
func (z *Writer) batch() int { return max(z.procs*PartLen, parallelMin) }

// deflateParts compresses data, at most a batch: from parallelMin bytes
// on in parts on the caller's goroutine and up to procs-1 others at
// once, below it as one part on the caller's; it writes the parts in
// order, and last ends the stream with the last.
func (z *Writer) deflateParts(data []byte, last bool) {
	parts, size := max((len(data)+PartLen-1)/PartLen, 1), PartLen
	procs := min(z.procs, parts)
	if len(data) < parallelMin {
		// One part, one window: the ratio of one stream.
		parts, size, procs = 1, max(len(data), 1), 1
	}
	for len(z.encs) < procs {
		enc, err := flate.NewWriter(nil, z.level)
		if err != nil {
			z.err = fmt.Errorf("pgzip: %w", err)
			return
		}
		z.encs = append(z.encs, enc)
	}
	for len(z.outs) < parts {
		z.outs = append(z.outs, nil)
	}
	// Parts are claimed in order by the caller and by procs-1 helpers,
	// each with its own encoder: a helper that starts late (its core
	// asleep) finds the parts taken, and the caller never waits for one
	// to start.
	errs := make([]error, parts)
	var claim atomic.Int32
	work := func(g int) {
		for {
			i := int(claim.Add(1)) - 1
			if i >= parts {
				return
			}
			chunk := data[min(i*size, len(data)):min((i+1)*size, len(data))]
			z.outs[i], errs[i] = compressPart(z.encs[g], z.outs[i][:0], chunk, last && i == parts-1)
		}
	}
	var wg sync.WaitGroup
	for g := 1; g < procs; g++ {
		wg.Go(func() { work(g) })
	}
	work(0)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			z.err = fmt.Errorf("pgzip: %w", err)
			return
		}
	}
	for _, out := range z.outs[:parts] {
		if _, z.err = z.w.Write(out); z.err != nil {
			return
		}
	}
}

// compressPart appends to dst chunk deflated by enc from an empty window,
// ending with the final block when last, else with a sync flush.
func compressPart(enc *flate.Writer, dst, chunk []byte, last bool) ([]byte, error) {
	buf := appendWriter{b: dst}
	enc.Reset(&buf)
	if _, err := enc.Write(chunk); err != nil {
		return buf.b, err
	}
	var err error
	if last {
		err = enc.Close()
	} else {
		err = enc.Flush()
	}
	return buf.b, err
}

// appendWriter appends what is written to b.
type appendWriter struct{ b []byte }

func (a *appendWriter) Write(p []byte) (int, error) {
	a.b = append(a.b, p...)
	return len(p), nil
}
