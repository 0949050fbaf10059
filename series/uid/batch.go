package uid

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/promhbase/promhbase/internal/gencache"
	"github.com/promhbase/promhbase/mapping"
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
// their forward rows, are written in batches: check-and-puts in one
// commit on the embedded store, plain puts when these UIDs are the
// table's sole writer (writeSole), and on HBase batched reads and one Put
// for the reverse rows of tag names and values, concurrent check-and-puts
// for the rest (writeReverse). The races are OpenTSDB's, resolved as in
// GetOrCreateNew: a forward row another writer took first wins, and the
// reverse row written for the loser is deleted (dropReverse); a reverse
// row already taken (a counter behind the table) sends that name through
// GetOrCreateNew's one-by-one path. Outcomes are per name: one failed
// write fails its name only. Skipped UIDs (from a failed write or a crash
// after the Increment) are holes, which OpenTSDB's uid fsck accepts.
//
// Every request gets its UID or its Err; names another call of this
// process is resolving are waited for. Its phases: read the cached names,
// claim the missed ones (or find the calls resolving them), resolve the
// claimed names, settle them for the calls waiting, then deliver each
// request's outcome.
func (u *UIDs) GetOrCreateBatch(ctx context.Context, reqs []UIDRequest) {
	var b uidBatch
	defer u.countBatch(&b)
	cached := u.readCached(reqs)
	u.claimMissed(reqs, cached, &b)
	if len(b.work) > 0 {
		u.resolveWork(ctx, b.work)
		// Finish this call's names before waiting for others': two batches
		// waiting for each other's names never wait in a cycle.
		u.settle(b.work, b.done)
	}
	u.deliver(ctx, reqs, &b)
}

// uidBatch is the bookkeeping of one GetOrCreateBatch call.
type uidBatch struct {
	work   []uidWork       // the names this call resolves itself
	owners []int           // per request: index into work, len(reqs) when settled, or -1 - index into waits
	waits  []*inflightCall // the calls of others this call waits for
	done   chan struct{}   // closed once every name of work is settled
	hits   [NumKinds]int   // the requests found in the cache, by kind
	misses [NumKinds]int   // the distinct names missed, by kind
}

// countBatch adds b's hits and misses to the metrics.
func (u *UIDs) countBatch(b *uidBatch) {
	for k := range NumKinds {
		if b.hits[k] > 0 {
			u.hitsBy[k][forward].Add(float64(b.hits[k]))
		}
		if b.misses[k] > 0 {
			u.missesBy[k][forward].Add(float64(b.misses[k]))
		}
	}
}

// readCached sets the UID of each request whose name is cached, looked
// up shard by shard (gencache.GetByShard), and clears the others'
// results; it returns which requests were found.
func (u *UIDs) readCached(reqs []UIDRequest) []bool {
	cached := make([]bool, len(reqs))
	var items []int
	var keys []nameKey
	for k := range NumKinds {
		c := u.fwd[k]
		items, keys = items[:0], keys[:0]
		for i := range reqs {
			if r := &reqs[i]; r.Kind == k {
				r.UID, r.Created, r.Err = nil, false, nil
				items = append(items, i)
				keys = append(keys, c.key(r.Name))
			}
		}
		var promote []int
		gencache.GetByShard(c.ShardedByteCache, len(items), func(j int) nameKey { return keys[j] }, func(j int, uid []byte, old bool) {
			i := items[j]
			reqs[i].UID, cached[i] = uid, true
			if old {
				promote = append(promote, i)
			}
		})
		for _, i := range promote {
			c.Put(c.key(reqs[i].Name), reqs[i].UID)
		}
	}
	return cached
}

// missedNames returns the names of the requests not cached as one
// string, in order, and how many they are: map keys and the work's names
// are cut from it (the caches copy what they keep).
func missedNames(reqs []UIDRequest, cached []bool) (string, int) {
	nmiss, missBytes := 0, 0
	for i, c := range cached {
		if !c {
			nmiss++
			missBytes += len(reqs[i].Name)
		}
	}
	var names strings.Builder
	names.Grow(missBytes)
	for i, c := range cached {
		if !c {
			names.Write(reqs[i].Name)
		}
	}
	return names.String(), nmiss
}

