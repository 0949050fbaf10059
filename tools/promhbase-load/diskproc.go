package main

// The disk command's processes: starting and stopping the systems, reading
// their metrics, measuring their directories.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ---- servers ----

// server is a system's process with its HTTP base URL.
type server struct {
	name    string
	cmd     *exec.Cmd
	base    string
	logPath string
	logf    *os.File
	sig     os.Signal
	done    chan struct{}
	waitErr error
	stopped bool
}

// startServer starts the command that mk returns for a free loopback
// address, its output into logPath, and waits until readyPath answers 200.
func startServer(name, logPath string, sig os.Signal, readyPath string, mk func(addr string) *exec.Cmd) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := mk(addr)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	s := &server{name: name, cmd: cmd, base: "http://" + addr, logPath: logPath, logf: logf, sig: sig, done: make(chan struct{})}
	go func() { s.waitErr = cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case <-s.done:
			logf.Close()
			return nil, s.withLog(fmt.Errorf("%s exited at startup: %w", name, s.waitErr))
		default:
		}
		if resp, err := http.Get(s.base + readyPath); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			_ = s.stop()
			return nil, s.withLog(fmt.Errorf("%s not ready within 2m", name))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stop signals the server and waits for it to exit (killing it after two
// minutes); it reports an exit other than a clean one. Calling it again
// does nothing.
func (s *server) stop() error {
	if s.stopped {
		return nil
	}
	s.stopped = true
	defer s.logf.Close()
	_ = s.cmd.Process.Signal(s.sig)
	select {
	case <-s.done:
	case <-time.After(2 * time.Minute):
		_ = s.cmd.Process.Kill()
		<-s.done
		return s.withLog(fmt.Errorf("%s did not stop within 2m of %v; killed", s.name, s.sig))
	}
	if s.waitErr != nil {
		return s.withLog(fmt.Errorf("%s exited with %w after %v", s.name, s.waitErr, s.sig))
	}
	return nil
}

// withLog adds the end of the server's log to err.
func (s *server) withLog(err error) error {
	return fmt.Errorf("%w\nthe last lines of %s:\n%s", err, s.logPath, logTail(s.logPath, 30))
}

// scrapeMetrics reads a Prometheus text exposition into series text
// (name and labels as written) -> value.
func scrapeMetrics(u string) (map[string]float64, error) {
	resp, err := http.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: status %d", u, resp.StatusCode)
	}
	return parseMetrics(resp.Body)
}

func parseMetrics(r io.Reader) (map[string]float64, error) {
	m := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		// "name{labels} value [timestamp]": the value follows the
		// labels' closing brace, or the name.
		var key, rest string
		if i := strings.LastIndexByte(line, '}'); i >= 0 {
			key, rest = line[:i+1], strings.TrimSpace(line[i+1:])
		} else {
			key, rest, _ = strings.Cut(line, " ")
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		m[key] = v
	}
	return m, sc.Err()
}

func httpGet(u string) error {
	resp, err := http.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("GET %s: status %d: %s", u, resp.StatusCode, msg)
	}
	return nil
}

// ---- measuring ----

// dirUsage is what a directory holds: bytes (the files' sizes, as du -b
// counts them), allocated bytes (as du counts them), by kind.
type dirUsage struct {
	bytes, alloc int64
	files        int
	kinds        map[string]*kindUsage
	// reserved counts the files of reservedKind, left out of the rest:
	// space a store holds free (promhbase's ballast), not data.
	reserved kindUsage
}

// reservedKind is the kind of a file that holds space in reserve, not
// data (promhbase's ballast, embedded.BallastName): measureDir counts it
// apart, in dirUsage.reserved, and out of the bytes per sample.
const reservedKind = "reserve"

type kindUsage struct {
	bytes, alloc int64
	files        int
}

// entryInfo returns the file info of e, an entry of a directory walk; ok
// is false, with no error, when the file was removed since the walk
// listed it (a store compacting under the walk).
func entryInfo(e fs.DirEntry) (fi fs.FileInfo, ok bool, err error) {
	fi, err = e.Info()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	return fi, err == nil, err
}

// measureDir walks dir and sums its files, by the kind that kind names
// for each path relative to dir.
func measureDir(dir string, kind func(rel string) string) (*dirUsage, error) {
	u := &dirUsage{kinds: map[string]*kindUsage{}}
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			return nil
		}
		fi, ok, err := entryInfo(e)
		if !ok {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		u.add(kind(rel), fi)
		return nil
	})
	return u, err
}

// add counts the file fi, its size and the blocks it takes, in kind k's
// usage and in the total; a file of reservedKind only in u.reserved.
func (u *dirUsage) add(k string, fi fs.FileInfo) {
	var alloc int64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		alloc = st.Blocks * 512
	}
	if k == reservedKind {
		u.reserved.bytes += fi.Size()
		u.reserved.alloc += alloc
		u.reserved.files++
		return
	}
	ku := u.kinds[k]
	if ku == nil {
		ku = &kindUsage{}
		u.kinds[k] = ku
	}
	ku.bytes += fi.Size()
	ku.alloc += alloc
	ku.files++
	u.bytes += fi.Size()
	u.alloc += alloc
	u.files++
}

// ---- queries ----
