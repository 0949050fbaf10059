package embedded

import (
	"os"
	"syscall"
)

// freeBytes returns the bytes an unprivileged writer may still take on
// dir's filesystem (statfs: available blocks × block size).
func freeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * st.Bsize, nil
}

// allocate gives f size bytes of real blocks (fallocate), not a sparse
// file, so that removing it frees them.
func allocate(f *os.File, size int64) error {
	for {
		err := syscall.Fallocate(int(f.Fd()), 0, 0, size)
		if err != syscall.EINTR {
			return err
		}
	}
}
