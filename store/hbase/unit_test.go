package hbase

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tsuna/gohbase"
	"github.com/tsuna/gohbase/hrpc"
	"github.com/tsuna/gohbase/pb"
	"github.com/tsuna/gohbase/region"

	"github.com/promhbase/promhbase/store"
)

// The tests in this file need no HBase: they run the Store on a fake
// gohbase client.

// fakeClient implements the parts of gohbase.Client the tests use; the
// embedded nil interface makes any other call panic.
type fakeClient struct {
	gohbase.Client
	mu        sync.Mutex
	sendBatch func(attempt int, calls []hrpc.Call) []error
	batches   int
	get       func(*hrpc.Get) (*hrpc.Result, error)
	increment func(attempt int) (int64, error)
	incs      int
	scan      func(*hrpc.Scan) *fakeScanner
	deletes   []*hrpc.Mutate
}

func (f *fakeClient) SendBatch(_ context.Context, calls []hrpc.Call) ([]hrpc.RPCResult, bool) {
	f.mu.Lock()
	attempt := f.batches
	f.batches++
	f.mu.Unlock()
	errs := f.sendBatch(attempt, calls)
	res := make([]hrpc.RPCResult, len(calls))
	ok := true
	for i, err := range errs {
		res[i].Error = err
		ok = ok && err == nil
	}
	return res, ok
}

func (f *fakeClient) Get(g *hrpc.Get) (*hrpc.Result, error) {
	if f.get == nil {
		return &hrpc.Result{}, nil
	}
	return f.get(g)
}

func (f *fakeClient) Increment(*hrpc.Mutate) (int64, error) {
	f.incs++
	return f.increment(f.incs - 1)
}

func (f *fakeClient) ScanV2(s *hrpc.Scan) hrpc.ScannerV2 { return f.scan(s) }

func (f *fakeClient) Delete(d *hrpc.Mutate) (*hrpc.Result, error) {
	f.mu.Lock()
	f.deletes = append(f.deletes, d)
	f.mu.Unlock()
	return &hrpc.Result{}, nil
}

func (f *fakeClient) Close() {}

func fakeStore(t *testing.T, f *fakeClient, cfg Config) *Store {
	t.Helper()
	m, err := newMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &Store{cfg: cfg.withDefaults(), logger: slog.New(slog.DiscardHandler), client: f, metrics: m}
}

// javaError renders an HBase exception the way gohbase does.
func javaError(class, msg string) error {
	return fmt.Errorf("HBase Java exception %s:\n%s: %s\n\tat org.apache.hadoop.hbase.Foo.bar(Foo.java:1)\n", class, class, msg)
}

func rowsOf(calls []hrpc.Call) []string {
	var keys []string
	for _, c := range calls {
		keys = append(keys, string(c.Key()))
	}
	return keys
}

