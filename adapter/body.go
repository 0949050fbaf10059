package adapter

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/s2"

	"github.com/promhbase/promhbase/mapping/wire"
)

// Request bodies: read whole before a decoding slot is taken (receive),
// bounded before and after decompression (readBody, readLimited), in
// pooled buffers.

// bodyBuf holds the reusable buffers of one request body, and the body
// that receive hands on.
type bodyBuf struct {
	comp, dec []byte
	body      receivedBody
}

// maxPooledBuf is the largest buffer kept for reuse; larger ones are left to
// the garbage collector so that one huge request does not pin memory.
const maxPooledBuf = 4 << 20

// maxCompressed is the largest compressed body accepted: snappy's worst
// case of MaxRequestBytes.
func (h *Handler) maxCompressed() int64 {
	max := h.opts.MaxRequestBytes
	n := int64(snappy.MaxEncodedLen(max))
	if n < 0 {
		n = int64(max)
	}
	return n
}

// receivedBody is a request body read in full by receive, in a pooled
// buffer that readBody decodes from. receive gives the buffers back once
// the handler has returned.
type receivedBody struct {
	bb *bodyBuf
	bytes.Reader
}

func (*receivedBody) Close() error { return nil }

// receive reads the whole (compressed, bounded) body of a remote write or
// read before fn runs, within BodyTimeout: fn then takes its decoding slot
// only for a body that has arrived, so clients that send slowly, or send
// headers and then nothing, hold no slot. Past the deadline the read fails
// and the connection is closed.
func (h *Handler) receive(fn func(http.ResponseWriter, *http.Request) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		if r.Method != http.MethodPost {
			return fn(w, r)
		}
		if max := h.maxCompressed(); r.ContentLength > max {
			return fmt.Errorf("%w: body of %d bytes exceeds %d", errTooLarge, r.ContentLength, max)
		}
		setDeadline(w, time.Now().Add(h.opts.BodyTimeout), false)
		bb, _ := h.bufs.Get().(*bodyBuf)
		if bb == nil {
			bb = &bodyBuf{}
		}
		comp, err := readLimited(r.Body, bb.comp[:0], h.maxCompressed(), nil)
		if err != nil {
			// The deadline stays: what is left of the body is not waited
			// for, and the connection is closed after the answer.
			h.putBuf(bb)
			return err
		}
		// No deadline while the request is decoded and stored: the
		// connection's background read must not cancel it.
		setDeadline(w, time.Time{}, false)
		bb.comp = comp
		bb.body.bb = bb
		bb.body.Reset(comp)
		r.Body = &bb.body
		defer h.putBuf(bb)
		return fn(w, r)
	}
}

// putBuf gives bb back to the pool unless one of its buffers is too large
// to keep.
func (h *Handler) putBuf(bb *bodyBuf) {
	if cap(bb.comp) <= maxPooledBuf && cap(bb.dec) <= maxPooledBuf {
		bb.comp = bb.comp[:0]
		bb.body.Reset(nil)
		h.bufs.Put(bb)
	}
}

