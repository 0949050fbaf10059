package hbase

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/tsuna/gohbase/filter"
	"github.com/tsuna/gohbase/hrpc"

	"github.com/promhbase/promhbase/store"
)

// Settings of the RegexStringComparator that RowRegex becomes. The JAVA
// engine decodes the row key with the charset before it matches; with
// ISO-8859-1 byte b is the character U+00b, so a pattern can name any byte
// as \xHH. (The JONI engine ignores the charset.)
const (
	regexCharset = "ISO-8859-1"
	regexEngine  = "JAVA"
)

// Scan returns the rows of [req.Start, req.Stop) whose key matches
// req.RowRegex, newest cell versions only, restricted to req.Family when
// set. The regex runs on the region servers as a RowFilter with a
// RegexStringComparator (engine JAVA, charset ISO-8859-1, no flags). With
// req.KeysOnly each row comes back as its first cell without its value.
//
// While the scan starts, and while it resumes, a small existence Get at
// its start row checks, within Config.RPCTimeout per attempt, that the
// table exists and its first region answers; when it fails, the scan
// stops with its error, so a missing table or an unreachable cluster fails
// the scan quickly. The Get runs beside the scan's first request, not
// before it, so that it adds no round trip to a scan that succeeds. Apart
// from that the scan runs under ctx alone: gohbase keeps looking for
// regions until ctx ends, and a sparse filtered scan may legitimately run
// long between two rows, so give ctx a deadline.
//
// The scanner lease is renewed while the caller is slow to call Next
// (Config.ScannerRenewInterval). When the scan fails with an error that may
// pass (a region moved, the lease expired), it is resumed after the last
// row it returned, up to Config.Retries times in a row, so no row is
// returned twice.
func (s *Store) Scan(ctx context.Context, req store.ScanRequest) store.Scanner {
	sc := &scanner{s: s, ctx: ctx, table: req.Table, start: bytes.Clone(req.Start), stop: bytes.Clone(req.Stop)}
	if err := checkTable(req.Table); err != nil {
		sc.fail(err)
		return sc
	}
	if len(req.Start) > 0 && len(req.Stop) > 0 && bytes.Compare(req.Start, req.Stop) >= 0 {
		sc.done = true
		return sc
	}
	if req.Family != "" {
		sc.opts = append(sc.opts, hrpc.Families(map[string][]string{req.Family: nil}))
	}
	var filters []filter.Filter
	if req.RowRegex != "" {
		f, err := rowRegexFilter(req.RowRegex)
		if err != nil {
			sc.fail(err)
			return sc
		}
		filters = append(filters, f)
	}
	if req.KeysOnly {
		filters = append(filters, filter.NewFirstKeyOnlyFilter(), filter.NewKeyOnlyFilter(false))
	}
	switch len(filters) {
	case 0:
	case 1:
		sc.opts = append(sc.opts, hrpc.Filters(filters[0]))
	default:
		sc.opts = append(sc.opts, hrpc.Filters(filter.NewList(filter.MustPassAll, filters...)))
	}
	if s.cfg.ScannerRenewInterval > 0 {
		sc.opts = append(sc.opts, hrpc.RenewInterval(s.cfg.ScannerRenewInterval))
	}
	return sc
}

// rowRegexFilter builds the RowFilter for pattern. The pattern travels as
// a protobuf string that HBase decodes as UTF-8, so it must be valid UTF-8;
// bytes of the key are written \xHH.
func rowRegexFilter(pattern string) (filter.Filter, error) {
	if !utf8.ValidString(pattern) {
		return nil, fmt.Errorf("row regex %q is not valid UTF-8 (write key bytes as \\xHH): %w", pattern, store.ErrInvalid)
	}
	cmp := filter.NewRegexStringComparator(pattern, 0, regexCharset, regexEngine)
	// NewCompareFilter panics when the comparator does not serialize;
	// find out first.
	if _, err := cmp.ConstructPBComparator(); err != nil {
		return nil, fmt.Errorf("row regex %q: %w: %w", pattern, store.ErrInvalid, err)
	}
	return filter.NewRowFilter(filter.NewCompareFilter(filter.Equal, cmp)), nil
}

