//go:build race

package limits

// raceEnabled reports whether the race detector is on; allocation budgets
// are not meaningful under it.
const raceEnabled = true
