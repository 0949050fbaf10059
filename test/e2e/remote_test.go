// Package e2e drives promhbase end to end through Prometheus's own
// remote-write and remote-read client code, against the backend chosen by
// PROMHBASE_TEST_BACKEND (see test/testkit/testbackend).
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage/remote"

	"github.com/promhbase/promhbase/adapter"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/test/testkit/promremote"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testserver"
)

// t0 is an hour boundary (2023-11-14T23:00:00Z) in Unix ms.
const t0 = int64(1700002800) * 1000

// harness is a promhbase server on a fresh store, Prometheus's clients
// pointed at it, and a model of what was written.
type harness struct {
	t      *testing.T
	url    string // promhbase base URL
	mapper *series.Mapper
	write  remote.WriteClient
	model  map[string]*modelSeries
}

type modelSeries struct {
	lbls    labels.Labels
	samples map[int64]float64
}

func newHarness(t *testing.T, layout mapping.Layout) *harness {
	t.Helper()
	return newHarnessWith(t, layout, testserver.Options{Adapter: adapter.Options{MaxRequestBytes: 8 << 20}, ColdReads: true})
}

// newHarnessWith is newHarness with the server's options.
func newHarnessWith(t *testing.T, layout mapping.Layout, opts testserver.Options) *harness {
	t.Helper()
	st, tb := testbackend.New(t)
	srv := testserver.Start(t, st, tb, layout, opts)
	wc, _ := promremote.Clients(t, "e2e", srv.URL, promremote.Options{})
	return &harness{t: t, url: srv.URL, mapper: srv.Mapper, write: wc, model: map[string]*modelSeries{}}
}

// send writes series through Prometheus's remote-write client, in requests
// of at most 2000 series as Prometheus sends them, and records them in the
// model (last write wins).
func (h *harness) send(series []prompb.TimeSeries) {
	h.t.Helper()
	for len(series) > 0 {
		n := min(len(series), 2000)
		if err := promremote.Store(context.Background(), h.write, &prompb.WriteRequest{Timeseries: series[:n]}); err != nil {
			h.t.Fatal(err)
		}
		for _, ts := range series[:n] {
			b := labels.NewScratchBuilder(len(ts.Labels))
			for _, l := range ts.Labels {
				b.Add(l.Name, l.Value)
			}
			b.Sort()
			lbls := b.Labels()
			m := h.model[lbls.String()]
			if m == nil {
				m = &modelSeries{lbls: lbls, samples: map[int64]float64{}}
				h.model[lbls.String()] = m
			}
			for _, s := range ts.Samples {
				m.samples[s.Timestamp] = s.Value
			}
		}
		series = series[n:]
	}
}

type sample struct {
	t int64
	v float64
}

// expect returns what the model says a query selects.
func (h *harness) expect(start, end int64, ms []*labels.Matcher) map[string][]sample {
	out := map[string][]sample{}
	for key, s := range h.model {
		ok := true
		for _, m := range ms {
			if !m.Matches(s.lbls.Get(m.Name)) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		var smp []sample
		for t, v := range s.samples {
			if t >= start && t <= end {
				smp = append(smp, sample{t, v})
			}
		}
		if len(smp) == 0 {
			continue
		}
		sort.Slice(smp, func(i, j int) bool { return smp[i].t < smp[j].t })
		out[key] = smp
	}
	return out
}

func (h *harness) readClient(types ...prompb.ReadRequest_ResponseType) remote.ReadClient {
	h.t.Helper()
	_, rc := promremote.Clients(h.t, "e2e", h.url, promremote.Options{ReadTypes: types})
	return rc
}

var responseTypes = []struct {
	name  string
	types []prompb.ReadRequest_ResponseType
}{
	{"streamed", []prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS}},
	{"samples", []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES}},
}

