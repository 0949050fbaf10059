// Command hbase-ready waits until an HBase cluster really serves: it loops
// until it can create a probe table, write a cell into it, read the cell
// back, and disable and delete the table again. It exits 0 when all of that
// worked, and 1 when the timeout passed first.
//
// tools/scripts/hbase.sh runs it after starting a standalone HBase; it is also
// handy on its own:
//
//	go run ./tools/hbase-ready -zk 127.0.0.1:2181 -timeout 240s
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/tsuna/gohbase"
	"github.com/tsuna/gohbase/hrpc"
)

const (
	probeFamily    = "f"
	probeQualifier = "q"
)

func main() {
	zk := flag.String("zk", "127.0.0.1:2181", "ZooKeeper quorum of the HBase cluster")
	root := flag.String("zk-root", "/hbase", "znode root of the HBase cluster")
	timeout := flag.Duration("timeout", 240*time.Second, "give up after this long")
	step := flag.Duration("step-timeout", 30*time.Second, "timeout of one attempt of one step")
	interval := flag.Duration("interval", time.Second, "pause between attempts")
	table := flag.String("table", "", "probe table name (default: a unique name)")
	verbose := flag.Bool("v", false, "also show gohbase's own log")
	flag.Parse()

	level := slog.LevelError + 4 // gohbase is noisy while HBase starts
	if *verbose {
		level = slog.LevelInfo
	}
	clientLog := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	name := *table
	if name == "" {
		name = fmt.Sprintf("promhbase_ready_%d_%d", os.Getpid(), time.Now().UnixNano())
	}

	p := &prober{
		table:    []byte(name),
		step:     *step,
		interval: *interval,
		client:   gohbase.NewClient(*zk, gohbase.ZookeeperRoot(*root), gohbase.FlushInterval(0), gohbase.Logger(clientLog)),
		admin:    gohbase.NewAdminClient(*zk, gohbase.ZookeeperRoot(*root), gohbase.Logger(clientLog)),
	}
	fmt.Fprintf(os.Stderr, "hbase-ready: probing HBase at zk=%s root=%s with table %s (timeout %s)\n", *zk, *root, name, *timeout)
	if !p.wait(*timeout) {
		os.Exit(1)
	}
}

// wait probes until HBase serves or timeout passes, tells which on stderr,
// and closes the client; os.Exit in main then skips no defer.
func (p *prober) wait(timeout time.Duration) bool {
	defer p.client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	if err := p.run(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "hbase-ready: not ready after %s: %v\n", time.Since(start).Round(100*time.Millisecond), err)
		return false
	}
	fmt.Fprintf(os.Stderr, "hbase-ready: HBase serves (ready after %s)\n", time.Since(start).Round(100*time.Millisecond))
	return true
}

// prober runs the readiness steps, each retried until it works or the
// overall context ends.
type prober struct {
	table    []byte
	step     time.Duration
	interval time.Duration
	client   gohbase.Client
	admin    gohbase.AdminClient
}

func (p *prober) run(ctx context.Context) error {
	row := []byte("probe-row")
	value := []byte(time.Now().UTC().Format(time.RFC3339Nano))
	steps := []struct {
		what string
		do   func(ctx context.Context) error
	}{
		{"create table " + string(p.table), func(ctx context.Context) error {
			ct := hrpc.NewCreateTable(ctx, p.table, map[string]map[string]string{probeFamily: {"VERSIONS": "1"}})
			err := p.admin.CreateTable(ct)
			if err != nil && strings.Contains(err.Error(), "TableExistsException") {
				return nil // an earlier attempt created it but timed out waiting
			}
			return err
		}},
		{"put a cell", func(ctx context.Context) error {
			put, err := hrpc.NewPut(ctx, p.table, row, map[string]map[string][]byte{probeFamily: {probeQualifier: value}})
			if err != nil {
				return err
			}
			_, err = p.client.Put(put)
			return err
		}},
		{"get the cell back", func(ctx context.Context) error {
			get, err := hrpc.NewGet(ctx, p.table, row)
			if err != nil {
				return err
			}
			res, err := p.client.Get(get)
			if err != nil {
				return err
			}
			if len(res.Cells) != 1 || !bytes.Equal(res.Cells[0].Value, value) {
				return fmt.Errorf("read back %d cells, want 1 with value %q", len(res.Cells), value)
			}
			return nil
		}},
		{"disable table " + string(p.table), func(ctx context.Context) error {
			err := p.admin.DisableTable(hrpc.NewDisableTable(ctx, p.table))
			if err != nil && strings.Contains(err.Error(), "TableNotEnabledException") {
				return nil
			}
			return err
		}},
		{"delete table " + string(p.table), func(ctx context.Context) error {
			return p.admin.DeleteTable(hrpc.NewDeleteTable(ctx, p.table))
		}},
	}
	for _, s := range steps {
		if err := p.retry(ctx, s.what, s.do); err != nil {
			return err
		}
	}
	return nil
}

// retry runs do until it succeeds, printing each new reason to wait.
func (p *prober) retry(ctx context.Context, what string, do func(context.Context) error) error {
	fmt.Fprintf(os.Stderr, "hbase-ready: waiting for: %s\n", what)
	last := ""
	for attempt := 1; ; attempt++ {
		stepCtx, cancel := context.WithTimeout(ctx, p.step)
		err := do(stepCtx)
		cancel()
		if err == nil {
			return nil
		}
		if reason := summarize(err); reason != last {
			fmt.Fprintf(os.Stderr, "hbase-ready:   %s: attempt %d: %s\n", what, attempt, reason)
			last = reason
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (last error: %s)", what, ctx.Err(), last)
		case <-time.After(p.interval):
		}
	}
}

// summarize shortens an error to its first line: gohbase puts the whole
// Java stack trace into the text of HBase's exceptions.
func summarize(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer within the step timeout"
	}
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(strings.TrimSuffix(s, ":"))
}