func TestPutRetriesOnlyFailedRows(t *testing.T) {
	puts := []store.Put{
		{Row: []byte("a"), Cells: []store.Cell{{Family: []byte("t"), Value: []byte("1")}}},
		{Row: []byte("b"), Cells: []store.Cell{{Family: []byte("t"), Value: []byte("2")}}},
		{Row: []byte("c"), Cells: []store.Cell{{Family: []byte("t"), Value: []byte("3")}}},
	}
	noSuchFamily := javaError("org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException", "Column family x does not exist")
	for _, tc := range []struct {
		name     string
		errs     func(attempt int, rows []string) []error
		want     error // nil: success
		attempts int
		rows     []string // rows of each attempt, joined with ","
	}{
		{
			name: "partial failure, then success",
			errs: func(attempt int, rows []string) []error {
				if attempt == 0 {
					return []error{nil, gohbase.NotExecutedError, region.RetryableError{}}
				}
				return make([]error, len(rows))
			},
			attempts: 2, rows: []string{"a,b,c", "b,c"},
		},
		{
			name: "an error that will not pass stops at once",
			errs: func(attempt int, rows []string) []error {
				return []error{nil, noSuchFamily, gohbase.NotExecutedError}
			},
			want: store.ErrInvalid, attempts: 1, rows: []string{"a,b,c"},
		},
		{
			name: "missing table",
			errs: func(attempt int, rows []string) []error {
				return []error{gohbase.TableNotFound, gohbase.TableNotFound, gohbase.TableNotFound}
			},
			want: store.ErrTableNotFound, attempts: 1, rows: []string{"a,b,c"},
		},
		{
			name: "retries are bounded",
			errs: func(attempt int, rows []string) []error {
				errs := make([]error, len(rows))
				errs[0] = gohbase.ErrCannotFindRegion
				return errs
			},
			want: store.ErrUnavailable, attempts: 3, rows: []string{"a,b,c", "a", "a"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen []string
			f := &fakeClient{sendBatch: func(attempt int, calls []hrpc.Call) []error {
				rows := rowsOf(calls)
				seen = append(seen, strings.Join(rows, ","))
				return tc.errs(attempt, rows)
			}}
			s := fakeStore(t, f, Config{Retries: 2})
			err := s.Put(context.Background(), "tsdb", puts)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if f.batches != tc.attempts || strings.Join(seen, " ") != strings.Join(tc.rows, " ") {
				t.Errorf("batches = %d %q, want %d %q", f.batches, seen, tc.attempts, tc.rows)
			}
		})
	}
}

