package ruler

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/promhbase/promhbase/store"
)

// leaseStore is the part of store.Store leases use.
type leaseStore interface {
	Get(ctx context.Context, table string, row []byte, family string) (store.Row, error)
	CheckAndPut(ctx context.Context, table string, put store.Put, family, qualifier string, expected []byte) (bool, error)
	Scan(ctx context.Context, req store.ScanRequest) store.Scanner
}

// newToken returns a holder token, "host:pid:" and 16 random hex digits:
// one per Ruler, so that a restarted process never mistakes its
// predecessor's leases for its own.
func newToken() []byte {
	host, _ := os.Hostname()
	var r [8]byte
	_, _ = rand.Read(r[:])
	return fmt.Appendf(nil, "%s:%d:%s", host, os.Getpid(), hex.EncodeToString(r[:]))
}

// leaseRow returns the lease row of a group: 'l' namespace 0x00 group.
func leaseRow(namespace, group string) []byte {
	return AppendKey(make([]byte, 0, 2+len(namespace)+len(group)), rowKindLease, namespace, group)
}

// memberRow returns the row a replica announces itself in: 'm' token.
func memberRow(token []byte) []byte { return append([]byte{rowKindMember}, token...) }

// leaseValue is the r:lease cell's value: u64 big-endian expiry (Unix ms)
// then the token.
func leaseValue(exp int64, token []byte) []byte {
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(token)), uint64(exp))
	return append(v, token...)
}

// parseLease splits a lease cell's value; a value too short to hold an
// expiry counts as expired and held by nobody.
func parseLease(v []byte) (exp int64, token []byte) {
	if len(v) < 8 {
		return 0, nil
	}
	return int64(binary.BigEndian.Uint64(v[:8])), v[8:]
}

// cellOf returns the value of qualifier q in row (nil: absent).
func cellOf(row store.Row, q string) []byte {
	for _, c := range row.Cells {
		if string(c.Qualifier) == q {
			return c.Value
		}
	}
	return nil
}

// groupLease is one replica's lease of one group. Its methods are safe
// for concurrent use (the sync loop renews while an evaluation checks).
type groupLease struct {
	st    leaseStore
	table string
	row   []byte
	token []byte
	ttl   time.Duration
	now   func() time.Time

	mu   sync.Mutex
	held []byte // the cell as this holder last wrote it; nil: not held
	exp  int64  // the expiry held carries (Unix ms)
}

func newGroupLease(st leaseStore, table, namespace, group string, token []byte, ttl time.Duration, now func() time.Time) *groupLease {
	return &groupLease{st: st, table: table, row: leaseRow(namespace, group), token: token, ttl: ttl, now: now}
}

// state reads the lease row: the lease cell (nil: none) and r:last (0:
// never evaluated).
func (l *groupLease) state(ctx context.Context) (lease []byte, last int64, err error) {
	row, err := l.st.Get(ctx, l.table, l.row, Family)
	if err != nil {
		return nil, 0, fmt.Errorf("ruler: read the lease row %q of %s: %w", l.row, l.table, err)
	}
	if v := cellOf(row, QualLast); len(v) == 8 {
		last = int64(binary.BigEndian.Uint64(v))
	}
	return cellOf(row, QualLease), last, nil
}

// swapLocked replaces the lease cell old (nil: absent) with an expiry of
// exp and this holder's token; false: another replica changed it first.
func (l *groupLease) swapLocked(ctx context.Context, old []byte, exp int64) (bool, error) {
	v := leaseValue(exp, l.token)
	put := store.Put{Row: l.row, Cells: []store.Cell{{Family: []byte(Family), Qualifier: []byte(QualLease), Value: v}}}
	ok, err := l.st.CheckAndPut(ctx, l.table, put, Family, QualLease, old)
	if err != nil {
		return false, fmt.Errorf("ruler: write the lease %q of %s: %w", l.row, l.table, err)
	}
	if ok {
		l.held, l.exp = v, exp
	}
	return ok, nil
}

