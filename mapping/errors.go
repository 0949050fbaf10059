package mapping

import "errors"

// Sentinel errors of the byte-layout codecs. Returned errors wrap one of
// them (check with errors.Is) and add the values involved.
var (
	// ErrInvalidLayout is wrapped by [Layout.Validate].
	ErrInvalidLayout = errors.New("mapping: invalid layout")
	// ErrMalformedRowKey is wrapped when a row key or the UIDs meant for
	// one do not fit the layout.
	ErrMalformedRowKey = errors.New("mapping: malformed row key")
	// ErrMalformedCell is wrapped when a data-point column cannot be
	// decoded: lengths that do not add up, a value length no reader
	// accepts, a bad meta byte.
	ErrMalformedCell = errors.New("mapping: malformed cell")
	// ErrMalformedValue is wrapped by [DecodeValue].
	ErrMalformedValue = errors.New("mapping: malformed value")
	// ErrTimestampRange is wrapped by [SplitMs] for a timestamp outside
	// what a row key can hold (before 1970 or beyond 32-bit seconds).
	ErrTimestampRange = errors.New("mapping: timestamp out of range")
)
