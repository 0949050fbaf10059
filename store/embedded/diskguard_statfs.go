//go:build darwin || freebsd || dragonfly

package embedded

import "golang.org/x/sys/unix"

// freeBytes returns the bytes an unprivileged writer may still take on
// dir's filesystem (statfs: available blocks × block size).
func freeBytes(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil //nolint:gosec,unconvert // the field types differ by system
}
