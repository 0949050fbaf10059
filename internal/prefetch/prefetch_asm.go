//go:build amd64 || arm64

package prefetch

import "unsafe"

// T0 starts loading the cache line at p into every level of the CPU's
// caches (x86's PREFETCHT0, arm64's PRFM PLDL1KEEP).
//
//go:noescape
func T0(p unsafe.Pointer)
