package adapter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/adapter/migrate"
	"github.com/promhbase/promhbase/ingest"
	"github.com/promhbase/promhbase/mapping/wire"
	"github.com/promhbase/promhbase/query"
	"github.com/promhbase/promhbase/store"
)

// The import and export endpoints of migration tools, as VictoriaMetrics
// answers them (vmctl writes to /api/v1/import, and asks /health first):
//
//	POST /api/v1/import             JSON lines (migrate.Batch.ParseJSONLines)
//	POST /api/v1/import/prometheus  text exposition, timestamps optional
//	POST /api/v1/import/chunks      Prometheus's TSDB chunks as remote read
//	                                streams them (migrate.Batch.ParseChunks):
//	                                promhbase import's format, snappy
//	GET|POST /api/v1/export         JSON lines of the series match[] selects
//
// An import body, gzip-compressed or not, is parsed whole before any of it
// is written: a bad line answers 400 naming it, and nothing is written.
// The parsed series (a migrate.Batch) are then written through the
// remote-write path (its limits, series index, compaction and rollups),
// with no remote-write encoding in between (ingest.Writer.WriteSeries), in
// writes of importBatchSamples, bulk loads (store.Batch.PutBulk), all
// but the last deferring their fsync (store.WriteDeferred); the answer is 204 once the store acknowledged them
// all. A store failure
// answers 503 (what was written is written again by the retry, the same
// cells); a series the write limits refuse answers 400 with the samples
// written before it.

// importExpansion bounds a decompressed import body: this many times
// --web.max-request-bytes (JSON and text take several times the bytes of
// remote write's protobuf).
const importExpansion = 4

// importBatchSamples is how many samples one write of an import holds:
// a request of vmctl's (200 000 samples by default) in one write, so that
// on the embedded store it becomes one sorted table, not four that
// overlap each other and that Pebble then merges. vmctl into promhbase,
// 3.46 M samples (tools/scripts/bench-import.sh), medians of 8: 877 ms with
// writes of 50 000, 844 ms with 256 000; the peak RSS of serve 131 MB
// and 155 MB.
const importBatchSamples = 256_000

// readImport reads the body of an import request, gunzipping it when its
// Content-Encoding says gzip, bounded to importExpansion times
// MaxRequestBytes. feed, when not nil, is given the body as it arrives
// and takes what it is done with (readLimited): readImport then returns
// the rest; feed's error is returned as it is.
func (h *Handler) readImport(r *http.Request, ib *importBuf, feed func([]byte) (int, error)) ([]byte, error) {
	if r.Method != http.MethodPost {
		return nil, fmt.Errorf("%w: %s on %s", errMethod, r.Method, r.URL.Path)
	}
	limit := int64(h.opts.MaxRequestBytes) * importExpansion
	body := io.Reader(r.Body)
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "snappy":
		// Remote write's block format: bounded before it is decoded.
		comp, err := readLimited(r.Body, nil, int64(h.opts.MaxRequestBytes), nil)
		if err != nil {
			return nil, fmt.Errorf("import body (at most %d bytes compressed: --web.max-request-bytes): %w", h.opts.MaxRequestBytes, err)
		}
		n, err := snappy.DecodedLen(comp)
		if err != nil {
			return nil, fmt.Errorf("%w: snappy body: %w", errBadRequest, err)
		}
		if int64(n) > limit {
			return nil, fmt.Errorf("%w: snappy body of %d bytes decoded, at most %d (%d × --web.max-request-bytes)", errBadRequest, n, limit, importExpansion)
		}
		b, err := snappy.Decode(ib.body[:cap(ib.body)], comp)
		if err != nil {
			return nil, fmt.Errorf("%w: snappy body: %w", errBadRequest, err)
		}
		if feed != nil {
			took, err := feed(b)
			if err != nil {
				return nil, err
			}
			b = b[:copy(b, b[took:])]
		}
		return b, nil
	case "gzip":
		var err error
		if ib.zr == nil {
			ib.zr, err = gzip.NewReader(r.Body)
		} else {
			err = ib.zr.Reset(r.Body)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: gzip body: %w", errBadRequest, err)
		}
		defer ib.zr.Close()
		body = ib.zr
	default:
		return nil, fmt.Errorf("%w: content encoding %q, want gzip, snappy or none", errUnsupportedMedia, enc)
	}
	// The body's buffer starts at its announced length (gzip: four
	// times it, what JSON lines of samples inflate to), within the
	// limit, rather than growing a copy at a time; one that feed takes
	// as it arrives at streamWindow (it grows only for a longer line).
	buf := ib.body[:0]
	n := r.ContentLength
	switch {
	case feed != nil:
		n = streamWindow
	case n > 0:
		if r.Header.Get("Content-Encoding") == "gzip" {
			n *= 4
		}
		n = min(n, limit) + 1
	}
	if int64(cap(buf)) < n {
		buf = make([]byte, 0, n)
	}
	b, err := readLimited(body, buf, limit, feed)
	if fe := (fedError{}); errors.As(err, &fe) {
		return nil, fe.err
	}
	if err != nil {
		return nil, fmt.Errorf("import body (at most %d bytes decompressed: %d × --web.max-request-bytes): %w", limit, importExpansion, err)
	}
	return b, nil
}

