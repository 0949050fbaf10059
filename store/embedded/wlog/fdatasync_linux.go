package wlog

import (
	"os"
	"syscall"
)

// fdatasync makes f's data durable without its metadata's times.
func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
