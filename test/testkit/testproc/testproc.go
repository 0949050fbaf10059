// Package testproc starts, watches and stops the external processes that
// tests run: a binary built from this module, Prometheus, any server that
// answers on a loopback address. It is for tests only.
//
// A process runs in its own process group, so that stopping it stops
// whatever it started too; its standard output and error go to a log file
// whose tail is printed when the test fails. Process groups and the signals
// used to stop them are Unix ones.
package testproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/promhbase/promhbase/test/testkit/poll"
)

// stopGrace is how long Stop waits after SIGTERM before it sends SIGKILL.
const stopGrace = 15 * time.Second

// FreeAddr returns a loopback host:port (127.0.0.1) whose port was free a
// moment ago. Nothing holds it: another process may take it before the
// caller binds it, which StartServer allows for. The port is drawn at
// random below Linux's default ephemeral range (32768-60999), from which
// the kernel picks the source ports of outgoing connections and the ports
// of listeners on port 0: under a full test run's thousands of connections
// a port freed there is soon someone else's. A server that can listen on
// port 0 and say where is better started so (see ServeAddress).
func FreeAddr(t testing.TB) string {
	t.Helper()
	const lo, hi = 20000, 32768
	var lc net.ListenConfig
	for range 100 {
		addr := fmt.Sprintf("127.0.0.1:%d", lo+rand.IntN(hi-lo))
		l, err := lc.Listen(t.Context(), "tcp", addr)
		if err != nil {
			continue
		}
		l.Close()
		return addr
	}
	l, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// ServeAddress waits up to timeout until the log of a `promhbase serve`
// says the address it listens on (its "promhbase serving" line) and
// returns that host:port. Started with --web.listen-address=127.0.0.1:0,
// serve gets a port that no other process can hold, and the test learns
// it here. It fails when the process exits first or ctx ends.
func (p *Process) ServeAddress(ctx context.Context, timeout time.Duration) (string, error) {
	return p.LoggedAddress(ctx, timeout, "promhbase serving")
}

// LoggedAddress waits up to timeout until the log has a line of message
// msg with an address= and returns that address (ServeAddress's, for any
// listener that logs its address so: "OpenTSDB port serving").
func (p *Process) LoggedAddress(ctx context.Context, timeout time.Duration, msg string) (string, error) {
	line := `msg="` + msg + `" address=`
	var addr string
	err := poll.Wait(ctx, timeout, 20*time.Millisecond, msg, func() (bool, string, error) {
		log := p.Log()
		if i := strings.Index(log, line); i >= 0 {
			rest := log[i+len(line):]
			if end := strings.IndexAny(rest, " \n"); end > 0 {
				addr = rest[:end]
				return true, "", nil
			}
		}
		select {
		case <-p.exited:
			return false, "", fmt.Errorf("exited before it listened: %v", p.Cmd.ProcessState)
		default:
		}
		return false, "no " + line + " line in the log yet", nil
	})
	return addr, err
}

// PrometheusBinary returns the path of the Prometheus binary that the
// project's tools/scripts/prometheus.sh (at script, relative to the current
// directory) builds or finds in its cache. Under CI=true a failure fails
// the test; elsewhere it skips it.
func PrometheusBinary(t testing.TB, script string) string {
	t.Helper()
	return ScriptBinary(t, script, "Prometheus")
}

// ScriptBinary returns the path of the binary of what (a name for
// messages) that the project's script (relative to the current
// directory: tools/scripts/victoriametrics.sh, ...) builds or finds in its
// cache, printing its path. Under CI=true a failure fails the test;
// elsewhere it skips it.
func ScriptBinary(t testing.TB, script, what string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	path := strings.TrimSpace(string(out))
	if err == nil && path == "" {
		err = errors.New("printed no path")
	}
	if err != nil {
		msg := fmt.Sprintf("%s: %v\n%s", script, err, TailLines(stderr.String(), 30))
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip("no " + what + " binary (the test fails instead under CI=true): " + msg)
	}
	return path
}

// BuildBinary runs `go build` on pkg (a package path or a directory, as
// the go command takes it, relative to the current directory) into a
// fresh temporary directory of the test and returns the binary's path.
// The binary is named after the package's last path element. A failed
// build fails the test with the compiler's output.
func BuildBinary(t testing.TB, pkg string) string {
	t.Helper()
	start := time.Now()
	bin, err := Build(t.Context(), pkg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("go build %s took %s", pkg, time.Since(start).Round(100*time.Millisecond))
	return bin
}

// Build runs `go build` on pkg (as BuildBinary takes it) into dir and
// returns the binary's path, named after the package's last path
// element; the error of a failed build holds the compiler's output. Tests
// that share one binary build it once with Build into a directory of
// their TestMain.
func Build(ctx context.Context, pkg, dir string) (string, error) {
	name := filepath.Base(pkg)
	if name == "." || name == ".." {
		abs, err := filepath.Abs(pkg)
		if err != nil {
			return "", fmt.Errorf("build %s: %w", pkg, err)
		}
		name = filepath.Base(abs)
	}
	bin := filepath.Join(dir, name)
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	return bin, nil
}

// Process is a command started by Start.
type Process struct {
	Name    string    // names the process in logs and failures
	LogPath string    // file that receives its standard output and error
	Cmd     *exec.Cmd // the started command; use Cmd.Process to signal it

	exited  chan struct{}
	waitErr error // what Cmd.Wait returned; set before exited is closed
	once    sync.Once
}

// Start starts cmd in a process group of its own, with its standard
// output and standard error going to a new file at logPath (cmd's Stdout
// and Stderr are replaced; its SysProcAttr gets Setpgid). A failure to
// start fails the test.
//
// When the test ends the process is stopped (see Stop); after that, if
// the test failed and logTail > 0, the last logTail lines of the log are
// logged.
func Start(t testing.TB, name string, cmd *exec.Cmd, logPath string, logTail int) *Process {
	t.Helper()
	p := &Process{Name: name, LogPath: logPath, Cmd: cmd, exited: make(chan struct{})}
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("%s: start %s: %v", name, cmd.Path, err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	// Cleanups run last registered first: the process is stopped, and its
	// last words are in the log, before the tail is printed.
	t.Cleanup(func() {
		if logTail > 0 && t.Failed() {
			t.Logf("%s: tail of %s:\n%s", name, logPath, Tail(logPath, logTail))
		}
	})
	t.Cleanup(p.Stop)
	return p
}

// Exited returns a channel that is closed once the process has exited and
// its log file is closed.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Wait waits until the process has exited and returns what exec.Cmd.Wait
// returned for it: nil after a clean exit.
func (p *Process) Wait() error {
	<-p.exited
	return p.waitErr
}

// Log returns the whole log so far, or a note saying why it could not be
// read.
func (p *Process) Log() string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return string(b)
}

// Stop sends SIGTERM to the process group and waits until the process has
// exited; if it has not after 15 s, it sends SIGKILL to the group and
// waits again. Only the first call signals; the others wait for it to
// finish. Start makes it a cleanup of the test.
func (p *Process) Stop() {
	p.once.Do(func() {
		pgid := p.Cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(stopGrace):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-p.exited
		}
	})
}

// WaitReady polls url with GET every 100 ms until it answers 200, for at
// most timeout. It returns an error when the process exits first, when
// ctx ends, or when the time is up (that one says how the last try went).
func (p *Process) WaitReady(ctx context.Context, url string, timeout time.Duration) error {
	return poll.Wait(ctx, timeout, 100*time.Millisecond, "ready", func() (bool, string, error) {
		select {
		case <-p.exited:
			return false, "", fmt.Errorf("exited before it was ready: %v", p.Cmd.ProcessState)
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, "", fmt.Errorf("ready request: %w", err)
		}
		resp, err := http.DefaultClient.Do(req)
		switch {
		case err == nil:
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK, "answered " + resp.Status, nil
		case ctx.Err() != nil:
			return false, "", err
		default:
			return false, err.Error(), nil
		}
	})
}

// ServerSpec describes a server for StartServer.
type ServerSpec struct {
	// Name names the server in logs and failures.
	Name string
	// LogDir receives one log per attempt, Name-1.log, Name-2.log, ...
	LogDir string
	// Command returns the command that runs the server listening on
	// listen (host:port). It is called once per attempt and may fail the
	// test.
	Command func(listen string) *exec.Cmd
	// ReadyPath is the path polled until it answers 200, e.g. "/-/ready".
	ReadyPath string
	// ReadyTimeout bounds each attempt's wait for readiness.
	ReadyTimeout time.Duration
	// LogTail is how many lines of the log a failure shows (see Start).
	LogTail int
}

// StartServer starts the server s describes on a free loopback address
// (see FreeAddr and Start) and waits until it is ready. When it does not
// get ready and its log says "address already in use", it is stopped and
// started again on another address, three attempts in all. Any other
// failure stops it and fails the test with the tail of its log. It returns
// the ready process and the address it listens on; the process is stopped
// when the test ends.
func StartServer(t testing.TB, s ServerSpec) (*Process, string) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		listen := FreeAddr(t)
		cmd := s.Command(listen)
		logPath := filepath.Join(s.LogDir, fmt.Sprintf("%s-%d.log", s.Name, attempt))
		p := Start(t, s.Name, cmd, logPath, s.LogTail)
		err := p.WaitReady(t.Context(), "http://"+listen+s.ReadyPath, s.ReadyTimeout)
		if err == nil {
			return p, listen
		}
		p.Stop()
		log := Tail(logPath, s.LogTail)
		if strings.Contains(log, "address already in use") && attempt < 3 {
			t.Logf("%s: port %s taken, trying another", s.Name, listen)
			continue
		}
		t.Fatalf("%s: %v\n%s", s.Name, err, log)
	}
}

