package server

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/adapter"
	"github.com/promhbase/promhbase/store"
)

// readOnly tells /-/ready (aopts.ReadOnly) and promhbase_storage_read_only
// whether st refuses writes by itself, when st can say
// (store.ReadOnlyReporter: the embedded store's disk guard).
func readOnly(st store.Store, aopts *adapter.Options, reg prometheus.Registerer) error {
	ro, ok := store.As[store.ReadOnlyReporter](st)
	if !ok {
		return nil
	}
	aopts.ReadOnly = ro.ReadOnly
	if err := reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "promhbase_storage_read_only",
		Help: "1 while the store refuses writes by itself (the embedded store below --storage.min-free-disk-space-bytes, or after a write found the disk full), 0 otherwise; /-/ready's body says why.",
	}, func() float64 {
		if r, _ := ro.ReadOnly(); r {
			return 1
		}
		return 0
	})); err != nil {
		return fmt.Errorf("register promhbase_storage_read_only: %w", err)
	}
	return nil
}
