// Package relabelmemo applies Prometheus relabel configurations (its
// relabel package) to the label sets of new series, each rule's outcome
// remembered by what the rule reads, so that a rule runs once per
// distinct input rather than once per series: the instances, jobs and
// environments of a write repeat across its series.
//
// What a rule reads and does, by action (Prometheus's relabel.relabel):
//
//   - keep, drop, keepequal, dropequal, replace, lowercase, uppercase,
//     hashmod read the values of their source labels joined by their
//     separator (and keepequal and dropequal the target label's value);
//     they drop the series, or set or delete one label. Their outcome is
//     remembered by that input; a replace whose target label name is a
//     template is run every time.
//   - labelmap, labeldrop, labelkeep read the label names; they delete
//     labels, or copy values to new names. Their outcome is remembered by
//     the names.
//
// An outcome is found by running the rule itself (relabel.ProcessBuilder)
// over just what it reads, and taking what it changed, so the results
// are the package's own; the tests compare them with
// relabel.ProcessBuilder over random series.
package relabelmemo

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"
	"go.yaml.in/yaml/v3"
)

// maxOutcomes bounds each rule's remembered outcomes (a few hundred
// KiB a rule at most); past it they are forgotten at once and remembered
// afresh: a rule whose input never repeats (a source label of a series'
// own) runs every time, as without this package.
const maxOutcomes = 1 << 12

// Rules are relabel configurations, in order. Their methods are safe
// for concurrent use.
type Rules struct {
	cfgs  []*relabel.Config
	rules []*rule
}

// New returns the Rules of cfgs (validated).
func New(cfgs []*relabel.Config) *Rules {
	r := &Rules{cfgs: cfgs, rules: make([]*rule, len(cfgs))}
	for i, c := range cfgs {
		r.rules[i] = newRule(c)
	}
	return r
}

// Configs returns the configurations of r.
func (r *Rules) Configs() []*relabel.Config { return r.cfgs }

// Process applies the rules to lb, as relabel.ProcessBuilder does; keep
// is false when a rule dropped the series. scratch is reused for the
// inputs' keys (its contents are undefined after).
func (r *Rules) Process(lb *labels.Builder, scratch *[]byte) (keep bool) {
	for _, ru := range r.rules {
		if !ru.apply(lb, scratch) {
			return false
		}
	}
	return true
}

// kind is what a rule reads.
type kind int

const (
	byValues kind = iota // its source labels' values (and its target's)
	byNames              // the label names
	direct               // run every time
)

// rule is one configuration and its remembered outcomes.
type rule struct {
	cfg  *relabel.Config
	kind kind
	// readsTarget: keepequal and dropequal compare with the target
	// label's value, which is part of their input.
	readsTarget bool

	mu       sync.RWMutex
	outcomes map[string]outcome
}

// outcome is what a rule did to one input.
type outcome struct {
	drop bool
	// sets are the labels set (a value) or deleted (del), in order.
	sets []change
}

// change is one label set (from another label's value, for labelmap)
// or deleted.
type change struct {
	name, value string
	from        string // labelmap: the name whose value is copied
	del         bool
}

func newRule(c *relabel.Config) *rule {
	ru := &rule{cfg: c, outcomes: map[string]outcome{}}
	switch c.Action {
	case relabel.Keep, relabel.Drop, relabel.Lowercase, relabel.Uppercase, relabel.HashMod:
		ru.kind = byValues
	case relabel.KeepEqual, relabel.DropEqual:
		ru.kind, ru.readsTarget = byValues, true
	case relabel.Replace:
		ru.kind = byValues
		if strings.Contains(c.TargetLabel, "$") {
			ru.kind = direct
		}
	case relabel.LabelMap, relabel.LabelDrop, relabel.LabelKeep:
		ru.kind = byNames
	default:
		ru.kind = direct
	}
	return ru
}

// apply applies the rule to lb; false when it drops the series.
func (ru *rule) apply(lb *labels.Builder, scratch *[]byte) bool {
	if ru.kind == direct {
		return relabel.ProcessBuilder(lb, ru.cfg)
	}
	key := ru.key(lb, (*scratch)[:0])
	*scratch = key
	ru.mu.RLock()
	o, ok := ru.outcomes[string(key)]
	ru.mu.RUnlock()
	if !ok {
		o = ru.learn(lb)
		ru.mu.Lock()
		if len(ru.outcomes) >= maxOutcomes {
			clear(ru.outcomes)
		}
		ru.outcomes[string(key)] = o
		ru.mu.Unlock()
	}
	return o.applyTo(lb)
}

