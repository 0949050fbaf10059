package uid

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// FsckReport is what UIDFsck found in a UID table.
type FsckReport struct {
	// Forward counts the forward mappings (name -> uid) by kind.
	Forward [NumKinds]int
	// Errors are inconsistencies that break reads or writes: a forward
	// mapping without its reverse, two names with one UID, a UID of the wrong
	// width, a counter behind the UIDs in use.
	Errors []string
	// Orphans are reverse mappings whose name has no forward mapping:
	// what an assignment that failed half-way leaves behind, harmless
	// (OpenTSDB's uid fsck warns). A reverse mapping whose name maps to
	// another UID is in Errors, as OpenTSDB counts it.
	Orphans []string
}

// uidScanner is the part of store.Store UIDFsck uses.
type uidScanner interface {
	Scan(ctx context.Context, req store.ScanRequest) store.Scanner
}

// UIDFsck checks a UID table as OpenTSDB's `tsdb uid fsck` does: every
// forward mapping has the matching reverse mapping, no UID is used by two
// names, UIDs have the configured width, and each kind's counter in row
// 0x00 is at least the largest UID in use.
func UIDFsck(ctx context.Context, st uidScanner, table string, layout mapping.Layout) (FsckReport, error) {
	widths := [NumKinds]int{layout.MetricWidth, layout.TagKWidth, layout.TagVWidth}
	type mapping struct{ forward, reverse map[string]string }
	var maps [NumKinds]mapping
	for k := range maps {
		maps[k] = mapping{forward: map[string]string{}, reverse: map[string]string{}}
	}
	var counters [NumKinds]int64
	var rep FsckReport
	sc := st.Scan(ctx, store.ScanRequest{Table: table})
	defer sc.Close()
	for sc.Next() {
		r := sc.Row()
		for _, c := range r.Cells {
			kind, err := ParseKind(string(c.Qualifier))
			if err != nil {
				continue // meta columns and the like
			}
			switch string(c.Family) {
			case FamilyID:
				if len(r.Key) == 1 && r.Key[0] == 0 {
					if len(c.Value) != 8 {
						rep.Errors = append(rep.Errors, fmt.Sprintf("max-id counter of %s is %d bytes, want 8", kind, len(c.Value)))
						continue
					}
					counters[kind] = int64(binary.BigEndian.Uint64(c.Value))
					continue
				}
				if len(c.Value) != widths[kind] {
					rep.Errors = append(rep.Errors, fmt.Sprintf("%s %q has uid %X of %d bytes, want %d", kind, r.Key, c.Value, len(c.Value), widths[kind]))
				}
				maps[kind].forward[string(r.Key)] = string(c.Value)
				rep.Forward[kind]++
			case FamilyName:
				maps[kind].reverse[string(r.Key)] = string(c.Value)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return rep, fmt.Errorf("scan %s: %w", table, err)
	}
	for kind := range NumKinds {
		m := maps[kind]
		byUID := map[string]string{}
		var maxUID uint64
		for name, uid := range m.forward {
			if other, dup := byUID[uid]; dup {
				rep.Errors = append(rep.Errors, fmt.Sprintf("%s uid %X is used by %q and %q", kind, uid, other, name))
			}
			byUID[uid] = name
			back, ok := m.reverse[uid]
			switch {
			case !ok:
				rep.Errors = append(rep.Errors, fmt.Sprintf("%s %q -> %X has no reverse mapping", kind, name, uid))
			case back != name:
				rep.Errors = append(rep.Errors, fmt.Sprintf("%s %q -> %X, but %X -> %q", kind, name, uid, uid, back))
			}
			var v uint64
			for _, b := range []byte(uid) {
				v = v<<8 | uint64(b)
			}
			maxUID = max(maxUID, v)
		}
		for uid, name := range m.reverse {
			if _, ok := byUID[uid]; ok {
				continue
			}
			// As OpenTSDB's uid fsck: a reverse row whose name has no
			// forward row is a warning; one whose name maps to another
			// UID is an error (its "Inconsistent" or "Duplicate reverse
			// mapping").
			if other, ok := m.forward[name]; ok {
				rep.Errors = append(rep.Errors, fmt.Sprintf("%s %X -> %q, but %q -> %X", kind, uid, name, name, other))
				continue
			}
			rep.Orphans = append(rep.Orphans, fmt.Sprintf("%s %X -> %q has no forward mapping", kind, uid, name))
		}
		if maxUID > 0 && uint64(counters[kind]) < maxUID {
			rep.Errors = append(rep.Errors, fmt.Sprintf("%s max-id counter %d is behind the largest uid in use %d", kind, counters[kind], maxUID))
		}
	}
	return rep, nil
}
