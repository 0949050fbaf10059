package wlog

import (
	"encoding/binary"
	"fmt"
)

// Replay: a segment's records read back in order, a torn one ending them.

// ReadSegment calls fn with each record's payload of segment seg's file,
// in order. It reports torn when the records end before the file does.
func ReadSegment(path string, seg uint64, fn func(payload []byte) error) (torn bool, err error) {
	return ReadSegmentFS(OS, path, seg, fn)
}

// ReadSegmentFS is ReadSegment on fs.
func ReadSegmentFS(fs FS, path string, seg uint64, fn func(payload []byte) error) (torn bool, err error) {
	data, err := fs.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("read log segment %d: %w", seg, err)
	}
	torn, err = Replay(data, seg, fn)
	if err != nil {
		return false, fmt.Errorf("replay %s: %w", path, err)
	}
	return torn, nil
}

// Replay is ReadSegment on the segment's bytes. fn's payload is a slice
// of data.
func Replay(data []byte, seg uint64, fn func(payload []byte) error) (torn bool, err error) {
	for len(data) > 0 {
		if len(data) < HeaderSize {
			return true, nil
		}
		n := binary.LittleEndian.Uint32(data)
		if n > MaxRecord || uint64(n) > uint64(len(data)-HeaderSize) {
			return true, nil
		}
		payload := data[HeaderSize : HeaderSize+int(n)]
		if CRC(seg, payload) != binary.LittleEndian.Uint32(data[4:]) {
			return true, nil
		}
		if err := fn(payload); err != nil {
			return false, err
		}
		data = data[HeaderSize+int(n):]
	}
	return false, nil
}