// check reads a query back with both response types and compares it with
// the model: same series, same timestamps, values bit for bit.
func (h *harness) check(name string, start, end int64, ms ...*labels.Matcher) {
	h.t.Helper()
	want := h.expect(start, end, ms)
	for _, rt := range responseTypes {
		h.t.Run(name+"/"+rt.name, func(t *testing.T) {
			t.Helper()
			pq, err := remote.ToQuery(start, end, ms, nil)
			if err != nil {
				t.Fatal(err)
			}
			ss, err := h.readClient(rt.types...).Read(context.Background(), pq, true)
			if err != nil {
				t.Fatalf("remote read: %v", err)
			}
			got := map[string][]sample{}
			var order []string
			for ss.Next() {
				s := ss.At()
				key := s.Labels().String()
				if _, dup := got[key]; dup {
					t.Errorf("series %s returned twice", key)
				}
				order = append(order, key)
				it := s.Iterator(nil)
				var smp []sample
				for it.Next() != 0 {
					ts, v := it.At()
					smp = append(smp, sample{ts, v})
				}
				if err := it.Err(); err != nil {
					t.Fatal(err)
				}
				got[key] = smp
			}
			if err := ss.Err(); err != nil {
				t.Fatalf("remote read: %v", err)
			}
			if !slices.IsSorted(order) && !isSortedByLabels(order, got, h) {
				t.Errorf("series not sorted by labels: %v", order)
			}
			compare(t, got, want)
		})
	}
}

func isSortedByLabels(order []string, _ map[string][]sample, h *harness) bool {
	for i := 1; i < len(order); i++ {
		a, b := h.model[order[i-1]], h.model[order[i]]
		if a == nil || b == nil || labels.Compare(a.lbls, b.lbls) >= 0 {
			return false
		}
	}
	return true
}

func compare(t *testing.T, got, want map[string][]sample) {
	t.Helper()
	for key, w := range want {
		g, ok := got[key]
		if !ok {
			t.Errorf("missing series %s", key)
			continue
		}
		if len(g) != len(w) {
			t.Errorf("series %s: %d samples, want %d\n got %v\nwant %v", key, len(g), len(w), g, w)
			continue
		}
		for i := range w {
			if g[i].t != w[i].t || math.Float64bits(g[i].v) != math.Float64bits(w[i].v) {
				t.Errorf("series %s sample %d = (%d, %x), want (%d, %x)", key, i, g[i].t, math.Float64bits(g[i].v), w[i].t, math.Float64bits(w[i].v))
			}
		}
	}
	for key := range got {
		if _, ok := want[key]; !ok {
			t.Errorf("unexpected series %s", key)
		}
	}
	if len(want) == 0 && len(got) == 0 {
		t.Logf("query selects nothing, as the model says")
	}
}