// tryAcquire takes the lease when it is free, expired or already this
// holder's (a token is never shared, so the last case is only a lease
// this replica took before and did not hand back).
func (l *groupLease) tryAcquire(ctx context.Context) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	old, _, err := l.state(ctx)
	if err != nil {
		return false, err
	}
	now := l.now().UnixMilli()
	if exp, tok := parseLease(old); old != nil && exp > now && !bytes.Equal(tok, l.token) {
		return false, nil
	}
	return l.swapLocked(ctx, old, now+l.ttl.Milliseconds())
}

// renew extends the lease. held false: it is lost (another replica took
// it after it expired, or the group was deleted). A store error leaves
// it held until its own expiry: a replica that cannot reach the store
// stops evaluating when the expiry it wrote passes (see valid).
func (l *groupLease) renew(ctx context.Context) (held bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == nil {
		return false, nil
	}
	ok, err := l.swapLocked(ctx, l.held, l.now().UnixMilli()+l.ttl.Milliseconds())
	if err != nil {
		return l.exp > l.now().UnixMilli(), err
	}
	if !ok {
		l.held = nil
	}
	return ok, nil
}

// valid reports whether the lease is held and its expiry has not passed
// by this replica's clock.
func (l *groupLease) valid() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held != nil && l.exp > l.now().UnixMilli()
}

// last reads r:last (0: the group was never evaluated).
func (l *groupLease) last(ctx context.Context) (int64, error) {
	_, last, err := l.state(ctx)
	return last, err
}

// setLast writes r:last = ts, only while the lease cell is this holder's:
// a replica that lost the lease never moves the mark. ok false: lost.
func (l *groupLease) setLast(ctx context.Context, ts int64) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == nil {
		return false, nil
	}
	put := store.Put{Row: l.row, Cells: []store.Cell{{Family: []byte(Family), Qualifier: []byte(QualLast),
		Value: binary.BigEndian.AppendUint64(nil, uint64(ts))}}}
	ok, err := l.st.CheckAndPut(ctx, l.table, put, Family, QualLease, l.held)
	if err != nil {
		return false, fmt.Errorf("ruler: write the last evaluation of %q in %s: %w", l.row, l.table, err)
	}
	if !ok {
		l.held = nil
	}
	return ok, nil
}

// release hands the lease back (expiry 0) unless another replica took it
// meanwhile.
func (l *groupLease) release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == nil {
		return nil
	}
	held := l.held
	l.held = nil
	put := store.Put{Row: l.row, Cells: []store.Cell{{Family: []byte(Family), Qualifier: []byte(QualLease), Value: leaseValue(0, l.token)}}}
	if _, err := l.st.CheckAndPut(ctx, l.table, put, Family, QualLease, held); err != nil {
		return fmt.Errorf("ruler: release the lease %q of %s: %w", l.row, l.table, err)
	}
	return nil
}

// announce writes this replica's member row ('m' token, r:lease with an
// expiry of now plus ttl), so that every replica can count the live ones
// and take its share of the groups.
func announce(ctx context.Context, st leaseStore, table string, token []byte, exp int64) error {
	row := memberRow(token)
	put := store.Put{Row: row, Cells: []store.Cell{{Family: []byte(Family), Qualifier: []byte(QualLease), Value: leaseValue(exp, token)}}}
	// A check-and-put against the cell's own value would need a read
	// first; the row is this replica's alone, so the check is of absence
	// or of the old value, whichever holds (one of the two is written).
	old, err := st.Get(ctx, table, row, Family)
	if err != nil {
		return fmt.Errorf("ruler: read the member row of %s: %w", table, err)
	}
	if _, err := st.CheckAndPut(ctx, table, put, Family, QualLease, cellOf(old, QualLease)); err != nil {
		return fmt.Errorf("ruler: write the member row of %s: %w", table, err)
	}
	return nil
}

// liveMembers counts the member rows of table whose expiry is after now.
func liveMembers(ctx context.Context, st leaseStore, table string, now int64) (int, error) {
	sc := st.Scan(ctx, store.ScanRequest{Table: table, Family: Family, Start: []byte{rowKindMember}, Stop: []byte{rowKindMember + 1}})
	defer sc.Close()
	n := 0
	for sc.Next() {
		if exp, _ := parseLease(cellOf(sc.Row(), QualLease)); exp > now {
			n++
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("ruler: list the members in %s: %w", table, err)
	}
	return n, nil
}
