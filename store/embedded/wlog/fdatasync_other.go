//go:build !linux

package wlog

import "os"

// fdatasync makes f durable (fsync where fdatasync is not at hand).
func fdatasync(f *os.File) error { return f.Sync() }
