//go:build unix && !linux

package main

import "syscall"

// pipe creates a blocking, close-on-exec pipe: p[0] is the read end.
// Not every Unix has pipe2: the flag is set after creation, which is
// enough here, where no other goroutine starts a process meanwhile.
func pipe(p *[2]int) error {
	if err := syscall.Pipe(p[:]); err != nil {
		return err
	}
	syscall.CloseOnExec(p[0])
	syscall.CloseOnExec(p[1])
	return nil
}
