package otlp

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"strconv"

	"github.com/prometheus/common/model"
	"github.com/prometheus/otlptranslator"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/model/value"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"google.golang.org/protobuf/encoding/protowire"
)

// The fast path: a protobuf export request of the common shapes is
// translated straight from its bytes into the remote write 1.0 body that
// Prometheus's converter would have made of it, byte for byte (the same
// series, samples, order and metadata), without pdata's objects or the
// converter's label builders. The shapes it takes:
//
//   - gauges, and sums and explicit-bucket histograms of cumulative
//     temporality, each with data points;
//   - attribute values that are strings, booleans, integers or doubles;
//   - exemplars with a value (fastexemplars.go);
//   - nothing the filter would refuse (no point without a timestamp or a
//     day older than its resource's newest, no histogram whose counts do
//     not add up, no more than the attributes allowed);
//   - no two attributes of a map with one name, or with names that
//     translate to one label name (the converter joins their values and
//     warns);
//   - the default settings for what it does not implement: no resource
//     attribute promoted, no scope labels, no native histograms of
//     custom buckets.
//
// Anything else (or a body that does not decode) is left to the general
// path, pdata and Prometheus's converter, by returning false: the fast
// path never answers differently, which the differential test and fuzz
// (fast_test.go) check against the converter on generated requests.
//
// The names of metrics and labels are Prometheus's otlptranslator's,
// cached per Converter (they depend on the configuration, which the
// cache is keyed by).

// Files: fast.go reads the request, fastlabels.go makes the series,
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
	exemplars         []fastExemplar
	exAttrs, exLabels []attr
	exBuf             []byte
	// enc is st.series encoded (encodeSeries), with the spans __name__
	// and le take in it.
	enc                          []byte
	nameAt, nameEnd, leAt, leEnd int
	// Label names, as bytes.
	nameLabel, leLabel, jobLabel, instanceLabel, traceLabel, spanLabel []byte
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
	return !cfg.PromoteAllResourceAttributes && len(cfg.PromoteResourceAttributes) == 0 &&
		!cfg.PromoteScopeMetadata && !cfg.ConvertHistogramsToNHCB
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
}

// convertFast translates a protobuf body along the fast path into a
// remote write 1.0 body appended to dst[:0]; false when the request is
// not of a shape it takes (dst's bytes are then garbage).
func (st *fastState) convertFast(body []byte, cfg Config, dst []byte) (Result, bool) {
	st.reset(cfg)
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
			return Result{}, false
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

// reset readies st for a request under cfg.
func (st *fastState) reset(cfg Config) {
	k := fastConfigKey{cfg.TranslationStrategy.ShouldAddSuffixes(), !cfg.TranslationStrategy.ShouldEscape(),
		cfg.LabelNameUnderscoreSanitization, cfg.LabelNamePreserveMultipleUnderscores}
	if st.names == nil || k != st.cfgKey || len(st.names)+len(st.labels)+len(st.units) > 3*maxFastCache {
		st.cfgKey = k
		st.names = map[metricKey]string{}
		st.labels = map[string][]byte{}
		st.units = map[string]string{}
		st.nameLabel, st.leLabel = []byte(model.MetricNameLabel), []byte(model.BucketLabel)
		st.jobLabel, st.instanceLabel = []byte(model.JobLabel), []byte(model.InstanceLabel)
		st.traceLabel, st.spanLabel = []byte("trace_id"), []byte("span_id")
	}
	st.known = false // the last names point into the last request's body
	st.values = st.values[:0]
	clear(st.seen)
	clear(st.families)
	st.order = st.order[:0]
}

// field is a protobuf field as read: its number, wire type, and its value
// (u: a varint's or a fixed one's; b: a length-delimited one's).
type field struct {
	num protowire.Number
	typ protowire.Type
	u   uint64
	b   []byte
}

// nextField reads the field at the start of b and returns it with the
// bytes after it; false for bytes that are not a field (groups included).
// One-byte tags, lengths and varints are read inline.
func nextField(b []byte) (field, []byte, bool) {
	var f field
	if len(b) > 0 && b[0] >= 8 && b[0] < 0x80 {
		f.num, f.typ = protowire.Number(b[0]>>3), protowire.Type(b[0]&7)
		b = b[1:]
	} else {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return field{}, nil, false
		}
		f.num, f.typ, b = num, typ, b[n:]
	}
	n := -1
	switch f.typ {
	case protowire.BytesType:
		if len(b) > 0 && b[0] < 0x80 {
			if l := int(b[0]); l < len(b) {
				f.b = b[1 : 1+l : 1+l]
				return f, b[1+l:], true
			}
			return field{}, nil, false
		}
		f.b, n = protowire.ConsumeBytes(b)
	case protowire.Fixed64Type:
		if len(b) >= 8 {
			f.u = binary.LittleEndian.Uint64(b)
			return f, b[8:], true
		}
	case protowire.VarintType:
		if len(b) > 0 && b[0] < 0x80 {
			f.u = uint64(b[0])
			return f, b[1:], true
		}
		f.u, n = protowire.ConsumeVarint(b)
	case protowire.Fixed32Type:
		var v uint32
		v, n = protowire.ConsumeFixed32(b)
		f.u = uint64(v)
	}
	if n < 0 {
		return field{}, nil, false
	}
	return f, b[n:], true
}

