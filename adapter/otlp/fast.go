package otlp

import (
	"bytes"
	"math"
	"slices"

	"github.com/prometheus/common/model"
	"github.com/prometheus/otlptranslator"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/model/value"
	"google.golang.org/protobuf/encoding/protowire"
)

// The fast path: a protobuf export request of the common shapes is
// translated straight from its bytes into the remote write 1.0 body that
// Prometheus's converter would have made of it, byte for byte (the same
// series, samples, order and metadata), without pdata's objects or the
// converter's label builders. The shapes it takes:
//
//   - gauges, summaries, and sums and explicit-bucket histograms of
//     cumulative temporality, each with data points;
//   - attribute values of every kind (arrays, maps and bytes through
//     pcommon's own AsString);
//   - exemplars with a value (fastexemplars.go);
//   - nothing the filter would refuse (no point without a timestamp or a
//     day older than its resource's newest, no histogram whose counts do
//     not add up, no more than the attributes allowed);
//   - no two attributes of a map with one name, or with names that
//     translate to one label name (the converter joins their values and
//     warns);
//   - every setting (convert_histograms_to_nhcb: fasthistograms.go's
//     customBuckets).
//
// Anything else (or a body that does not decode) is left to the general
// path, pdata and Prometheus's converter, by returning false: the fast
// path never answers differently, which the differential test and fuzz
// (fast_test.go) check against the converter on generated requests.
//
// The names of metrics and labels are Prometheus's otlptranslator's,
// cached per Converter (they depend on the configuration, which the
// cache is keyed by).

// Files: fast.go reads the request (fastproto.go its fields,
// fasthistograms.go its histograms), fastlabels.go makes the series,
// fastexemplars.go their exemplars.

// fastState is a translation's reusable memory for the fast path.
type fastState struct {
	cfgKey fastConfigKey
	names  map[metricKey]string // otlptranslator.MetricNamer's, by input
	labels map[string][]byte    // otlptranslator.LabelNamer's, by input
	units  map[string]string    // otlptranslator.UnitNamer's
	// attrs are a map's attributes in wire order; resAttrs the current
	// resource's, sorted by name; series a series' labels, sorted.
	attrs, resAttrs, series []attr
	// promoted are the current resource's promoted attributes as labels,
	// sorted (promoteResource); scopeLabels the current scope's labels
	// (with PromoteScopeMetadata), sorted, an empty value deleting a
	// label of its name (setScope).
	promoted, scopeLabels []attr
	// The names of the last attributes translated (see labelsOf): their
	// raw names, translated names, the order of the translated ones
	// (reserved attributes left out) and whether they are all distinct.
	known                 bool
	lastNames, lastFinals [][]byte
	lastOrder             []int32
	lastReserved, lastOK  bool
	values                []byte              // formatted attribute values, le bounds
	seen                  map[string]struct{} // target_info samples written: labels ‖ ms
	families              map[string]struct{}
	order                 []family
	key                   []byte
	// A point's exemplars (fastexemplars.go): their attributes, labels
	// and encoded labels as they are read.
	exemplars []fastExemplar
	// nhcb and counts are a custom-bucket histogram's, quantiles a
	// summary point's, reused.
	nhcb              histogram.Histogram
	counts            []uint64
	quantiles         []quantile
	exAttrs, exLabels []attr
	exBuf             []byte
	// enc is st.series encoded (encodeSeries), with the spans __name__
	// and le take in it.
	enc                                []byte
	nameAt, nameEnd, extraAt, extraEnd int
	// Label names, as bytes.
	nameLabel, leLabel, quantileLabel, jobLabel, instanceLabel, traceLabel, spanLabel []byte
	// extra is the label a point's series add besides __name__: le, or
	// a summary's quantile (encodeSeries).
	extra []byte
}

// fastConfigKey is what the cached names depend on.
type fastConfigKey struct {
	suffixes, utf8, underscores, preserve bool
}

// metricKey is a MetricNamer input.
type metricKey struct {
	name, unit string
	typ        otlptranslator.MetricType
}

// attr is an attribute or a label: slices into the body, values or the
// name caches.
type attr struct {
	name, value []byte
}

// family is a metric family's metadata, in the order first written.
type family struct {
	name string
	md   metadata.Metadata
}

// maxFastCache bounds the name caches: past it they start again.
const maxFastCache = 4096

// fastConfig reports whether cfg is one the fast path implements.
func fastConfig(cfg Config) bool {
	return true
}

