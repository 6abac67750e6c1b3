//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// rawRelay runs argv as a child and copies bytes between this process's
// stdin/stdout and the child's with blocking read(2) and write(2) of up to
// 64 KiB on the raw pipe descriptors: no framing, no parsing, and, unlike
// os/exec's pipes, no netpoller (the descriptors are blocking, so a read
// parks its thread in the kernel, as a C relay does). It is the floor of
// any Go stdio relay on this machine, beside bench/testdata/crelay.c, the
// same program in C. It returns the child's exit status, 64 without a
// command, 71 when the child cannot start.
func rawRelay(argv []string) int {
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "gatehouse-bench rawrelay: no command")
		return 64
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "gatehouse-bench rawrelay:", err)
		return 71
	}
	// Close-on-exec, so that the child holds only its own ends (dup2'd
	// to 0 and 1 by ForkExec), and sees EOF when this process closes its
	// end of the child's stdin.
	var toChild, fromChild [2]int
	if err := pipe(&toChild); err != nil {
		return 71
	}
	if err := pipe(&fromChild); err != nil {
		return 71
	}
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{uintptr(toChild[0]), uintptr(fromChild[1]), 2},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "gatehouse-bench rawrelay:", err)
		return 71
	}
	syscall.Close(toChild[0])
	syscall.Close(fromChild[1])
	done := make(chan struct{})
	go func() { pump(0, toChild[1]); syscall.Close(toChild[1]) }()
	go func() { pump(fromChild[0], 1); close(done) }()
	<-done // the child closed its stdout
	var ws syscall.WaitStatus
	for {
		if _, err := syscall.Wait4(pid, &ws, 0, nil); !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// pump copies from the descriptor from to the descriptor to until EOF or an
// error on either.
func pump(from, to int) {
	buf := make([]byte, 64<<10)
	for {
		n, err := syscall.Read(from, buf)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if n <= 0 {
			return
		}
		for off := 0; off < n; {
			w, err := syscall.Write(to, buf[off:n])
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if w <= 0 {
				return
			}
			off += w
		}
	}
}
