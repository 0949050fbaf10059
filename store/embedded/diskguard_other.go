//go:build !(linux || darwin || freebsd || dragonfly || openbsd || netbsd || windows)

package embedded

// freeBytes cannot read the free space on this system (Pebble builds on
// few others): the disk guard is
// off (Store.DiskGuard says so, and serve logs it).
func freeBytes(string) (int64, error) { return 0, errFreeUnknown }
