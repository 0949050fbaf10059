package mapping

import (
	"context"
	"fmt"
)

// Reading many UIDs' names at once, for a query that meets series whose
// names the reverse cache lacks (after a restart, or on data OpenTSDB
// wrote): one batched read per kind instead of a Get per UID, each a
// round trip to a remote store.

// maxNamesBatch bounds the UIDs of one batched read.
const maxNamesBatch = 1024

// NameCached reports whether Name would answer uid from the reverse cache,
// without reading the store.
func (u *UIDs) NameCached(kind Kind, uid []byte) bool {
	if len(uid) != u.widths[kind] {
		return false
	}
	_, ok := u.rev[kind].getUID(uid)
	return ok
}

// LoadNames reads the names of those of uids (all of kind) that the
// reverse cache lacks into it: in batched reads when the store reads many
// cells at once, otherwise not at all (Name reads each on demand). A UID
// without a name is left out, for Name to report. Duplicates are read
// once.
func (u *UIDs) LoadNames(ctx context.Context, kind Kind, uids [][]byte) error {
	cg, ok := u.st.(cellsGetter)
	if !ok {
		return nil
	}
	seen := make(map[string]struct{}, len(uids))
	var rows [][]byte
	for _, uid := range uids {
		if u.NameCached(kind, uid) || len(uid) != u.widths[kind] {
			continue
		}
		if _, dup := seen[string(uid)]; dup {
			continue
		}
		seen[string(uid)] = struct{}{}
		rows = append(rows, uid)
	}
	values := make([][]byte, min(len(rows), maxNamesBatch))
	found := make([]bool, len(values))
	for len(rows) > 0 {
		n := min(len(rows), maxNamesBatch)
		batch := rows[:n]
		rows = rows[n:]
		clear(values)
		clear(found)
		if err := cg.GetCells(ctx, u.table, batch, uidFamilyName, kind.Qualifier(), values[:n], found[:n]); err != nil {
			return fmt.Errorf("read names of %d %s uids: %w", n, kind, err)
		}
		u.missesBy[kind][reverse].Add(float64(n))
		for i, uid := range batch {
			if found[i] {
				u.rev[kind].putUID(uid, nameFromStored(values[i]))
			}
		}
	}
	return nil
}