// scanner implements store.Scanner over gohbase scanners: one, plus one per
// resumption after a failure.
type scanner struct {
	s      *Store
	ctx    context.Context
	table  string
	start  []byte // where the next gohbase scanner starts
	stop   []byte
	opts   []func(hrpc.Call) error
	hs     hrpc.ScannerV2 // nil until opened, and after a failure
	failed int            // failures since the last row returned
	// hsCtx is hs's context; stopHS ends it: with the probe's error when
	// the probe beside hs fails, with nil when hs is done.
	hsCtx  context.Context
	stopHS context.CancelCauseFunc
	// ahead carries hs's responses from the goroutine that reads them one
	// response ahead of the rows being returned (fetchAhead); fetcherDone
	// is closed when that goroutine has returned.
	ahead       chan fetched
	fetcherDone chan struct{}
	// ended is the error (io.EOF at the end) that ended hs, returned
	// again by every later fetch, as gohbase's scanner does.
	ended error
	// stalled is set when fetch found hs's region server silent, or hs's
	// context ended while it waited: closeHS does not wait for the reader
	// then.
	stalled bool

	// The response being read: its rows from next on are not returned
	// yet. Cells point into its cell block, one allocation per response.
	resp *hrpc.ScanResponseV2
	next int

	row  store.Row
	done bool
	err  error
}

// Next advances to the next row. A row the server sent in parts (a
// partial result, then the rest in the following results) is returned
// whole.
func (sc *scanner) Next() bool {
	sc.row.Key, sc.row.Cells = nil, sc.row.Cells[:0]
	for !sc.done {
		if sc.hs == nil {
			if err := sc.open(); err != nil {
				sc.fail(err)
				return false
			}
			if sc.hs == nil { // nothing left in the range
				sc.finish()
				return false
			}
		}
		if sc.resp == nil || sc.next >= len(sc.resp.Results) {
			resp, err := sc.fetch()
			if errors.Is(err, io.EOF) {
				if len(sc.row.Cells) > 0 { // a last part that said more would follow
					return sc.returned()
				}
				sc.finish()
				return false
			}
			if err != nil {
				probeErr := context.Cause(sc.hsCtx)
				sc.closeHS()
				sc.resp = nil
				if probeErr != nil && sc.ctx.Err() == nil {
					// The probe failed (and was retried as it may be).
					sc.fail(probeErr)
					return false
				}
				// A row begun in parts is read again from its start.
				sc.row.Key, sc.row.Cells = nil, sc.row.Cells[:0]
				err = classify(err, false)
				if !sc.s.shouldRetry(sc.ctx, err, sc.failed, true) {
					sc.fail(fmt.Errorf("%s: %w", sc.what(), err))
					return false
				}
				sc.s.retried("scan", sc.table, sc.failed, err)
				sc.failed++
				if sleep(sc.ctx, backoff(sc.failed-1)) != nil {
					sc.fail(fmt.Errorf("%s: %w", sc.what(), err))
					return false
				}
				continue
			}
			sc.resp, sc.next = resp, 0
			continue
		}
		res := sc.resp.Results[sc.next]
		if len(res.Cells) == 0 {
			sc.next++
			continue
		}
		if len(sc.row.Cells) > 0 && !bytes.Equal(res.Cells[0].Row(), sc.row.Key) {
			// The parts of the row ended without a final one.
			return sc.returned()
		}
		sc.next++
		if len(sc.row.Cells) == 0 {
			sc.row.Key = res.Cells[0].Row()
		}
		sc.row.Cells = appendCellsV2(sc.row.Cells, res.Cells)
		if !res.Partial {
			return sc.returned()
		}
	}
	return false
}

// returned makes the row in sc.row the last one returned.
func (sc *scanner) returned() bool {
	sc.failed = 0
	// Resume, if needed, at the smallest key after this row.
	sc.start = append(append(sc.start[:0], sc.row.Key...), 0)
	return true
}

