package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded/wlog/wlogfault"
)

// faultChildEnv, set, makes the test binary run one workload instead of
// its tests (TestMain): "dir k errno mode", k 0 for no fault, mode
// "power" (Pebble's files in memory, a power loss at the end) or "kill"
// (every file on disk, the process's death at the end).
const faultChildEnv = "PROMHBASE_EMBEDDED_FAULT_CHILD"

// Exit statuses of a fault child: it ran its workload to the end, or
// the store met an error it cannot go on from (serve exits then too).
// Pebble panics on some I/O errors (a log it cannot rotate to, a
// MANIFEST marker it cannot move at open): the child dies of it (2).
const (
	faultChildDone  = 0
	faultChildFatal = 10
)

// faultRun is one child's workload on the store in dir/store: its
// filesystems, fault counting, and the log of what was acknowledged
// (dir/acks: "d row qualifier value", "u row", lines written as each
// write is acknowledged; then "ops N", the operations that change the
// disk its filesystems were asked about).
type faultRun struct {
	dir   string
	mem   *vfs.MemFS // Pebble's files in power mode; nil in kill mode
	log   *wlogfault.FS
	count func() int

	mu      sync.Mutex
	acks    *os.File
	stopped bool // crash took the acknowledgments: no more are logged
	once    sync.Once
}

// runFaultChild runs the workload of spec (faultChildEnv) and returns the
// process's exit status; on a fatal error it ends the process itself,
// after the crash.
func runFaultChild(spec string) int {
	var dir, errno, mode string
	var k int
	if _, err := fmt.Sscan(spec, &dir, &k, &errno, &mode); err != nil {
		fmt.Fprintln(os.Stderr, "bad", faultChildEnv, spec, err)
		return 2
	}
	var fail error = syscall.EIO
	if errno == "ENOSPC" {
		fail = syscall.ENOSPC
	}
	fault, count := wlogfault.FailNth(k, fail)
	r := &faultRun{dir: dir, count: count, log: wlogfault.New(fault)}
	storeDir := filepath.Join(dir, "store")
	// A power loss may take what the log wrote in its last sync interval
	// (serve's default, --storage.embedded.wal-sync-interval=100ms): it
	// runs with a group commit; a process's death takes nothing.
	base, logSync := vfs.Default, 100*time.Millisecond
	if mode == "power" {
		r.mem = vfs.NewCrashableMem()
		base, logSync = r.mem, 0
	}
	acks, err := os.Create(filepath.Join(dir, "acks"))
	if err == nil {
		r.acks = acks
		err = os.MkdirAll(storeDir, 0o755)
	}
	if err == nil {
		err = durableDir(base, storeDir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	pebbleFS := errorfs.Wrap(base, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind.ReadOrWrite() != errorfs.OpIsWrite {
			return nil
		}
		return fault(fmt.Sprint(op.Kind), op.Path)
	}))
	s, err := Open(storeDir, Options{
		Tables: []string{"d", "u"}, BufferTables: []string{"d"}, BufferBytes: 1 << 20,
		SettleInterval: -1, FS: pebbleFS, LogFS: r.log, diskCheckEvery: 20 * time.Millisecond,
		LogSyncInterval: logSync,
		OnFatal: func(msg string) {
			fmt.Fprintln(os.Stderr, "fatal:", msg)
			r.crash()
			os.Exit(faultChildFatal)
		},
	})
	if err == nil {
		r.workload(s)
	} else {
		fmt.Fprintln(os.Stderr, "open:", err)
	}
	r.crash()
	return faultChildDone
}

// durableDir makes dir and its parents in fs, durable as a directory made
// long before the store opened is.
func durableDir(fs vfs.FS, dir string) error {
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for d := dir; ; d = filepath.Dir(d) {
		f, err := fs.OpenDir(filepath.Dir(d))
		if err != nil {
			return err
		}
		err = f.Sync()
		f.Close()
		if err != nil || d == filepath.Dir(d) {
			return err
		}
	}
}

