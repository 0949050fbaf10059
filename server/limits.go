package server

import (
	"github.com/prometheus/prometheus/model/relabel"

	"github.com/promhbase/promhbase/server/overrides"
)

// SetRelabel puts the metric relabeling of the writes that start from
// now on in force (ingest.Writer.SetRelabel); nil turns it off.
func (s *Server) SetRelabel(cfgs []*relabel.Config) { s.writer.SetRelabel(cfgs) }

// applyOverrides puts a tenant's limits of the runtime configuration in
// force on its server: write limits, the query sample limit, metric
// relabeling.
func applyOverrides(s *Server, l overrides.Limits) error {
	if err := s.SetLimits(l.Write(), l.MaxSamplesPerQuery); err != nil {
		return err
	}
	s.SetRelabel(l.MetricRelabelConfigs)
	return nil
}
