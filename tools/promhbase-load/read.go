package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// runRead sends o.concurrency streamed remote reads at once, each of the
// matchers over the two days around now (every sample the writers wrote),
// decodes every frame as Prometheus's client does and prints, per read,
// the series, samples, bytes of chunk data and time to the first frame and
// to the end.
func runRead(o options) error {
	var ms []*prompb.LabelMatcher
	for _, m := range o.match {
		name, value, ok := strings.Cut(m, "=")
		if !ok {
			return fmt.Errorf("--match %q: want name=value", m)
		}
		ms = append(ms, &prompb.LabelMatcher{Type: prompb.LabelMatcher_EQ, Name: name, Value: value})
	}
	now := time.Now().UnixMilli()
	data, err := proto.Marshal(&prompb.ReadRequest{
		Queries:               []*prompb.Query{{StartTimestampMs: now - 48*3600_000, EndTimestampMs: now + 48*3600_000, Matchers: ms}},
		AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS},
	})
	if err != nil {
		return err
	}
	body := snappy.Encode(nil, data)
	var wg sync.WaitGroup
	errs := make([]error, o.concurrency)
	for i := range o.concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = readOnce(o.url, body, i)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func readOnce(url string, body []byte, i int) error {
	start := time.Now()
	hr, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	hr.Header.Set("Content-Encoding", "snappy")
	hr.Header.Set("Content-Type", "application/x-protobuf")
	hr.Header.Set("X-Prometheus-Remote-Read-Version", "0.1.0")
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("read %d: status %d: %s", i, resp.StatusCode, msg)
	}
	series, samples, chunkBytes, first, err := countFramesFrom(resp.Body, start)
	if err != nil {
		return fmt.Errorf("read %d after %d series: %w", i, series, err)
	}
	fmt.Printf("read=%d series=%d samples=%d chunk_bytes=%d first_frame=%s elapsed=%s\n", i, series, samples, chunkBytes, first.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	return nil
}

// countFrames reads a streamed remote-read answer as Prometheus's client
// does and counts its series, samples and bytes of chunk data.
func countFrames(r io.Reader) (series, samples, chunkBytes int, err error) {
	series, samples, chunkBytes, _, err = countFramesFrom(r, time.Now())
	return series, samples, chunkBytes, err
}

// countFramesFrom is countFrames that also returns the time from start to
// the first frame.
func countFramesFrom(r io.Reader, start time.Time) (series, samples, chunkBytes int, first time.Duration, err error) {
	cr := remote.NewChunkedReader(r, 1<<30, nil)
	for {
		var msg prompb.ChunkedReadResponse
		err := cr.NextProto(&msg)
		if errors.Is(err, io.EOF) {
			return series, samples, chunkBytes, first, nil
		}
		if err != nil {
			return series, samples, chunkBytes, first, err
		}
		if series == 0 {
			first = time.Since(start)
		}
		for _, s := range msg.ChunkedSeries {
			series++
			for _, c := range s.Chunks {
				ch, err := chunkenc.FromData(chunkenc.Encoding(c.Type), c.Data)
				if err != nil {
					return series, samples, chunkBytes, first, fmt.Errorf("chunk: %w", err)
				}
				samples += ch.NumSamples()
				chunkBytes += len(c.Data)
			}
		}
	}
}