// key appends the rule's input in lb to dst: the source values joined by
// the separator (and, behind a 0xff byte that no UTF-8 text holds, the
// target's value), or every label name, each ended by 0xff.
func (ru *rule) key(lb *labels.Builder, dst []byte) []byte {
	if ru.kind == byNames {
		lb.Range(func(l labels.Label) { dst = append(append(dst, l.Name...), 0xff) })
		return dst
	}
	for i, n := range ru.cfg.SourceLabels {
		if i > 0 {
			dst = append(dst, ru.cfg.Separator...)
		}
		dst = append(dst, lb.Get(string(n))...)
	}
	if ru.readsTarget {
		dst = append(append(dst, 0xff), lb.Get(ru.cfg.TargetLabel)...)
	}
	return dst
}

// sentinel marks the target label in learn's copy: no label value can
// hold the 0xff byte of invalid UTF-8... except one a sender made, which
// the rule then sees as it is.
const sentinel = "\xff\x00relabelmemo"

// learn runs the rule over a copy of what it reads in lb and returns
// what it did.
func (ru *rule) learn(lb *labels.Builder) outcome {
	in := map[string]string{}
	switch ru.kind {
	case byNames:
		lb.Range(func(l labels.Label) { in[l.Name] = l.Value })
	default:
		for _, n := range ru.cfg.SourceLabels {
			in[string(n)] = lb.Get(string(n))
		}
		if t := ru.cfg.TargetLabel; t != "" {
			if _, src := in[t]; !src {
				// What the rule does to its target shows on the copy's,
				// whatever the series holds.
				in[t] = sentinel
				if ru.readsTarget {
					in[t] = lb.Get(t)
				}
			}
		}
	}
	if ru.cfg.Action == relabel.LabelMap {
		return learnMap(ru.cfg, in)
	}
	// The copy's labels in order, as the series' own are.
	cp := labels.NewBuilder(labels.FromMap(in))
	if !relabel.ProcessBuilder(cp, ru.cfg) {
		return outcome{drop: true}
	}
	// What the rule did: labels new or changed, and labels gone.
	var o outcome
	cp.Range(func(l labels.Label) {
		if old, had := in[l.Name]; !had || old != l.Value {
			o.sets = append(o.sets, change{name: l.Name, value: l.Value})
		}
	})
	for _, n := range sortedNames(in) {
		if in[n] != "" && cp.Get(n) == "" {
			o.sets = append(o.sets, change{name: n, del: true})
		}
	}
	return o
}

// learnMap returns what a labelmap does to labels of the names of in,
// whatever their values: each name the regex matches, in label order,
// copied to its replacement (a later copy to the same name wins, as in
// the rule).
func learnMap(cfg *relabel.Config, in map[string]string) outcome {
	var o outcome
	for _, n := range sortedNames(in) {
		if cfg.Regex.MatchString(n) {
			o.sets = append(o.sets, change{name: cfg.Regex.ReplaceAllString(n, cfg.Replacement), from: n})
		}
	}
	return o
}

// sortedNames returns the keys of in, sorted.
func sortedNames(in map[string]string) []string {
	return slices.Sorted(maps.Keys(in))
}

// applyTo does o to lb; false when o drops the series.
func (o outcome) applyTo(lb *labels.Builder) bool {
	if o.drop {
		return false
	}
	// Copies read the values before any change, as the rule reads them.
	var from [8]string
	vals := from[:0]
	for _, c := range o.sets {
		if c.from != "" {
			vals = append(vals, lb.Get(c.from))
		}
	}
	j := 0
	for _, c := range o.sets {
		switch {
		case c.del:
			lb.Del(c.name)
		case c.from != "":
			lb.Set(c.name, vals[j])
			j++
		default:
			lb.Set(c.name, c.value)
		}
	}
	return true
}

// ParseConfigs parses a YAML list of relabel configurations and
// validates each (label names as UTF-8, Prometheus 3's default).
func ParseConfigs(y []byte) ([]*relabel.Config, error) {
	var cfgs []*relabel.Config
	if err := yaml.Unmarshal(y, &cfgs); err != nil {
		return nil, fmt.Errorf("relabel configurations: %w", err)
	}
	for i, c := range cfgs {
		if c == nil {
			return nil, fmt.Errorf("relabel configuration %d is empty", i)
		}
		if err := c.Validate(model.UTF8Validation); err != nil {
			return nil, fmt.Errorf("relabel configuration %d: %w", i, err)
		}
	}
	return cfgs, nil
}