// serveImport parses the JSON lines while the body arrives
// (migrate.JSONLinesStream): the parse overlaps the upload, and nothing
// is written before the whole body parsed. Up to importStreams requests
// at once parse so, before they take a slot (their parsed series held
// besides their bodies); the others parse the whole body once they have
// a slot.
func (h *Handler) serveImport(w http.ResponseWriter, r *http.Request) error {
	return h.importWith(w, r, func(b *migrate.Batch) importParser {
		select {
		case h.streams <- struct{}{}:
		default:
			return wholeBody(func(b *migrate.Batch, body []byte) error { return b.ParseJSONLines(body) })(b)
		}
		s := &migrate.JSONLinesStream{B: b}
		return importParser{feed: s.Feed, end: s.End, done: func() { <-h.streams }}
	})
}

// importStreams bounds the imports that parse while their bodies arrive;
// streamWindow is the body buffer of each, what it holds of the body at
// once (a longer line grows it).
const (
	importStreams = 2
	streamWindow  = 1 << 20
)

// importParser parses an import body into a Batch: feed (nil: none) the
// body so far while it arrives, end the whole body once it has; done
// (nil: none) is called once the body is parsed or the request failed.
type importParser struct {
	// feed takes the body so far that earlier feeds did not take, and
	// returns how many of its first bytes it is done with.
	feed func(body []byte) (int, error)
	end  func(body []byte) error
	done func()
}

// wholeBody is the importParser of parse, which takes the whole body.
func wholeBody(parse func(b *migrate.Batch, body []byte) error) func(*migrate.Batch) importParser {
	return func(b *migrate.Batch) importParser {
		return importParser{end: func(body []byte) error { return parse(b, body) }}
	}
}

// importMaxChunkSamples bounds the samples the chunks of one
// /api/v1/import/chunks request hold (promhbase import sends 50 000).
const importMaxChunkSamples = 4_000_000

// serveImportChunks decodes the chunks and writes their samples as
// importWith does.
func (h *Handler) serveImportChunks(w http.ResponseWriter, r *http.Request) error {
	return h.importWith(w, r, wholeBody(func(b *migrate.Batch, body []byte) error { return b.ParseChunks(body, importMaxChunkSamples) }))
}

// writeImportWith makes one write of an import, adding its samples to
// written.
func (h *Handler) writeImportWith(r *http.Request, written *int, write func(context.Context) (ingest.Result, error)) error {
	ctx, cancel := context.WithTimeout(r.Context(), h.opts.WriteTimeout)
	res, err := write(ctx)
	cancel()
	h.count(res)
	if err != nil {
		return fmt.Errorf("after %d samples written: %w", *written, err)
	}
	*written += res.Samples
	return nil
}

func (h *Handler) serveImportText(w http.ResponseWriter, r *http.Request) error {
	return h.importWith(w, r, wholeBody(func(b *migrate.Batch, body []byte) error { return b.ParseText(body, time.Now().UnixMilli()) }))
}