// retry runs op until it succeeds, at most 3 s (a store turned read-only
// by an ENOSPC is writable again at its disk guard's next check, within
// a second), and reports whether it did.
func retry(op func() error) bool {
	deadline := time.Now().Add(3 * time.Second)
	for {
		err := op()
		if err == nil {
			return true
		}
		if !errors.Is(err, store.ErrUnavailable) || time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// workload writes 240 cells into 8 rows of the buffered table "d", every
// fifth a row of the Pebble table "u", rewrites a row of "d" every 30
// cells (its cells put as one, then deleted, as compaction does), settles
// every 40 (the row buffer flushed into Pebble, its log retired) and
// compacts everything twice. The flushes are the workload's own (the
// buffer's budget is not reached), so that the k-th operation is much
// the same one from run to run. What was acknowledged goes into the model.
func (r *faultRun) workload(s *Store) {
	ctx := context.Background()
	for i := range 240 {
		row := fmt.Sprintf("row%d", i%8)
		q, v := fmt.Sprintf("q%03d", i), strings.Repeat(strconv.Itoa(i%10), 60)
		put := store.Put{Row: []byte(row), Cells: []store.Cell{{Family: []byte("t"), Qualifier: []byte(q), Value: []byte(v)}}}
		if retry(func() error { return s.Put(ctx, "d", []store.Put{put}) }) {
			r.ack("d", row, q, v)
		}
		if i%5 == 0 {
			u := fmt.Sprintf("u%03d", i)
			put := store.Put{Row: []byte(u), Cells: []store.Cell{{Family: []byte("t"), Qualifier: []byte("v"), Value: []byte(u)}}}
			if retry(func() error { return s.Put(ctx, "u", []store.Put{put}) }) {
				r.ack("u", u)
			}
		}
		if i%30 == 29 {
			r.rewrite(ctx, s, row, fmt.Sprintf("m%03d", i))
		}
		if i%40 == 39 {
			retry(func() error { return s.Settle(ctx) })
		}
		if i%120 == 119 {
			retry(func() error { return s.CompactAll(ctx) })
		}
	}
}

// rewrite puts the cells of row as one cell, qualifier q, its value
// their qualifiers and values (encodeCells), then deletes them: a
// replacement durable before what it replaces goes.
func (r *faultRun) rewrite(ctx context.Context, s *Store, row, q string) {
	var got store.Row
	if !retry(func() (err error) { got, err = s.Get(ctx, "d", []byte(row), "t"); return err }) || len(got.Cells) < 2 {
		return
	}
	flat, ok := expandCells(got.Cells)
	if !ok {
		return // checkAfterCrash reports it
	}
	put := store.Put{Row: []byte(row), Cells: []store.Cell{{Family: []byte("t"), Qualifier: []byte(q), Value: encodeCells(flat)}}}
	if !retry(func() error { return s.Put(ctx, "d", []store.Put{put}) }) {
		return
	}
	cols := make([]store.Column, len(got.Cells))
	for i, c := range got.Cells {
		cols[i] = store.Column{Family: c.Family, Qualifier: c.Qualifier}
	}
	retry(func() error { return s.Delete(ctx, "d", []byte(row), cols) })
}

// encodeCells is a rewrite's value: the qualifier=value lines of cells,
// in qualifier order.
func encodeCells(cells map[string]string) []byte {
	var b bytes.Buffer
	for _, q := range slices.Sorted(maps.Keys(cells)) {
		fmt.Fprintf(&b, "%s=%s\n", q, cells[q])
	}
	return b.Bytes()
}

// expandCells returns the cells a row holds, a rewrite's in place of the
// rewrite: qualifier -> value; false when a value is not one the
// workload wrote (half written).
func expandCells(cells []store.Cell) (map[string]string, bool) {
	out := map[string]string{}
	var add func(q, v string) bool
	add = func(q, v string) bool {
		if strings.HasPrefix(q, "q") {
			out[q] = v
			return len(v) == 60
		}
		for line := range strings.SplitSeq(strings.TrimSuffix(v, "\n"), "\n") {
			q, v, ok := strings.Cut(line, "=")
			if !ok || !add(q, v) {
				return false
			}
		}
		return true
	}
	for _, c := range cells {
		if !add(string(c.Qualifier), string(c.Value)) {
			return nil, false
		}
	}
	return out, true
}

// cellStrings returns cells as qualifier=value strings, for messages.
func cellStrings(cells []store.Cell) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = string(c.Qualifier) + "=" + string(c.Value)
	}
	return out
}

// ack logs an acknowledged write, unless crash took the log already.
func (r *faultRun) ack(fields ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.stopped {
		fmt.Fprintln(r.acks, strings.Join(fields, " "))
	}
}

