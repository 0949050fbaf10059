package storetest

import "time"

// WaitPast returns once this machine's clock is past the millisecond ms.
// The embedded store, and HBase in the tests (on this machine), stamp a
// write with the clock's millisecond; on HBase a delete marker hides what
// is written in its own millisecond. A test that writes after a delete,
// or wants a newer version than ms, waits for the clock itself: no event
// of the store tells, and the stores read the real clock (an HBase server
// cannot be put on synctest's).
func WaitPast(ms int64) {
	for {
		left := time.Until(time.UnixMilli(ms + 1))
		if left <= 0 {
			return
		}
		time.Sleep(left)
	}
}
