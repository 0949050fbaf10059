//go:build !amd64 && !arm64

package prefetch

import "unsafe"

// T0 does nothing on this architecture.
func T0(p unsafe.Pointer) {}
