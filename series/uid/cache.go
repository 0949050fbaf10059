package uid

import (
	"encoding/binary"
	"hash/maphash"
	"unsafe"

	"github.com/promhbase/promhbase/internal/gencache"
)

// nameKey stands for a name in the forward UID cache: two 64-bit hashes
// of it under two seeds drawn at random when the process starts
// (hash/maphash). Two names share a key only if they agree in 128 bits of
// keyed hash (about 1 in 10^20 for a billion names; a sender without the
// seeds cannot search for a pair), as the series cache's keys.
type nameKey [2]uint64

// cacheShardBits is log2 of the shards of each UID cache direction and
// kind (gencache.ShardedByteCache): a first contact's requests each add
// thousands of names while the others look theirs up, and one lock a
// cache made them wait for each other (57 % of the write path's mutex
// wait in a first round of 100 k series on 2 cores). Caches of fewer
// than minShardedEntries entries (tests) keep one shard.
const (
	cacheShardBits    = 4
	minShardedEntries = 1 << 12
)

func shardBits(max int) uint {
	if max < minShardedEntries {
		return 0
	}
	return cacheShardBits
}

// uidCache is the forward cache of one kind: name -> UID.
type uidCache struct {
	seeds [2]maphash.Seed
	*gencache.ShardedByteCache[nameKey]
}

// newUIDCache returns a forward cache; a name's shard is the top bits of
// its key's second hash.
func newUIDCache(max int) *uidCache {
	return &uidCache{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
		ShardedByteCache: gencache.NewShardedByteCache(shardBits(max), max, func(k nameKey) uint64 { return k[1] })}
}

func (c *uidCache) key(name []byte) nameKey {
	return nameKey{maphash.Bytes(c.seeds[0], name), maphash.Bytes(c.seeds[1], name)}
}

// getName returns the cached UID of name; it does not allocate.
func (c *uidCache) getName(name []byte) ([]byte, bool) { return c.Get(c.key(name)) }

// keyString is key for a name held as a string.
func (c *uidCache) keyString(name string) nameKey {
	return nameKey{maphash.String(c.seeds[0], name), maphash.String(c.seeds[1], name)}
}

// putName caches uid as the UID of name.
func (c *uidCache) putName(name string, uid []byte) {
	c.Put(c.keyString(name), uid)
}

// nameCache is the reverse cache of one kind: UID -> name. A UID of up to
// 8 bytes is its own key, big-endian in a uint64; callers pass only UIDs
// of the kind's width, so no two share a key.
type nameCache struct {
	*gencache.ShardedByteCache[uint64]
}

// newNameCache returns a reverse cache; a UID's shard is the top bits of
// its key times a 64-bit odd constant (Fibonacci hashing), so that
// consecutive UIDs spread over the shards.
func newNameCache(max int) *nameCache {
	return &nameCache{gencache.NewShardedByteCache(shardBits(max), max, func(k uint64) uint64 { return k * 0x9E3779B97F4A7C15 })}
}

func uidKey(uid []byte) (uint64, bool) {
	if len(uid) > 8 {
		return 0, false
	}
	var b [8]byte
	copy(b[8-len(uid):], uid)
	return binary.BigEndian.Uint64(b[:]), true
}

// getUID returns the cached name of uid, copied: a string sharing the
// arena would keep its whole chunk alive for as long as the caller keeps
// the name (a metric list, say), past the budget.
func (c *nameCache) getUID(uid []byte) (string, bool) {
	k, ok := uidKey(uid)
	if !ok {
		return "", false
	}
	v, ok := c.Get(k)
	return string(v), ok
}

// putUID caches name as the name of uid.
func (c *nameCache) putUID(uid []byte, name string) {
	if k, ok := uidKey(uid); ok {
		c.Put(k, unsafe.Slice(unsafe.StringData(name), len(name)))
	}
}

// AddCaches adds the UID caches to caches for gencache.NewCollector, as
// "uid_forward_<kind>" and "uid_reverse_<kind>".
func (u *UIDs) AddCaches(caches map[string]gencache.StatsSource) {
	for k := range NumKinds {
		caches["uid_forward_"+k.String()] = u.fwd[k]
		caches["uid_reverse_"+k.String()] = u.rev[k]
	}
}
