package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/prompb"
)

// The disk benchmark's data: node_exporter-like series of T targets,
// scraped every interval, generated deterministically from a seed and
// streamed (nothing but each series' current value is kept), so that the
// same samples go to every system.
//
// Each target has a fixed phase within the interval (Prometheus spreads
// its targets over the interval) and every scrape a jitter of a few ms,
// shared by all the series of the target (they come from one scrape).
// Each target exposes nodeCatalog's series in turn, interleaved (a target
// with more than len(nodeCatalog) series repeats them with a "copy"
// label):
//
//   - counters (half): random integer increments of a per-family size;
//     all of a target's counters start again from zero when the target
//     restarts (about once a day), and each counter resets on its own
//     rarely as well;
//   - gauges (a third): a random walk, either in steps of 0.01 (load,
//     temperatures, clock offset: 2-decimal values) or of whole units
//     (bytes in pages, processes, sockets);
//   - constants (the rest): sizes, info metrics, link speeds;
//   - one classic histogram (node_http_request_duration_seconds: 8
//     cumulative le buckets, _sum and _count), log-normal observations,
//     reset as a whole with the target's counters or on its own rarely.

// genConfig is what the data looks like.
type genConfig struct {
	series, targets int
	span, interval  time.Duration
	// jitter bounds the per-scrape jitter of a target's timestamps: each
	// scrape's timestamps are off by up to ±jitter.
	jitter time.Duration
	seed   uint64
	// end is where the data ends (exclusive); it starts at end - span.
	end time.Time
}

func (g genConfig) rounds() int       { return int(g.span / g.interval) }
func (g genConfig) samples() int64    { return int64(g.rounds()) * int64(g.series) }
func (g genConfig) startMs() int64    { return g.end.Add(-g.span).UnixMilli() }
func (g genConfig) endMs() int64      { return g.end.UnixMilli() }
func (g genConfig) intervalMs() int64 { return g.interval.Milliseconds() }

func (g genConfig) validate() error {
	switch {
	case g.series <= 0 || g.targets <= 0 || g.targets > g.series:
		return fmt.Errorf("want 0 < targets (%d) <= series (%d)", g.targets, g.series)
	case g.interval < time.Second:
		return fmt.Errorf("scrape interval %s is below 1s", g.interval)
	case g.span < g.interval:
		return fmt.Errorf("span %s is shorter than the scrape interval %s", g.span, g.interval)
	case g.jitter < 0 || 4*g.jitter >= g.interval:
		return fmt.Errorf("jitter %s must be within [0, interval/4)", g.jitter)
	}
	return nil
}

type seriesKind uint8

const (
	kindCounter seriesKind = iota
	kindGauge
	kindConst
	// kindHistogram: a classic histogram, one series per bucket (le), its
	// _sum and its _count.
	kindHistogram
)

// family is one metric of nodeCatalog with its label sets.
type family struct {
	name string
	kind seriesKind
	// labels: label name and its values; the family has one series per
	// value (or per pair of values when labels2 is set too).
	label   string
	values  []string
	label2  string
	values2 []string
	// counters: increments are uniform integers in [0, inc]; gauges: the
	// walk's start, bounds and step (step 0.01 gives 2-decimal values,
	// step >= 1 whole numbers); constants: value.
	inc                 float64
	start, lo, hi, step float64
	constant            float64
	// histograms: the buckets' upper bounds (ascending, +Inf last), and
	// the observations' log-normal distribution (median in seconds and
	// sigma of its logarithm); inc bounds the observations of a scrape.
	buckets       []float64
	median, sigma float64
}

