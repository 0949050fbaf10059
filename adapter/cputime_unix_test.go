//go:build unix

package adapter

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) this process has used:
// benchmarks report it per operation, a figure that the machine's other
// load disturbs far less than wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
