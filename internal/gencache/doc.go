// Package gencache holds the bounded in-memory caches of the write and
// read paths: maps of two generations, the older dropped whole when the
// newer fills up, so that memory stays bounded without per-entry
// bookkeeping. Cache maps strings to any value; ByteCache maps comparable
// keys to short byte strings kept in an Arena of pointer-free chunks the
// garbage collector never scans; Generations is the machinery both share
// with the series cache (package series). NewCollector exports their sizes
// and hit counts.
package gencache
