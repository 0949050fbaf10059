//go:build netbsd

package embedded

import "golang.org/x/sys/unix"

// freeBytes returns the bytes an unprivileged writer may still take on
// dir's filesystem (statvfs: available blocks × fragment size).
func freeBytes(dir string) (int64, error) {
	var st unix.Statvfs_t
	if err := unix.Statvfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail * st.Frsize), nil //nolint:gosec // below 2^63 on any disk
}