// crash ends the run, once: it closes the log of acknowledgments (with
// the count of operations), then in power mode leaves in dir what a power
// loss would: the log's segments back at their last fdatasync, Pebble's
// files as last synced, copied from memory to dir/store. In that order,
// what was acknowledged before the log closed was durable before either
// copy, and a log segment removed after the log's copy was ingested into
// Pebble before Pebble's. In kill mode the files stay as written.
func (r *faultRun) crash() {
	r.once.Do(r.crashOnce) // a second fatal waits for the first's copy
}

func (r *faultRun) crashOnce() {
	r.mu.Lock()
	r.stopped = true
	fmt.Fprintln(r.acks, "ops", r.count())
	err := r.acks.Close()
	r.mu.Unlock()
	storeDir := filepath.Join(r.dir, "store")
	if err == nil && r.mem != nil {
		err = r.log.Crash(filepath.Join(storeDir, rowBufferDir))
		if errors.Is(err, fs.ErrNotExist) {
			err = nil // the store made no log
		}
		if err == nil {
			err = copyMemFS(r.mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0}), storeDir)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash:", err)
		os.Exit(2)
	}
}

// copyMemFS copies the files under dir of fs to the same paths on disk.
func copyMemFS(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil // nothing was made
	}
	if err != nil {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	for _, name := range names {
		p := filepath.Join(dir, name)
		st, err := fs.Stat(p)
		if err != nil {
			return err
		}
		if st.IsDir() {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
			if err := copyMemFS(fs, p); err != nil {
				return err
			}
			continue
		}
		f, err := fs.Open(p)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// faultModel is what a fault child acknowledged: per row of table "d",
// its cells (qualifier -> value); the rows of table "u"; and the
// operations its filesystems were asked about.
type faultModel struct {
	cells map[string]map[string]string
	u     []string
	ops   int
}

// faultChildTimeout bounds one fault child: its workload takes a second
// or two, and a store that meets a fault answers in bounded time.
const faultChildTimeout = time.Minute

// runChild runs one fault child on dir and returns what it acknowledged,
// and false when it died of a panic (Pebble's, on an I/O error).
func runChild(t *testing.T, dir string, k int, errno, mode string) (faultModel, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), faultChildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %s %s", faultChildEnv, dir, k, errno, mode))
	// A child past its time is stopped with SIGQUIT: its goroutines'
	// stacks say where the store hung.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGQUIT) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	panicked := errors.As(err, &exit) && exit.ExitCode() == 2 && bytes.Contains(out, []byte("github.com/cockroachdb/pebble"))
	if ctx.Err() != nil {
		// Two of Pebble's goroutines can panic on the same I/O error; then
		// the Go runtime lets the first finish dying and parks the
		// second, and when the first's deferred calls block, the process
		// never ends (it ignores SIGQUIT too). Its death began: it is
		// one. Anything else past its time is a store that hung.
		if !dying(out) {
			t.Fatalf("fault child (op %d, %s, %s) still running after %v, a store that hangs on a fault; its stacks:\n%s", k, errno, mode, faultChildTimeout, out)
		}
		t.Logf("fault child (op %d, %s, %s) hung in its death, killed:\n%s", k, errno, mode, out)
		panicked, err = true, nil
	}
	if err != nil && !panicked && (exit == nil || exit.ExitCode() != faultChildFatal) {
		t.Fatalf("fault child (op %d, %s, %s): %v\n%s", k, errno, mode, err, out)
	}
	m, err := readAcks(dir)
	if err != nil {
		t.Fatalf("fault child (op %d, %s, %s): %v\n%s", k, errno, mode, err, out)
	}
	return m, !panicked
}

// dying reports whether a child's output begins as the Go runtime's
// account of a death does: a panic or a fatal error.
func dying(out []byte) bool {
	return bytes.HasPrefix(out, []byte("panic: ")) || bytes.HasPrefix(out, []byte("fatal error: "))
}

// readAcks reads the log of acknowledgments a fault child left in dir.
func readAcks(dir string) (faultModel, error) {
	b, err := os.ReadFile(filepath.Join(dir, "acks"))
	if err != nil {
		return faultModel{}, fmt.Errorf("no acknowledgments: %w", err)
	}
	m := faultModel{cells: map[string]map[string]string{}}
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 4 && f[0] == "d":
			if m.cells[f[1]] == nil {
				m.cells[f[1]] = map[string]string{}
			}
			m.cells[f[1]][f[2]] = f[3]
		case len(f) == 2 && f[0] == "u":
			m.u = append(m.u, f[1])
		case len(f) == 2 && f[0] == "ops":
			m.ops, _ = strconv.Atoi(f[1])
		}
	}
	return m, nil
}

