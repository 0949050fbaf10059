package mapping

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/promhbase/promhbase/store"
)

// UIDRequest is one name of a GetOrCreateBatch call and, after it, its
// result.
type UIDRequest struct {
	Kind Kind
	Name []byte

	UID []byte
	// Created reports that this process assigned UID during the call (or
	// a concurrent one of this process it waited for): nothing stored
	// before names it.
	Created bool
	Err     error
}

// batchConcurrency bounds the reads and check-and-puts one batch has in
// flight on a remote store (gohbase pipelines them to the region servers).
const batchConcurrency = 64

// uidWork is one distinct name a batch resolves itself.
type uidWork struct {
	kind    Kind
	name    string
	stored  string
	uid     []byte
	created bool
	err     error
	call    *inflightCall
}

// GetOrCreateBatch resolves every request as GetOrCreateNew does, sharing
// the work: each distinct name is looked up once (concurrently on a
// remote store), the new names of a kind get their UIDs from one
// Increment of the counter by their number, and their reverse rows, then
// their forward rows, are written as batches of check-and-puts (one
// commit on the embedded store). The races are OpenTSDB's, resolved as in
// GetOrCreateNew: a forward row another writer took first wins, and the
// reverse row written for it stays an orphan; a reverse row already taken
// (a counter behind the table) sends that name through GetOrCreateNew's
// one-by-one path. Skipped UIDs (from a failed batch or a crash after the
// Increment) are holes, which OpenTSDB's uid fsck accepts.
//
// Every request gets its UID or its Err; names another call of this
// process is resolving are waited for.
func (u *UIDs) GetOrCreateBatch(ctx context.Context, reqs []UIDRequest) {
	var work []uidWork
	pending := map[inflightKey]int{}
	var owners []int // per request: index into work, or -1 - index into waits
	var waits []*inflightCall
	for i := range reqs {
		r := &reqs[i]
		r.UID, r.Created, r.Err = nil, false, nil
		if uid, ok := u.fwd[r.Kind].get(r.Name); ok {
			u.hits.WithLabelValues(r.Kind.String(), "forward").Inc()
			r.UID = uid
			owners = append(owners, len(reqs)) // done
			continue
		}
		if reservedName(r.Name) {
			r.Err = fmt.Errorf("%s %q is the key of the counter row: %w", r.Kind, r.Name, ErrInvalidSeries)
			owners = append(owners, len(reqs))
			continue
		}
		key := inflightKey{r.Kind, string(r.Name)}
		if j, ok := pending[key]; ok {
			owners = append(owners, j)
			continue
		}
		u.misses.WithLabelValues(r.Kind.String(), "forward").Inc()
		u.mu.Lock()
		if c, ok := u.inflight[key]; ok {
			u.mu.Unlock()
			owners = append(owners, -1-len(waits))
			waits = append(waits, c)
			continue
		}
		c := &inflightCall{done: make(chan struct{})}
		u.inflight[key] = c
		u.mu.Unlock()
		stored, _ := storedName(key.name)
		pending[key] = len(work)
		owners = append(owners, len(work))
		work = append(work, uidWork{kind: r.Kind, name: key.name, stored: stored, call: c})
	}

	if len(work) > 0 {
		u.resolveWork(ctx, work)
		// Finish this call's names before waiting for others': two batches
		// waiting for each other's names never wait in a cycle.
		for i := range work {
			w := &work[i]
			if w.err == nil {
				u.remember(w.kind, w.name, w.uid)
			}
			w.call.uid, w.call.created, w.call.err = w.uid, w.created, w.err
			u.mu.Lock()
			delete(u.inflight, inflightKey{w.kind, w.name})
			u.mu.Unlock()
			close(w.call.done)
		}
	}
	for i, o := range owners {
		r := &reqs[i]
		switch {
		case o == len(reqs):
		case o >= 0:
			w := &work[o]
			r.UID, r.Created, r.Err = w.uid, w.created, w.err
		default:
			c := waits[-1-o]
			select {
			case <-c.done:
				r.UID, r.Created, r.Err = c.uid, c.created, c.err
			case <-ctx.Done():
				r.Err = fmt.Errorf("wait for uid of %s %q: %w", r.Kind, r.Name, ctx.Err())
			}
		}
	}
}

