package uid

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/promhbase/promhbase/store"
)

// The forward rows of a batch's new names, and what a failed write of
// one leaves: a name's UID whose reverse row was written but whose
// forward row's write has an unknown outcome is kept (stranded) for the
// name's next assignment in this process.

// forwardPut is the check-and-put of w's forward row: its stored name
// to its UID.
func (w *uidWork) forwardPut() store.CondPut {
	q := w.kind.Qualifier()
	return store.CondPut{
		Put:    store.Put{Row: []byte(w.stored), Cells: []store.Cell{{Family: []byte(FamilyID), Qualifier: []byte(q), Value: w.uid}}},
		Family: FamilyID, Qualifier: q,
	}
}

// writeForwardRows writes fwd and settles each name: created when its
// row was written (or a failed attempt had landed), the winner's UID
// when another writer won the race (its reverse row dropped), an error
// otherwise (its UID kept as stranded).
func (u *UIDs) writeForwardRows(ctx context.Context, work []uidWork, fwd []store.CondPut, fwdWork []int) {
	written, errs := make([]bool, len(fwd)), make([]error, len(fwd))
	store.CheckAndPutAll(ctx, u.st, u.table, fwd, written, errs, batchConcurrency)
	for j, i := range fwdWork {
		w := &work[i]
		if written[j] {
			w.created = true
			u.assignedBy[w.kind].Inc()
			continue
		}
		// Another writer won the race, or the write failed and may have
		// landed: the forward row says which.
		mine := w.uid
		winner, err := u.readForward(ctx, w.kind, w.stored)
		switch {
		case err != nil:
			// Neither written nor read: the row may yet hold mine.
			w.uid, w.err = nil, errors.Join(errs[j], err)
			u.keepStranded(w.kind, w.name, mine)
		case winner == nil && errs[j] != nil:
			w.uid, w.err = nil, fmt.Errorf("write forward mapping %s %q -> %x: %w", w.kind, w.name, mine, errs[j])
			u.keepStranded(w.kind, w.name, mine)
		case winner == nil:
			w.uid, w.err = nil, fmt.Errorf("forward mapping of %s %q lost a race but is absent", w.kind, w.name)
			u.keepStranded(w.kind, w.name, mine)
		case bytes.Equal(winner, mine):
			w.created = true // the failed attempt had landed
			u.assignedBy[w.kind].Inc()
		default:
			w.uid = winner
			u.dropReverse(ctx, w.kind, mine)
		}
	}
}

// maxStranded bounds the UIDs kept by keepStranded.
const maxStranded = 1 << 16

// keepStranded remembers uid, whose reverse row names name but whose
// forward row could not be written (the write failed, and may yet land:
// deleting the reverse row could leave a forward row without one). The
// name's next assignment in this process reuses it (takeStranded), so
// that no reverse row is left naming a name that maps elsewhere, which
// OpenTSDB's uid fsck counts as an error.
func (u *UIDs) keepStranded(kind Kind, name string, uid []byte) {
	u.strandedMu.Lock()
	defer u.strandedMu.Unlock()
	if u.stranded == nil {
		u.stranded = map[inflightKey][]byte{}
	}
	if len(u.stranded) < maxStranded {
		u.stranded[inflightKey{kind, name}] = uid
		u.nstranded.Store(int32(len(u.stranded)))
	}
}

// takeStranded returns the UID keepStranded kept for name, if its reverse
// row still names it (stored is the name as the table holds it).
func (u *UIDs) takeStranded(ctx context.Context, kind Kind, name, stored string) []byte {
	if u.nstranded.Load() == 0 {
		return nil
	}
	u.strandedMu.Lock()
	uid, ok := u.stranded[inflightKey{kind, name}]
	delete(u.stranded, inflightKey{kind, name})
	u.nstranded.Store(int32(len(u.stranded)))
	u.strandedMu.Unlock()
	if !ok {
		return nil
	}
	row, err := u.st.Get(ctx, u.table, uid, FamilyName)
	if err != nil {
		return nil
	}
	for _, c := range row.Cells {
		if string(c.Qualifier) == kind.Qualifier() && string(c.Value) == stored {
			return uid
		}
	}
	return nil
}
