// Package prefetch asks the CPU to start loading a cache line that a later
// load will need, without waiting for it: a lookup in a table larger than
// the CPU's caches can then overlap its miss with other work.
//
// T0 is a hint. It reads nothing the Go memory model sees, changes
// nothing, never faults (an address the process does not map is ignored
// by the instruction), and is a no-op on architectures without one.
package prefetch