// appendCellsV2 converts gohbase's cells of a scan response. The byte
// slices are shared with the response's cell block, not copied.
func appendCellsV2(dst []store.Cell, cells []hrpc.CellV2) []store.Cell {
	for _, c := range cells {
		dst = append(dst, store.Cell{
			Family:    c.Family(),
			Qualifier: c.Qualifier(),
			Value:     c.Value(),
			Timestamp: c.Timestamp(),
		})
	}
	return dst
}

func (sc *scanner) open() error {
	if len(sc.stop) > 0 && bytes.Compare(sc.start, sc.stop) >= 0 {
		sc.done = true
		return nil
	}
	ctx, stop := context.WithCancelCause(sc.ctx)
	scan, err := hrpc.NewScanRange(ctx, []byte(sc.table), sc.start, sc.stop, sc.opts...)
	if err != nil {
		stop(nil)
		return fmt.Errorf("%s: %w: %w", sc.what(), store.ErrInvalid, err)
	}
	what, key := sc.what(), bytes.Clone(sc.start)
	go func() {
		if err := sc.s.probe(ctx, sc.table, key); err != nil && ctx.Err() == nil {
			stop(fmt.Errorf("%s: %w", what, err))
		}
	}()
	sc.hs, sc.hsCtx, sc.stopHS, sc.resp, sc.next = sc.s.client.ScanV2(scan), ctx, stop, nil, 0
	sc.ahead, sc.fetcherDone = make(chan fetched), make(chan struct{})
	go fetchAhead(ctx, sc.hs, sc.ahead, sc.fetcherDone)
	return nil
}

// fetched is one answer of a gohbase scanner's Next.
type fetched struct {
	resp *hrpc.ScanResponseV2
	err  error
}

