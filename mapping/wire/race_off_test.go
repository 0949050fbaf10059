//go:build !race

package wire

// raceEnabled reports whether the race detector is on; allocation budgets
// are not meaningful under it.
const raceEnabled = false