// checkAfterCrash opens the store a fault child left (as serve's next
// start would: on the operating system's filesystem) and requires every
// acknowledged cell in it, as written or inside a rewrite, and nothing
// that was not written whole.
func checkAfterCrash(t *testing.T, dir string, m faultModel) {
	t.Helper()
	s, err := Open(filepath.Join(dir, "store"), Options{Tables: []string{"d", "u"}, BufferTables: []string{"d"}, SettleInterval: -1})
	if err != nil {
		t.Fatalf("open after the crash: %v", err)
	}
	defer s.Close()
	ctx := t.Context()
	for row := range 8 {
		key := fmt.Sprintf("row%d", row)
		got, err := s.Get(ctx, "d", []byte(key), "t")
		if err != nil {
			t.Fatalf("get %s: %v", key, err)
		}
		cells, ok := expandCells(got.Cells)
		if !ok {
			t.Fatalf("row %s holds a cell the workload did not write whole: %q", key, cellStrings(got.Cells))
		}
		for q, v := range m.cells[key] {
			if cells[q] != v {
				t.Errorf("row %s: acknowledged cell %s lost (%d cells read)", key, q, len(cells))
			}
		}
	}
	for _, u := range m.u {
		got, ok, err := s.GetCell(ctx, "u", []byte(u), "t", "v")
		if err != nil || !ok || string(got) != u {
			t.Errorf("table u row %s: acknowledged, read %q (found %v, %v)", u, got, ok, err)
		}
	}
}

// TestFaultEveryOperation: a workload of puts to the row buffer and to
// Pebble, flushes, rewrites (a put, then the delete of what it replaced),
// settles and compactions, in which the k-th operation that changes the
// disk (Pebble's, its flushes' tables', the log's) fails with ENOSPC or
// EIO, for every k; then the process dies (its files as written; the log
// synced every 100 ms, as serve's default), or the power goes (everything
// not synced gone; the log synced before each acknowledgment). The store opens again, holds
// every acknowledged cell (on its own or in the rewrite that replaced
// it) and nothing half written. Each run is a child process, which exits
// as serve does on a fatal error; when Pebble panics instead, the power
// loss has nothing to copy from memory, and the process's death is what
// is checked.
// faultChildWorkers is how many fault children TestFaultEveryOperation
// runs at once.
const faultChildWorkers = 8

func TestFaultEveryOperation(t *testing.T) {
	cleanDir := t.TempDir()
	clean, _ := runChild(t, cleanDir, 0, "EIO", "power")
	if len(clean.cells) != 8 || len(clean.u) != 48 {
		t.Fatalf("the workload without faults acknowledged %d rows of d and %d of u, want 8 and 48", len(clean.cells), len(clean.u))
	}
	checkAfterCrash(t, cleanDir, clean)
	t.Logf("the workload asks about %d operations", clean.ops)
	var panics sync.Map // mode -> count of children that died of Pebble's panic
	type run struct {
		mode, errno string
		k           int
	}
	runs := make(chan run)
	go func() {
		defer close(runs)
		for _, mode := range []string{"power", "kill"} {
			for _, errno := range []string{"ENOSPC", "EIO"} {
				for k := 1; k <= clean.ops+20; k++ {
					runs <- run{mode, errno, k}
				}
			}
		}
	}()
	// The children wait on their fsyncs far more than they compute: more
	// of them at once than -test.parallel's cores (t.Run from several
	// goroutines, each subtest sequential within its worker).
	var wg sync.WaitGroup
	for range faultChildWorkers {
		wg.Go(func() {
			for r := range runs {
				t.Run(fmt.Sprintf("%s/%s/op%d", r.mode, r.errno, r.k), func(t *testing.T) {
					dir := t.TempDir()
					m, image := runChild(t, dir, r.k, r.errno, r.mode)
					if !image && r.mode == "power" {
						n, _ := panics.LoadOrStore(r.mode, new(atomic.Int64))
						n.(*atomic.Int64).Add(1)
						return // nothing in memory to copy: the kill mode checks this k
					}
					checkAfterCrash(t, dir, m)
				})
			}
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		if n, ok := panics.Load("power"); ok {
			t.Logf("%d power-loss runs died of Pebble's panic (checked as a process's death)", n.(*atomic.Int64).Load())
		}
	})
}
