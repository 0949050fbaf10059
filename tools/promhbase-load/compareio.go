package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/jobs/rollup"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store/hbase"
)

// benchTables creates fresh promhbase tables in the HBase at quorum, the
// rollup tables of the built-in rollup configuration among them (under
// the same suffix, in a configuration file written into dir), and
// returns serve's flags naming them and a function that drops them.
func benchTables(quorum, dir string) (flags []string, drop func(), err error) {
	suffix := fmt.Sprintf("-bench%d", time.Now().UnixNano())
	tc := hbase.TablesConfig{DataTable: mapping.DefaultDataTable + suffix, UIDTable: mapping.DefaultUIDTable + suffix, ExemplarTable: mapping.DefaultExemplarTable + suffix,
		MetaTable: mapping.DefaultMetaTable + suffix, IndexTable: mapping.DefaultIndexTable + suffix}
	def := rollup.Default()
	ivs := def.Intervals()
	for i := range ivs {
		ivs[i].Table += suffix
		if ivs[i].PreAggregationTable != "" {
			ivs[i].PreAggregationTable += suffix
		}
	}
	rc, err := rollup.New(def.Aggregations(), ivs)
	if err != nil {
		return nil, nil, fmt.Errorf("bench rollup configuration: %w", err)
	}
	// The tables create-tables makes for a rollup configuration.
	for _, iv := range rc.RollupIntervals() {
		tc.RollupTables = append(tc.RollupTables, iv.Table, iv.PreAggregationTable)
	}
	rollups := filepath.Join(dir, "rollups.json")
	if err := os.WriteFile(rollups, rc.AppendJSON(nil), 0o644); err != nil {
		return nil, nil, err
	}
	st, err := hbase.New(hbase.Config{ZKQuorum: quorum}, prometheus.NewRegistry(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := st.CreateTables(ctx, tc); err != nil {
		st.Close()
		return nil, nil, err
	}
	flags = []string{"--hbase.table.data=" + tc.DataTable, "--hbase.table.uid=" + tc.UIDTable, "--hbase.table.exemplar=" + tc.ExemplarTable,
		"--hbase.table.meta=" + tc.MetaTable, "--hbase.table.index=" + tc.IndexTable, "--rollup.config-file=" + rollups}
	return flags, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		tables := append([]string{tc.DataTable, tc.UIDTable, tc.ExemplarTable, tc.MetaTable, tc.IndexTable}, tc.RollupTables...)
		if err := st.DropTables(ctx, tables...); err != nil {
			fmt.Fprintf(os.Stderr, "drop bench tables: %v\n", err)
		}
		st.Close()
	}, nil
}

// post sends one remote-write request, retrying 5xx and 429 as Prometheus
// does (with retry_on_http_429).
func post(ctx context.Context, url, ct string, body []byte) error {
	return postEncoded(ctx, url, ct, "snappy", body)
}

// postEncoded is post of a body of Content-Encoding enc.
func postEncoded(ctx context.Context, url, ct, enc string, body []byte) error {
	return postWith(ctx, http.DefaultClient, url, ct, enc, body)
}

// postWith is postEncoded through client (mixed's keeps a connection
// per sender).
func postWith(ctx context.Context, client *http.Client, url, ct, enc string, body []byte) error {
	for attempt := 0; ; attempt++ {
		hr, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		hr.Header.Set("Content-Encoding", enc)
		hr.Header.Set("Content-Type", ct)
		hr.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
		resp, err := client.Do(hr)
		if err != nil {
			return err
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode/100 == 2:
			return nil
		case resp.StatusCode/100 == 5 && attempt < 10:
			time.Sleep(time.Duration(30<<attempt) * time.Millisecond)
		case resp.StatusCode == http.StatusTooManyRequests && attempt < 10:
			// Wait as told, as Prometheus does with retry_on_http_429.
			secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
			time.Sleep(time.Duration(max(secs, 1)) * time.Second)
		default:
			return fmt.Errorf("status %d: %.300s", resp.StatusCode, msg)
		}
	}
}
