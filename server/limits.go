package server

import (
	"fmt"
	"time"

	"github.com/prometheus/prometheus/model/relabel"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/promhbase/promhbase/jobs/retention"
	"github.com/promhbase/promhbase/server/overrides"
)

// SetRelabel puts the metric relabeling of the writes that start from
// now on in force (ingest.Writer.SetRelabel); nil turns it off.
func (s *Server) SetRelabel(cfgs []*relabel.Config) { s.writer.SetRelabel(cfgs) }

// ApplyOverrides puts the limits of a tenant of the runtime
// configuration in force on s (a single-tenant server: those of the
// tenant its flags serve, Mimir's anonymous).
func (s *Server) ApplyOverrides(l overrides.Limits) error { return applyOverrides(s, l) }

// applyOverrides puts a tenant's limits of the runtime configuration in
// force on its server: write limits, the query sample limit, metric
// relabeling, the query guardrails, the retention.
func applyOverrides(s *Server, l overrides.Limits) error {
	if err := s.SetLimits(l.Write(), l.MaxSamplesPerQuery); err != nil {
		return err
	}
	s.SetRelabel(l.MetricRelabelConfigs)
	s.SetQueryGuards(queryGuards(l.Query))
	p, err := retentionPolicy(l.Retention)
	if err != nil {
		return err
	}
	return s.SetRetentionPolicy(p)
}

// SetRetentionPolicy puts a tenant's retention in force (its time, 0:
// the flags', and its streams): the retention cycles' from the next one,
// and the writes' (what is older than the longest time any series keeps
// is dropped at its write) from the next request.
func (s *Server) SetRetentionPolicy(p retention.Policy) error {
	if err := s.ret.SetPolicy(p); err != nil {
		return err
	}
	longest := s.retentionTime
	if p.Time > 0 {
		longest = p.Time
	}
	if longest > 0 {
		for _, st := range p.Streams {
			longest = max(longest, st.Period)
		}
	}
	s.writer.SetRetention(longest)
	return nil
}

// retentionPolicy is the retention.Policy of a tenant's retention keys.
func retentionPolicy(r overrides.RetentionLimits) (retention.Policy, error) {
	p := retention.Policy{Time: time.Duration(r.RetentionPeriod)}
	for i, st := range r.RetentionStream {
		ms, err := parser.NewParser(parser.Options{}).ParseMetricSelector(st.Selector)
		if err != nil {
			return p, fmt.Errorf("retention_stream[%d] selector %q: %w", i, st.Selector, err)
		}
		p.Streams = append(p.Streams, retention.Stream{Matchers: ms, Priority: st.Priority, Period: time.Duration(st.Period)})
	}
	return p, nil
}
