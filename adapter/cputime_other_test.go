//go:build !unix

package adapter

import "time"

// processCPU is unknown here: benchmarks report 0.
func processCPU() time.Duration { return 0 }