func lbl(kv ...string) []prompb.Label {
	out := make([]prompb.Label, 0, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		out = append(out, prompb.Label{Name: kv[i], Value: kv[i+1]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func eq(n, v string) *labels.Matcher  { return labels.MustNewMatcher(labels.MatchEqual, n, v) }
func neq(n, v string) *labels.Matcher { return labels.MustNewMatcher(labels.MatchNotEqual, n, v) }
func re(n, v string) *labels.Matcher  { return labels.MustNewMatcher(labels.MatchRegexp, n, v) }
func nre(n, v string) *labels.Matcher { return labels.MustNewMatcher(labels.MatchNotRegexp, n, v) }

var layouts = []struct {
	name   string
	layout func() mapping.Layout
}{
	{"unsalted", mapping.DefaultLayout},
	{"salted", func() mapping.Layout {
		l := mapping.DefaultLayout()
		l.SaltWidth, l.SaltBuckets = 1, 20
		return l
	}},
}

func TestRemoteWriteRead(t *testing.T) {
	// Serial: its write of 24,000 series is the heaviest on HBase, and
	// beside the package's other tests a put of it outlived the store's
	// 20 s RPC timeout.
	for _, lc := range layouts {
		t.Run(lc.name, func(t *testing.T) { testRemoteWriteRead(t, lc.layout()) })
	}
}

func testRemoteWriteRead(t *testing.T, layout mapping.Layout) {
	h := newHarness(t, layout)
	hour := int64(3600_000)

	// Special float values, compared bit for bit, across an hour boundary.
	// -0 is not among them: Prometheus's gogo-generated prompb omits a
	// double field equal to 0, so -0 leaves the sender as +0 (the codec
	// tests in mapping cover -0).
	specials := []float64{
		math.Float64frombits(value.StaleNaN), math.NaN(), math.Float64frombits(0x7ff8dead0000beef), math.Float64frombits(0xfff0000000000001),
		math.Inf(1), math.Inf(-1), 0, 1, -1, 0.1, 0.5, -2.5, 1e300, -1e-300,
		math.MaxFloat64, math.SmallestNonzeroFloat64, 1 << 53, 1<<53 + 2, -(1 << 63), 1 << 63, 127, 128, -129, 32768, 1 << 31, 16777217,
	}
	var special []prompb.Sample
	for i, v := range specials {
		special = append(special, prompb.Sample{Timestamp: t0 - int64(len(specials)/2-i)*997, Value: v})
	}
	// Millisecond timestamps at and around hour boundaries.
	edges := []prompb.Sample{
		{Timestamp: t0 - hour, Value: 1}, {Timestamp: t0 - 1, Value: 2}, {Timestamp: t0, Value: 3}, {Timestamp: t0 + 1, Value: 4},
		{Timestamp: t0 + hour - 1, Value: 5}, {Timestamp: t0 + hour, Value: 6}, {Timestamp: t0 + 2*hour + 999, Value: 7},
		{Timestamp: 0, Value: 8}, {Timestamp: int64(math.MaxUint32)*1000 + 999, Value: 9},
	}
	h.send([]prompb.TimeSeries{
		{Labels: lbl("__name__", "e2e_special", "job", "e2e"), Samples: special},
		{Labels: lbl("__name__", "e2e_edges", "job", "e2e"), Samples: edges},
	})

	// Out of order and repeated samples over several requests; a repeat
	// inside one request too. The last write wins.
	ooo := lbl("__name__", "e2e_ooo", "job", "e2e")
	h.send([]prompb.TimeSeries{{Labels: ooo, Samples: []prompb.Sample{{Timestamp: t0 + 5000, Value: 1}, {Timestamp: t0 + 10000, Value: 2}}}})
	h.send([]prompb.TimeSeries{{Labels: ooo, Samples: []prompb.Sample{{Timestamp: t0 + 1000, Value: 3}, {Timestamp: t0 + 5000, Value: 4}}}})
	h.send([]prompb.TimeSeries{{Labels: ooo, Samples: []prompb.Sample{{Timestamp: t0 - hour + 7, Value: 5}, {Timestamp: t0 + 10000, Value: 2}}}})
	h.send([]prompb.TimeSeries{{Labels: lbl("__name__", "e2e_dup", "job", "e2e"), Samples: []prompb.Sample{{Timestamp: t0 + 1, Value: 1}, {Timestamp: t0 + 1, Value: 2}}}})

	// 24 labels on one series; UTF-8 values with newlines, quotes, backslashes.
	var many []string
	many = append(many, "__name__", "e2e_many")
	for i := range 23 {
		many = append(many, fmt.Sprintf("label_%02d", i), fmt.Sprintf("value %d", i))
	}
	h.send([]prompb.TimeSeries{
		{Labels: lbl(many...), Samples: []prompb.Sample{{Timestamp: t0, Value: 42}}},
		{Labels: lbl("__name__", "e2e_utf8", "text", "line one\nline two\r\n", "quote", `say "hi" 'there'`, "path", `C:\dir\file \E \Q`, "uni", "ünïcødé ✓ 日本語 🙂"),
			Samples: []prompb.Sample{{Timestamp: t0 + 3, Value: 3.25}}},
		{Labels: lbl("__name__", "e2e_utf8", "text", "x"), Samples: []prompb.Sample{{Timestamp: t0 + 4, Value: 4}}},
	})

	// Absent-label semantics.
	h.send([]prompb.TimeSeries{
		{Labels: lbl("__name__", "e2e_abs", "a", "1"), Samples: []prompb.Sample{{Timestamp: t0, Value: 1}}},
		{Labels: lbl("__name__", "e2e_abs", "a", "2"), Samples: []prompb.Sample{{Timestamp: t0, Value: 2}}},
		{Labels: lbl("__name__", "e2e_abs", "b", "1"), Samples: []prompb.Sample{{Timestamp: t0, Value: 3}}},
		{Labels: lbl("__name__", "e2e_abs"), Samples: []prompb.Sample{{Timestamp: t0, Value: 4}}},
	})

	// Enough metrics, tag names and tag values that UIDs hold 0x0A, 0x5C
	// and 0x5C45.
	var batch []prompb.TimeSeries
	for i := range 14 {
		batch = append(batch, prompb.TimeSeries{Labels: lbl("__name__", fmt.Sprintf("e2e_m%02d", i), "job", "e2e"), Samples: []prompb.Sample{{Timestamp: t0 + int64(i), Value: float64(i)}}})
	}
	for i := range 110 {
		batch = append(batch, prompb.TimeSeries{Labels: lbl("__name__", "e2e_wide", fmt.Sprintf("k%03d", i), "x", fmt.Sprintf("k%03d", (i+1)%110), "y"),
			Samples: []prompb.Sample{{Timestamp: t0 + int64(i), Value: float64(i)}}})
	}
	for i := range 24000 {
		batch = append(batch, prompb.TimeSeries{Labels: lbl("__name__", "e2e_card", "id", fmt.Sprintf("v%05d", i), "job", "e2e"),
			Samples: []prompb.Sample{{Timestamp: t0 + int64(i%3600)*1000, Value: float64(i)}}})
	}
	h.send(batch)

	all := []int64{0, int64(math.MaxUint32)*1000 + 999}
	for _, tc := range []struct {
		name       string
		start, end int64
		ms         []*labels.Matcher
	}{
		{"special values", all[0], all[1], []*labels.Matcher{eq("__name__", "e2e_special")}},
		{"hour edges", all[0], all[1], []*labels.Matcher{eq("__name__", "e2e_edges")}},
		{"hour edges window", t0 - 1, t0 + hour, []*labels.Matcher{eq("__name__", "e2e_edges")}},
		{"hour edges inner", t0, t0 + hour - 1, []*labels.Matcher{eq("__name__", "e2e_edges")}},
		{"hour edges empty window", t0 + 2, t0 + 3, []*labels.Matcher{eq("__name__", "e2e_edges")}},
		{"out of order", all[0], all[1], []*labels.Matcher{eq("__name__", "e2e_ooo")}},
		{"repeat in one request", all[0], all[1], []*labels.Matcher{eq("__name__", "e2e_dup")}},
		{"many labels", all[0], all[1], []*labels.Matcher{eq("__name__", "e2e_many"), eq("label_17", "value 17")}},
		{"utf8 equal", all[0], all[1], []*labels.Matcher{eq("__name__", "e2e_utf8"), eq("text", "line one\nline two\r\n")}},
		{"utf8 regex", all[0], all[1], []*labels.Matcher{eq("__name__", "e2e_utf8"), re("path", `C:\\dir.*`)}},
		{"utf8 negative", all[0], all[1], []*labels.Matcher{eq("__name__", "e2e_utf8"), neq("quote", `say "hi" 'there'`)}},
		{"absent equals empty", all[0], all[1], []*labels.Matcher{eq("__name__", "e2e_abs"), eq("a", "")}},
		{"absent not regex", all[0], all[1], []*labels.Matcher{eq("__name__", "e2e_abs"), nre("a", "1")}},
		{"absent regex with empty", all[0], all[1], []*labels.Matcher{eq("__name__", "e2e_abs"), re("a", "|1")}},
		{"not equal", all[0], all[1], []*labels.Matcher{eq("__name__", "e2e_abs"), neq("a", "1")}},
		{"present", all[0], all[1], []*labels.Matcher{eq("__name__", "e2e_abs"), neq("a", "")}},
		{"regex set", all[0], all[1], []*labels.Matcher{eq("__name__", "e2e_abs"), re("a", "1|2")}},
		{"regex set and other tag", all[0], all[1], []*labels.Matcher{eq("__name__", "e2e_abs"), re("a", "1|2"), eq("b", "")}},
		{"unknown value", all[0], all[1], []*labels.Matcher{eq("__name__", "e2e_abs"), eq("a", "nope")}},
		{"unknown label", all[0], all[1], []*labels.Matcher{eq("__name__", "e2e_abs"), eq("zzz", "1")}},
		{"unknown metric", all[0], all[1], []*labels.Matcher{eq("__name__", "e2e_nope")}},
		{"name regex", all[0], all[1], []*labels.Matcher{re("__name__", "e2e_m0[0-3]|e2e_abs")}},
		{"name regex open", all[0], all[1], []*labels.Matcher{re("__name__", "e2e_m.+"), neq("__name__", "e2e_m05")}},
		{"name negative regex", all[0], all[1], []*labels.Matcher{nre("__name__", "e2e_card|e2e_wide|e2e_m.*"), eq("job", "e2e")}},
		{"no metric name", all[0], all[1], []*labels.Matcher{eq("a", "2")}},
		{"no metric name, regex", all[0], all[1], []*labels.Matcher{re("text", "x|y")}},
		{"card regex", t0, t0 + hour, []*labels.Matcher{eq("__name__", "e2e_card"), re("id", "v0001[0-9]")}},
		{"card window", t0 + 10_000, t0 + 12_000, []*labels.Matcher{eq("__name__", "e2e_card"), eq("job", "e2e")}},
	} {
		h.check(tc.name, tc.start, tc.end, tc.ms...)
	}

	// Queries on names and values whose UIDs hold the bytes that break
	// naive regex quoting. New series get their UIDs concurrently, so which
	// name gets which UID varies: look at every label of every series
	// written, in a fixed order.
	ctx := context.Background()
	uids := h.mapper.UIDs()
	keys := make([]string, 0, len(h.model))
	for k := range h.model {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	found := map[string]bool{}
	for _, pat := range []struct {
		name  string
		bytes []byte
	}{{"0A", []byte{0x0A}}, {"5C", []byte{0x5C}}, {"5C45", []byte{0x5C, 0x45}}} {
		for _, key := range keys {
			lbls := h.model[key].lbls
			metric := lbls.Get("__name__")
			if uid, err := uids.ID(ctx, uid.KindMetric, metric); err != nil {
				t.Fatal(err)
			} else if !found["metric "+pat.name] && bytes.Contains(uid, pat.bytes) {
				found["metric "+pat.name] = true
				h.check(fmt.Sprintf("metric uid %X", uid), all[0], all[1], eq("__name__", metric))
			}
			lbls.Range(func(l labels.Label) {
				if l.Name == "__name__" || l.Value == "" {
					return
				}
				k, err := uids.ID(ctx, uid.KindTagK, l.Name)
				if err != nil {
					t.Fatal(err)
				}
				v, err := uids.ID(ctx, uid.KindTagV, l.Value)
				if err != nil {
					t.Fatal(err)
				}
				if !found["tagk "+pat.name] && bytes.Contains(k, pat.bytes) {
					found["tagk "+pat.name] = true
					h.check(fmt.Sprintf("tagk uid %X", k), all[0], all[1], eq("__name__", metric), eq(l.Name, l.Value))
					h.check(fmt.Sprintf("tagk uid %X regex", k), all[0], all[1], eq("__name__", metric), re(l.Name, ".+"))
				}
				if !found["tagv "+pat.name] && bytes.Contains(v, pat.bytes) {
					found["tagv "+pat.name] = true
					h.check(fmt.Sprintf("tagv uid %X", v), all[0], all[1], eq("__name__", metric), eq(l.Name, l.Value))
					h.check(fmt.Sprintf("tagv uid %X in set", v), all[0], all[1], eq("__name__", metric), re(l.Name, regexp.QuoteMeta(l.Value)+"|v00001"))
				}
			})
		}
	}
	for _, want := range []string{"tagv 0A", "tagv 5C", "tagv 5C45", "tagk 0A", "tagk 5C", "metric 0A"} {
		if !found[want] {
			t.Errorf("no %s UID among the test data: the test does not cover it", want)
		}
	}
}

// TestBadInput sends what Prometheus never would: each gets a 4xx, the
// server stays up and the data stays intact.
func TestBadInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t, mapping.DefaultLayout())
	good := lbl("__name__", "e2e_good", "job", "e2e")
	h.send([]prompb.TimeSeries{{Labels: good, Samples: []prompb.Sample{{Timestamp: t0, Value: 1}}}})

	valid, err := proto.Marshal(&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		{Labels: good, Samples: []prompb.Sample{{Timestamp: t0 + 1, Value: 2}}},
		{Labels: lbl("job", "no-name"), Samples: []prompb.Sample{{Timestamp: t0, Value: 1}}},
		{Labels: lbl("__name__", "e2e_neg"), Samples: []prompb.Sample{{Timestamp: -1, Value: 1}}},
		{Labels: lbl("__name__", "e2e_far"), Samples: []prompb.Sample{{Timestamp: int64(math.MaxUint32+1) * 1000, Value: 1}}},
		{Labels: lbl("__name__", "e2e_bad_utf8", "v", "\xff\xfe"), Samples: []prompb.Sample{{Timestamp: t0, Value: 1}}},
		{Labels: lbl("__name__", "e2e_good2"), Samples: []prompb.Sample{{Timestamp: t0, Value: 5}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	hugeHeader := append([]byte{0x80, 0x80, 0x80, 0x80, 0x0F}, bytes.Repeat([]byte{0}, 16)...) // snappy: decoded length 4 GiB - 1
	for _, tc := range []struct {
		name     string
		method   string
		body     []byte
		ct       string
		wantCode int
		wantBody string
	}{
		{"not snappy", http.MethodPost, []byte("this is not snappy at all"), "", 400, ""},
		{"snappy of garbage", http.MethodPost, snappy.Encode(nil, []byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2}), "", 400, "malformed"},
		{"snappy header claiming gigabytes", http.MethodPost, hugeHeader, "", 413, "exceeds"},
		{"GET on the write path", http.MethodGet, nil, "", 405, ""},
		{"unknown protobuf message", http.MethodPost, snappy.Encode(nil, valid), "application/x-protobuf;proto=io.prometheus.write.v3.Request", 415, "io.prometheus.write.v2.Request"},
		{"a 1.0 body sent as 2.0 holds no 2.0 series (0 written)", http.MethodPost, snappy.Encode(nil, valid), "application/x-protobuf;proto=io.prometheus.write.v2.Request", 204, ""},
		{"bad series named", http.MethodPost, snappy.Encode(nil, valid), "", 400, "e2e_bad_utf8"},
		{"body too large", http.MethodPost, bytes.Repeat([]byte{1}, 10<<20), "", 413, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, h.url+"/api/v1/write", bytes.NewReader(tc.body))
			req.Header.Set("Content-Encoding", "snappy")
			if len(tc.body) > 1<<20 {
				// The server answers 413 from Content-Length without
				// reading the body; without 100-continue the client may
				// still be sending when the connection closes.
				req.Header.Set("Expect", "100-continue")
			}
			if tc.ct != "" {
				req.Header.Set("Content-Type", tc.ct)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantCode {
				t.Errorf("status %d (%s), want %d", resp.StatusCode, body, tc.wantCode)
			}
			if tc.wantBody != "" && !strings.Contains(string(body), tc.wantBody) {
				t.Errorf("body %q does not mention %q", body, tc.wantBody)
			}
		})
	}
	// The 400 named every bad series and still wrote the good ones.
	req, _ := http.NewRequest(http.MethodPost, h.url+"/api/v1/write", bytes.NewReader(snappy.Encode(nil, valid)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`job="no-name"`, "e2e_neg", "e2e_far", "e2e_bad_utf8"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("400 body %q does not name %s", body, want)
		}
	}
	h.model[labels.FromStrings("__name__", "e2e_good", "job", "e2e").String()].samples[t0+1] = 2
	h.model[labels.FromStrings("__name__", "e2e_good2").String()] = &modelSeries{lbls: labels.FromStrings("__name__", "e2e_good2"), samples: map[int64]float64{t0: 5}}
	for _, path := range []string{"/-/healthy", "/-/ready", "/metrics"} {
		resp, err := http.Get(h.url + path)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s after bad input: %v %v", path, resp, err)
		}
		if resp != nil {
			resp.Body.Close()
		}
	}
	h.check("data intact", 0, t0+hour(), re("__name__", "e2e_good.*"))
}

func hour() int64 { return 3600_000 }