// claimMissed sets each request's owner in b: settled (cached, or a reserved
// name), a name of b.work that this call resolves (registered as in
// flight), or the call of another that is resolving it.
func (u *UIDs) claimMissed(reqs []UIDRequest, cached []bool, b *uidBatch) {
	b.owners = make([]int, 0, len(reqs))
	// Sized for the names missed (at most): a first contact with new
	// series misses one or more names a series. The names this call
	// resolves share one done channel, closed once all are settled.
	allNames, nmiss := missedNames(reqs, cached)
	at := 0
	var pending map[inflightKey]int
	var calls []inflightCall
	if nmiss > 0 {
		b.work = make([]uidWork, 0, nmiss)
		pending = make(map[inflightKey]int, nmiss)
		calls = make([]inflightCall, 0, nmiss)
		b.done = make(chan struct{})
	}
	// The shards' locks are held across up to gencache.LockBatch names,
	// not taken once a name.
	locks := gencache.NewWriteLocks(u.inflightLocks)
	for i := range reqs {
		r := &reqs[i]
		if cached[i] {
			b.hits[r.Kind]++
			b.owners = append(b.owners, len(reqs)) // done
			continue
		}
		name := allNames[at : at+len(r.Name)]
		at += len(r.Name)
		if mapping.ReservedName(r.Name) {
			r.Err = fmt.Errorf("%s %q is the key of the counter row: %w", r.Kind, r.Name, mapping.ErrInvalidSeries)
			b.owners = append(b.owners, len(reqs))
			continue
		}
		key := inflightKey{r.Kind, name}
		if j, ok := pending[key]; ok {
			b.owners = append(b.owners, j)
			continue
		}
		b.misses[r.Kind]++
		sh := u.inflightShardOf(key)
		locks.Hold(sh)
		if c, ok := u.inflight[sh].calls[key]; ok {
			b.owners = append(b.owners, -1-len(b.waits))
			b.waits = append(b.waits, c)
			continue
		}
		calls = append(calls, inflightCall{done: b.done})
		c := &calls[len(calls)-1] // calls never grows past nmiss: no move
		u.inflight[sh].calls[key] = c
		pending[key] = len(b.work)
		b.owners = append(b.owners, len(b.work))
		b.work = append(b.work, uidWork{kind: r.Kind, name: key.name, call: c})
	}
	locks.Release()
	for i := range b.work { // outside the lock: other calls wait for it
		b.work[i].stored, _ = mapping.StoredNames(b.work[i].name)
	}
}

// settle remembers the names of work, hands their outcomes to the calls
// waiting for them, and ends their being in flight (closing done).
func (u *UIDs) settle(work []uidWork, done chan struct{}) {
	u.rememberWork(work)
	for i := range work {
		w := &work[i]
		w.call.uid, w.call.created, w.call.err = w.uid, w.created, w.err
	}
	locks := gencache.NewWriteLocks(u.inflightLocks)
	for i := range work {
		key := inflightKey{work[i].kind, work[i].name}
		sh := u.inflightShardOf(key)
		locks.Hold(sh)
		delete(u.inflight[sh].calls, key)
	}
	locks.Release()
	close(done)
}

// deliver gives each request its outcome: its work's, or that of the
// call of another it waits for (retried under ctx when that caller gave
// up).
func (u *UIDs) deliver(ctx context.Context, reqs []UIDRequest, b *uidBatch) {
	for i, o := range b.owners {
		r := &reqs[i]
		switch {
		case o == len(reqs):
		case o >= 0:
			w := &b.work[o]
			r.UID, r.Created, r.Err = w.uid, w.created, w.err
		default:
			c := b.waits[-1-o]
			select {
			case <-c.done:
				r.UID, r.Created, r.Err = c.uid, c.created, c.err
				if r.Err != nil && ctx.Err() == nil && (errors.Is(r.Err, context.Canceled) || errors.Is(r.Err, context.DeadlineExceeded)) {
					// The other caller gave up, not the store: try again
					// under this caller's own context.
					r.UID, r.Created, r.Err = u.GetOrCreateNew(ctx, r.Kind, r.Name)
				}
			case <-ctx.Done():
				r.Err = fmt.Errorf("wait for uid of %s %q: %w", r.Kind, r.Name, ctx.Err())
			}
		}
	}
}