// nodeCatalog is one target's series: 45 counters, 32 gauges, 13
// constants and a classic histogram of 10 series (8 buckets, _sum and
// _count), named after node_exporter's; 100 series in all.
var nodeCatalog = expandCatalog([]family{
	{name: "node_cpu_seconds_total", kind: kindCounter, label: "cpu", values: []string{"0", "1", "2", "3"},
		label2: "mode", values2: []string{"idle", "iowait", "irq", "nice", "softirq", "steal", "system", "user"}, inc: 15},
	{name: "node_network_receive_bytes_total", kind: kindCounter, label: "device", values: []string{"eth0", "eth1"}, inc: 2_000_000},
	{name: "node_network_transmit_bytes_total", kind: kindCounter, label: "device", values: []string{"eth0", "eth1"}, inc: 1_000_000},
	{name: "node_disk_reads_completed_total", kind: kindCounter, label: "device", values: []string{"sda", "sdb"}, inc: 300},
	{name: "node_disk_writes_completed_total", kind: kindCounter, label: "device", values: []string{"sda", "sdb"}, inc: 600},
	{name: "node_disk_read_bytes_total", kind: kindCounter, label: "device", values: []string{"sda", "sdb"}, inc: 4_000_000},
	{name: "node_disk_written_bytes_total", kind: kindCounter, label: "device", values: []string{"sda", "sdb"}, inc: 8_000_000},
	{name: "node_context_switches_total", kind: kindCounter, inc: 60_000},

	{name: "node_http_request_duration_seconds", kind: kindHistogram, buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, math.Inf(1)},
		median: 0.03, sigma: 1, inc: 40},

	{name: "node_load1", kind: kindGauge, start: 0.8, lo: 0, hi: 16, step: 0.01},
	{name: "node_load5", kind: kindGauge, start: 0.7, lo: 0, hi: 16, step: 0.01},
	{name: "node_load15", kind: kindGauge, start: 0.6, lo: 0, hi: 16, step: 0.01},
	{name: "node_memory_MemFree_bytes", kind: kindGauge, start: 2 << 30, lo: 64 << 20, hi: 16 << 30, step: 4096},
	{name: "node_memory_MemAvailable_bytes", kind: kindGauge, start: 8 << 30, lo: 64 << 20, hi: 16 << 30, step: 4096},
	{name: "node_memory_Cached_bytes", kind: kindGauge, start: 5 << 30, lo: 64 << 20, hi: 16 << 30, step: 4096},
	{name: "node_memory_Buffers_bytes", kind: kindGauge, start: 300 << 20, lo: 1 << 20, hi: 2 << 30, step: 4096},
	{name: "node_memory_Active_bytes", kind: kindGauge, start: 6 << 30, lo: 64 << 20, hi: 16 << 30, step: 4096},
	{name: "node_memory_Inactive_bytes", kind: kindGauge, start: 3 << 30, lo: 64 << 20, hi: 16 << 30, step: 4096},
	{name: "node_memory_Dirty_bytes", kind: kindGauge, start: 2 << 20, lo: 0, hi: 1 << 30, step: 4096},
	{name: "node_memory_SwapFree_bytes", kind: kindGauge, start: 2 << 30, lo: 0, hi: 2 << 30, step: 4096},
	{name: "node_filesystem_avail_bytes", kind: kindGauge, label: "mountpoint", values: []string{"/", "/var", "/home", "/boot"},
		start: 40 << 30, lo: 1 << 30, hi: 100 << 30, step: 4096},
	{name: "node_hwmon_temp_celsius", kind: kindGauge, label: "sensor", values: []string{"temp1", "temp2", "temp3", "temp4"}, start: 45, lo: 20, hi: 95, step: 0.01},
	{name: "node_procs_running", kind: kindGauge, start: 3, lo: 0, hi: 64, step: 1},
	{name: "node_procs_blocked", kind: kindGauge, start: 0, lo: 0, hi: 16, step: 1},
	{name: "node_filefd_allocated", kind: kindGauge, start: 5000, lo: 1000, hi: 60000, step: 1},
	{name: "node_sockstat_TCP_inuse", kind: kindGauge, start: 120, lo: 0, hi: 5000, step: 1},
	{name: "node_netstat_Tcp_CurrEstab", kind: kindGauge, start: 90, lo: 0, hi: 5000, step: 1},
	{name: "node_nf_conntrack_entries", kind: kindGauge, start: 700, lo: 0, hi: 65536, step: 1},
	{name: "node_timex_offset_seconds", kind: kindGauge, start: 0, lo: -0.5, hi: 0.5, step: 0.01},
	{name: "node_disk_io_now", kind: kindGauge, label: "device", values: []string{"sda", "sdb"}, start: 0, lo: 0, hi: 32, step: 1},
	{name: "node_filesystem_files_free", kind: kindGauge, label: "mountpoint", values: []string{"/", "/var", "/home", "/boot"},
		start: 3_000_000, lo: 1000, hi: 6_000_000, step: 1},

	{name: "node_memory_MemTotal_bytes", kind: kindConst, constant: 16 << 30},
	{name: "node_memory_SwapTotal_bytes", kind: kindConst, constant: 2 << 30},
	{name: "node_filesystem_size_bytes", kind: kindConst, label: "mountpoint", values: []string{"/", "/var", "/home", "/boot"}, constant: 100 << 30},
	{name: "node_filesystem_files", kind: kindConst, label: "mountpoint", values: []string{"/", "/var", "/home", "/boot"}, constant: 6_553_600},
	{name: "node_uname_info", kind: kindConst, label: "release", values: []string{"6.1.0-18-amd64"}, constant: 1},
	{name: "node_exporter_build_info", kind: kindConst, label: "version", values: []string{"1.8.2"}, constant: 1},
	{name: "node_boot_time_seconds", kind: kindConst, constant: 1_767_225_600},
})

