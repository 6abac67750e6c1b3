package main

import "syscall"

// pipe creates a blocking, close-on-exec pipe: p[0] is the read end.
func pipe(p *[2]int) error { return syscall.Pipe2(p[:], syscall.O_CLOEXEC) }