// lookupAll looks the names of work up as lookup does, each kind's forward
// rows in one GetCells, then the legacy forms of the names not found.
// An error fails the names of its call.
func (u *UIDs) lookupAll(ctx context.Context, cg store.CellsGetter, work []uidWork) {
	var idx []int
	var rows [][]byte
	var rowBuf []byte // the rows' bytes (a row stays valid as it grows)
	var values [][]byte
	var found []bool
	for k := range NumKinds {
		for pass := range 2 {
			idx, rows, rowBuf = idx[:0], rows[:0], rowBuf[:0]
			for i := range work {
				w := &work[i]
				if w.kind != k || w.uid != nil || w.err != nil {
					continue
				}
				stored, legacy := mapping.StoredNames(w.name)
				if pass == 1 {
					if legacy == "" {
						continue
					}
					stored = legacy
				}
				idx = append(idx, i)
				at := len(rowBuf)
				rowBuf = append(rowBuf, stored...)
				rows = append(rows, rowBuf[at:len(rowBuf):len(rowBuf)])
			}
			if len(idx) == 0 {
				continue
			}
			values, found = slices.Grow(values[:0], len(idx))[:len(idx)], slices.Grow(found[:0], len(idx))[:len(idx)]
			if err := cg.GetCells(ctx, u.table, rows, FamilyID, k.Qualifier(), values, found); err != nil {
				for _, i := range idx {
					w := &work[i]
					w.err = fmt.Errorf("read uid of %s %q: %w", w.kind, w.name, err)
				}
				continue
			}
			for j, i := range idx {
				if !found[j] {
					continue
				}
				w := &work[i]
				if len(values[j]) != u.widths[k] {
					w.err = fmt.Errorf("uid of %s %q is %x: %d bytes, want %d", k, w.name, values[j], len(values[j]), u.widths[k])
					continue
				}
				w.uid = values[j]
			}
		}
	}
}

// resolveWork looks the names of work up and assigns UIDs to the absent
// ones, setting each one's uid, created and err. Its phases: look the
// names up, take back stranded UIDs, allocate the others, then write the
// reverse rows and the forward rows (or both at once where these UIDs
// are the table's sole writer).
func (u *UIDs) resolveWork(ctx context.Context, work []uidWork) {
	if !u.lookupWork(ctx, work) {
		return
	}
	fresh, reused := u.takeBack(ctx, work)
	ops, opWork := u.allocateFresh(ctx, work, &fresh)
	if len(ops) == 0 && len(reused) == 0 {
		return
	}
	if u.sole && len(reused) == 0 {
		u.writeSole(ctx, work, ops, opWork)
		return
	}
	fwd, fwdWork := u.writeReverseRows(ctx, work, ops, opWork, reused)
	u.writeForwardRows(ctx, work, fwd, fwdWork)
}

// lookupWork looks the names of work up: an error is the name's own, the
// others go on. It reports false when ctx ended, failing the names the
// cancellation kept from being looked up (they are not new).
func (u *UIDs) lookupWork(ctx context.Context, work []uidWork) bool {
	if cg, ok := store.As[store.CellsGetter](u.st); ok {
		u.lookupAll(ctx, cg, work)
	} else {
		conc := batchConcurrency
		if _, ok := store.As[store.CellGetter](u.st); ok {
			conc = 1 // in-process point reads: goroutines would only add cost
		}
		_ = store.Parallel(ctx, len(work), conc, func(ctx context.Context, i int) error {
			w := &work[i]
			w.uid, w.err = u.lookup(ctx, w.kind, w.name)
			return nil
		})
	}
	if err := ctx.Err(); err != nil {
		for i := range work {
			if w := &work[i]; w.uid == nil && w.err == nil {
				w.err = fmt.Errorf("look up uid of %s %q: %w", w.kind, w.name, err)
			}
		}
		return false
	}
	return true
}