// catalogSeries is one entry of nodeCatalog: a family and its labels.
type catalogSeries struct {
	fam    *family
	labels [][2]string // besides __name__, job and instance
	// histograms: which series of the family (part < len(buckets): that
	// bucket; then _sum, then _count) and its metric name.
	part int
	name string
}

// The series of a histogram family after its buckets.
func (f *family) sumPart() int   { return len(f.buckets) }
func (f *family) countPart() int { return len(f.buckets) + 1 }

// formatLe writes a bucket's upper bound as the le label's value, as
// Prometheus's client libraries do ("0.005", "+Inf").
func formatLe(le float64) string {
	if math.IsInf(le, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(le, 'g', -1, 64)
}

// expandCatalog lists every series of fams, interleaved (a stride through
// the list) so that a target with fewer series than the catalog still has
// counters, gauges and constants.
func expandCatalog(fams []family) []catalogSeries {
	all := listCatalog(fams)
	const stride = 37
	n := len(all)
	if gcd(stride, n) != 1 {
		return all
	}
	out := make([]catalogSeries, n)
	for i := range out {
		out[i] = all[i*stride%n]
	}
	return out
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func listCatalog(fams []family) []catalogSeries {
	var out []catalogSeries
	for i := range fams {
		f := &fams[i]
		switch {
		case f.kind == kindHistogram:
			for i, le := range f.buckets {
				out = append(out, catalogSeries{fam: f, part: i, name: f.name + "_bucket", labels: [][2]string{{"le", formatLe(le)}}})
			}
			out = append(out, catalogSeries{fam: f, part: f.sumPart(), name: f.name + "_sum"},
				catalogSeries{fam: f, part: f.countPart(), name: f.name + "_count"})
		case f.label == "":
			out = append(out, catalogSeries{fam: f})
		case f.label2 == "":
			for _, v := range f.values {
				out = append(out, catalogSeries{fam: f, labels: [][2]string{{f.label, v}}})
			}
		default:
			for _, v := range f.values {
				for _, v2 := range f.values2 {
					out = append(out, catalogSeries{fam: f, labels: [][2]string{{f.label, v}, {f.label2, v2}}})
				}
			}
		}
	}
	return out
}

// genSeries is one series' identity and state.
type genSeries struct {
	id     int // global index: which sender shard it goes to
	fam    *family
	labels []prompb.Label // sorted by name, __name__ first
	// pbLabels is the series' labels encoded as the repeated labels field
	// of a remote-write TimeSeries; omPrefix its OpenMetrics text up to the
	// value ("name{a=\"b\"} ").
	pbLabels []byte
	omPrefix string
	value    float64
	// hist and part: a histogram's series (part as catalogSeries'), its
	// value taken from the histogram's state.
	hist *genHist
	part int
}

// genHist is the state of one classic histogram of a target: the
// cumulative count of each bucket (the last, +Inf, is the _count) and
// the sum of the observations.
type genHist struct {
	fam *family
	cum []float64
	sum float64
}

// value is the current value of the histogram's series part.
func (h *genHist) value(part int) float64 {
	switch part {
	case h.fam.sumPart():
		return h.sum
	case h.fam.countPart():
		return h.cum[len(h.cum)-1]
	}
	return h.cum[part]
}

// newGenHist starts a histogram as if it had already counted a random
// number of observations, spread over the buckets as the distribution
// spreads them.
func newGenHist(f *family, rng *rand.Rand) *genHist {
	h := &genHist{fam: f, cum: make([]float64, len(f.buckets))}
	n := float64(rng.Int64N(200_000))
	for i, le := range f.buckets {
		h.cum[i] = math.Floor(n * f.cdf(le))
	}
	h.cum[len(h.cum)-1] = n
	h.sum = math.Round(n*f.median*math.Exp(f.sigma*f.sigma/2)*1000) / 1000
	return h
}

// cdf is the share of a histogram family's observations at or below x.
func (f *family) cdf(x float64) float64 {
	if math.IsInf(x, 1) {
		return 1
	}
	return 0.5 * math.Erfc(-math.Log(x/f.median)/(f.sigma*math.Sqrt2))
}

// advance adds one scrape's observations (up to inc of them), counting
// from zero again first when reset.
func (h *genHist) advance(rng *rand.Rand, reset bool) {
	if reset {
		clear(h.cum)
		h.sum = 0
	}
	f := h.fam
	for range rng.Int64N(int64(f.inc) + 1) {
		x := f.median * math.Exp(f.sigma*rng.NormFloat64())
		i := 0
		for i < len(f.buckets)-1 && x > f.buckets[i] {
			i++
		}
		for ; i < len(h.cum); i++ {
			h.cum[i]++
		}
		h.sum += x
	}
}

// genTarget is one scraped target: its series and random source.
type genTarget struct {
	idx    int
	phase  int64 // ms into each interval
	rng    *rand.Rand
	series []genSeries
	hists  []*genHist // in the order their first series came
}

// generator streams the samples of g round by round, each round in
// timestamp order across targets.
type generator struct {
	g       genConfig
	targets []*genTarget // sorted by phase
	round   int
}

// Per-scrape probabilities of a target restart (every counter of the
// target starts again) and of one counter resetting on its own.
func (g genConfig) restartProb() float64 {
	return 1 / (24 * time.Hour.Seconds() / g.interval.Seconds())
}

const counterResetProb = 1.0 / 20000

func newGenerator(g genConfig) *generator {
	gen := &generator{g: g}
	id := 0
	per, extra := g.series/g.targets, g.series%g.targets
	for t := range g.targets {
		rng := rand.New(rand.NewPCG(g.seed, uint64(t)+1))
		tg := &genTarget{idx: t, rng: rng}
		// A phase that keeps every jittered timestamp of a round inside
		// its interval.
		j := g.jitter.Milliseconds()
		tg.phase = j + rng.Int64N(max(g.intervalMs()-2*j-1, 1))
		n := per
		if t < extra {
			n++
		}
		instance := fmt.Sprintf("host-%03d:9100", t)
		// A target's histograms by family and copy.
		type histKey struct {
			fam  *family
			copy int
		}
		hists := map[histKey]*genHist{}
		for j := range n {
			cs := nodeCatalog[j%len(nodeCatalog)]
			name := cs.fam.name
			if cs.name != "" {
				name = cs.name
			}
			ls := []prompb.Label{{Name: "__name__", Value: name}, {Name: "instance", Value: instance}, {Name: "job", Value: "node"}}
			for _, l := range cs.labels {
				ls = append(ls, prompb.Label{Name: l[0], Value: l[1]})
			}
			if j >= len(nodeCatalog) {
				ls = append(ls, prompb.Label{Name: "copy", Value: strconv.Itoa(j / len(nodeCatalog))})
			}
			sortLabels(ls)
			s := genSeries{id: id, fam: cs.fam, labels: ls, pbLabels: encodeLabels(ls), omPrefix: openMetricsPrefix(ls)}
			switch cs.fam.kind {
			case kindCounter:
				s.value = float64(rng.Int64N(1_000_000))
			case kindGauge:
				s.value = cs.fam.start
			case kindConst:
				s.value = cs.fam.constant
			case kindHistogram:
				k := histKey{cs.fam, j / len(nodeCatalog)}
				h := hists[k]
				if h == nil {
					h = newGenHist(cs.fam, rng)
					hists[k] = h
					tg.hists = append(tg.hists, h)
				}
				s.hist, s.part = h, cs.part
				s.value = h.value(cs.part)
			}
			tg.series = append(tg.series, s)
			id++
		}
		gen.targets = append(gen.targets, tg)
	}
	// Scrapes come in phase order within each round.
	for i := 1; i < len(gen.targets); i++ {
		for k := i; k > 0 && gen.targets[k].phase < gen.targets[k-1].phase; k-- {
			gen.targets[k], gen.targets[k-1] = gen.targets[k-1], gen.targets[k]
		}
	}
	return gen
}

// sortLabels sorts by name, __name__ (which sorts first anyway) first.
func sortLabels(ls []prompb.Label) {
	for i := 1; i < len(ls); i++ {
		for k := i; k > 0 && ls[k].Name < ls[k-1].Name; k-- {
			ls[k], ls[k-1] = ls[k-1], ls[k]
		}
	}
}

// scrape is one target's scrape: its timestamp and series, whose values
// are the scraped ones until the next call of next.
type scrape struct {
	ts     int64
	target *genTarget
}

// next advances to the next scrape and reports false after the last.
// Scrapes come round by round, each round in phase order.
func (gen *generator) next(sc *scrape, ti *int) bool {
	if *ti >= len(gen.targets) {
		*ti = 0
		gen.round++
	}
	if gen.round >= gen.g.rounds() {
		return false
	}
	tg := gen.targets[*ti]
	*ti++
	j := gen.g.jitter.Milliseconds()
	ts := gen.g.startMs() + int64(gen.round)*gen.g.intervalMs() + tg.phase
	if j > 0 {
		ts += tg.rng.Int64N(2*j+1) - j
	}
	sc.ts, sc.target = ts, tg
	if gen.round > 0 {
		tg.advance(gen.g)
	}
	return true
}

// advance moves every series of the target one scrape on.
func (tg *genTarget) advance(g genConfig) {
	restart := tg.rng.Float64() < g.restartProb()
	// A histogram's series move together: its state first.
	for _, h := range tg.hists {
		reset := tg.rng.Float64() < counterResetProb
		h.advance(tg.rng, restart || reset)
	}
	for i := range tg.series {
		s := &tg.series[i]
		f := s.fam
		switch f.kind {
		case kindCounter:
			inc := float64(tg.rng.Int64N(int64(f.inc) + 1))
			if restart || tg.rng.Float64() < counterResetProb {
				s.value = inc
			} else {
				s.value += inc
			}
		case kindGauge:
			// Mostly small moves, sometimes a jump.
			steps := tg.rng.NormFloat64() * 3
			if tg.rng.IntN(50) == 0 {
				steps *= 30
			}
			var v float64
			if f.step >= 1 {
				v = s.value + math.Round(steps)*f.step
			} else {
				v = math.Round(s.value*100+math.Round(steps)) / 100
			}
			if v < f.lo || v > f.hi {
				v = s.value
			}
			s.value = v
		case kindHistogram:
			s.value = s.hist.value(s.part)
		}
	}
}

// encodeLabels encodes ls as the repeated field 1 of a remote-write 1.0
// TimeSeries.
func encodeLabels(ls []prompb.Label) []byte {
	var b []byte
	for _, l := range ls {
		n := 1 + uvarintLen(uint64(len(l.Name))) + len(l.Name) + 1 + uvarintLen(uint64(len(l.Value))) + len(l.Value)
		b = append(b, 0x0a)
		b = binary.AppendUvarint(b, uint64(n))
		b = append(b, 0x0a)
		b = binary.AppendUvarint(b, uint64(len(l.Name)))
		b = append(b, l.Name...)
		b = append(b, 0x12)
		b = binary.AppendUvarint(b, uint64(len(l.Value)))
		b = append(b, l.Value...)
	}
	return b
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// appendTimeSeries appends one remote-write 1.0 TimeSeries (field 1 of
// WriteRequest) with one sample, as Prometheus sends them.
func appendTimeSeries(b, pbLabels []byte, ts int64, v float64) []byte {
	sampleLen := 1 + 8 + 1 + uvarintLen(uint64(ts))
	tsLen := len(pbLabels) + 1 + uvarintLen(uint64(sampleLen)) + sampleLen
	b = append(b, 0x0a)
	b = binary.AppendUvarint(b, uint64(tsLen))
	b = append(b, pbLabels...)
	b = append(b, 0x12)
	b = binary.AppendUvarint(b, uint64(sampleLen))
	b = append(b, 0x09)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	b = append(b, 0x10)
	return binary.AppendUvarint(b, uint64(ts))
}

// openMetricsPrefix is the series' OpenMetrics text before its value.
func openMetricsPrefix(ls []prompb.Label) string {
	var sb strings.Builder
	sb.WriteString(ls[0].Value)
	sb.WriteByte('{')
	for i, l := range ls[1:] {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(l.Name)
		sb.WriteString(`="`)
		sb.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(l.Value))
		sb.WriteByte('"')
	}
	sb.WriteString("} ")
	return sb.String()
}

// appendOpenMetricsSample appends one sample line. The timestamp is
// written in seconds with a trailing 5 (half a millisecond): promtool's
// parser truncates seconds × 1000 to an integer, and the half keeps float
// rounding from taking the millisecond below.
func appendOpenMetricsSample(b []byte, prefix string, ts int64, v float64) []byte {
	b = append(b, prefix...)
	b = strconv.AppendFloat(b, v, 'f', -1, 64)
	b = append(b, ' ')
	sec, ms := ts/1000, ts%1000
	if ms < 0 {
		sec, ms = sec-1, ms+1000
	}
	b = strconv.AppendInt(b, sec, 10)
	b = append(b, '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), '5', '\n')
	return b
}

// writeOpenMetrics writes every sample of g as OpenMetrics text (with
// timestamps, in time order, "# EOF" at the end), as promtool's
// create-blocks-from openmetrics reads it.
func writeOpenMetrics(w io.Writer, g genConfig) (int64, error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	gen := newGenerator(g)
	var sc scrape
	ti := 0
	var n int64
	buf := make([]byte, 0, 64<<10)
	for gen.next(&sc, &ti) {
		for i := range sc.target.series {
			s := &sc.target.series[i]
			buf = appendOpenMetricsSample(buf, s.omPrefix, sc.ts, s.value)
			n++
		}
		if len(buf) > 32<<10 {
			if _, err := bw.Write(buf); err != nil {
				return n, err
			}
			buf = buf[:0]
		}
	}
	buf = append(buf, "# EOF\n"...)
	if _, err := bw.Write(buf); err != nil {
		return n, err
	}
	return n, bw.Flush()
}

// streamRequests generates every sample of g and hands remote-write 1.0
// requests (snappy not applied) of up to batch samples to send, one
// stream per shard (shards × a series' id), each shard's requests in time
// order, as Prometheus's queue shards its series. send is called from one
// goroutine; it may hand the request to a sender and return. It returns
// the samples generated.
func streamRequests(g genConfig, shards, batch int, send func(shard int, req []byte, samples int) error) (int64, error) {
	gen := newGenerator(g)
	bufs := make([][]byte, shards)
	counts := make([]int, shards)
	var sc scrape
	ti := 0
	var n int64
	for gen.next(&sc, &ti) {
		for i := range sc.target.series {
			s := &sc.target.series[i]
			sh := s.id % shards
			if bufs[sh] == nil {
				bufs[sh] = make([]byte, 0, batch*160)
			}
			bufs[sh] = appendTimeSeries(bufs[sh], s.pbLabels, sc.ts, s.value)
			counts[sh]++
			n++
			if counts[sh] == batch {
				c := counts[sh]
				req := bufs[sh]
				bufs[sh], counts[sh] = nil, 0
				if err := send(sh, req, c); err != nil {
					return n, err
				}
			}
		}
	}
	for sh := range bufs {
		if counts[sh] > 0 {
			if err := send(sh, bufs[sh], counts[sh]); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}