// fastRun is one request's translation.
type fastRun struct {
	st       *fastState
	cfg      Config
	body     []byte
	points   int
	series   int
	maxAttrs int
	// The resource in translation: its job and instance labels, its
	// points' earliest and latest timestamps (ns).
	job, instance    []byte
	earliest, latest uint64
	// over is set once body has passed cfg.MaxBodyBytes: the
	// translation stops, and the request is refused.
	over bool
}

// convertFast translates a protobuf body along the fast path into a
// remote write 1.0 body appended to dst[:0]; false when the request is
// not of a shape it takes (dst's bytes are then garbage).
func (st *fastState) convertFast(body []byte, cfg Config, dst []byte) (Result, bool) {
	st.reset(cfg)
	defer st.forget()
	maxAttrs := cfg.MaxAttributes
	if maxAttrs <= 0 {
		maxAttrs = DefaultMaxAttributes
	}
	r := fastRun{st: st, cfg: cfg, body: dst[:0], maxAttrs: maxAttrs}
	for b := body; len(b) > 0; {
		f, rest, ok := nextField(b)
		if !ok {
			return Result{}, false
		}
		b = rest
		if f.num != 1 {
			continue
		}
		if f.typ != protowire.BytesType || !r.resource(f.b) {
			return Result{tooLarge: r.over}, false
		}
	}
	if r.series == 0 {
		return Result{Points: r.points}, true
	}
	for _, fam := range st.order {
		r.body = appendMetadata(r.body, fam.name, fam.md)
	}
	return Result{Body: r.body, Points: r.points, Samples: r.series}, true
}

// forget drops st's references into the request's body, so that a
// pooled state does not keep the body alive.
func (st *fastState) forget() {
	for _, s := range [][]attr{st.attrs, st.resAttrs, st.series, st.promoted, st.exAttrs, st.exLabels} {
		clear(s[:cap(s)])
	}
	clear(st.lastNames[:cap(st.lastNames)])
	clear(st.lastFinals[:cap(st.lastFinals)])
	clear(st.exemplars[:cap(st.exemplars)])
	st.known = false
}

// reset readies st for a request under cfg.
func (st *fastState) reset(cfg Config) {
	k := fastConfigKey{cfg.TranslationStrategy.ShouldAddSuffixes(), !cfg.TranslationStrategy.ShouldEscape(),
		cfg.LabelNameUnderscoreSanitization, cfg.LabelNamePreserveMultipleUnderscores}
	if st.names == nil || k != st.cfgKey || len(st.names)+len(st.labels)+len(st.units) > 3*maxFastCache {
		st.cfgKey = k
		st.names = map[metricKey]string{}
		st.labels = map[string][]byte{}
		st.units = map[string]string{}
		st.nameLabel, st.leLabel, st.quantileLabel = []byte(model.MetricNameLabel), []byte(model.BucketLabel), []byte(model.QuantileLabel)
		st.jobLabel, st.instanceLabel = []byte(model.JobLabel), []byte(model.InstanceLabel)
		st.traceLabel, st.spanLabel = []byte("trace_id"), []byte("span_id")
	}
	st.known = false // the last names point into the last request's body
	st.extra = st.leLabel
	st.values = st.values[:0]
	clear(st.seen)
	clear(st.families)
	st.order = st.order[:0]
}

// resource translates a ResourceMetrics: resource 1, scope_metrics 2,
// schema_url 3.
func (r *fastRun) resource(msg []byte) bool {
	var res []byte
	seen := false
	ok := fields(msg, func(f field) bool {
		if f.num == 1 {
			if seen || f.typ != protowire.BytesType {
				return false
			}
			res, seen = f.b, true
		}
		// 1000: the deprecated instrumentation_library_metrics, the
		// general path's.
		return (f.num != 2 && f.num != 3 || f.typ == protowire.BytesType) && f.num != 1000
	})
	if !ok || !r.setResource(res) {
		return false
	}
	ok = fields(msg, func(f field) bool {
		return f.num != 2 || r.scope(f.b)
	})
	return ok && r.checkTimes() && r.targetInfo()
}