func TestPutRowPerTimestamp(t *testing.T) {
	muts, err := mutations([]store.Put{
		{Row: []byte("r"), Cells: []store.Cell{
			{Family: []byte("t"), Qualifier: []byte("a"), Value: []byte("1")},
			{Family: []byte("t"), Qualifier: []byte("b"), Value: []byte("2"), Timestamp: 7},
			{Family: []byte("u"), Qualifier: []byte("c"), Value: []byte("3")},
		}},
		{Row: []byte("s"), Cells: nil},
		{Row: []byte("s"), Cells: []store.Cell{{Family: []byte("t"), Qualifier: []byte("a")}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range muts {
		got = append(got, fmt.Sprintf("%s@%d:%v", m.row, m.ts, m.values))
	}
	want := "r@0:map[t:map[a:[49]] u:map[c:[51]]] r@7:map[t:map[b:[50]]] s@0:map[t:map[a:[]]]"
	if strings.Join(got, " ") != want {
		t.Errorf("mutations = %s\nwant        %s", strings.Join(got, " "), want)
	}
}

func TestIncrementRetries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		err      error
		attempts int
	}{
		// The request never left: no region found.
		{"region lookup failed", gohbase.ErrCannotFindRegion, 3},
		// It may have been applied: not retried.
		{"server failed", region.ServerError{}, 1},
		{"timeout", context.DeadlineExceeded, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeClient{increment: func(int) (int64, error) { return 0, tc.err }}
			s := fakeStore(t, f, Config{Retries: 2})
			_, err := s.Increment(context.Background(), "tsdb-uid", []byte{0}, "id", "metrics", 1)
			if !errors.Is(err, store.ErrUnavailable) {
				t.Errorf("err = %v, want store.ErrUnavailable", err)
			}
			if f.incs != tc.attempts {
				t.Errorf("attempts = %d, want %d", f.incs, tc.attempts)
			}
		})
	}
}

// fakeScanner returns rows, then err (io.EOF when nil).
// fakeScanner answers a scan with one response per entry of rows, or of
// resps when set: each response's rows as "row/qualifier", with a
// trailing "~" for a partial result (more of the row follows). After the
// responses comes err, or io.EOF.
type fakeScanner struct {
	rows   []string
	resps  [][]string
	err    error
	closed bool
	// block, when set, is the scan's context: Next waits for it to end
	// and returns its error, as gohbase does while it looks for the
	// region of a missing table.
	block context.Context
	// onNext, when set, is called at the start of each Next with the
	// call's number, from 1.
	onNext func(n int)
	nexts  int
}

func (f *fakeScanner) Next() (*hrpc.ScanResponseV2, error) {
	f.nexts++
	if f.onNext != nil {
		f.onNext(f.nexts)
	}
	if f.block != nil {
		<-f.block.Done()
		return nil, f.block.Err()
	}
	if f.resps == nil {
		for _, r := range f.rows {
			f.resps = append(f.resps, []string{r + "/q"})
		}
		f.rows = nil
	}
	if len(f.resps) == 0 {
		if f.err == nil {
			return nil, io.EOF
		}
		return nil, f.err
	}
	resp := &hrpc.ScanResponseV2{}
	for _, r := range f.resps[0] {
		partial := strings.HasSuffix(r, "~")
		row, qual, _ := strings.Cut(strings.TrimSuffix(r, "~"), "/")
		c, err := hrpc.NewCellV2([]byte(row), []byte("t"), []byte(qual), 1, []byte("v"), pb.CellType_PUT)
		if err != nil {
			return nil, err
		}
		resp.Results = append(resp.Results, hrpc.ResultV2{Cells: []hrpc.CellV2{c}, Partial: partial})
	}
	f.resps = f.resps[1:]
	if len(f.resps) == 0 {
		f.resps = [][]string{}
	}
	return resp, nil
}

func (f *fakeScanner) Scan(uint32) (*hrpc.ScanResponseV2, error) { return f.Next() }
func (f *fakeScanner) Close() error                              { f.closed = true; return nil }
func (f *fakeScanner) GetScanMetrics() map[string]int64          { return nil }

// TestScanPartialRows: rows sent in parts, within a response and across
// responses, come back whole; several rows in one response come back one
// by one.
func TestScanPartialRows(t *testing.T) {
	for _, tc := range []struct {
		name  string
		resps [][]string
		err   error
		want  string
	}{
		{"one response", [][]string{{"r1/a", "r2/a", "r3/a"}}, nil, "r1:a r2:a r3:a"},
		{"parts in one response", [][]string{{"r1/a~", "r1/b", "r2/a"}}, nil, "r1:a,b r2:a"},
		{"parts across responses", [][]string{{"r1/a", "r2/a~"}, {"r2/b~"}, {"r2/c", "r3/a"}}, nil, "r1:a r2:a,b,c r3:a"},
		{"empty responses between parts", [][]string{{"r1/a~"}, {}, {"r1/b"}}, nil, "r1:a,b"},
		{"last part marked partial", [][]string{{"r1/a", "r2/a~"}}, nil, "r1:a r2:a"},
		{"next row after a partial one", [][]string{{"r1/a~", "r2/a"}}, nil, "r1:a r2:a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeClient{scan: func(*hrpc.Scan) *fakeScanner { return &fakeScanner{resps: tc.resps, err: tc.err} }}
			s := fakeStore(t, f, Config{})
			sc := s.Scan(context.Background(), store.ScanRequest{Table: "tsdb"})
			var got []string
			for sc.Next() {
				var quals []string
				for _, c := range sc.Row().Cells {
					quals = append(quals, string(c.Qualifier))
				}
				got = append(got, string(sc.Row().Key)+":"+strings.Join(quals, ","))
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("rows = %s, want %s", strings.Join(got, " "), tc.want)
			}
		})
	}
}