// takeBack gives the names not found the UIDs of their failed attempts
// where there are some (reused) and returns, per kind, the others to
// assign (fresh).
func (u *UIDs) takeBack(ctx context.Context, work []uidWork) (fresh [NumKinds][]int, reused []int) {
	for i := range work {
		w := &work[i]
		if w.err != nil || w.uid != nil {
			continue
		}
		if uid := u.takeStranded(ctx, w.kind, w.name, w.stored); uid != nil {
			w.uid = uid
			reused = append(reused, i)
			continue
		}
		fresh[w.kind] = append(fresh[w.kind], i)
	}
	return fresh, reused
}

// allocateFresh assigns UIDs to the fresh names, a kind at a time, and
// returns their reverse rows' check-and-puts with the work item of each.
func (u *UIDs) allocateFresh(ctx context.Context, work []uidWork, fresh *[NumKinds][]int) (ops []store.CondPut, opWork []int) {
	// Sized up front: a first contact assigns a UID a series or more.
	total := 0
	for k := range NumKinds {
		total += len(fresh[k])
	}
	if total > 0 {
		ops, opWork = make([]store.CondPut, 0, total), make([]int, 0, total)
	}
	for k := range NumKinds {
		if len(fresh[k]) > 0 {
			ops, opWork = u.allocate(ctx, k, work, fresh[k], ops, opWork)
		}
	}
	return ops, opWork
}

// writeReverseRows writes the reverse rows of ops first, as OpenTSDB: a
// forward row never points at a UID whose reverse row is missing. It
// returns the forward rows to write, for the names whose reverse row was
// written and for the reused ones, with the work item of each.
func (u *UIDs) writeReverseRows(ctx context.Context, work []uidWork, ops []store.CondPut, opWork, reused []int) (fwd []store.CondPut, fwdWork []int) {
	written, errs := make([]bool, len(ops)), make([]error, len(ops))
	u.writeReverse(ctx, ops, written, errs)
	fwd = ops[:0:0]
	for j, i := range opWork {
		w := &work[i]
		switch {
		case errs[j] != nil:
			w.err = fmt.Errorf("write reverse mapping %x -> %s %q: %w", w.uid, w.kind, w.name, errs[j])
			w.uid = nil
			continue
		case !written[j]:
			// The counter and the reverse rows disagree (a UID written by
			// hand, or a counter reset): the one-by-one path takes the
			// next free UIDs.
			w.uid, w.created, w.err = u.getOrCreate(ctx, w.kind, w.name)
			continue
		}
		fwd = append(fwd, w.forwardPut())
		fwdWork = append(fwdWork, i)
	}
	for _, i := range reused {
		fwd = append(fwd, work[i].forwardPut())
		fwdWork = append(fwdWork, i)
	}
	return fwd, fwdWork
}