// fetchAhead reads hs's responses and hands them to the scanner on out, so
// that the region server prepares the next response while the rows of the
// one before are being used. out is unbuffered: at most one response waits
// beside the one being read. It returns after the first error (io.EOF at
// the end) has been taken, or when ctx ends, and then closes done.
func fetchAhead(ctx context.Context, hs hrpc.ScannerV2, out chan<- fetched, done chan<- struct{}) {
	defer close(done)
	for {
		resp, err := hs.Next()
		select {
		case out <- fetched{resp, err}:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// fetch returns hs's next response (io.EOF after the last, and on every
// call after that); when the scan's context ends before one comes, its
// cause. While no response comes for stallTimeout, a one-attempt
// existence Get at the scan's row asks whether the region server still
// answers (a sparse filtered scan may legitimately be silent for long,
// a server that answers the Get is busy, not stalled); when it does not,
// the scan ends with store.ErrUnavailable, within about twice
// stallTimeout of the last response: a query on a stalled cluster is
// answered 503 within 30 s, whatever its --query.timeout.
func (sc *scanner) fetch() (*hrpc.ScanResponseV2, error) {
	if sc.ended != nil {
		return nil, sc.ended
	}
	silence := time.NewTimer(sc.s.stallTimeout())
	defer silence.Stop()
	for {
		select {
		case f := <-sc.ahead:
			if f.err != nil {
				sc.ended = f.err
			}
			return f.resp, f.err
		case <-sc.fetcherDone:
			// fetchAhead returns without an error sent only when hsCtx ended.
			sc.ended = context.Cause(sc.hsCtx)
			if sc.ended == nil {
				sc.ended = context.Canceled
			}
			return nil, sc.ended
		case <-sc.hsCtx.Done():
			// Canceled (the query ended, another scan failed): the reader
			// may be waiting out an RPC; the scan does not wait with it.
			sc.stalled = true
			sc.ended = context.Cause(sc.hsCtx)
			return nil, sc.ended
		case <-silence.C:
			if err := sc.s.answers(sc.hsCtx, sc.table, sc.start); err != nil {
				sc.stopHS(fmt.Errorf("%s: no response for %s, and %w", sc.what(), sc.s.stallTimeout(), err))
				sc.stalled = true
				sc.ended = context.Cause(sc.hsCtx)
				return nil, sc.ended
			}
			silence.Reset(sc.s.stallTimeout())
		}
	}
}

// closeGrace is how long a scan that ended on a stalled server or a
// canceled context waits for its reader before it leaves it behind.
const closeGrace = 200 * time.Millisecond

// maxStall bounds stallTimeout: five seconds without a word from a region
// server that a scan waits on, and as long again for an existence Get,
// and the cluster is taken for stalled.
const maxStall = 5 * time.Second

// stallTimeout is how long a scan waits on silence before it asks
// whether the region server answers, and how long it waits for that
// answer: Config.RPCTimeout, at most maxStall.
func (s *Store) stallTimeout() time.Duration { return min(s.cfg.RPCTimeout, maxStall) }

// answers reports, with one existence Get at key within stallTimeout,
// whether the region server of key answers: nil when it does (whatever
// its answer), an error wrapping store.ErrUnavailable when it gave none.
func (s *Store) answers(ctx context.Context, table string, key []byte) error {
	if len(key) == 0 {
		key = []byte{0}
	}
	actx, cancel := context.WithTimeout(ctx, s.stallTimeout())
	defer cancel()
	get, err := hrpc.NewGet(actx, []byte(table), key)
	if err != nil {
		return nil // not a question of liveness
	}
	get.ExistsOnly()
	_, err = s.client.Get(get)
	if err == nil || ctx.Err() != nil {
		return nil
	}
	if actx.Err() != nil {
		return fmt.Errorf("the region server gave no answer to a Get within %s: %w", s.stallTimeout(), store.ErrUnavailable)
	}
	if err = classify(err, false); errors.Is(err, store.ErrUnavailable) {
		return fmt.Errorf("a Get failed: %w", err)
	}
	return nil
}

// closeHS ends the gohbase scanner's context (and its probe), waits for
// the goroutine reading ahead to return, and closes the scanner.
func (sc *scanner) closeHS() {
	if sc.hs == nil {
		return
	}
	sc.stopHS(nil)
	if sc.stalled {
		// gohbase's Next may wait out its RPC to a stalled server whatever
		// the context says: after a moment the scan ends without it, the
		// reader when its RPC returns.
		grace := time.NewTimer(closeGrace)
		select {
		case <-sc.fetcherDone:
			sc.hs.Close()
		case <-grace.C:
			go func(done <-chan struct{}, hs hrpc.ScannerV2) {
				<-done
				hs.Close()
			}(sc.fetcherDone, sc.hs)
		}
		grace.Stop()
	} else {
		<-sc.fetcherDone
		sc.hs.Close()
	}
	sc.stalled = false
	sc.hs, sc.hsCtx, sc.stopHS, sc.ahead, sc.fetcherDone, sc.ended = nil, nil, nil, nil, nil, nil
}

// probe checks, with a bounded and retried existence Get at key (a
// scan's start row), that the region holding it answers.
func (s *Store) probe(ctx context.Context, table string, key []byte) error {
	if len(key) == 0 {
		key = []byte{0} // the smallest row key HBase accepts in a Get
	}
	return s.do(ctx, "scan", table, true, func(actx context.Context) error {
		get, err := hrpc.NewGet(actx, []byte(table), key)
		if err != nil {
			return fmt.Errorf("%w: %w", store.ErrInvalid, err)
		}
		get.ExistsOnly()
		_, err = s.client.Get(get)
		return err
	})
}

// what describes the scan for errors.
func (sc *scanner) what() string {
	if len(sc.start) == 0 {
		return "scan " + sc.table
	}
	return fmt.Sprintf("scan %s from row %x", sc.table, sc.start)
}

// Row returns the current row; its memory is valid until the next call to
// Next or Close.
func (sc *scanner) Row() store.Row { return sc.row }

// Err returns the error that ended the scan.
func (sc *scanner) Err() error { return sc.err }

// Close stops the scan and releases the server-side scanner.
func (sc *scanner) Close() error {
	sc.finish()
	return nil
}

func (sc *scanner) finish() {
	sc.closeHS()
	sc.done = true
	sc.resp = nil
	sc.row = store.Row{}
}

// fail ends the scan with err, which is already classified.
func (sc *scanner) fail(err error) {
	sc.finish()
	sc.err = err
	sc.s.failed("scan", err)
}
