package ingest

import (
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/mapping/wire"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/store"
)

// addExemplars adds one exemplar-table Put per exemplar: the cell of the
// slot of its time in the row of its series and hour (so a series keeps at
// most exSlots exemplars an hour, a later one replacing the one in its
// slot). Exemplars of one request that fall into one slot take the next
// free slots, so a request never replaces its own exemplars. Exemplars with
// a timestamp no row key can hold are dropped and not counted, as
// Prometheus never fails a request for its exemplars.
func (w *Writer) addExemplars(b *writeBatch, s *wire.Series, series series.Series, keyLen int) {
	for _, e := range s.Exemplars {
		if !validTime(e.T) || e.T < b.minT { // older than the retention: dropped as its samples are
			continue
		}
		base := mapping.HourBase(e.T)
		off := uint32(e.T - base*1000)
		key := b.arena.Alloc(keyLen + 2)
		key = w.mapper.AppendRowKey(key, series, uint32(base))
		slot := mapping.ExemplarSlot(off, w.exSlots)
		free := false
		for range w.exSlots {
			id := key[:len(key)+2]
			mapping.AppendExemplarQualifier(id[:len(key)], slot)
			if _, used := b.exSeen[string(id)]; !used {
				b.exSeen[string(id)] = struct{}{}
				free = true
				break
			}
			slot = uint16((int(slot) + 1) % w.exSlots)
		}
		if !free {
			continue // every slot of the hour taken by this request
		}
		b.scratch = mapping.AppendExemplarValue(b.scratch[:0], off, e.V, s.ExemplarLabels(e))
		val := append(b.arena.Alloc(len(b.scratch)), b.scratch...)
		b.exPuts = append(b.exPuts, store.Put{Row: key})
		b.exCells = append(b.exCells, store.Cell{Family: []byte(mapping.ExemplarFamily), Qualifier: key[len(key) : len(key)+2 : len(key)+2], Value: val})
	}
}

// keepsExemplar reports whether any of s's exemplars would be stored as
// far as its time goes: an exemplar table is kept and it is not older
// than the retention.
func (w *Writer) keepsExemplar(b *writeBatch, s *wire.Series) bool {
	if w.exTable == "" {
		return false
	}
	for _, e := range s.Exemplars {
		if e.T >= b.minT {
			return true
		}
	}
	return false
}
