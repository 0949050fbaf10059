package rollup

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"github.com/promhbase/promhbase/store"
)

// The build lease serializes the builds of every process sharing a rollup
// configuration's tables (serve replicas, `promhbase rollup`, deletions):
// one cell of the progress row,
//
//	promhbase.lease   u64 big-endian expiry (Unix ms), then the holder's
//	                  token: "host:pid:" and 16 random hex digits
//
// taken and handed back with check-and-puts. A build reads the data as it
// is when the build starts; with builds one at a time, the last build of an
// hour to write its cells is also the last to have read the hour, so a
// build that read the hour before a late write can never write its cells
// after the rebuild the late write caused (the rebuild waits for it). The
// lease expires LeaseTTL after it was taken or last renewed: a process
// killed while building holds the others back that long at most.
const progressLease = "promhbase.lease"

// Lease defaults.
const (
	// DefaultLeaseTTL is how long a build lease lasts unless renewed.
	DefaultLeaseTTL = time.Minute
	leaseMinWait    = 50 * time.Millisecond
	leaseMaxWait    = 2 * time.Second
)

// leaseStore is the part of store.Store the lease uses.
type leaseStore interface {
	Get(ctx context.Context, table string, row []byte, family string) (store.Row, error)
	CheckAndPut(ctx context.Context, table string, put store.Put, family, qualifier string, expected []byte) (bool, error)
}

// lease is one holder's view of a table's build lease.
type lease struct {
	st    leaseStore
	table string
	ttl   time.Duration
	token []byte
	now   func() time.Time
	held  []byte // the cell's value as this holder last wrote it; nil: not held
}

// newLease returns a lease of table's progress row with a fresh token.
func newLease(st leaseStore, table string, ttl time.Duration, now func() time.Time) *lease {
	host, _ := os.Hostname()
	var r [8]byte
	_, _ = rand.Read(r[:])
	token := fmt.Appendf(nil, "%s:%d:%s", host, os.Getpid(), hex.EncodeToString(r[:]))
	return &lease{st: st, table: table, ttl: ttl, token: token, now: now}
}

// read returns the lease cell's value (nil: none).
func (l *lease) read(ctx context.Context) ([]byte, error) {
	row, err := l.st.Get(ctx, l.table, progressRow, Family)
	if err != nil {
		return nil, fmt.Errorf("rollup: read the build lease in %s: %w", l.table, err)
	}
	for _, c := range row.Cells {
		if string(c.Qualifier) == progressLease {
			return c.Value, nil
		}
	}
	return nil, nil
}

// leaseExpiry returns the expiry (Unix ms) of a lease cell's value; a
// value too short to hold one counts as expired.
func leaseExpiry(v []byte) int64 {
	if len(v) < 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v))
}

// swap replaces the lease cell old (nil: absent) with an expiry of exp
// and this holder's token; ok false: another process changed it first.
func (l *lease) swap(ctx context.Context, old []byte, exp int64) (bool, error) {
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(l.token)), uint64(exp))
	v = append(v, l.token...)
	put := store.Put{Row: progressRow, Cells: []store.Cell{{Family: []byte(Family), Qualifier: []byte(progressLease), Value: v}}}
	ok, err := l.st.CheckAndPut(ctx, l.table, put, Family, progressLease, old)
	if err != nil {
		return false, fmt.Errorf("rollup: write the build lease in %s: %w", l.table, err)
	}
	if ok {
		l.held = v
	}
	return ok, nil
}

// tryAcquire takes the lease when nobody holds it or its holder's expired.
func (l *lease) tryAcquire(ctx context.Context) (bool, error) {
	old, err := l.read(ctx)
	if err != nil {
		return false, err
	}
	now := l.now().UnixMilli()
	if old != nil && leaseExpiry(old) > now && !bytes.Equal(old[8:], l.token) {
		return false, nil
	}
	return l.swap(ctx, old, now+l.ttl.Milliseconds())
}

// acquire waits until it holds the lease or ctx ends, and returns how long
// it waited for another holder (0 when the lease was free).
func (l *lease) acquire(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	wait := leaseMinWait
	for try := 0; ; try++ {
		ok, err := l.tryAcquire(ctx)
		if err != nil {
			return time.Since(start), err
		}
		if ok && try == 0 {
			return 0, nil
		}
		if ok {
			return time.Since(start), nil
		}
		select {
		case <-ctx.Done():
			return time.Since(start), fmt.Errorf("rollup: wait for the build lease in %s: %w", l.table, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, leaseMaxWait)
	}
}

// renew extends the lease this holder holds; an error means it was lost
// (another process took it after it expired) or cannot be told.
func (l *lease) renew(ctx context.Context) error {
	if l.held == nil {
		return fmt.Errorf("rollup: renew the build lease in %s: not held", l.table)
	}
	ok, err := l.swap(ctx, l.held, l.now().UnixMilli()+l.ttl.Milliseconds())
	if err != nil {
		return err
	}
	if !ok {
		l.held = nil
		return fmt.Errorf("rollup: the build lease in %s was lost (it expired and another process took it)", l.table)
	}
	return nil
}

// release hands the lease back (expiry 0) unless another process took it
// meanwhile.
func (l *lease) release(ctx context.Context) error {
	if l.held == nil {
		return nil
	}
	held := l.held
	l.held = nil
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(l.token)), 0)
	v = append(v, l.token...)
	put := store.Put{Row: progressRow, Cells: []store.Cell{{Family: []byte(Family), Qualifier: []byte(progressLease), Value: v}}}
	if _, err := l.st.CheckAndPut(ctx, l.table, put, Family, progressLease, held); err != nil {
		return fmt.Errorf("rollup: release the build lease in %s: %w", l.table, err)
	}
	return nil
}

// holding runs f with the lease held, renewed every third of its TTL; f's
// context is canceled when a renewal fails, so that a build that lost the
// lease stops writing. It returns how long it waited for the lease.
func (l *lease) holding(ctx context.Context, f func(ctx context.Context) error) (time.Duration, error) {
	waited, err := l.acquire(ctx)
	if err != nil {
		return waited, err
	}
	fctx, cancel := context.WithCancelCause(ctx)
	stop := make(chan struct{})
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		t := time.NewTicker(l.ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if err := l.renew(fctx); err != nil {
					cancel(err)
					return
				}
			}
		}
	}()
	err = f(fctx)
	close(stop)
	<-renewed
	if cause := context.Cause(fctx); err != nil && cause != nil && ctx.Err() == nil {
		err = fmt.Errorf("%w (%w)", err, cause)
	}
	cancel(nil)
	// Hand back even when ctx ended: the others need not wait for expiry.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer rcancel()
	if rerr := l.release(rctx); rerr != nil && err == nil {
		err = rerr
	}
	return waited, err
}
