package relabelmemo

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"
)

// configSets are relabel configurations of every action, edge cases
// among them: a replace to nothing (a delete), a target named by a
// template, keepequal and dropequal, a labelmap whose copies collide,
// rules that read labels other rules set.
var configSets = map[string]string{
	"every action": `
- {source_labels: [__name__], regex: 'drop_.*', action: drop}
- {source_labels: [job], regex: 'j[0-2]', action: keep}
- {regex: 'tmp_.*', action: labeldrop}
- {source_labels: [env], regex: 'prod', target_label: env, replacement: production}
- {source_labels: [env, job], separator: '/', regex: '(.*)/(.*)', target_label: envjob, replacement: '$1-$2'}
- {source_labels: [instance], modulus: 5, target_label: shard, action: hashmod}
- {source_labels: [job], target_label: upper_job, action: uppercase}
- {source_labels: [upper_job], target_label: lower_job, action: lowercase}
- {source_labels: [zone], regex: 'z1', target_label: team, replacement: ''}
- {source_labels: [team], target_label: owner}
- {regex: 'k_(.*)', action: labelmap, replacement: 'mapped_$1'}
- {regex: '(a|b)_x', action: labelmap, replacement: 'collide'}
- {source_labels: [dc], regex: '(.*)', target_label: 'dc_$1', replacement: yes}
- {source_labels: [zone], target_label: team, action: dropequal}
- {regex: '__name__|job|env|instance|shard|envjob|upper_job|lower_job|team|owner|mapped_.*|collide|dc|dc_.*|zone|k_.*|a_x|b_x', action: labelkeep}
`,
	"keepequal": `
- {source_labels: [job], regex: '(j[01])', target_label: job2, replacement: '$1'}
- {source_labels: [job], target_label: job2, action: keepequal}
`,
	"drops and keeps only": `
- {source_labels: [__name__, job], separator: ';', regex: 'm1;j.*', action: drop}
- {source_labels: [instance], regex: '.*:9[0-4].*', action: keep}
`,
}

// names and values of the random series.
var (
	names  = []string{"job", "env", "instance", "zone", "team", "dc", "tmp_a", "tmp_b", "k_one", "k_two", "a_x", "b_x", "shard", "other"}
	values = []string{"j0", "j1", "j3", "prod", "dev", "h:9090", "h:9100", "z1", "z2", "x", "", "0", "1", "2", "4", "PROD", "j2"}
)

// randomSeries returns a random label set: a metric name and some of
// names with random values.
func randomSeries(r *rand.Rand) labels.Labels {
	b := labels.NewBuilder(labels.EmptyLabels())
	b.Set("__name__", fmt.Sprintf("%s_%d", []string{"m", "drop", "keep"}[r.IntN(3)], r.IntN(3)))
	for _, n := range names {
		if r.IntN(3) > 0 {
			b.Set(n, values[r.IntN(len(values))])
		}
	}
	return b.Labels()
}

// TestSameAsRelabel: Rules.Process leaves every series as Prometheus's
// relabel.ProcessBuilder leaves it, kept or dropped, over 20 000 random
// series of a few hundred distinct inputs a rule (the outcomes
// remembered are used many times), for each configuration.
func TestSameAsRelabel(t *testing.T) {
	for name, y := range configSets {
		t.Run(name, func(t *testing.T) {
			cfgs := parse(t, y)
			rules := New(cfgs)
			r := rand.New(rand.NewPCG(1, uint64(len(y))))
			var scratch []byte
			kept := 0
			for i := range 20000 {
				s := randomSeries(r)
				want := labels.NewBuilder(s)
				wantKeep := relabel.ProcessBuilder(want, cfgs...)
				got := labels.NewBuilder(s)
				gotKeep := rules.Process(got, &scratch)
				if gotKeep != wantKeep {
					t.Fatalf("series %d %s: kept %v, relabel: %v", i, s, gotKeep, wantKeep)
				}
				if !wantKeep {
					continue
				}
				kept++
				if g, w := got.Labels(), want.Labels(); !labels.Equal(g, w) {
					t.Fatalf("series %d %s:\n got %s\nwant %s", i, s, g, w)
				}
			}
			if kept == 0 || kept == 20000 {
				t.Errorf("%d of 20000 kept: the configuration tests nothing", kept)
			}
		})
	}
}

func parse(t testing.TB, y string) []*relabel.Config {
	t.Helper()
	cfgs, err := ParseConfigs([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return cfgs
}

// TestOutcomesBounded: a rule whose input never repeats remembers at
// most maxOutcomes outcomes, and its results stay Prometheus's.
func TestOutcomesBounded(t *testing.T) {
	cfgs := parse(t, "- {source_labels: [id], modulus: 7, target_label: shard, action: hashmod}\n")
	rules := New(cfgs)
	var scratch []byte
	for i := range 3 * maxOutcomes {
		s := labels.FromStrings("__name__", "m", "id", fmt.Sprint(i))
		want, got := labels.NewBuilder(s), labels.NewBuilder(s)
		relabel.ProcessBuilder(want, cfgs...)
		rules.Process(got, &scratch)
		if !labels.Equal(got.Labels(), want.Labels()) {
			t.Fatalf("series %d: got %s, want %s", i, got.Labels(), want.Labels())
		}
	}
	if n := len(rules.rules[0].outcomes); n == 0 || n > maxOutcomes {
		t.Errorf("%d outcomes remembered, want 1..%d", n, maxOutcomes)
	}
}