// TestScanPartialRowReadAgain: a failure in the middle of a row sent in
// parts resumes at that row, which comes back whole, once.
func TestScanPartialRowReadAgain(t *testing.T) {
	lease := javaError("org.apache.hadoop.hbase.UnknownScannerException", "Unknown scanner")
	var starts []string
	f := &fakeClient{scan: func(s *hrpc.Scan) *fakeScanner {
		starts = append(starts, string(s.StartRow()))
		if len(starts) == 1 {
			return &fakeScanner{resps: [][]string{{"r1/a", "r2/a~"}}, err: lease}
		}
		return &fakeScanner{resps: [][]string{{"r2/a~"}, {"r2/b"}}}
	}}
	s := fakeStore(t, f, Config{Retries: 2})
	sc := s.Scan(context.Background(), store.ScanRequest{Table: "tsdb", Start: []byte("r")})
	var got []string
	for sc.Next() {
		got = append(got, fmt.Sprintf("%s:%d", sc.Row().Key, len(sc.Row().Cells)))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "r1:1 r2:2" || strings.Join(starts, " ") != "r r1\x00" {
		t.Errorf("rows %v from scanners at %q, want r1:1 r2:2 from r and r1\\x00", got, starts)
	}
}

func TestScanResumesAfterLastRow(t *testing.T) {
	lease := javaError("org.apache.hadoop.hbase.UnknownScannerException", "Unknown scanner '42'. This can happen due to any of the following reasons: ...")
	var starts []string
	var scanners []*fakeScanner
	f := &fakeClient{scan: func(s *hrpc.Scan) *fakeScanner {
		starts = append(starts, fmt.Sprintf("%q", s.StartRow()))
		var fs *fakeScanner
		switch len(starts) {
		case 1:
			fs = &fakeScanner{rows: []string{"r1", "r2"}, err: lease}
		case 2:
			fs = &fakeScanner{err: lease} // fails before any row
		default:
			fs = &fakeScanner{rows: []string{"r3"}}
		}
		scanners = append(scanners, fs)
		return fs
	}}
	s := fakeStore(t, f, Config{Retries: 2})
	sc := s.Scan(context.Background(), store.ScanRequest{Table: "tsdb", Start: []byte("r"), Stop: []byte("s")})
	var got []string
	for sc.Next() {
		got = append(got, string(sc.Row().Key))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "r1,r2,r3" {
		t.Errorf("rows = %v, want r1,r2,r3", got)
	}
	if want := `"r" "r2\x00" "r2\x00"`; strings.Join(starts, " ") != want {
		t.Errorf("scanners started at %s, want %s", strings.Join(starts, " "), want)
	}
	for i, fs := range scanners {
		if !fs.closed {
			t.Errorf("scanner %d not closed", i)
		}
	}
}

func TestScanResumeAtStop(t *testing.T) {
	lease := javaError("org.apache.hadoop.hbase.UnknownScannerException", "Unknown scanner")
	opened := 0
	f := &fakeClient{scan: func(*hrpc.Scan) *fakeScanner {
		opened++
		return &fakeScanner{rows: []string{"r1", "r2"}, err: lease}
	}}
	s := fakeStore(t, f, Config{Retries: 2})
	// The failure comes after r2, the last row of the range: nothing is
	// left to resume.
	sc := s.Scan(context.Background(), store.ScanRequest{Table: "tsdb", Stop: []byte("r2\x00")})
	var got []string
	for sc.Next() {
		got = append(got, string(sc.Row().Key))
	}
	if err := sc.Err(); err != nil || strings.Join(got, ",") != "r1,r2" || opened != 1 {
		t.Errorf("rows %v, err %v, scanners %d; want r1,r2, no error, 1 scanner", got, err, opened)
	}
	if sc.Next() {
		t.Error("Next after the end = true")
	}
}

func TestScanGivesUpAfterRetries(t *testing.T) {
	lease := javaError("org.apache.hadoop.hbase.UnknownScannerException", "Unknown scanner")
	opened := 0
	f := &fakeClient{scan: func(*hrpc.Scan) *fakeScanner {
		opened++
		return &fakeScanner{err: lease}
	}}
	s := fakeStore(t, f, Config{Retries: 2})
	sc := s.Scan(context.Background(), store.ScanRequest{Table: "tsdb"})
	if sc.Next() {
		t.Fatal("Next = true, want false")
	}
	if err := sc.Err(); !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "UnknownScannerException: Unknown scanner") {
		t.Errorf("err = %v, want store.ErrUnavailable naming the exception", err)
	}
	if opened != 3 {
		t.Errorf("opened %d scanners, want 3", opened)
	}
}

// TestScanProbeFailsFast: the existence Get beside a scan that finds no
// region (gohbase looks until the context ends) ends it with the Get's
// error; a Get that fails after the scan succeeded changes nothing.
func TestScanProbeFailsFast(t *testing.T) {
	t.Run("scan waits for its region", func(t *testing.T) {
		var fs *fakeScanner
		f := &fakeClient{
			get:  func(*hrpc.Get) (*hrpc.Result, error) { return nil, gohbase.TableNotFound },
			scan: func(s *hrpc.Scan) *fakeScanner { fs = &fakeScanner{block: s.Context()}; return fs },
		}
		s := fakeStore(t, f, Config{})
		sc := s.Scan(context.Background(), store.ScanRequest{Table: "nope", Start: []byte("a")})
		if sc.Next() || !errors.Is(sc.Err(), store.ErrTableNotFound) {
			t.Errorf("scan of a missing table: err = %v, want store.ErrTableNotFound", sc.Err())
		}
		if err := sc.Err(); err == nil || !strings.Contains(err.Error(), "scan nope from row 61") {
			t.Errorf("err = %v, want it to name the scan", err)
		}
		if fs == nil || !fs.closed {
			t.Error("the scanner was not closed")
		}
	})
	t.Run("probe answers after the scan", func(t *testing.T) {
		release := make(chan struct{})
		f := &fakeClient{
			get: func(*hrpc.Get) (*hrpc.Result, error) {
				<-release
				return nil, gohbase.TableNotFound
			},
			scan: func(*hrpc.Scan) *fakeScanner { return &fakeScanner{rows: []string{"r1", "r2"}} },
		}
		s := fakeStore(t, f, Config{})
		sc := s.Scan(context.Background(), store.ScanRequest{Table: "tsdb"})
		n := 0
		for sc.Next() {
			n++
		}
		close(release)
		if err := sc.Err(); err != nil || n != 2 {
			t.Errorf("%d rows, err %v; want 2, none", n, err)
		}
	})
}

// TestScanReadsAhead: the next response is asked for while the rows of
// the one before are being read, never more than one ahead; a scan closed
// while its read ahead waits for the server ends it and closes the
// gohbase scanner.
func TestScanReadsAhead(t *testing.T) {
	t.Run("one response ahead", func(t *testing.T) {
		calls := make(chan int, 10)
		f := &fakeClient{scan: func(*hrpc.Scan) *fakeScanner {
			return &fakeScanner{resps: [][]string{{"r1/a", "r2/a"}, {"r3/a"}, {"r4/a"}}, onNext: func(n int) { calls <- n }}
		}}
		s := fakeStore(t, f, Config{})
		sc := s.Scan(context.Background(), store.ScanRequest{Table: "tsdb"})
		waitCall := func(want int) {
			t.Helper()
			select {
			case n := <-calls:
				if n != want {
					t.Fatalf("Next call %d, want %d", n, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("Next call %d did not come", want)
			}
		}
		if !sc.Next() || string(sc.Row().Key) != "r1" {
			t.Fatalf("first row %q, err %v", sc.Row().Key, sc.Err())
		}
		waitCall(1)
		// r1 is being read: the second response is asked for now.
		waitCall(2)
		select {
		case n := <-calls:
			t.Fatalf("Next call %d while the second response waits unread", n)
		case <-time.After(50 * time.Millisecond):
		}
		var got []string
		for sc.Next() {
			got = append(got, string(sc.Row().Key))
		}
		if err := sc.Err(); err != nil || strings.Join(got, ",") != "r2,r3,r4" {
			t.Errorf("rows %v, err %v; want r2,r3,r4", got, err)
		}
	})
	t.Run("closed while reading ahead", func(t *testing.T) {
		var fs *fakeScanner
		f := &fakeClient{scan: func(s *hrpc.Scan) *fakeScanner {
			fs = &fakeScanner{resps: [][]string{{"r1/a"}}}
			ctx := s.Context()
			fs.onNext = func(n int) {
				if n == 2 {
					fs.block = ctx // the server takes its time with the second
				}
			}
			return fs
		}}
		s := fakeStore(t, f, Config{})
		sc := s.Scan(context.Background(), store.ScanRequest{Table: "tsdb"})
		if !sc.Next() {
			t.Fatalf("no first row: %v", sc.Err())
		}
		done := make(chan struct{})
		go func() { sc.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Close waits for the response read ahead")
		}
		if !fs.closed || sc.Next() || sc.Err() != nil {
			t.Errorf("after Close: scanner closed %v, err %v; want closed, no error", fs.closed, sc.Err())
		}
	})
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name     string
		err      error
		timedOut bool
		want     error // nil: no sentinel
		text     string
	}{
		{"missing table", gohbase.TableNotFound, false, store.ErrTableNotFound, "table not found (hbase)"},
		{"remote missing table", javaError("org.apache.hadoop.hbase.TableNotFoundException", "t"), false, store.ErrTableNotFound, "table not found: hbase TableNotFoundException: t"},
		{"bad regex", javaError("org.apache.hadoop.hbase.DoNotRetryIOException", "java.util.regex.PatternSyntaxException: Unclosed group"), false, store.ErrInvalid, "invalid store request: hbase DoNotRetryIOException: java.util.regex.PatternSyntaxException: Unclosed group"},
		{"no such family", javaError("org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException", "Column family x does not exist"), false, store.ErrInvalid, ""},
		{"lease expired", javaError("org.apache.hadoop.hbase.UnknownScannerException", "Unknown scanner"), false, store.ErrUnavailable, ""},
		{"region moved", region.NotServingRegionError{}, false, store.ErrUnavailable, ""},
		{"server stopped", region.ServerError{}, false, store.ErrUnavailable, ""},
		{"deadline", context.DeadlineExceeded, false, store.ErrUnavailable, ""},
		{"attempt timed out", errors.New("failed looking up region"), true, store.ErrUnavailable, ""},
		{"not executed", gohbase.NotExecutedError, false, store.ErrUnavailable, ""},
		{"refused", &netOpError{}, false, store.ErrUnavailable, ""},
		{"canceled", context.Canceled, false, nil, "context canceled"},
		{"access denied", javaError("org.apache.hadoop.hbase.security.AccessDeniedException", "no"), false, nil, "hbase AccessDeniedException: no"},
		{"unknown", errors.New("something else"), false, nil, "something else"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := classify(tc.err, tc.timedOut)
			for _, sentinel := range []error{store.ErrTableNotFound, store.ErrInvalid, store.ErrUnavailable} {
				if errors.Is(got, sentinel) != errors.Is(sentinel, tc.want) {
					t.Errorf("classify(%v) = %v; errors.Is %v = %v", tc.err, got, sentinel, !errors.Is(sentinel, tc.want))
				}
			}
			if !errors.Is(got, tc.err) && !errors.Is(tc.err, gohbase.TableNotFound) {
				t.Errorf("classify(%v) = %v, which does not wrap the original", tc.err, got)
			}
			if tc.text != "" && got.Error() != tc.text {
				t.Errorf("text = %q, want %q", got.Error(), tc.text)
			}
			if strings.Contains(got.Error(), "\n") {
				t.Errorf("text has several lines: %q", got.Error())
			}
		})
	}
}

// netOpError is a connection-refused net.Error.
type netOpError struct{}

func (*netOpError) Error() string   { return "dial tcp 127.0.0.1:2181: connect: connection refused" }
func (*netOpError) Timeout() bool   { return false }
func (*netOpError) Temporary() bool { return false }

func TestSaltSplitKeys(t *testing.T) {
	for _, tc := range []struct {
		width, buckets int
		want           string // hex keys, or "error"
	}{
		{0, 20, ""},
		{1, 1, ""},
		{1, 4, "01 02 03"},
		{2, 3, "0001 0002"},
		{1, 256, "error-free"},
		{1, 257, "error"},
		{3, 2, "000001"},
		{8, 2, "0000000000000001"},
		{9, 2, "error"},
		{-1, 2, "error"},
		{1, 0, "error"},
	} {
		t.Run(fmt.Sprintf("width=%d/buckets=%d", tc.width, tc.buckets), func(t *testing.T) {
			keys, err := SaltSplitKeys(tc.width, tc.buckets)
			switch tc.want {
			case "error":
				if !errors.Is(err, store.ErrInvalid) {
					t.Errorf("err = %v, want store.ErrInvalid", err)
				}
				return
			case "error-free":
				if err != nil || len(keys) != tc.buckets-1 || keys[len(keys)-1][0] != 0xFF {
					t.Errorf("keys = %d (%v), want %d ending in ff", len(keys), err, tc.buckets-1)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, k := range keys {
				got = append(got, fmt.Sprintf("%x", k))
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("keys = %v, want %s", got, tc.want)
			}
		})
	}
}

func TestTablesSpecs(t *testing.T) {
	specs, err := tablesSpecs(TablesConfig{Compression: "gz", DataTTL: 48 * time.Hour, SaltWidth: 1, SaltBuckets: 2}.withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(specs)
	want := "[{tsdb map[t:map[BLOOMFILTER:ROW COMPRESSION:GZ TTL:172800 VERSIONS:1]] [[1]]} " +
		"{tsdb-uid map[id:map[BLOOMFILTER:ROW COMPRESSION:GZ VERSIONS:1] name:map[BLOOMFILTER:ROW COMPRESSION:GZ VERSIONS:1]] []}]"
	if got != want {
		t.Errorf("specs = %s\nwant    %s", got, want)
	}
	for _, bad := range []TablesConfig{
		{Compression: "FOO"},
		{DataTable: "x", UIDTable: "x"},
		{DataTTL: time.Millisecond},
		{SaltWidth: 9},
	} {
		if _, err := tablesSpecs(bad.withDefaults()); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("tablesSpecs(%+v): err = %v, want store.ErrInvalid", bad, err)
		}
	}
}

func TestCheckTableName(t *testing.T) {
	for name, ok := range map[string]bool{
		"tsdb": true, "tsdb-uid": true, "a.b_c-1": true, "_x": true,
		"": false, "-x": false, ".x": false, "a b": false, "tä": false,
		"ns:t": true, "t_a:tsdb-uid": true,
		"default:t": false, ":t": false, "ns:": false, "n-s:t": false, "ns:a:b": false, "ns:-t": false,
	} {
		if err := checkTableName(name); (err == nil) != ok {
			t.Errorf("checkTableName(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	got := Config{FlushInterval: -1, Retries: -1, ScannerRenewInterval: -1}.withDefaults()
	if got.FlushInterval != 0 || got.Retries != 0 || got.ScannerRenewInterval != 0 {
		t.Errorf("negative settings = %+v, want them off", got)
	}
	got = Config{}.withDefaults()
	if got.ZKQuorum != DefaultZKQuorum || got.ZKRoot != DefaultZKRoot || got.RPCTimeout != DefaultRPCTimeout ||
		got.FlushInterval != DefaultFlushInterval || got.Retries != DefaultRetries || got.ScannerRenewInterval != DefaultScannerRenewInterval {
		t.Errorf("defaults = %+v", got)
	}
	if _, err := New(Config{ZKRoot: "hbase"}, nil, nil); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("New with a relative znode root: err = %v, want store.ErrInvalid", err)
	}
}

// TestGatheredCollector checks the bridge on a registry of its own.
func TestGatheredCollector(t *testing.T) {
	src := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gohbase_test_total", Help: "h"}, []string{"op"})
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gohbase_test_seconds", Help: "h", Buckets: []float64{1}})
	other := prometheus.NewCounter(prometheus.CounterOpts{Name: "other_total", Help: "h"})
	src.MustRegister(c, h, other)
	c.WithLabelValues("get").Add(2)
	h.Observe(0.5)
	other.Inc()

	dst := prometheus.NewRegistry()
	bridge := newGatheredCollector(src, "gohbase_")
	dst.MustRegister(bridge)
	if err := dst.Register(newGatheredCollector(src, "gohbase_")); err == nil {
		t.Error("a second bridge for the same prefix registered; want AlreadyRegisteredError")
	}
	mfs, err := dst.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			// Labels by hand: protobuf's text form varies its spacing on
			// purpose.
			var lbls []string
			for _, l := range m.GetLabel() {
				lbls = append(lbls, l.GetName()+"="+l.GetValue())
			}
			got = append(got, fmt.Sprintf("%s{%s}=%v/%v", mf.GetName(), strings.Join(lbls, ","), m.GetCounter().GetValue(), m.GetHistogram().GetSampleCount()))
		}
	}
	want := `gohbase_test_seconds{}=0/1 gohbase_test_total{op=get}=2/0`
	if strings.Join(got, " ") != want {
		t.Errorf("gathered %s\nwant     %s", strings.Join(got, " "), want)
	}
	if !dst.Unregister(bridge) {
		t.Error("Unregister of the bridge failed")
	}
}

// describeDelete renders an hrpc Delete as its timestamp (or "latest") and
// its sorted family:qualifier list, from the protobuf sent to HBase.
func describeDelete(t *testing.T, c hrpc.Call) string {
	t.Helper()
	c.(*hrpc.Mutate).SetRegion(region.NewInfo(0, nil, []byte("tsdb"), []byte("tsdb,,1"), nil, nil))
	req, ok := c.ToProto().(*pb.MutateRequest)
	if !ok {
		t.Fatalf("call %T is not a mutation", c)
	}
	m := req.GetMutation()
	if m.GetMutateType() != pb.MutationProto_DELETE {
		t.Fatalf("mutation type %v, want DELETE", m.GetMutateType())
	}
	ts := "latest"
	if m.Timestamp != nil {
		ts = fmt.Sprint(m.GetTimestamp())
	}
	var cols []string
	for fam, quals := range c.(*hrpc.Mutate).Values() {
		for q := range quals {
			cols = append(cols, fam+":"+q)
		}
	}
	sort.Strings(cols)
	if len(cols) == 0 {
		cols = []string{"row"}
	}
	return fmt.Sprintf("%s@%s[%s]", c.Key(), ts, strings.Join(cols, ","))
}

// TestDeleteGroupsByTimestamp: an hrpc Delete carries one timestamp, so a
// delete of columns with different bounds becomes one hrpc Delete per bound,
// sent as one batch; a single bound stays one plain Delete.
func TestDeleteGroupsByTimestamp(t *testing.T) {
	col := func(f, q string, ts uint64) store.Column {
		return store.Column{Family: []byte(f), Qualifier: []byte(q), Timestamp: ts}
	}
	for _, tc := range []struct {
		name    string
		columns []store.Column
		batch   bool
		want    []string
	}{
		{"whole row", nil, false, []string{"r@latest[row]"}},
		{"unbounded columns", []store.Column{col("t", "a", 0), col("t", "b", 0)}, false, []string{"r@latest[t:a,t:b]"}},
		{"one bound", []store.Column{col("t", "a", 7), col("u", "b", 7)}, false, []string{"r@7[t:a,u:b]"}},
		{"bounds per column", []store.Column{col("t", "a", 7), col("t", "b", 9), col("t", "c", 7), col("t", "d", 0)}, true,
			[]string{"r@7[t:a,t:c]", "r@9[t:b]", "r@latest[t:d]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var batched []hrpc.Call
			f := &fakeClient{sendBatch: func(_ int, calls []hrpc.Call) []error {
				batched = append(batched, calls...)
				return make([]error, len(calls))
			}}
			s := fakeStore(t, f, Config{})
			if err := s.Delete(context.Background(), "tsdb", []byte("r"), tc.columns); err != nil {
				t.Fatal(err)
			}
			calls := batched
			if !tc.batch {
				if len(batched) > 0 {
					t.Fatalf("%d calls batched, want one plain Delete", len(batched))
				}
				for _, d := range f.deletes {
					calls = append(calls, d)
				}
			} else if len(f.deletes) > 0 {
				t.Fatalf("%d plain Deletes, want one batch", len(f.deletes))
			}
			var got []string
			for _, c := range calls {
				got = append(got, describeDelete(t, c))
			}
			sort.Strings(got)
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("deletes = %v, want %v", got, tc.want)
			}
		})
	}
	if _, err := deletions([]byte("r"), []store.Column{col("t", "a", 1<<63)}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("bound beyond int64: err = %v, want store.ErrInvalid", err)
	}
}
