//go:build !race

package dense

// raceEnabled reports whether the race detector is on; allocation budgets
// are not meaningful under it.
const raceEnabled = false
