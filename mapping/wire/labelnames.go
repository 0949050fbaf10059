package wire

import (
	"sync"
)

// Remote write 2.0 series keys.
//
// A 2.0 series is looked up in the series cache under a key of its own
// form, shorter and cheaper to build than 1.0's Label fields:
//
//	0xFF                                  the 2.0 form (1.0 keys start with 0x0A)
//	per label, in the order sent:
//	  uvarint(id)                         the name's id (≥ 1) in labelNames, or
//	  0x00 uvarint(len(name)) name        a name without an id
//	  uvarint(len(value)) value
//
// Every part is self-delimiting, so equal keys mean equal label lists. The
// ids live only in this process (in the series cache's keys), never in the
// store. A series sent by both protocols has one cache entry per form.
const keyFormV2 = 0xFF

// LabelNames gives label names small ids for 2.0 keys: a request names a
// few dozen label names, thousands of times. It is bounded: at most
// maxLabelNameIDs names of at most maxLabelNameIDBytes bytes get an id;
// others are written into keys in full.
type LabelNames struct {
	mu    sync.RWMutex
	ids   map[string]uint32
	names [][]byte // id-1 -> name; never modified once appended
}

const (
	maxLabelNameIDs     = 1 << 16
	maxLabelNameIDBytes = 64
)

func NewLabelNames() *LabelNames { return &LabelNames{ids: map[string]uint32{}} }

// id returns the id of name, assigning one if there is room; 0 means none.
func (t *LabelNames) id(name []byte) uint32 {
	if len(name) > maxLabelNameIDBytes {
		return 0
	}
	t.mu.RLock()
	id := t.ids[string(name)]
	t.mu.RUnlock()
	if id != 0 {
		return id
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if id = t.ids[string(name)]; id != 0 {
		return id
	}
	if len(t.names) >= maxLabelNameIDs {
		return 0
	}
	n := append([]byte(nil), name...)
	t.names = append(t.names, n)
	id = uint32(len(t.names))
	t.ids[string(n)] = id
	return id
}

// name returns the name of id; ok is false for an id never given.
func (t *LabelNames) name(id uint64) (name []byte, ok bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if id == 0 || id > uint64(len(t.names)) {
		return nil, false
	}
	return t.names[id-1], true
}
