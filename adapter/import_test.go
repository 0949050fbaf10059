package adapter

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/adapter/migrate"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

func TestImportCursorAdvance(t *testing.T) {
	var b migrate.Batch
	for i, n := range []int{5, 0, 2, 1} {
		pts := make([]mapping.Point, n)
		for j := range pts {
			pts[j] = mapping.Point{T: int64(j), V: float64(i)}
		}
		b.Append(labels.FromStrings("__name__", "m", "i", string(rune('a'+i))), pts...)
	}
	for _, tc := range []struct {
		name    string
		from    importCursor
		n       int
		to      importCursor
		samples int
	}{
		{"within the first series", importCursor{0, 0}, 3, importCursor{0, 3}, 3},
		{"the rest of a series", importCursor{0, 3}, 2, importCursor{1, 0}, 2},
		{"across series, past the empty one", importCursor{0, 3}, 4, importCursor{3, 0}, 4},
		{"past the end", importCursor{2, 1}, 10, importCursor{4, 0}, 2},
		{"all at once", importCursor{}, 100, importCursor{4, 0}, 8},
		{"a batch of 0 takes 1", importCursor{}, 0, importCursor{0, 1}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			to, n := tc.from.advance(&b, tc.n)
			if to != tc.to || n != tc.samples {
				t.Errorf("advance(%v, %d) = %v, %d; want %v, %d", tc.from, tc.n, to, n, tc.to, tc.samples)
			}
		})
	}
}

// countingPutter records the cells of each Put into the data table.
type countingPutter struct {
	store.Store
	mu    sync.Mutex
	cells []int
}

func (c *countingPutter) Put(ctx context.Context, table string, puts []store.Put) error {
	if table == "tsdb" {
		n := 0
		for _, p := range puts {
			n += len(p.Cells)
		}
		c.mu.Lock()
		c.cells = append(c.cells, n)
		c.mu.Unlock()
	}
	return c.Store.Put(ctx, table, puts)
}

// TestImportSplitsWrites: an import is written in writes of at most the
// batch's samples, a long series in parts, and reads back whole.
func TestImportSplitsWrites(t *testing.T) {
	st := openEmbedded(t)
	put := &countingPutter{Store: st}
	h := newTestHandlerPut(t, st, put, nil)
	h.importBatch = 3
	const t0 = 1_700_000_000_000
	var body []byte
	want := map[string]int{}
	for i, n := range []int{7, 0, 2, 4} {
		ts, vs := make([]int64, n), make([]float64, n)
		for j := range ts {
			ts[j], vs[j] = t0+int64(j)*15_000, float64(i*100+j)+0.25
		}
		name := "imp_" + string(rune('a'+i))
		body = migrate.AppendJSONLine(body, labels.FromStrings("__name__", name), ts, vs)
		if n > 0 {
			want[string(migrate.AppendJSONLine(nil, labels.FromStrings("__name__", name), ts, vs))]++
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/import", bytes.NewReader(body)))
	if rec.Code != http.StatusNoContent {
		t.Fatalf("import: %d %s", rec.Code, rec.Body)
	}
	total := 0
	for _, n := range put.cells {
		if n > 3 {
			t.Errorf("a write of %d samples, batch 3 (writes %v)", n, put.cells)
		}
		total += n
	}
	if total != 13 || len(put.cells) != 5 {
		t.Errorf("writes %v: want 13 samples in 5 writes", put.cells)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, `/api/v1/export?match[]={__name__=~"imp_.*"}&start=1699999999&end=1700000100`, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("export: %d %s", rec.Code, rec.Body)
	}
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		if line := sc.Text() + "\n"; want[line] > 0 {
			want[line]--
		} else if strings.TrimSpace(line) != "" {
			t.Errorf("exported %q, not imported", line)
		}
	}
	for line, n := range want {
		if n > 0 {
			t.Errorf("imported %q, not exported", line)
		}
	}
}

// deferringPutter is a store that defers durability, recording its
// calls into the data table and its syncs.
type deferringPutter struct {
	store.Store
	mu    sync.Mutex
	calls []string
}

func (d *deferringPutter) note(call string) {
	d.mu.Lock()
	d.calls = append(d.calls, call)
	d.mu.Unlock()
}

func (d *deferringPutter) Put(ctx context.Context, table string, puts []store.Put) error {
	if table == "tsdb" {
		d.note("put")
	}
	return d.Store.Put(ctx, table, puts)
}

func (d *deferringPutter) PutDeferred(ctx context.Context, table string, puts []store.Put) error {
	if table == "tsdb" {
		d.note("deferred")
	}
	return d.Store.Put(ctx, table, puts)
}

func (d *deferringPutter) Sync(context.Context) error {
	d.note("sync")
	return nil
}

// TestImportSyncs: an import's writes defer their fsync but the last,
// which syncs them all once its own puts are in; when a write fails after deferred ones, they
// are made durable before the answer says what was written.
func TestImportSyncs(t *testing.T) {
	line := func(name string, n int) string {
		ts, vs := make([]int64, n), make([]float64, n)
		for i := range ts {
			ts[i], vs[i] = 1_700_000_000_000+int64(i)*15_000, float64(i)
		}
		return string(migrate.AppendJSONLine(nil, labels.FromStrings("__name__", name), ts, vs))
	}
	bad := `{"metric":{"__name__":"b","":"x"},"values":[1],"timestamps":[1700000000000]}` + "\n"
	for _, tc := range []struct {
		name, body string
		code       int
		calls      string
	}{
		{"whole", line("a", 3) + line("c", 5), http.StatusNoContent, "deferred deferred deferred sync"},
		{"a write refused in part", line("a", 3) + bad + line("c", 5), http.StatusBadRequest, "deferred deferred sync"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openEmbedded(t)
			put := &deferringPutter{Store: st}
			h := newTestHandlerPut(t, st, put, nil)
			h.importBatch = 3
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/import", strings.NewReader(tc.body)))
			if rec.Code != tc.code {
				t.Fatalf("import: %d %s, want %d", rec.Code, rec.Body, tc.code)
			}
			if got := strings.Join(put.calls, " "); got != tc.calls {
				t.Errorf("store calls %q, want %q", got, tc.calls)
			}
		})
	}
}

