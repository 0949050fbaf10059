package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// waitCompacted waits until promhbase's compaction of what was loaded
// has ended: no rows waiting for it and its metrics unchanged over two
// polls a second apart (the store not yet settled: its settle comes a
// minute after the last delete).
func waitCompacted(srv *server, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var prev map[string]float64
	stable := 0
	for {
		m, err := scrapeMetrics(srv.base + "/metrics")
		if err != nil {
			return err
		}
		same := prev != nil
		for k, v := range m {
			if strings.HasPrefix(k, "promhbase_compaction_") && prev[k] != v {
				same = false
			}
		}
		if same && m["promhbase_compaction_pending_rows"] == 0 {
			if stable++; stable >= 2 {
				return nil
			}
		} else {
			stable = 0
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("compaction still running after %s (pending rows %.0f)", timeout, m["promhbase_compaction_pending_rows"])
		}
		prev = m
		time.Sleep(time.Second)
	}
}

// settlePromhbase waits until promhbase's background work after a load
// has ended: no rows waiting for compaction, its compaction and store
// metrics unchanged and its CPU below 5 % of a core. When its store
// exports settles (promhbase_embedded_settles_total), one settle after the
// last compaction and 15 s of quiet suffice; else quiet must last quiet.
func settlePromhbase(srv *server, quiet, timeout time.Duration) (string, error) {
	const poll = 5 * time.Second
	start := time.Now()
	prev, err := scrapeMetrics(srv.base + "/metrics")
	if err != nil {
		return "", err
	}
	cpu0, err := procCPU(srv.cmd.Process.Pid)
	if err != nil {
		return "", err
	}
	lastChange, lastCompaction := time.Now(), time.Now()
	var lastSettle time.Time
	for {
		time.Sleep(poll)
		m, err := scrapeMetrics(srv.base + "/metrics")
		if err != nil {
			return "", err
		}
		cpu1, err := procCPU(srv.cmd.Process.Pid)
		if err != nil {
			return "", err
		}
		now := time.Now()
		busy := (cpu1-cpu0)/poll.Seconds() > 0.05
		cpu0 = cpu1
		for k, v := range m {
			if !strings.HasPrefix(k, "promhbase_compaction_") && !strings.HasPrefix(k, "promhbase_embedded_") && !strings.HasPrefix(k, "promhbase_dense") {
				continue
			}
			if strings.HasPrefix(k, "promhbase_embedded_block_cache_") || k == "promhbase_embedded_free_disk_bytes" {
				// The cache moves with the scrapes; the disk's free
				// space with every other process writing to it.
				continue
			}
			if pv, ok := prev[k]; ok && pv == v {
				continue
			}
			lastChange = now
			switch {
			case strings.HasPrefix(k, "promhbase_embedded_settles_total"):
				lastSettle = now
			case strings.HasPrefix(k, "promhbase_compaction_"):
				lastCompaction = now
			}
		}
		if busy {
			lastChange = now
		}
		prev = m
		_, hasSettle := m["promhbase_embedded_settles_total"]
		pending := m["promhbase_compaction_pending_rows"]
		need := quiet
		if hasSettle && lastSettle.After(lastCompaction) {
			need = 15 * time.Second
		}
		if pending == 0 && now.Sub(lastChange) >= need {
			how := fmt.Sprintf("settled (compaction done, metrics and CPU quiet for %s)", need)
			if hasSettle && need < quiet {
				how = "settled (compaction done, the store settled after it, quiet for 15s)"
			}
			if u := m["promhbase_compaction_rows_untracked_total"]; u > 0 {
				how += fmt.Sprintf("; warning: %.0f rows were not tracked for compaction", u)
			}
			return how, nil
		}
		if now.Sub(start) > timeout {
			return fmt.Sprintf("NOT settled within %s (pending rows %.0f); measured anyway", timeout, pending), nil
		}
	}
}

// timeSnapshots takes n snapshots of promhbase through its admin API, one
// after the other, deletes them (data/snapshots) and describes the
// times the calls took: median (min-max).
func timeSnapshots(srv *server, data string, n int) (string, error) {
	var took []time.Duration
	for range n {
		start := time.Now()
		resp, err := http.Post(srv.base+"/api/v1/admin/tsdb/snapshot", "", nil)
		if err != nil {
			return "", fmt.Errorf("snapshot: %w", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("snapshot: %d %s", resp.StatusCode, body)
		}
		took = append(took, time.Since(start))
	}
	if err := os.RemoveAll(filepath.Join(data, "snapshots")); err != nil {
		return "", err
	}
	slices.Sort(took)
	return fmt.Sprintf("snapshot (admin API, %d taken): median %s (%s - %s)", n, took[n/2].Round(time.Millisecond),
		took[0].Round(time.Millisecond), took[n-1].Round(time.Millisecond)), nil
}
