// Package stdio runs an MCP server as a child process for the stdio
// transport (MCP "Transports", stdio) and manages its life: started without
// a shell in its own process group, stderr passed through, stdin closed on
// client EOF, then SIGTERM and SIGKILL after grace periods, signals to the
// gateway forwarded to the group, and no process of the group left behind.
package stdio

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Child is a running MCP server process.
type Child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	pgid   int

	done  chan struct{}
	state *os.ProcessState
	err   error

	closeOnce sync.Once
}

// ErrStart wraps failures to start the server process.
var ErrStart = errors.New("server could not be started")

// Start starts argv[0] with arguments argv[1:], without a shell, with the
// gateway's environment, in a new process group. Its stderr is the given
// writer (the gateway's own stderr, so it is never blocked by the gateway).
// On Linux the child gets SIGKILL if the gateway dies. Errors wrap ErrStart.
func Start(argv []string, stderr io.Writer) (*Child, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("%w: no command", ErrStart)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = stderr
	cmd.SysProcAttr = sysProcAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("%w: stdin pipe: %w", ErrStart, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("%w: stdout pipe: %w", ErrStart, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	c := &Child{cmd: cmd, stdin: stdin, stdout: stdout, pgid: cmd.Process.Pid, done: make(chan struct{})}
	go func() {
		// Wait only for the process; the stdout pipe is read by the
		// gateway, which sees EOF on its own.
		state, err := cmd.Process.Wait()
		c.state, c.err = state, err
		close(c.done)
	}()
	return c, nil
}

// Stdin is the server's standard input.
func (c *Child) Stdin() io.Writer { return c.stdin }

// Stdout is the server's standard output.
func (c *Child) Stdout() io.Reader { return c.stdout }

// Pid is the server's process id (and its process group id).
func (c *Child) Pid() int { return c.pgid }

// Done is closed when the server process has exited.
func (c *Child) Done() <-chan struct{} { return c.done }

// CloseStdin closes the server's standard input, its graceful shutdown
// signal. Safe to call more than once.
func (c *Child) CloseStdin() {
	c.closeOnce.Do(func() { _ = c.stdin.Close() })
}

// Signal sends sig to the server's whole process group. A group that no
// longer exists is not an error.
func (c *Child) Signal(sig syscall.Signal) error {
	err := syscall.Kill(-c.pgid, sig)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal process group %d: %w", c.pgid, err)
	}
	return nil
}

// Shutdown closes stdin, waits up to grace for the server to exit, then
// sends SIGTERM to its group, waits up to grace again, then sends SIGKILL.
// It returns when the server has exited.
func (c *Child) Shutdown(grace time.Duration) {
	c.CloseStdin()
	if c.waitFor(grace) {
		return
	}
	_ = c.Signal(syscall.SIGTERM)
	if c.waitFor(grace) {
		return
	}
	_ = c.Signal(syscall.SIGKILL)
	<-c.done
}

// Terminate sends sig to the group, then SIGKILL after grace if the server
// is still running. It returns when the server has exited.
func (c *Child) Terminate(sig syscall.Signal, grace time.Duration) {
	_ = c.Signal(sig)
	if c.waitFor(grace) {
		return
	}
	_ = c.Signal(syscall.SIGKILL)
	<-c.done
}

func (c *Child) waitFor(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.done:
		return true
	case <-t.C:
		return false
	}
}

// Reap kills whatever is left of the server's process group (grandchildren
// the server started and did not stop), so that none outlives the gateway.
// Call it after the server exited.
func (c *Child) Reap() { _ = c.Signal(syscall.SIGKILL) }

// ExitStatus describes how the server ended. Call it after Done is closed.
type ExitStatus struct {
	// Code is the exit code, or -1 when the server was killed by a signal.
	Code int
	// Signal is the signal that killed the server, or 0.
	Signal syscall.Signal
}

// Status returns how the server ended; valid after Done is closed.
func (c *Child) Status() ExitStatus {
	<-c.done
	if c.state == nil {
		return ExitStatus{Code: -1}
	}
	if ws, ok := c.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ExitStatus{Code: -1, Signal: ws.Signal()}
	}
	return ExitStatus{Code: c.state.ExitCode()}
}