// setResource reads a Resource: its attributes (1) into st.resAttrs,
// sorted, and its job and instance labels (service.*).
func (r *fastRun) setResource(msg []byte) bool {
	st := r.st
	ok := fields(msg, func(f field) bool {
		switch f.num {
		case 2: // dropped_attributes_count
			return f.typ == protowire.VarintType
		case 3: // entity_refs: the general path's, which validates them
			return false
		}
		return true
	})
	if !ok {
		return false
	}
	if st.resAttrs, ok = r.readAttrs(st.resAttrs[:0], msg, 1); !ok || !r.promoteResource() {
		return false
	}
	slices.SortFunc(st.resAttrs, func(a, b attr) int { return bytes.Compare(a.name, b.name) })
	for i := 1; i < len(st.resAttrs); i++ {
		if bytes.Equal(st.resAttrs[i-1].name, st.resAttrs[i].name) {
			return false // pdata's Get finds the first: the general path's
		}
	}
	r.job, r.instance = nil, nil
	r.earliest, r.latest = math.MaxUint64, 0
	var ns []byte
	haveNS, haveName := false, false
	for _, a := range st.resAttrs {
		switch string(a.name) {
		case "service.name":
			r.job, haveName = a.value, true
		case "service.namespace":
			ns, haveNS = a.value, true
		case "service.instance.id":
			r.instance = a.value
		}
	}
	if haveName && haveNS {
		n := len(st.values)
		st.values = append(append(append(st.values, ns...), '/'), r.job...)
		r.job = st.values[n:]
	}
	return true
}

// scope translates a ScopeMetrics: scope 1 (not translated: no scope
// labels), metrics 2, schema_url 3.
func (r *fastRun) scope(msg []byte) bool {
	// The scope and its schema URL first: the metrics may come before
	// them (pdata writes fields last first).
	var s scopeInfo
	ok := fields(msg, func(f field) bool {
		switch f.num {
		case 1:
			return f.typ == protowire.BytesType && r.readScope(f.b, &s)
		case 3: // schema_url
			s.schemaURL = f.b
			return f.typ == protowire.BytesType
		}
		return f.num != 2 || f.typ == protowire.BytesType
	})
	if !ok || !r.setScope(&s) {
		return false
	}
	return fields(msg, func(f field) bool {
		return f.num != 2 || r.metric(f.b)
	})
}

// scopeInfo is an InstrumentationScope as read, with its ScopeMetrics'
// schema URL.
type scopeInfo struct {
	name, version, schemaURL []byte
	attrs                    []attr // in wire order
}

// readScope reads an InstrumentationScope: name 1, version 2, attributes
// 3 (read, as pdata validates them, and counted, as the filter does),
// dropped_attributes_count 4.
func (r *fastRun) readScope(msg []byte, s *scopeInfo) bool {
	return fields(msg, func(g field) bool {
		switch g.num {
		case 1, 2:
			if g.num == 1 {
				s.name = g.b
			} else {
				s.version = g.b
			}
			return g.typ == protowire.BytesType
		case 3:
			a, ok := r.keyValue(g.b)
			s.attrs = append(s.attrs, a)
			return ok && g.typ == protowire.BytesType && len(s.attrs) <= r.maxAttrs
		case 4:
			return g.typ == protowire.VarintType
		}
		return true
	})
}

// setScope makes st.scopeLabels of s as the converter's setScopeContext
// and createAttributes do, with PromoteScopeMetadata and a named scope
// (none otherwise): each attribute as otel_scope_<name> translated, then
// otel_scope_name, otel_scope_version and otel_scope_schema_url, each set
// over the ones before it of its name, an empty value deleting.
func (r *fastRun) setScope(s *scopeInfo) bool {
	st := r.st
	st.scopeLabels = st.scopeLabels[:0]
	if !r.cfg.PromoteScopeMetadata || len(s.name) == 0 {
		return true
	}
	for _, a := range s.attrs {
		name, ok := st.labelName([]byte("otel_scope_" + string(a.name)))
		if !ok {
			return false
		}
		st.scopeLabels = setOp(st.scopeLabels, name, a.value, true)
	}
	st.scopeLabels = setOp(st.scopeLabels, []byte("otel_scope_name"), s.name, false)
	st.scopeLabels = setOp(st.scopeLabels, []byte("otel_scope_version"), s.version, false)
	st.scopeLabels = setOp(st.scopeLabels, []byte("otel_scope_schema_url"), s.schemaURL, false)
	slices.SortFunc(st.scopeLabels, func(a, b attr) int { return bytes.Compare(a.name, b.name) })
	return true
}

// setOp records labels.Builder's Set(name, v) in ops: the last Set of a
// name is what it leaves, an empty value a delete. dropEmpty drops a
// delete of a name ops has no Set of (a builder started empty: nothing
// to delete).
func setOp(ops []attr, name, v []byte, dropEmpty bool) []attr {
	i := slices.IndexFunc(ops, func(p attr) bool { return bytes.Equal(p.name, name) })
	switch {
	case i >= 0:
		ops[i].value = v
	case len(v) > 0 || !dropEmpty:
		ops = append(ops, attr{name: name, value: v})
	}
	return ops
}

