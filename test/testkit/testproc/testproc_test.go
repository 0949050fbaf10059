package testproc

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/promhbase/promhbase/test/testkit/poll"
	"github.com/promhbase/promhbase/test/testkit/testleak"
)

// With TESTPROC_SERVE set, the test binary is a server for the tests:
// it answers 200 on /-/ready at that address. Otherwise it runs the
// tests and fails them when they leave goroutines behind (Start's
// watcher of a process ends once the process is stopped).
func TestMain(m *testing.M) {
	if addr := os.Getenv("TESTPROC_SERVE"); addr != "" {
		fmt.Println("serving on", addr)
		http.HandleFunc("/-/ready", func(http.ResponseWriter, *http.Request) {})
		fmt.Println(http.ListenAndServe(addr, nil))
		os.Exit(1)
	}
	testleak.VerifyTestMain(m)
}

func serverCmd(listen string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "TESTPROC_SERVE="+listen)
	return cmd
}

func TestStartServerRetriesTakenAddress(t *testing.T) {
	attempts := 0
	p, listen := StartServer(t, ServerSpec{
		Name:   "srv",
		LogDir: t.TempDir(),
		Command: func(listen string) *exec.Cmd {
			attempts++
			if attempts == 1 {
				return exec.Command("sh", "-c", "echo 'bind: address already in use'; exit 1")
			}
			return serverCmd(listen)
		},
		ReadyPath:    "/-/ready",
		ReadyTimeout: 10 * time.Second,
		LogTail:      10,
	})
	if attempts != 2 {
		t.Errorf("%d attempts, want 2", attempts)
	}
	if filepath.Base(p.LogPath) != "srv-2.log" {
		t.Errorf("log %s, want srv-2.log", p.LogPath)
	}
	if !strings.Contains(p.Log(), "serving on "+listen) {
		t.Errorf("log lacks the address %s:\n%s", listen, p.Log())
	}
	p.Stop()
	select {
	case <-p.Exited():
	default:
		t.Fatal("Exited not closed after Stop")
	}
	if err := p.Wait(); err == nil || !strings.Contains(err.Error(), "terminated") {
		t.Errorf("Wait after Stop = %v, want terminated by SIGTERM", err)
	}
	p.Stop() // a second call returns at once
}

func TestWaitReadyExited(t *testing.T) {
	log := filepath.Join(t.TempDir(), "x.log")
	p := Start(t, "x", exec.Command("sh", "-c", "echo one; echo two; exit 3"), log, 0)
	err := p.WaitReady(t.Context(), "http://"+FreeAddr(t)+"/-/ready", 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready: exit status 3") {
		t.Errorf("WaitReady = %v, want exited before ready", err)
	}
	if got := Tail(log, 1); got != "two" {
		t.Errorf("Tail(log, 1) = %q, want %q", got, "two")
	}
	if got := p.Log(); got != "one\ntwo\n" {
		t.Errorf("Log() = %q", got)
	}
}

func TestStopKillsGroup(t *testing.T) {
	p := Start(t, "group", exec.Command("sh", "-c", "sleep 60 & echo $!; wait"), filepath.Join(t.TempDir(), "g.log"), 0)
	var child int
	poll.Until(t, 5*time.Second, 10*time.Millisecond, "a child pid in the log", func() (bool, string) {
		_, _ = fmt.Sscan(p.Log(), &child) // no pid yet: child stays 0 and the poll goes on
		return child != 0, fmt.Sprintf("log %q", p.Log())
	})
	start := time.Now()
	p.Stop()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Stop took %s", d)
	}
	// The child got SIGTERM too: it is gone, or a zombie waiting to be
	// reaped.
	poll.Until(t, 5*time.Second, 10*time.Millisecond, fmt.Sprintf("child %d of the process group gone", child), func() (bool, string) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		return err != nil || strings.Contains(string(stat), ") Z "), "it still runs: " + string(stat)
	})
}

func TestTailLines(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc"},
		{"a\nb\nc", 5, "a\nb\nc"},
		{"", 3, ""},
	} {
		if got := TailLines(tc.s, tc.n); got != tc.want {
			t.Errorf("TailLines(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
	if got := Tail(filepath.Join(t.TempDir(), "missing"), 3); !strings.HasPrefix(got, "(no log: ") {
		t.Errorf("Tail of a missing file = %q", got)
	}
}
