package ingest

import (
	"context"
	"errors"

	"github.com/promhbase/promhbase/mapping/wire"
)

// haDrop is a request dropped as an HA pair's: the error that says so and
// the cluster.
type haDrop struct {
	err     error
	cluster string
}

// errHADrop stops the parse of a dropped request.
var errHADrop = errors.New("dropped HA write")

// decideHA decides an HA pair's write from its first series s: the label
// to drop from every series when it is stored (nil: no HA write, stored as
// it is), or the drop (parse stops with errHADrop).
func (w *Writer) decideHA(ctx context.Context, s *wire.Series) (replicaLabel []byte, drop haDrop, err error) {
	if s.Invalid != "" || s.Key == nil {
		return nil, drop, nil
	}
	lbls, err := s.Labels()
	if err != nil {
		return nil, drop, err
	}
	var cluster, replica []byte
	for _, l := range lbls {
		switch string(l.Name) {
		case w.ha.ClusterLabel:
			cluster = l.Value
		case w.ha.ReplicaLabel:
			replica = l.Value
		}
	}
	if len(cluster) == 0 || len(replica) == 0 {
		return nil, drop, nil
	}
	dropped, err := w.ha.Tracker.Decide(ctx, w.ha.Tenant, string(cluster), string(replica))
	switch {
	case dropped:
		return nil, haDrop{err: err, cluster: string(cluster)}, errHADrop
	case err != nil:
		return nil, drop, err
	}
	return w.replica, drop, nil
}
