//go:build unix

package outpath

import "syscall"

// accessWrite reports whether this process may create files in dir
// (access(2) with W_OK|X_OK; read-only file systems are refused too).
func accessWrite(dir string) error {
	return syscall.Access(dir, 0x2|0x1)
}
