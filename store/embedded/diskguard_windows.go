package embedded

import "golang.org/x/sys/windows"

// freeBytes returns the bytes the calling user may still take on dir's
// volume (GetDiskFreeSpaceEx, quotas included).
func freeBytes(dir string) (int64, error) {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return 0, err
	}
	var avail uint64
	if err := windows.GetDiskFreeSpaceEx(p, &avail, nil, nil); err != nil {
		return 0, err
	}
	return int64(avail), nil //nolint:gosec // below 2^63 on any disk
}
