package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/ingest"
	"github.com/promhbase/promhbase/test/testkit/teststack"
)

// fakeHA elects the first replica it is asked about in each cluster; it
// refuses cluster "refused".
type fakeHA struct {
	mu      sync.Mutex
	elected map[string]string
	deduped map[string]int
}

var (
	errNotElected = errors.New("replicas did not match")
	errRefused    = errors.New("too many clusters")
)

func (f *fakeHA) Decide(_ context.Context, tenant, cluster, replica string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cluster == "refused" {
		return false, fmt.Errorf("tenant %s: %w", tenant, errRefused)
	}
	if e, ok := f.elected[cluster]; ok && e != replica {
		return true, errNotElected
	}
	f.elected[cluster] = replica
	return false, nil
}

func (f *fakeHA) Deduped(_, cluster string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deduped[cluster] += n
}

// TestHAPairs: the first series of a request decides it: the elected
// replica's series are stored without the replica label; the other
// replica's request stores nothing, answers the tracker's error and
// counts its samples as deduplicated; requests whose first series lacks
// either label are stored as they are; a refused decision fails the
// request.
func TestHAPairs(t *testing.T) {
	ha := &fakeHA{elected: map[string]string{}, deduped: map[string]int{}}
	s := teststack.New(t, teststack.Options{Ingest: func(o *ingest.Options) {
		o.HA = ingest.HA{Tracker: ha, ClusterLabel: "cluster", ReplicaLabel: "__replica__", Tenant: "t1"}
	}})
	for _, tc := range []struct {
		name    string
		series  []prompb.TimeSeries
		err     error // the error wanted (errors.Is), or none
		deduped int
	}{
		{"elected", []prompb.TimeSeries{at(1, "m", "__replica__", "a", "cluster", "c"), at(2, "n", "__replica__", "a", "cluster", "c")}, nil, 0},
		{"not elected", []prompb.TimeSeries{at(3, "m", "__replica__", "b", "cluster", "c"), at(4, "n", "__replica__", "b", "cluster", "c")}, errNotElected, 2},
		{"elected again", []prompb.TimeSeries{at(5, "m", "__replica__", "a", "cluster", "c")}, nil, 0},
		{"replica label only", []prompb.TimeSeries{at(6, "m", "__replica__", "b")}, nil, 0},
		{"cluster label only", []prompb.TimeSeries{at(7, "m", "cluster", "d")}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := s.TryWrite(tc.series...)
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("write: %v, want %v", err, tc.err)
			}
			if res.Deduped != tc.deduped {
				t.Errorf("deduped %d, want %d", res.Deduped, tc.deduped)
			}
		})
	}
	if _, err := s.TryWrite(at(8, "m", "__replica__", "a", "cluster", "refused")); !errors.Is(err, errRefused) || err.Error() != "tenant t1: too many clusters" {
		t.Errorf("refused decision: %v", err)
	}
	if ha.deduped["c"] != 2 {
		t.Errorf("tracker told of %v deduplicated, want 2 of cluster c", ha.deduped)
	}
	want := "{__name__=\"m\", __replica__=\"b\"} 6\n{__name__=\"m\", cluster=\"c\"} 1 5\n{__name__=\"m\", cluster=\"d\"} 7\n{__name__=\"n\", cluster=\"c\"} 2\n"
	if got := stored(s); got != want {
		t.Errorf("stored:\n%swant\n%s", got, want)
	}
}