// metricData is a Metric's fields: name 1, description 2, unit 3, and
// its data: gauge 5, sum 7, histogram 9 (exponential histograms 10,
// summaries 11 and metadata 12 are the general path's).
type metricData struct {
	name, help, unit []byte
	kind             protowire.Number
	data             []byte
}

// metric translates a Metric.
func (r *fastRun) metric(msg []byte) bool {
	var m metricData
	var counts [4]int
	ok := fields(msg, func(f field) bool {
		switch f.num {
		case 1, 2, 3:
			counts[f.num]++
			switch f.num {
			case 1:
				m.name = f.b
			case 2:
				m.help = f.b
			default:
				m.unit = f.b
			}
			return f.typ == protowire.BytesType
		case 5, 7, 9, 11:
			if m.kind != 0 || f.typ != protowire.BytesType {
				return false
			}
			m.kind, m.data = f.num, f.b
		case 10, 12:
			return false
		}
		return true
	})
	if !ok || m.kind == 0 || counts[1] > 1 || counts[2] > 1 || counts[3] > 1 {
		return false
	}
	switch m.kind {
	case 5:
		return r.numbers(m, otlptranslator.MetricTypeGauge, model.MetricTypeGauge)
	case 7:
		return r.sum(m)
	case 11:
		return r.summary(m)
	}
	return r.histogram(m)
}

// sum translates a Sum: data_points 1, aggregation_temporality 2,
// is_monotonic 3.
func (r *fastRun) sum(m metricData) bool {
	temporality, monotonic := uint64(0), false
	ok := fields(m.data, func(f field) bool {
		switch f.num {
		case 2:
			temporality = f.u
			return f.typ == protowire.VarintType
		case 3:
			monotonic = f.u != 0
			return f.typ == protowire.VarintType
		}
		return true
	})
	if !ok || temporality != cumulative {
		return false
	}
	if monotonic {
		return r.numbers(m, otlptranslator.MetricTypeMonotonicCounter, model.MetricTypeCounter)
	}
	return r.numbers(m, otlptranslator.MetricTypeNonMonotonicCounter, model.MetricTypeGauge)
}

// cumulative is AggregationTemporality's CUMULATIVE.
const cumulative = 2

// metricNames are a metric's family name and its series' names.
type metricNames struct {
	family                   string
	md                       metadata.Metadata
	name, sum, count, bucket []byte
	noted                    bool // the family's metadata is noted (emit)
	// exemplars is set for a sum: the converter stores its points'
	// exemplars, and drops a gauge's.
	exemplars bool
}

// namesOf returns the Prometheus names of m under typ and its family's
// metadata; false when the namer refuses it.
func (r *fastRun) namesOf(m metricData, typ otlptranslator.MetricType, mt model.MetricType) (metricNames, bool) {
	st := r.st
	key := metricKey{string(m.name), string(m.unit), typ}
	name, ok := st.names[key]
	if !ok {
		namer := otlptranslator.MetricNamer{WithMetricSuffixes: st.cfgKey.suffixes, UTF8Allowed: st.cfgKey.utf8}
		var err error
		if name, err = namer.Build(otlptranslator.Metric{Name: key.name, Unit: key.unit, Type: typ}); err != nil {
			return metricNames{}, false
		}
		st.names[key] = name
	}
	unit, ok := st.units[string(m.unit)]
	if !ok {
		unit = (&otlptranslator.UnitNamer{}).Build(string(m.unit))
		st.units[string(m.unit)] = unit
	}
	ns := metricNames{family: name, md: metadata.Metadata{Type: mt, Unit: unit, Help: string(m.help)}, name: []byte(name),
		exemplars: typ == otlptranslator.MetricTypeMonotonicCounter || typ == otlptranslator.MetricTypeNonMonotonicCounter}
	if typ == otlptranslator.MetricTypeHistogram || typ == otlptranslator.MetricTypeSummary {
		ns.sum, ns.count, ns.bucket = []byte(name+"_sum"), []byte(name+"_count"), []byte(name+"_bucket")
	}
	return ns, name != ""
}

// numbers translates the NumberDataPoints (field 1) of a gauge or a sum.
func (r *fastRun) numbers(m metricData, typ otlptranslator.MetricType, mt model.MetricType) bool {
	ns, ok := r.namesOf(m, typ, mt)
	if !ok {
		return false
	}
	n := 0
	for b := m.data; len(b) > 0; {
		f, rest, ok := nextField(b)
		if !ok {
			return false
		}
		b = rest
		if f.num != 1 {
			continue
		}
		n++
		if f.typ != protowire.BytesType || !r.number(f.b, &ns) {
			return false
		}
	}
	return n > 0
}

