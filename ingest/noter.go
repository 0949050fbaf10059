package ingest

import (
	"context"

	"github.com/promhbase/promhbase/store"
)

// RowNoter learns which rows the write path wrote, for example to compact
// them once their hour has ended (compact.Scheduler). NoteRows gets the
// Puts of one request after the store answered, whatever it answered (rows
// of a failed request may have landed). It runs on the request's path: it
// must be cheap, must not block on I/O, and must copy what it keeps, as the
// Puts' memory is reused once it returns.
type RowNoter interface {
	NoteRows(puts []store.Put)
}

// CheckedRowNoter learns which rows the write path wrote where the noting
// may fail and must not be lost (the rollups' hours built, the results
// cache's log in the store, which other replicas read). NoteRowsChecked
// gets the Puts of one request after the store answered, before the
// request is acknowledged; its error fails the request as a store error
// does, so that the sender writes it again. It may block on I/O within
// ctx, the request's (its write budget), and must copy what it keeps.
type CheckedRowNoter interface {
	NoteRowsChecked(ctx context.Context, puts []store.Put) error
}