// StartServe starts `bin serve` (promhbase, as BuildBinary builds it)
// with args, as name, listening on a loopback port of the kernel's choice
// (127.0.0.1:0; ServeAddress learns it from the log), waits up to two
// minutes until /-/ready answers 200, and returns the process and its base
// URL (http://host:port). A failed test shows logTail lines of its log.
func StartServe(t testing.TB, bin, name string, logTail int, args ...string) (*Process, string) {
	t.Helper()
	// Not the test's context: ending it would kill the server before
	// Stop's SIGTERM; Stop ends it when the test ends.
	cmd := exec.CommandContext(context.WithoutCancel(t.Context()), bin,
		append([]string{"serve", "--web.listen-address=127.0.0.1:0"}, args...)...)
	p := Start(t, name, cmd, filepath.Join(t.TempDir(), name+".log"), logTail)
	base, err := p.WaitServing(t.Context(), 2*time.Minute)
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, Tail(p.LogPath, logTail))
	}
	return p, base
}

// WaitServing waits up to timeout until a `promhbase serve` started on
// port 0 says where it listens (ServeAddress) and answers 200 on /-/ready
// there, and returns its base URL (http://host:port).
func (p *Process) WaitServing(ctx context.Context, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	addr, err := p.ServeAddress(ctx, timeout)
	if err != nil {
		return "", err
	}
	base := "http://" + addr
	return base, p.WaitReady(ctx, base+"/-/ready", time.Until(deadline))
}

// Tail returns the last n lines of the file at path, or a note saying why
// it could not be read.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return TailLines(string(b), n)
}

// TailLines returns the last n lines of s, a final newline ignored.
func TailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// modulePath is the module whose root Root looks for.
const modulePath = "github.com/promhbase/promhbase"

// Root returns the path of elem (slash-separated, relative to the module's
// root: "tools/scripts/prometheus.sh", "cmd/promhbase") in this checkout. The
// root is the nearest directory at or above the current one (a test's
// package directory) whose go.mod declares this module, so a test finds
// the project's scripts, commands and docs wherever its package lies.
func Root(t testing.TB, elem string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(mod, []byte("module "+modulePath+"\n")) {
			return filepath.Join(dir, filepath.FromSlash(elem))
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod of %s at or above the current directory", modulePath)
		}
		dir = parent
	}
}