// importBuf is the memory of one import request, kept for the next
// ones (Handler.imports): its body, its gzip reader, its parsed series.
type importBuf struct {
	body  []byte
	zr    *gzip.Reader
	batch migrate.Batch
}

// maxKeptImportBytes bounds the body an importBuf kept for the next
// request has room for; its series take about as much again.
const maxKeptImportBytes = 32 << 20

// getImportBuf returns a kept importBuf, or a new one.
func (h *Handler) getImportBuf() *importBuf {
	select {
	case ib := <-h.imports:
		return ib
	default:
		return new(importBuf)
	}
}

// putImportBuf keeps ib for a later request, when it is not too large and
// the list has room.
func (h *Handler) putImportBuf(ib *importBuf) {
	if cap(ib.body) > maxKeptImportBytes || ib.batch.Cap() > maxKeptImportBytes {
		return
	}
	ib.batch.Reset()
	select {
	case h.imports <- ib:
	default:
	}
}

// importBody reads an import request's body into ib, then takes a slot
// (free gives it back): the body arrives before the request takes a slot,
// within BodyTimeout, as a remote write's.
func (h *Handler) importBody(w http.ResponseWriter, r *http.Request, ib *importBuf, p importParser) (body []byte, free func(), err error) {
	setDeadline(w, time.Now().Add(h.opts.BodyTimeout), false)
	var feed func([]byte) (int, error)
	if p.feed != nil {
		feed = func(body []byte) (int, error) {
			took, err := p.feed(body)
			if err != nil {
				return 0, fmt.Errorf("%w: nothing written: %w", errBadRequest, err)
			}
			return took, nil
		}
	}
	if body, err = h.readImport(r, ib, feed); err != nil {
		return nil, nil, err
	}
	ib.body = body
	setDeadline(w, time.Time{}, false)
	if free, err = h.acquire(r.Context()); err != nil {
		return nil, nil, err
	}
	return body, free, nil
}

// importCursor is a place in a parsed import: sample sample of series
// series.
type importCursor struct{ series, sample int }

// advance returns the place n samples after c (or the end), and the
// samples between: the next write. A series longer than what is left of
// n goes in parts.
func (c importCursor) advance(b *migrate.Batch, n int) (importCursor, int) {
	took, n := 0, max(n, 1)
	for c.series < b.Len() && took < n {
		_, pts := b.Series(c.series)
		k := min(len(pts)-c.sample, n-took)
		took += k
		if c.sample += k; c.sample == len(pts) {
			c.series, c.sample = c.series+1, 0
		}
	}
	return c, took
}

// syncAfter returns err, the error of an import's write, once the writes
// before it, which deferred their fsync (and what a write refused in part
// wrote), are durable: the answer says what was written. If that fails,
// nothing may be assumed written, and the client sends the request again.
func (h *Handler) syncAfter(r *http.Request, err error) error {
	ctx, cancel := context.WithTimeout(r.Context(), h.opts.WriteTimeout)
	defer cancel()
	if serr := h.w.Sync(ctx); serr != nil {
		return fmt.Errorf("%w: %w (after the write error: %s)", store.ErrUnavailable, serr, err.Error()) // 503 whatever err was
	}
	return err
}

