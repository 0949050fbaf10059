package uid

import (
	"context"
	"fmt"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
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
	cg, ok := store.As[store.CellsGetter](u.st)
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
		if err := cg.GetCells(ctx, u.table, batch, FamilyName, kind.Qualifier(), values[:n], found[:n]); err != nil {
			return fmt.Errorf("read names of %d %s uids: %w", n, kind, err)
		}
		u.missesBy[kind][reverse].Add(float64(n))
		for i, uid := range batch {
			if found[i] {
				u.rev[kind].putUID(uid, mapping.NameFromStored(values[i]))
			}
		}
	}
	return nil
}

// LoadIDs reads the UIDs of those of names (all of kind) that the forward
// cache lacks into it, in batched reads when the store reads many cells
// at once (otherwise not at all: ID reads each on demand), so that a
// query naming many values (a regex alternation) costs a few round trips
// to a remote store instead of one a name. Names that also have a legacy
// stored form, and names without a UID, are left to ID and IDs.
func (u *UIDs) LoadIDs(ctx context.Context, kind Kind, names []string) error {
	cg, ok := store.As[store.CellsGetter](u.st)
	if !ok {
		return nil
	}
	seen := make(map[string]struct{}, len(names))
	var todo []string
	var rows [][]byte
	for _, name := range names {
		stored, legacy := mapping.StoredNames(name)
		if legacy != "" || mapping.ReservedName([]byte(name)) {
			continue
		}
		if _, ok := u.fwd[kind].getName([]byte(name)); ok {
			continue
		}
		if _, dup := seen[name]; dup {
			continue
		}
		seen[name] = struct{}{}
		todo = append(todo, name)
		rows = append(rows, []byte(stored))
	}
	values := make([][]byte, min(len(rows), maxNamesBatch))
	found := make([]bool, len(values))
	for len(rows) > 0 {
		n := min(len(rows), maxNamesBatch)
		clear(values)
		clear(found)
		if err := cg.GetCells(ctx, u.table, rows[:n], FamilyID, kind.Qualifier(), values[:n], found[:n]); err != nil {
			return fmt.Errorf("read uids of %d %s names: %w", n, kind, err)
		}
		u.missesBy[kind][forward].Add(float64(n))
		for i, name := range todo[:n] {
			if found[i] && len(values[i]) == u.widths[kind] {
				u.remember(kind, name, values[i])
			}
		}
		rows, todo = rows[n:], todo[n:]
	}
	return nil
}