// writeSole writes the reverse and forward rows of the names of opWork,
// whose UIDs ops carry, as plain puts in one write: the table has no other
// writer, the names were looked up absent while this
// process's in-flight calls kept its other writers of them away, and the
// UIDs come from this call's Increment, so neither row can exist; a
// check-and-put would only read it again. Only for UIDs that are their
// table's sole writer (UIDOptions.SoleWriter). On a store that can, their
// durability waits for the request's data write
// which is what refers to them (store.WriteDeferred).
func (u *UIDs) writeSole(ctx context.Context, work []uidWork, ops []store.CondPut, opWork []int) {
	puts := make([]store.Put, 0, 2*len(ops))
	// The forward rows' keys and cells each in one allocation (sized up
	// front), the family and qualifiers shared.
	fam := []byte(FamilyID)
	var quals [NumKinds][]byte
	rowBytes := 0
	for _, i := range opWork {
		rowBytes += len(work[i].stored)
	}
	rows := make([]byte, 0, rowBytes)
	cells := make([]store.Cell, 0, len(opWork))
	for j, i := range opWork {
		w := &work[i]
		if quals[w.kind] == nil {
			quals[w.kind] = []byte(w.kind.Qualifier())
		}
		rows = append(rows, w.stored...)
		cells = append(cells, store.Cell{Family: fam, Qualifier: quals[w.kind], Value: w.uid})
		puts = append(puts, ops[j].Put, store.Put{Row: rows[len(rows)-len(w.stored) : len(rows) : len(rows)], Cells: cells[len(cells)-1 : len(cells) : len(cells)]})
	}
	var wb store.Batch
	wb.Put(u.table, puts)
	err := store.WriteDeferred(ctx, u.st, &wb)
	for _, i := range opWork {
		w := &work[i]
		if err != nil {
			// Nothing another writer could have made depends on these
			// rows; the names' next attempt assigns new UIDs, and a row
			// that landed is found by that attempt's lookup.
			w.uid, w.err = nil, fmt.Errorf("write uid rows of %s %q: %w", w.kind, w.name, err)
			continue
		}
		w.created = true
		u.assignedBy[w.kind].Inc()
	}
}

// dropReverse deletes the reverse row of a UID this process took from the
// counter but could not give its name (another writer's forward row won,
// or the reverse write failed): left, OpenTSDB's uid fsck would count it
// as an error (a reverse mapping to a name that maps elsewhere) once the
// name has its UID. No other writer is given the UID, so nothing else can
// be lost. Best effort: a failure leaves the row, as OpenTSDB leaves it.
func (u *UIDs) dropReverse(ctx context.Context, kind Kind, uid []byte) {
	_ = u.st.Delete(ctx, u.table, uid, []store.Column{{Family: []byte(FamilyName), Qualifier: []byte(kind.Qualifier())}})
}

// writeReverse writes the reverse rows of ops where the cell is absent,
// reporting each one's outcome in written and errs. Where a batch of
// check-and-puts is cheap (the embedded store: one lock round and one
// commit) they are check-and-puts. Where each check-and-put is made
// durable on its own (HBase, store.CheckAndPutSyncer) the rows of tag names and values
// are read in batched Gets and the absent ones written with one multi-row
// Put: their UIDs come from this call's Increment of the counter, which no
// other writer is given, so a reverse row there can only predate the
// counter (a counter behind the table after a restore), and the read sees
// it. Metric rows stay check-and-puts: OpenTSDB with
// tsd.core.uid.random_metrics picks metric UIDs without the counter. The
// reverse rows are read with one GetCells per kind where the store has it.
// The
// forward rows, which writers of the same name race for, are always
// check-and-puts.
func (u *UIDs) writeReverse(ctx context.Context, ops []store.CondPut, written []bool, errs []error) {
	if se, ok := store.As[store.CheckAndPutSyncer](u.st); !ok || !se.CheckAndPutSyncsEach() {
		store.CheckAndPutAll(ctx, u.st, u.table, ops, written, errs, batchConcurrency)
		return
	}
	var cas, blind []int
	for i := range ops {
		if ops[i].Qualifier == KindMetric.Qualifier() {
			cas = append(cas, i)
		} else {
			blind = append(blind, i)
		}
	}
	if len(cas) > 0 {
		sub := make([]store.CondPut, len(cas))
		for j, i := range cas {
			sub[j] = ops[i]
		}
		subW, subE := make([]bool, len(cas)), make([]error, len(cas))
		store.CheckAndPutAll(ctx, u.st, u.table, sub, subW, subE, batchConcurrency)
		for j, i := range cas {
			written[i], errs[i] = subW[j], subE[j]
		}
	}
	if len(blind) == 0 {
		return
	}
	taken := make([]bool, len(ops))
	if cg, ok := store.As[store.CellsGetter](u.st); ok {
		// One batch per qualifier (kind) of the cells read.
		byQual := map[string][]int{}
		for _, i := range blind {
			byQual[ops[i].Qualifier] = append(byQual[ops[i].Qualifier], i)
		}
		for q, idx := range byQual {
			rows, values, found := make([][]byte, len(idx)), make([][]byte, len(idx)), make([]bool, len(idx))
			for j, i := range idx {
				rows[j] = ops[i].Put.Row
			}
			err := cg.GetCells(ctx, u.table, rows, ops[idx[0]].Family, q, values, found)
			for j, i := range idx {
				errs[i], taken[i] = err, err == nil && found[j]
			}
		}
	} else {
		_ = store.Parallel(ctx, len(blind), batchConcurrency, func(ctx context.Context, j int) error {
			op := &ops[blind[j]]
			row, err := u.st.Get(ctx, u.table, op.Put.Row, op.Family)
			errs[blind[j]] = err
			taken[blind[j]] = slices.ContainsFunc(row.Cells, func(c store.Cell) bool { return string(c.Qualifier) == op.Qualifier })
			return nil
		})
	}
	puts := make([]store.Put, 0, len(blind))
	var put []int
	for _, i := range blind {
		switch {
		case errs[i] == nil && ctx.Err() != nil && !taken[i]:
			errs[i] = fmt.Errorf("read reverse row %x: %w", ops[i].Put.Row, ctx.Err())
		case errs[i] == nil && !taken[i]:
			puts = append(puts, ops[i].Put)
			put = append(put, i)
		}
	}
	if len(puts) == 0 {
		return
	}
	if err := u.st.Put(ctx, u.table, puts); err != nil {
		// Some rows may have landed: remove them, so that the names'
		// next UIDs leave no reverse row naming them elsewhere.
		for _, i := range put {
			errs[i] = err
			u.dropReverse(ctx, kindOfQualifier(ops[i].Qualifier), ops[i].Put.Row)
		}
		return
	}
	for _, i := range put {
		written[i] = true
	}
}

