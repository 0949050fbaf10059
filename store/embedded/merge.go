package embedded

import (
	"bytes"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// kvIter is the part of a Pebble iterator the readers use: a Pebble
// iterator, or a mergedIter over it and the row buffer.
type kvIter interface {
	First() bool
	Next() bool
	SeekGE(key []byte) bool
	Key() []byte
	ValueAndErr() ([]byte, error)
	Error() error
	Close() error
}

var _ kvIter = (*pebble.Iterator)(nil)

// mergedIter merges a Pebble iterator with the row buffer's layers (newest
// first) into one sequence of Pebble keys and values: where several hold
// a key, the newest layer's value is the one seen and the others are
// stepped past.
type mergedIter struct {
	db    *pebble.Iterator
	dbOK  bool
	mem   []*memIter
	memOK []bool
	cur   int // the source of the current key: -1 Pebble, else mem[cur]
	valid bool
}

func newMergedIter(db *pebble.Iterator, mem []*memIter) *mergedIter {
	return &mergedIter{db: db, mem: mem, memOK: make([]bool, len(mem))}
}

func (m *mergedIter) First() bool {
	m.dbOK = m.db.First()
	for i, it := range m.mem {
		m.memOK[i] = it.first()
	}
	return m.settle()
}

func (m *mergedIter) SeekGE(key []byte) bool {
	m.dbOK = m.db.SeekGE(key)
	for i, it := range m.mem {
		m.memOK[i] = it.seekGE(key)
	}
	return m.settle()
}

func (m *mergedIter) Next() bool {
	if !m.valid {
		return false
	}
	if m.cur < 0 {
		m.dbOK = m.db.Next()
	} else {
		m.memOK[m.cur] = m.mem[m.cur].next()
	}
	return m.settle()
}

// settle picks the smallest key, the newest layer's on a tie, and steps
// the older sources that hold the same key past it.
func (m *mergedIter) settle() bool {
	m.cur, m.valid = -2, false
	var best []byte
	for i, it := range m.mem {
		if m.memOK[i] && (!m.valid || bytes.Compare(it.key(), best) < 0) {
			m.cur, m.valid, best = i, true, it.key()
		}
	}
	if m.dbOK && (!m.valid || bytes.Compare(m.db.Key(), best) < 0) {
		m.cur, m.valid, best = -1, true, m.db.Key()
	}
	if !m.valid {
		return false
	}
	for i, it := range m.mem {
		if i > m.cur && m.cur >= 0 && m.memOK[i] && bytes.Equal(it.key(), best) {
			m.memOK[i] = it.next()
		}
	}
	if m.cur >= 0 && m.dbOK && bytes.Equal(m.db.Key(), best) {
		m.dbOK = m.db.Next()
	}
	return true
}

func (m *mergedIter) Key() []byte {
	if m.cur < 0 {
		return m.db.Key()
	}
	return m.mem[m.cur].key()
}

func (m *mergedIter) ValueAndErr() ([]byte, error) {
	if m.cur < 0 {
		v, err := m.db.ValueAndErr()
		if err != nil {
			return nil, fmt.Errorf("read value: %w", err)
		}
		return v, nil
	}
	return m.mem[m.cur].value(), nil
}

func (m *mergedIter) Error() error { return m.db.Error() }

func (m *mergedIter) Close() error { return m.db.Close() }