// readBody snappy-decodes a request body, bounding the compressed size and
// checking the decoded length before decoding. A body that receive read
// is taken as it is; others are read here. The returned release function
// gives the buffers back.
func (h *Handler) readBody(r *http.Request) ([]byte, func(), error) {
	max := h.opts.MaxRequestBytes
	maxCompressed := h.maxCompressed()
	if r.ContentLength > maxCompressed {
		return nil, nil, fmt.Errorf("%w: body of %d bytes exceeds %d", errTooLarge, r.ContentLength, maxCompressed)
	}
	if enc := r.Header.Get("Content-Encoding"); enc != "" && enc != "snappy" {
		return nil, nil, fmt.Errorf("%w: content encoding %q, want snappy", errUnsupportedMedia, enc)
	}
	var bb *bodyBuf
	var comp []byte
	release := noRelease
	if rb, ok := r.Body.(*receivedBody); ok {
		bb = rb.bb // receive gives it back
		comp = bb.comp
	} else {
		bb, _ = h.bufs.Get().(*bodyBuf)
		if bb == nil {
			bb = &bodyBuf{}
		}
		var err error
		if comp, err = readLimited(r.Body, bb.comp[:0], maxCompressed, nil); err != nil {
			h.putBuf(bb)
			return nil, nil, err
		}
		bb.comp = comp
		release = func() { h.putBuf(bb) }
	}
	n, err := s2.DecodedLen(comp)
	if err != nil {
		release()
		return nil, nil, fmt.Errorf("%w: body is not snappy block format: %w", errBadRequest, err)
	}
	if n > max {
		release()
		return nil, nil, fmt.Errorf("%w: decoded body of %d bytes exceeds --web.max-request-bytes=%d", errTooLarge, n, max)
	}
	if limit := maxSnappyExpansion(len(comp)); n > limit {
		// Checked before allocating: a few bytes must not make the server
		// reserve what they claim.
		release()
		return nil, nil, fmt.Errorf("%w: snappy header claims %d decoded bytes, more than %d compressed bytes can hold (%d)", errBadRequest, n, len(comp), limit)
	}
	if cap(bb.dec) < n {
		// A new buffer only for a body that decodes to its claim.
		if err := wire.ScanSnappyBlock(comp, n); err != nil {
			release()
			return nil, nil, fmt.Errorf("%w: snappy body: %w", errBadRequest, err)
		}
		bb.dec = make([]byte, n)
	}
	// s2 decodes snappy's block format, faster than golang/snappy.
	dec, err := s2.Decode(bb.dec[:n], comp)
	if err != nil {
		release()
		return nil, nil, fmt.Errorf("%w: snappy decode: %w", errBadRequest, err)
	}
	return dec, release, nil
}

// noRelease is readBody's release function for bodies receive holds.
func noRelease() {}

// maxSnappyExpansion bounds what a snappy block of n bytes decodes to: the
// densest element is a 3-byte copy of 64 bytes, so no block expands by more
// than 64/3 (plus the few bytes of the length header).
func maxSnappyExpansion(n int) int { return n/3*64 + 64 }

// readLimited reads r into buf, failing with errTooLarge past limit bytes.
// feed, when not nil, is called with what buf holds after each read that
// added to it, and returns how many of its first bytes it is done with:
// those are dropped from buf (the bytes after them moved to its start),
// so that buf holds the rest, what feed has not taken, and the limit
// counts every byte read; feed's error ends the read, returned as a
// fedError.
func readLimited(r io.Reader, buf []byte, limit int64, feed func([]byte) (int, error)) ([]byte, error) {
	var dropped int64 // bytes feed took and buf no longer holds
	for {
		if len(buf) == cap(buf) {
			if dropped+int64(len(buf)) > limit {
				return nil, fmt.Errorf("%w: body exceeds %d bytes", errTooLarge, limit)
			}
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if dropped+int64(len(buf)) > limit {
			return nil, fmt.Errorf("%w: body exceeds %d bytes", errTooLarge, limit)
		}
		if feed != nil && n > 0 {
			took, ferr := feed(buf)
			if ferr != nil {
				return nil, fedError{ferr}
			}
			if took > 0 {
				buf = buf[:copy(buf, buf[took:])]
				dropped += int64(took)
			}
		}
		if err == io.EOF {
			return buf, nil
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// Possibly a slow network, not bad data: the sender retries.
			return nil, fmt.Errorf("%w after %d bytes (--web.request-body-timeout): %w", errBodyTimeout, dropped+int64(len(buf)), err)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: read body: %w", errBadRequest, err)
		}
	}
}

// fedError is the error of readLimited's feed.
type fedError struct{ err error }

func (e fedError) Error() string { return e.err.Error() }
func (e fedError) Unwrap() error { return e.err }