// fields calls fn with each field of msg, in order; false when msg does
// not decode or fn returns false. (The per-point readers loop over
// nextField themselves: a closure call a field costs there.)
func fields(msg []byte, fn func(field) bool) bool {
	for len(msg) > 0 {
		f, rest, ok := nextField(msg)
		if !ok || !fn(f) {
			return false
		}
		msg = rest
	}
	return true
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
	if st.resAttrs, ok = r.readAttrs(st.resAttrs[:0], msg, 1); !ok {
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

// readAttrs appends the attributes (KeyValue fields numbered num) of msg
// to dst in wire order; false for a value the fast path does not take or
// more than the attributes allowed.
func (r *fastRun) readAttrs(dst []attr, msg []byte, num protowire.Number) ([]attr, bool) {
	start := len(dst)
	tag := byte(num)<<3 | byte(protowire.BytesType)
	for b := msg; len(b) > 0; {
		if len(b) > 2 && b[0] == tag && b[1] < 0x80 && int(b[1]) < len(b)-1 {
			if a, ok := plainKeyValue(b[2 : 2+b[1]]); ok {
				dst = append(dst, a)
				b = b[2+int(b[1]):]
				continue
			}
		}
		f, rest, ok := nextField(b)
		if !ok {
			return dst, false
		}
		b = rest
		if f.num != num {
			continue
		}
		a, ok := r.keyValue(f.b)
		if !ok || f.typ != protowire.BytesType {
			return dst, false
		}
		dst = append(dst, a)
	}
	return dst, len(dst)-start <= r.maxAttrs
}

// plainKeyValue reads the common KeyValue at once: a key and a string
// value, each one field with a one-byte length, in either order (pdata
// writes the value first):
//
//	0x0a len key ‖ 0x12 len AnyValue{0x0a len string}, or the two swapped
//
// false for any other (keyValue's to read).
func plainKeyValue(kv []byte) (attr, bool) {
	var a attr
	for n := 0; n < 2; n++ {
		if len(kv) < 2 || kv[1] >= 0x80 || 2+int(kv[1]) > len(kv) {
			return attr{}, false
		}
		v, tag := kv[2:2+int(kv[1]):2+int(kv[1])], kv[0]
		kv = kv[2+len(v):]
		switch {
		case tag == 0x0a && a.name == nil && len(v) > 0:
			a.name = v
		case tag == 0x12 && a.value == nil && len(v) >= 2 && v[0] == 0x0a && 2+int(v[1]) == len(v):
			a.value = v[2:]
		default:
			return attr{}, false
		}
	}
	return a, len(kv) == 0
}

// keyValue reads a KeyValue (key 1, value 2), its value as pcommon's
// Value.AsString gives it.
func (r *fastRun) keyValue(msg []byte) (attr, bool) {
	var a attr
	keys, values := 0, 0
	for len(msg) > 0 {
		f, rest, ok := nextField(msg)
		if !ok {
			return a, false
		}
		msg = rest
		switch f.num {
		case 1:
			keys++
			a.name = f.b
			if f.typ != protowire.BytesType {
				return a, false
			}
		case 2:
			values++
			if a.value, ok = r.anyValue(f.b); !ok || f.typ != protowire.BytesType {
				return a, false
			}
		case 3: // key_strindex (profiles' dictionary): the general path's
			return a, false
		}
	}
	return a, keys <= 1 && values <= 1 && len(a.name) > 0
}

// anyValue reads an AnyValue of a string (1), a bool (2), an int (3) or
// a double (4) as its string; none is "".
func (r *fastRun) anyValue(msg []byte) ([]byte, bool) {
	st := r.st
	if len(msg) == 0 {
		return nil, true
	}
	f, rest, ok := nextField(msg)
	if !ok || len(rest) > 0 {
		return nil, false // not one field: the general path's
	}
	n := len(st.values)
	switch {
	case f.num == 1 && f.typ == protowire.BytesType:
		return f.b, true
	case f.num == 2 && f.typ == protowire.VarintType:
		st.values = strconv.AppendBool(st.values, f.u != 0)
	case f.num == 3 && f.typ == protowire.VarintType:
		st.values = strconv.AppendInt(st.values, int64(f.u), 10)
	case f.num == 4 && f.typ == protowire.Fixed64Type:
		st.values = append(st.values, pcommon.NewValueDouble(math.Float64frombits(f.u)).AsString()...)
	default:
		return nil, false
	}
	return st.values[n:], true
}

// scope translates a ScopeMetrics: scope 1 (not translated: no scope
// labels), metrics 2, schema_url 3.
func (r *fastRun) scope(msg []byte) bool {
	return fields(msg, func(f field) bool {
		switch f.num {
		case 1:
			if f.typ != protowire.BytesType {
				return false
			}
			return fields(f.b, func(g field) bool {
				switch g.num {
				case 1, 2: // name, version
					return g.typ == protowire.BytesType
				case 4: // dropped_attributes_count
					return g.typ == protowire.VarintType
				}
				// Attributes (3) are the general path's, which validates
				// and counts them.
				return g.num != 3
			})
		case 2:
			return f.typ == protowire.BytesType && r.metric(f.b)
		case 3: // schema_url
			return f.typ == protowire.BytesType
		}
		return true
	})
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
		case 5, 7, 9:
			if m.kind != 0 || f.typ != protowire.BytesType {
				return false
			}
			m.kind, m.data = f.num, f.b
		case 10, 11, 12:
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
	if typ == otlptranslator.MetricTypeHistogram {
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

// histogram translates a Histogram: data_points 1,
// aggregation_temporality 2.
func (r *fastRun) histogram(m metricData) bool {
	temporality := uint64(0)
	ok := fields(m.data, func(f field) bool {
		if f.num == 2 {
			temporality = f.u
			return f.typ == protowire.VarintType
		}
		return true
	})
	if !ok || temporality != cumulative {
		return false
	}
	ns, ok := r.namesOf(m, otlptranslator.MetricTypeHistogram, model.MetricTypeHistogram)
	if !ok {
		return false
	}
	n := 0
	ok = fields(m.data, func(f field) bool {
		if f.num != 1 {
			return true
		}
		n++
		return f.typ == protowire.BytesType && r.histogramPoint(f.b, &ns)
	})
	return ok && n > 0
}

// histogramPoint is a HistogramDataPoint's fields: start_time_unix_nano
// 2, time_unix_nano 3, count 4, sum 5, bucket_counts 6, explicit_bounds
// 7, exemplars 8, attributes 9, flags 10, min 11, max 12.
type histogramPoint struct {
	ts, count, flags uint64
	sum              float64
	hasSum           bool
	counts, bounds   []byte // packed fixed64s
	nCounts, nBounds int
}

// readHistogramPoint reads a point's fields but its attributes into p
// (its exemplars into st.exemplars); false for a field the fast path does
// not take (unpacked buckets, an exemplar it refuses).
func (r *fastRun) readHistogramPoint(p *histogramPoint, msg []byte) bool {
	st := r.st
	st.exemplars, st.exBuf = st.exemplars[:0], st.exBuf[:0]
	for b := msg; len(b) > 0; {
		f, rest, ok := nextField(b)
		if !ok {
			return false
		}
		b = rest
		switch f.num {
		case 2, 3, 4, 5, 11, 12:
			if f.typ != protowire.Fixed64Type {
				return false
			}
			switch f.num {
			case 3:
				p.ts = f.u
			case 4:
				p.count = f.u
			case 5:
				p.sum, p.hasSum = math.Float64frombits(f.u), true
			}
		case 6, 7:
			if f.typ != protowire.BytesType || len(f.b)%8 != 0 || (f.num == 6 && p.counts != nil) || (f.num == 7 && p.bounds != nil) {
				return false // unpacked, or packed in pieces: the general path's
			}
			if f.num == 6 {
				p.counts, p.nCounts = f.b, len(f.b)/8
			} else {
				p.bounds, p.nBounds = f.b, len(f.b)/8
			}
		case 8:
			if f.typ != protowire.BytesType || !r.readExemplar(f.b) {
				return false
			}
		case 10:
			p.flags = f.u
			if f.typ != protowire.VarintType {
				return false
			}
		}
	}
	return true
}

// accepted reports whether the filter keeps p (refuseHistogram).
func (p *histogramPoint) accepted() bool {
	if uint32(p.flags)&1 != 0 || p.nCounts == 0 {
		return true
	}
	if p.nCounts != p.nBounds+1 {
		return false
	}
	var total uint64
	for i := range p.nCounts {
		total += binary.LittleEndian.Uint64(p.counts[8*i:])
	}
	return total == p.count
}

// histogramPoint translates a HistogramDataPoint into its _sum, _count
// and _bucket samples, as the converter orders them.
func (r *fastRun) histogramPoint(msg []byte, ns *metricNames) bool {
	var p histogramPoint
	if !r.readHistogramPoint(&p, msg) || !r.pointTime(p.ts) || !p.accepted() {
		return false
	}
	st := r.st
	var ok bool
	if st.attrs, ok = r.readAttrs(st.attrs[:0], msg, 9); !ok || !r.labelsOf(st.attrs, true) {
		return false
	}
	r.points++
	stale := uint32(p.flags)&1 != 0
	val := func(v float64) float64 {
		if stale {
			return math.Float64frombits(value.StaleNaN)
		}
		return v
	}
	if p.hasSum {
		r.emit(ns, ns.sum, p.ts, val(p.sum), nil, nil)
	}
	r.emit(ns, ns.count, p.ts, val(float64(p.count)), nil, nil)
	// Each bucket takes the exemplars from the next one on while their
	// values are within its bound (the converter expects them ascending),
	// +Inf the rest.
	var cum uint64
	ex := st.exemplars
	for i := range min(p.nBounds, p.nCounts) {
		cum += binary.LittleEndian.Uint64(p.counts[8*i:])
		bound := math.Float64frombits(binary.LittleEndian.Uint64(p.bounds[8*i:]))
		k := 0
		for k < len(ex) && !(ex[k].value > bound) {
			k++
		}
		n := len(st.values)
		st.values = strconv.AppendFloat(st.values, bound, 'f', -1, 64)
		r.emit(ns, ns.bucket, p.ts, val(float64(cum)), st.values[n:], ex[:k])
		ex = ex[k:]
	}
	n := len(st.values)
	st.values = append(st.values, "+Inf"...)
	r.emit(ns, ns.bucket, p.ts, val(float64(p.count)), st.values[n:], ex)
	return true
}