// TestImportStreams: JSON lines parse while the body arrives for up to
// importStreams requests at once, the others once their body is in; both
// answer alike (a bad line: 400 naming it, nothing written), and every
// request gives its token back.
func TestImportStreams(t *testing.T) {
	const t0 = 1_700_000_000_000
	good := migrate.AppendJSONLine(nil, labels.FromStrings("__name__", "st_good"), []int64{t0}, []float64{1})
	bad := []byte(`{"metric":{"__name__":"st_bad"},"values":[1,2],"timestamps":[1]}` + "\n")
	// A line longer than the stream's window, and a body of such lines
	// past the limit (4 × the test handler's 1 MiB).
	ts, vs := make([]int64, 60_000), make([]float64, 60_000)
	for i := range ts {
		ts[i], vs[i] = t0+int64(i), float64(i)
	}
	long := migrate.AppendJSONLine(nil, labels.FromStrings("__name__", "st_long"), ts, vs)
	var huge []byte
	for len(huge) <= 4<<20 {
		huge = append(huge, long...)
	}
	// Short lines past the window, then a bad one: its number counted
	// across the window's moves.
	var many []byte
	lines := 0
	for ; len(many) < 3<<20; lines++ {
		many = migrate.AppendJSONLine(many, labels.FromStrings("__name__", "st_many", "i", strconv.Itoa(lines)), []int64{t0}, []float64{1})
	}
	many = append(many, bad...)
	wantLine := fmt.Sprintf("line %d", lines+1)
	for _, tc := range []struct {
		name     string
		taken    int // tokens taken by other requests
		body     []byte
		wantCode int
		wantBody string
		exported []byte
	}{
		{"streamed", 0, good, http.StatusNoContent, "", good},
		{"streamed, a bad line", 0, append(append(slices.Clone(good), '\n'), bad...), http.StatusBadRequest, "line 3", nil},
		{"streamed, a line longer than the window", 0, long, http.StatusNoContent, "", long},
		{"streamed, past the limit", 0, huge, http.StatusRequestEntityTooLarge, "exceeds", nil},
		{"streamed, a bad line past the window", 0, many, http.StatusBadRequest, wantLine, nil},
		{"no token left", importStreams, good, http.StatusNoContent, "", good},
		{"no token left, a bad line", importStreams, append(append(slices.Clone(good), '\n'), bad...), http.StatusBadRequest, "line 3", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openEmbedded(t)
			h := newTestHandlerPut(t, st, st, nil)
			for range tc.taken {
				h.streams <- struct{}{}
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/import", bytes.NewReader(tc.body)))
			if rec.Code != tc.wantCode || !strings.Contains(rec.Body.String(), tc.wantBody) {
				t.Errorf("answer %d %q, want %d with %q", rec.Code, rec.Body, tc.wantCode, tc.wantBody)
			}
			if n := len(h.streams); n != tc.taken {
				t.Errorf("%d tokens taken after the request, want %d", n, tc.taken)
			}
			rec = httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, `/api/v1/export?match[]={__name__=~"st_.*"}&start=1699999999&end=1700000100`, nil))
			if got := rec.Body.String(); got != string(tc.exported) {
				t.Errorf("exported %d bytes, want %d", len(got), len(tc.exported))
			}
		})
	}
}

// TestReadLimitedFeed: with a feed that takes its complete lines, a body
// of many MiB is read through a buffer that stays at its start size, and
// what the feed took followed by what is left is the body.
func TestReadLimitedFeed(t *testing.T) {
	var body []byte
	for i := 0; len(body) < 5<<20; i++ {
		body = fmt.Appendf(body, "line %d\n", i)
	}
	body = append(body, "tail"...)
	var took []byte
	maxCap := 0
	feed := func(buf []byte) (int, error) {
		maxCap = max(maxCap, cap(buf))
		n := bytes.LastIndexByte(buf, '\n') + 1
		took = append(took, buf[:n]...)
		return n, nil
	}
	rest, err := readLimited(iotest.HalfReader(bytes.NewReader(body)), make([]byte, 0, 64<<10), int64(len(body)), feed)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(append(took, rest...), body) {
		t.Errorf("taken and left: %d + %d bytes, not the body's %d", len(took), len(rest), len(body))
	}
	if maxCap > 64<<10 {
		t.Errorf("the buffer grew to %d bytes", maxCap)
	}
	if _, err := readLimited(bytes.NewReader(body), make([]byte, 0, 64<<10), int64(len(body))-1, feed); !errors.Is(err, errTooLarge) {
		t.Errorf("a body a byte past the limit: %v, want errTooLarge", err)
	}
}
