//go:build !linux

package bench

import "os"

// fdatasync is fsync where fdatasync(2) does not exist.
func fdatasync(f *os.File) error { return f.Sync() }
