// Package mixin holds promhbase's monitoring mixin, as Prometheus's,
// Mimir's and Thanos's mixins hold theirs: alerting rules (alerts.yaml),
// each with a runbook in docs/runbooks.md; recording rules (rules.yaml)
// that the alerts and the dashboard read; a Grafana dashboard of
// promhbase itself (dashboard.json); and promtool's unit tests of the
// alerts (alerts_test.yaml). The files are what an operator loads: into
// the Prometheus that scrapes promhbase (rule_files), into promhbase's
// own ruler (docs/ruler.md), into Grafana (dashboard import). The
// package embeds them so that tools can ship them; its tests hold them to
// Prometheus's parser, the runbooks, promtool's rule evaluation and the
// dashboard's conventions (docs/operations.md#alerts-and-the-dashboard).
package mixin

import _ "embed"

// Alerts, Rules and Dashboard are the mixin's files as shipped.
var (
	//go:embed alerts.yaml
	Alerts []byte
	//go:embed rules.yaml
	Rules []byte
	//go:embed dashboard.json
	Dashboard []byte
)