// importWith parses an import request's body with parse and writes its
// series, in writes of h.importBatch samples (a series in parts when it
// must), straight from
// the parsed batch (ingest.Writer.WriteSeries: no remote-write encoding
// in between).
func (h *Handler) importWith(w http.ResponseWriter, r *http.Request, parser func(*migrate.Batch) importParser) error {
	ib := h.getImportBuf()
	defer h.putImportBuf(ib)
	b := &ib.batch
	p := parser(b)
	parsed := func() {
		if p.done != nil {
			p.done()
			p.done = nil
		}
	}
	defer parsed()
	body, free, err := h.importBody(w, r, ib, p)
	if err != nil {
		return err
	}
	defer free()
	err = p.end(body)
	parsed()
	if err != nil {
		return fmt.Errorf("%w: nothing written: %w", errBadRequest, err)
	}
	written := 0
	var s wire.Series
	for from := (importCursor{}); from.series < b.Len(); {
		to, samples := from.advance(b, h.importBatch)
		each := func(fn func(*wire.Series) error) error {
			for c := from; c.series < to.series || c.series == to.series && c.sample < to.sample; c.series, c.sample = c.series+1, 0 {
				key, pts := b.Series(c.series)
				if c.series == to.series {
					pts = pts[:to.sample]
				}
				s.Key, s.Samples = key, pts[c.sample:]
				if err := fn(&s); err != nil {
					return err
				}
			}
			return nil
		}
		if err := h.writeImportWith(r, &written, func(ctx context.Context) (ingest.Result, error) {
			// One fsync for the request: its last write's.
			return h.w.WriteSeries(ctx, samples, to.series < b.Len(), each)
		}); err != nil {
			return h.syncAfter(r, err)
		}
		from = to
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// serveExport answers the series that the match[] selectors select
// between start and end (RFC 3339 or Unix seconds; by default all time up
// to now) as JSON lines (migrate.AppendJSONLine), gzip-compressed when
// the client accepts it. Native-histogram samples are left out (the
// format has none).
func (h *Handler) serveExport(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		return fmt.Errorf("%w: %s on /api/v1/export", errMethod, r.Method)
	}
	if err := r.ParseForm(); err != nil {
		return fmt.Errorf("%w: %w", errBadRequest, err)
	}
	start, err := exportTime(r.Form.Get("start"), migrate.MinTimestamp)
	if err != nil {
		return err
	}
	end, err := exportTime(r.Form.Get("end"), time.Now().UnixMilli())
	if err != nil {
		return err
	}
	var sets [][]*labels.Matcher
	for _, m := range r.Form["match[]"] {
		ms, err := h.parser.ParseMetricSelector(m)
		if err != nil {
			return fmt.Errorf("%w: match[] %q: %w", errBadRequest, m, err)
		}
		sets = append(sets, ms)
	}
	if len(sets) == 0 {
		return fmt.Errorf("%w: no match[] selector", errBadRequest)
	}
	done, err := h.acquireRead(r.Context())
	if err != nil {
		return err
	}
	defer done()
	w.Header().Set("Content-Type", "application/stream+json")
	out := io.Writer(w)
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		defer zw.Close()
		out = zw
	}
	b := h.q.NewBudget()
	seen := map[string]bool{}
	var line []byte
	var ts []int64
	var vs []float64
	for _, ms := range sets {
		err := h.q.StreamFloats(r.Context(), b, start, end, ms, func(s *query.ChunkSeries) error {
			defer b.Release(s.Bytes)
			key := string(s.Labels.Bytes(nil))
			if seen[key] {
				return nil
			}
			seen[key] = true
			ts, vs = ts[:0], vs[:0]
			if len(s.Chunks) > 0 {
				fs, _, err := query.DecodeChunks(s.Chunks)
				if err != nil {
					return err
				}
				for _, f := range fs {
					ts, vs = append(ts, f.T), append(vs, f.V)
				}
			}
			for _, f := range s.Floats {
				ts, vs = append(ts, f.T), append(vs, f.V)
			}
			if len(ts) == 0 {
				return nil
			}
			line = migrate.AppendJSONLine(line[:0], s.Labels, ts, vs)
			_, err := out.Write(line)
			return err
		})
		if err != nil {
			return fmt.Errorf("export %v: %w", ms, err)
		}
	}
	return nil
}

// exportTime reads an export's start or end: RFC 3339 or Unix seconds
// (fractions allowed), def when empty; Unix ms.
func exportTime(s string, def int64) (int64, error) {
	if s == "" {
		return def, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
		return int64(math.Round(f * 1000)), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("%w: time %q: want RFC 3339 or Unix seconds", errBadRequest, s)
	}
	return t.UnixMilli(), nil
}

// serveHealth answers VictoriaMetrics's liveness path, which vmctl asks
// before it imports, as /-/healthy does.
func (h *Handler) serveHealth(w http.ResponseWriter, _ *http.Request) error {
	_, err := io.WriteString(w, "OK")
	return err
}
