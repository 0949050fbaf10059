package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// pinned makes cmd, not yet started, run on cpus cores: through taskset on
// cores 0..cpus-1, with GOMAXPROCS=cpus (Go servers size their schedulers
// by it; VictoriaMetrics reads it too), and, when the machine has more
// cores, moves this process (the load generator) to the others, until
// restore is called. cpus <= 0 leaves both as they are.
func pinned(cmd *exec.Cmd, cpus int) (restore func(), err error) {
	restore = func() {}
	if cpus <= 0 {
		return restore, nil
	}
	n := runtime.NumCPU()
	if cpus > n {
		return restore, fmt.Errorf("--server.cpus=%d: this machine has %d cores", cpus, n)
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		return restore, fmt.Errorf("--server.cpus needs taskset (util-linux): %w", err)
	}
	cmd.Args = append([]string{taskset, "-c", fmt.Sprintf("0-%d", cpus-1), cmd.Path}, cmd.Args[1:]...)
	cmd.Path = taskset
	cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(cpus))
	if cpus == n {
		return restore, nil // the generator shares the cores
	}
	var rest, all unix.CPUSet
	for i := range n {
		all.Set(i)
		if i >= cpus {
			rest.Set(i)
		}
	}
	if err := setAffinity(&rest); err != nil {
		return restore, err
	}
	return func() { _ = setAffinity(&all) }, nil
}

// setAffinity sets the CPU affinity of every thread of this process.
func setAffinity(set *unix.CPUSet) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("pin the load generator: %w", err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, set); err != nil && err != unix.ESRCH {
			return fmt.Errorf("pin the load generator's thread %d: %w", tid, err)
		}
	}
	return nil
}

// profileWrites, with --profile, saves promhbase's mutex and block
// profiles (cumulative: serve sets their rates at its start, with
// --debug.mutex-profile-fraction and --debug.block-profile-rate) once the
// writes end, into the profile directory, named by system, cores and
// series; stop fetches them. Other systems, or no --profile: nothing.
func profileWrites(c compareOptions, sys string, cpus, series int, base string) (stop func() error) {
	if c.profile == "" || sys == "prometheus" || sys == "victoriametrics" {
		return func() error { return nil }
	}
	var cpuDone chan error
	if c.profileCPU > 0 {
		// The CPU profile covers the first --profile.cpu-seconds of the
		// writes; pprof's handler takes whole seconds.
		cpuDone = make(chan error, 1)
		path := filepath.Join(c.profile, fmt.Sprintf("%s-%dcpu-%dseries.cpu.pb.gz", sys, cpus, series))
		secs := max(1, int(c.profileCPU.Round(time.Second)/time.Second))
		go func() { cpuDone <- fetchTo(fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, secs), path) }()
	}
	return func() error {
		if cpuDone != nil {
			if err := <-cpuDone; err != nil {
				return fmt.Errorf("cpu profile: %w", err)
			}
		}
		for _, kind := range []string{"mutex", "block"} {
			path := filepath.Join(c.profile, fmt.Sprintf("%s-%dcpu-%dseries.%s.pb.gz", sys, cpus, series, kind))
			if err := fetchTo(base+"/debug/pprof/"+kind, path); err != nil {
				return fmt.Errorf("%s profile: %w", kind, err)
			}
			fmt.Fprintf(os.Stderr, "%s: %s profile in %s (go tool pprof -top %s)\n", sys, kind, path, path)
		}
		return nil
	}
}

// fetchTo writes the body of a GET of url to path.
func fetchTo(url, path string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s (serve with --web.enable-pprof)", url, resp.Status)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
