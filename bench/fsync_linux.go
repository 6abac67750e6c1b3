package bench

import (
	"os"
	"syscall"
)

// fdatasync flushes f's data (not its metadata unless needed to read the
// data back), as SQLite's WAL commit does with synchronous=NORMAL/FULL.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
