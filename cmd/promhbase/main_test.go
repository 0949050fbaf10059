package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/internal/testbackend"
)

// buildBinary builds promhbase once into a temp dir.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "promhbase")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// storageFlags returns the flags that point the CLI at the test backend.
func storageFlags(t *testing.T) []string {
	t.Helper()
	if testbackend.Name() == "hbase" {
		testbackend.NewHBaseStore(t) // fails under CI, skips elsewhere, when HBase is missing
		sfx := fmt.Sprintf("%d_%d", os.Getpid(), time.Now().UnixNano()%1e9)
		return []string{"--storage.backend=hbase", "--hbase.zookeeper.quorum=" + testbackend.ZKQuorum(),
			"--hbase.table.data=tsdb_cli_" + sfx, "--hbase.table.uid=tsdb-uid_cli_" + sfx}
	}
	return []string{"--storage.embedded.path=" + t.TempDir()}
}

func run(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func TestCLI(t *testing.T) {
	bin := buildBinary(t)
	flags := storageFlags(t)
	if testbackend.Name() == "hbase" {
		out, err := run(t, bin, append([]string{"create-tables"}, flags...)...)
		if err != nil || !strings.Contains(out, "created:") {
			t.Fatalf("create-tables: %v\n%s", err, out)
		}
		out, err = run(t, bin, append([]string{"create-tables"}, flags...)...)
		if err != nil || !strings.Contains(out, "already there, left alone") {
			t.Fatalf("create-tables again: %v\n%s", err, out)
		}
		t.Cleanup(func() {
			st := testbackend.NewHBaseStore(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			st.DropTables(ctx, strings.TrimPrefix(flags[2], "--hbase.table.data="), strings.TrimPrefix(flags[3], "--hbase.table.uid="))
		})
	}
	for _, tc := range []struct {
		args    []string
		want    []string
		wantErr bool
	}{
		{[]string{"uid", "assign", "metrics", "sys.cpu.user", "sys.cpu.nice"}, []string{"metrics sys.cpu.user: 000001", "metrics sys.cpu.nice: 000002"}, false},
		{[]string{"uid", "assign", "tagk", "host"}, []string{"tagk host: 000001"}, false},
		{[]string{"uid", "grep", "metrics", "sys.cpu.nice"}, []string{"metrics sys.cpu.nice: 000002"}, false},
		{[]string{"uid", "name", "metrics", "000001"}, []string{"metrics 000001: sys.cpu.user"}, false},
		{[]string{"uid", "grep", "tagv", "nope"}, []string{"no such name"}, true},
		{[]string{"uid", "fsck"}, []string{"forward mappings: metrics 2, tagk 1, tagv 0", "0 errors, 0 orphans"}, false},
		{[]string{"scan", "sys.cpu.user", "--start=0"}, nil, false},
		{[]string{"scan", "never.written"}, []string{"no such name"}, true},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, err := run(t, bin, append(tc.args, flags...)...)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v\n%s", err, tc.wantErr, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestServeThenScan starts `promhbase serve`, writes through it, stops it
// with SIGTERM, and reads the rows back with `promhbase scan`.
func TestServeThenScan(t *testing.T) {
	bin := buildBinary(t)
	flags := storageFlags(t)
	if testbackend.Name() == "hbase" {
		if out, err := run(t, bin, append([]string{"create-tables"}, flags...)...); err != nil {
			t.Fatalf("create-tables: %v\n%s", err, out)
		}
		t.Cleanup(func() {
			st := testbackend.NewHBaseStore(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			st.DropTables(ctx, strings.TrimPrefix(flags[2], "--hbase.table.data="), strings.TrimPrefix(flags[3], "--hbase.table.uid="))
		})
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var logs bytes.Buffer
	srv := exec.Command(bin, append([]string{"serve", "--web.listen-address=" + addr}, flags...)...)
	srv.Stdout, srv.Stderr = &logs, &logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Process.Kill()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get("http://" + addr + "/-/ready")
		if err == nil && resp.StatusCode == 200 {
			resp.Body.Close()
			break
		}
		if resp != nil {
			resp.Body.Close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve not ready: %v\n%s", err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	data, _ := proto.Marshal(&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
		Labels:  []prompb.Label{{Name: "__name__", Value: "cli_test"}, {Name: "host", Value: "web01"}},
		Samples: []prompb.Sample{{Timestamp: 1292148123456, Value: 0.1}, {Timestamp: 1292151599999, Value: 42}},
	}}})
	resp, err := http.Post("http://"+addr+"/api/v1/write", "application/x-protobuf", bytes.NewReader(snappy.Encode(nil, data)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 {
		t.Fatalf("write: %d", resp.StatusCode)
	}
	srv.Process.Signal(syscall.SIGTERM)
	if err := srv.Wait(); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM\n%s", err, logs.String())
	}
	out, err := run(t, bin, append([]string{"scan", "cli_test", "--start=1292148000", "--end=1292151600"}, flags...)...)
	if err != nil {
		t.Fatalf("scan: %v\n%s", err, out)
	}
	// Row key 000001 4D049D20 000001 000001; qualifier F078900F = ms offset
	// 123456 float64, value 0.1.
	for _, want := range []string{"0000014D049D20000001000001 1292148000", `{__name__="cli_test", host="web01"}`,
		"F078900F\t3FB999999999999A", "1292148123456\t0.1", "1292151599999\t42"} {
		if !strings.Contains(out, want) {
			t.Errorf("scan output lacks %q:\n%s", want, out)
		}
	}
}