// resolveWork looks the names of work up and assigns UIDs to the absent
// ones, setting each one's uid, created and err.
func (u *UIDs) resolveWork(ctx context.Context, work []uidWork) {
	conc := batchConcurrency
	if _, ok := u.st.(store.CellGetter); ok {
		conc = 1 // in-process point reads: goroutines would only add cost
	}
	// Lookups: an error is the name's own, the others go on.
	_ = store.Parallel(ctx, len(work), conc, func(ctx context.Context, i int) error {
		w := &work[i]
		w.uid, w.err = u.lookup(ctx, w.kind, w.name)
		return nil
	})
	var fresh [numKinds][]int // per kind, the work items to assign
	for i := range work {
		if work[i].err == nil && work[i].uid == nil {
			fresh[work[i].kind] = append(fresh[work[i].kind], i)
		}
	}
	var ops []store.CondPut
	var opWork []int
	for k := range numKinds {
		if len(fresh[k]) > 0 {
			ops, opWork = u.allocate(ctx, k, work, fresh[k], ops, opWork)
		}
	}
	if len(ops) == 0 {
		return
	}
	// Reverse rows first, as OpenTSDB: a forward row never points at a
	// UID whose reverse row is missing.
	written := make([]bool, len(ops))
	if err := u.writeReverse(ctx, ops, written); err != nil {
		for _, i := range opWork {
			work[i].err = fmt.Errorf("write reverse mapping %x -> %s %q: %w", work[i].uid, work[i].kind, work[i].name, err)
			work[i].uid = nil
		}
		return
	}
	fwd := ops[:0:0]
	var fwdWork []int
	for j, i := range opWork {
		w := &work[i]
		if !written[j] {
			// The counter and the reverse rows disagree (a UID written by
			// hand, or a counter reset): the one-by-one path takes the
			// next free UIDs.
			w.uid, w.created, w.err = u.getOrCreate(ctx, w.kind, w.name)
			continue
		}
		q := w.kind.Qualifier()
		fwd = append(fwd, store.CondPut{
			Put:    store.Put{Row: []byte(w.stored), Cells: []store.Cell{{Family: []byte(uidFamilyID), Qualifier: []byte(q), Value: w.uid}}},
			Family: uidFamilyID, Qualifier: q,
		})
		fwdWork = append(fwdWork, i)
	}
	written = written[:len(fwd)]
	if err := store.CheckAndPutAll(ctx, u.st, u.table, fwd, written, batchConcurrency); err != nil {
		for _, i := range fwdWork {
			work[i].uid, work[i].err = nil, fmt.Errorf("write forward mapping %s %q: %w", work[i].kind, work[i].name, err)
		}
		return
	}
	for j, i := range fwdWork {
		w := &work[i]
		if written[j] {
			w.created = true
			u.assigned.WithLabelValues(w.kind.String()).Inc()
			continue
		}
		// Another writer won the race: use its UID.
		winner, err := u.readForward(ctx, w.kind, w.stored)
		switch {
		case err != nil:
			w.uid, w.err = nil, err
		case winner == nil:
			w.uid, w.err = nil, fmt.Errorf("forward mapping of %s %q lost a race but is absent", w.kind, w.name)
		default:
			w.uid = winner
		}
	}
}

// writeReverse writes the reverse rows of ops where the cell is absent and
// reports which it wrote. On a store with batched check-and-puts (the
// embedded store) they are check-and-puts. On others (HBase, where a
// check-and-put is an RPC of its own that gohbase never batches, and a
// region-server handler with a WAL sync each) the cells are read in
// batched Gets and the absent ones written with one multi-row Put: the
// UIDs come from this call's Increment of the counter, which no other
// writer (OpenTSDB or promhbase) is given, so a reverse row there can only
// predate the counter (a counter behind the table after a restore), and
// the read sees it. The forward rows, which writers of the same name do
// race for, stay check-and-puts.
func (u *UIDs) writeReverse(ctx context.Context, ops []store.CondPut, written []bool) error {
	if _, ok := u.st.(store.BatchCheckAndPutter); ok {
		return store.CheckAndPutAll(ctx, u.st, u.table, ops, written, batchConcurrency)
	}
	taken := make([]bool, len(ops))
	err := store.Parallel(ctx, len(ops), batchConcurrency, func(ctx context.Context, i int) error {
		row, err := u.st.Get(ctx, u.table, ops[i].Put.Row, ops[i].Family)
		if err != nil {
			return err
		}
		taken[i] = slices.ContainsFunc(row.Cells, func(c store.Cell) bool { return string(c.Qualifier) == ops[i].Qualifier })
		return nil
	})
	if err != nil {
		return err
	}
	puts := make([]store.Put, 0, len(ops))
	for i := range ops {
		if !taken[i] {
			puts = append(puts, ops[i].Put)
		}
	}
	if err := u.st.Put(ctx, u.table, puts); err != nil {
		return err
	}
	for i := range ops {
		written[i] = !taken[i]
	}
	return nil
}

// allocate takes len(items) UIDs of kind with one Increment and appends
// the reverse check-and-put of each item that got one; items past the
// kind's last UID get ErrUIDExhausted.
func (u *UIDs) allocate(ctx context.Context, kind Kind, work []uidWork, items []int, ops []store.CondPut, opWork []int) ([]store.CondPut, []int) {
	n := int64(len(items))
	top, err := u.st.Increment(ctx, u.table, maxIDRow, uidFamilyID, kind.Qualifier(), n)
	if err != nil {
		for _, i := range items {
			work[i].err = fmt.Errorf("allocate %d uids of kind %s for %q and others: %w", n, kind, work[items[0]].name, err)
		}
		return ops, opWork
	}
	u.noteCounter(kind, top)
	width := u.widths[kind]
	limit := int64(1)<<(8*width) - 1 // the last UID of the width
	if width >= 8 {
		limit = 1<<63 - 1
	}
	q := kind.Qualifier()
	for j, i := range items {
		w := &work[i]
		id := top - n + 1 + int64(j)
		if id <= 0 || id > limit {
			w.err = fmt.Errorf("all %d-byte uids of kind %s are assigned (counter at %d), cannot assign %q: %w", width, kind, top, w.name, ErrUIDExhausted)
			continue
		}
		var full [8]byte
		binary.BigEndian.PutUint64(full[:], uint64(id))
		w.uid = append([]byte(nil), full[8-width:]...)
		ops = append(ops, store.CondPut{
			Put:    store.Put{Row: w.uid, Cells: []store.Cell{{Family: []byte(uidFamilyName), Qualifier: []byte(q), Value: []byte(w.stored)}}},
			Family: uidFamilyName, Qualifier: q,
		})
		opWork = append(opWork, i)
	}
	return ops, opWork
}
