package index

import "sync"

// The pair counts' pages: a page counts the series of 1024 consecutive
// tagv UIDs of one label name (UIDs are handed out in sequence, so a
// label's values fill pages). A pair whose page the budget does not
// allow, or whose tagv UID is past denseUIDs, is counted in a map.
const (
	pageBits   = 10
	pageLen    = 1 << pageBits
	denseUIDs  = 1 << 24
	pageBudget = 64 << 20 // bytes of pages a pairCounts may allocate
)

type page [pageLen]uint32

// pairCounts counts series by tag pair (tagk, tagv UIDs), in pages of
// counters: an increment a run of series, which the pages' locality (a
// label's values have nearby UIDs) keeps cheaper than a map's update. (A
// batch sorted by page before it is added was tried: slower.)
type pairCounts struct {
	// slots number the tagk UIDs met: slotOf for UIDs below 1024 (slot
	// + 1; 0: none yet), slotMap for the others; pages by slot, then by
	// tagv >> pageBits.
	slotOf  [1024]int32
	slotMap map[uint64]int32
	tagks   []uint64
	pages   [][]*page
	budget  int
	other   map[[2]uint64]uint32
	pool    *sync.Pool // of *page, zeroed; nil: none
}

func newPairCounts(pool *sync.Pool) pairCounts {
	return pairCounts{slotMap: map[uint64]int32{}, budget: pageBudget / (pageLen * 4), other: map[[2]uint64]uint32{}, pool: pool}
}

// newPage returns a zeroed page, from the pool when it has one.
func (c *pairCounts) newPage() *page {
	if c.pool != nil {
		if p, ok := c.pool.Get().(*page); ok {
			return p
		}
	}
	return new(page)
}

// release zeroes c's pages and gives them to the pool; c is empty after.
func (c *pairCounts) release() {
	for s, ps := range c.pages {
		for _, p := range ps {
			if p != nil && c.pool != nil {
				clear(p[:])
				c.pool.Put(p)
			}
		}
		c.pages[s] = nil
	}
}

// slot returns the slot of tagk UID k, numbering it when new.
func (c *pairCounts) slot(k uint64) int {
	if k < uint64(len(c.slotOf)) {
		if s := c.slotOf[k]; s > 0 {
			return int(s - 1)
		}
	} else if s, ok := c.slotMap[k]; ok {
		return int(s)
	}
	s := len(c.tagks)
	c.tagks = append(c.tagks, k)
	c.pages = append(c.pages, nil)
	if k < uint64(len(c.slotOf)) {
		c.slotOf[k] = int32(s + 1)
	} else {
		c.slotMap[k] = int32(s)
	}
	return s
}

// add counts n series more of pair k=v.
func (c *pairCounts) add(k, v uint64, n uint32) {
	if v < denseUIDs {
		s := c.slot(k)
		ps, pi := c.pages[s], int(v>>pageBits)
		if pi < len(ps) && ps[pi] != nil {
			ps[pi][v&(pageLen-1)] += n
			return
		}
		if c.budget > 0 {
			c.budget--
			if pi >= len(ps) {
				ps = append(ps, make([]*page, pi+1-len(ps))...)
				c.pages[s] = ps
			}
			ps[pi] = c.newPage()
			ps[pi][v&(pageLen-1)] += n
			return
		}
	}
	c.other[[2]uint64{k, v}] += n
}

// merge adds o's counts to c's; o's pages may become c's.
func (c *pairCounts) merge(o *pairCounts) {
	for os, k := range o.tagks {
		s := c.slot(k)
		for pi, p := range o.pages[os] {
			if p == nil {
				continue
			}
			ps := c.pages[s]
			if pi >= len(ps) {
				ps = append(ps, make([]*page, pi+1-len(ps))...)
				c.pages[s] = ps
			}
			if ps[pi] == nil {
				ps[pi] = p
				continue
			}
			dst := ps[pi]
			for i, n := range p {
				dst[i] += n
			}
			if c.pool != nil {
				clear(p[:])
				c.pool.Put(p)
			}
		}
		o.pages[os] = nil
	}
	for kv, n := range o.other {
		c.other[kv] += n
	}
}

// each calls fn with every pair counted and its series, the pages' in
// UID order, then the map's.
func (c *pairCounts) each(fn func(tagk, tagv, n uint64)) {
	for s, k := range c.tagks {
		for pi, p := range c.pages[s] {
			if p == nil {
				continue
			}
			base := uint64(pi) << pageBits
			for i, n := range p {
				if n != 0 {
					fn(k, base+uint64(i), uint64(n))
				}
			}
		}
	}
	for kv, n := range c.other {
		fn(kv[0], kv[1], uint64(n))
	}
}