// kindOfQualifier is the Kind whose qualifier q is.
func kindOfQualifier(q string) Kind {
	k, _ := ParseKind(q)
	return k
}

// allocate takes len(items) UIDs of kind with one claim (one Increment,
// shared with the allocations of kind at the same time) and appends
// the reverse check-and-put of each item that got one; items past the
// kind's last UID get ErrUIDExhausted.
func (u *UIDs) allocate(ctx context.Context, kind Kind, work []uidWork, items []int, ops []store.CondPut, opWork []int) ([]store.CondPut, []int) {
	n := int64(len(items))
	top, err := u.claim(ctx, kind, n)
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
	// The items' UIDs, stored names and cells each in one allocation
	// (sized up front, so that no slice handed out moves), the family and
	// qualifier shared: a first contact assigns a UID a series.
	fam, qual := []byte(FamilyName), []byte(q)
	nameBytes := 0
	for _, i := range items {
		nameBytes += len(work[i].stored)
	}
	uids := make([]byte, 0, len(items)*width)
	names := make([]byte, 0, nameBytes)
	cells := make([]store.Cell, 0, len(items))
	for j, i := range items {
		w := &work[i]
		id := top - n + 1 + int64(j)
		if id <= 0 || id > limit {
			w.err = fmt.Errorf("all %d-byte uids of kind %s are assigned (counter at %d), cannot assign %q: %w", width, kind, top, w.name, ErrUIDExhausted)
			continue
		}
		var full [8]byte
		binary.BigEndian.PutUint64(full[:], uint64(id))
		uids = append(uids, full[8-width:]...)
		w.uid = uids[len(uids)-width : len(uids) : len(uids)]
		names = append(names, w.stored...)
		cells = append(cells, store.Cell{Family: fam, Qualifier: qual, Value: names[len(names)-len(w.stored) : len(names) : len(names)]})
		ops = append(ops, store.CondPut{
			Put:    store.Put{Row: w.uid, Cells: cells[len(cells)-1 : len(cells) : len(cells)]},
			Family: FamilyName, Qualifier: q,
		})
		opWork = append(opWork, i)
	}
	return ops, opWork
}
