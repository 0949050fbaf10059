package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// putOptions are the put command's.
type putOptions struct {
	addr     string // the OpenTSDB port, host:port
	protocol string // telnet or http
	query    string // /api/put's query string (e.g. sync)
	// vmMetrics, when set, is VictoriaMetrics's /metrics: its telnet
	// listener answers no version, so a telnet run ends once
	// vm_rows_inserted_total{type="opentsdb"} counts every point.
	vmMetrics string
}

// runPut sends OpenTSDB put traffic to o.addr: --series series of metric
// load.put (tags host and dc), --max-rounds points each, 10 s apart in
// seconds, integers and floats in turn; --concurrency connections, each
// its share of the series in order; over telnet --batch lines a write
// and "version" at the end (its answer: every line before it was taken),
// over HTTP /api/put arrays of --batch points. Everything is encoded
// before the clock starts. It prints the points a second and the lines
// or requests refused.
func runPut(o options, p putOptions) error {
	rounds := max(o.maxRounds, 1)
	t0 := time.Now().Add(-time.Duration(rounds) * 10 * time.Second).Truncate(time.Hour).Unix()
	bodies := make([][][]byte, o.concurrency) // per connection, its writes
	for w := range o.concurrency {
		lo, hi := w*o.series/o.concurrency, (w+1)*o.series/o.concurrency
		var cur bytes.Buffer
		n := 0
		flush := func() {
			if n == 0 {
				return
			}
			b := cur.Bytes()
			if p.protocol == "http" {
				b = append(append([]byte{'['}, bytes.TrimSuffix(b, []byte{','})...), ']')
			}
			bodies[w] = append(bodies[w], append([]byte(nil), b...))
			cur.Reset()
			n = 0
		}
		for r := range rounds {
			for i := lo; i < hi; i++ {
				ts, v := t0+int64(r)*10, fmt.Sprint(i*r)
				if (i+r)%2 == 1 {
					v += ".5"
				}
				if p.protocol == "http" {
					fmt.Fprintf(&cur, `{"metric":"load.put","timestamp":%d,"value":%s,"tags":{"host":"h%d","dc":"d%d"}},`, ts, v, i, i%10)
				} else {
					fmt.Fprintf(&cur, "put load.put %d %s host=h%d dc=d%d\n", ts, v, i, i%10)
				}
				if n++; n == o.batch {
					flush()
				}
			}
		}
		flush()
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.duration)
	defer cancel()
	var refused, points int
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, o.concurrency)
	start := time.Now()
	for w := range o.concurrency {
		wg.Go(func() {
			var r int
			var err error
			switch {
			case p.protocol == "http":
				r, err = putHTTP(ctx, "http://"+p.addr+"/api/put?"+p.query, bodies[w])
			case p.vmMetrics != "":
				err = putTelnetOnly(ctx, p.addr, bodies[w])
			default:
				r, err = putTelnet(ctx, p.addr, bodies[w])
			}
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			refused += r
			mu.Unlock()
		})
	}
	wg.Wait()
	points = o.series * rounds
	if p.vmMetrics != "" && p.protocol == "telnet" {
		if err := waitVMRows(ctx, p.vmMetrics, points); err != nil {
			return err
		}
	}
	took := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	fmt.Printf("put %s: %d points in %.2fs: %.0f points/s; refused %d\n", p.protocol, points, took.Seconds(), float64(points)/took.Seconds(), refused)
	return nil
}

// putTelnet writes each body on one connection, then version, and reads
// the answers up to version's: it returns the put lines refused.
func putTelnet(ctx context.Context, addr string, bodies [][]byte) (int, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	answers := make(chan int, 1)
	go func() {
		n := 0
		br := bufio.NewReader(c)
		for {
			l, err := br.ReadString('\n')
			if err != nil || strings.HasPrefix(l, "net.opentsdb.tools") {
				answers <- n
				return
			}
			if strings.HasPrefix(l, "put: ") {
				n++
			}
		}
	}()
	for _, b := range bodies {
		if _, err := c.Write(b); err != nil {
			return 0, err
		}
	}
	if _, err := io.WriteString(c, "version\n"); err != nil {
		return 0, err
	}
	return <-answers, nil
}

// putHTTP posts each body and returns the requests not answered 2xx.
func putHTTP(ctx context.Context, url string, bodies [][]byte) (int, error) {
	refused := 0
	for _, b := range bodies {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			refused++
			if resp.StatusCode >= 500 {
				return refused, errors.New("put answered " + resp.Status)
			}
		}
	}
	return refused, nil
}

// putTelnetOnly writes each body on one connection and closes it.
func putTelnetOnly(ctx context.Context, addr string, bodies [][]byte) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	for _, b := range bodies {
		if _, err := c.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// waitVMRows polls VictoriaMetrics's /metrics until its OpenTSDB
// listener counts n rows inserted.
func waitVMRows(ctx context.Context, url string, n int) error {
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return err
		}
		got := 0.0
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, `vm_rows_inserted_total{type="opentsdb"}`) {
				_, _ = fmt.Sscanf(l[strings.LastIndexByte(l, ' ')+1:], "%g", &got)
			}
		}
		if int(got) >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("VictoriaMetrics counted %.0f of %d rows: %w", got, n, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