// number translates a NumberDataPoint: start_time_unix_nano 2,
// time_unix_nano 3, as_double 4, exemplars 5, as_int 6, attributes 7,
// flags 8.
func (r *fastRun) number(msg []byte, ns *metricNames) bool {
	var flags uint64
	var pv pointValue
	st := r.st
	st.attrs, st.exemplars, st.exBuf = st.attrs[:0], st.exemplars[:0], st.exBuf[:0]
	for b := msg; len(b) > 0; {
		if len(b) > 2 && b[0] == 7<<3|2 && b[1] < 0x80 && int(b[1]) < len(b)-1 { // an attribute
			if a, ok := plainKeyValue(b[2 : 2+b[1]]); ok {
				st.attrs = append(st.attrs, a)
				b = b[2+int(b[1]):]
				continue
			}
		}
		f, rest, ok := nextField(b)
		if !ok {
			return false
		}
		b = rest
		switch f.num {
		case 7:
			a, ok := r.keyValue(f.b)
			if !ok || f.typ != protowire.BytesType {
				return false
			}
			st.attrs = append(st.attrs, a)
		case 2, 3, 4, 6:
			if !pv.take(f, 3, 4, 6) {
				return false
			}
		case 5:
			if f.typ != protowire.BytesType || !r.readExemplar(f.b) {
				return false
			}
		case 8:
			flags = f.u
			if f.typ != protowire.VarintType {
				return false
			}
		}
	}
	ts, v := pv.ts, pv.v
	if pv.values > 1 || !r.pointTime(ts) || len(st.attrs) > r.maxAttrs || !r.labelsOf(st.attrs, true) {
		return false
	}
	if uint32(flags)&1 != 0 {
		v = math.Float64frombits(value.StaleNaN)
	}
	r.points++
	exemplars := st.exemplars
	if !ns.exemplars {
		exemplars = nil // a gauge's: read (pdata validates them), not stored
	}
	r.emit(ns, ns.name, ts, v, nil, exemplars)
	return !r.over
}

// promoteResource makes st.promoted of the resource's attributes (in
// wire order) as the converter's addPromotedAttributes does: those the
// settings promote, each under its label name, a later one set over an
// earlier one of the same label name, an empty value deleting it.
func (r *fastRun) promoteResource() bool {
	st, cfg := r.st, r.cfg
	st.promoted = st.promoted[:0]
	if !cfg.PromoteAllResourceAttributes && len(cfg.PromoteResourceAttributes) == 0 {
		return true
	}
	for _, a := range st.resAttrs {
		if cfg.PromoteAllResourceAttributes == slices.Contains(cfg.IgnoreResourceAttributes, string(a.name)) &&
			(cfg.PromoteAllResourceAttributes || !slices.Contains(cfg.PromoteResourceAttributes, string(a.name))) {
			continue
		}
		name, ok := st.labelName(a.name)
		if !ok {
			return false
		}
		i := slices.IndexFunc(st.promoted, func(p attr) bool { return bytes.Equal(p.name, name) })
		switch {
		case len(a.value) == 0 && i >= 0:
			st.promoted = slices.Delete(st.promoted, i, i+1)
		case len(a.value) == 0:
		case i >= 0:
			st.promoted[i].value = a.value
		default:
			st.promoted = append(st.promoted, attr{name: name, value: a.value})
		}
	}
	slices.SortFunc(st.promoted, func(a, b attr) int { return bytes.Compare(a.name, b.name) })
	return true
}

// pointValue is a point's or an exemplar's time and value as read.
type pointValue struct {
	ts     uint64
	v      float64
	values int // value fields read: more than one is the general path's
}

// take reads fixed64 field f: the time (field tsNum), a double (dblNum)
// or an int (intNum); false for another wire type.
func (p *pointValue) take(f field, tsNum, dblNum, intNum protowire.Number) bool {
	if f.typ != protowire.Fixed64Type {
		return false
	}
	switch f.num {
	case tsNum:
		p.ts = f.u
	case dblNum:
		p.values++
		p.v = math.Float64frombits(f.u)
	case intNum:
		p.values++
		p.v = float64(int64(f.u))
	}
	return true
}

// pointTime notes a point's timestamp for its resource; false for none.
func (r *fastRun) pointTime(ts uint64) bool {
	r.earliest, r.latest = min(r.earliest, ts), max(r.latest, ts)
	return ts != 0 && ts <= math.MaxInt64
}

// checkTimes reports whether no point of the resource lies more than
// maxResourceSpan before its newest (filter's refuseTimes).
func (r *fastRun) checkTimes() bool {
	span := uint64(maxResourceSpan)
	return r.latest <= span || r.earliest == math.MaxUint64 || r.earliest >= r.latest-span
}
