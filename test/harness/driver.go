package harness

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// KillWait bounds how long a Driver's cleanup waits for the process to be
// reaped after SIGKILL.
const KillWait = 10 * time.Second

// TailBytes is how much of a process's stderr failure messages quote (see
// Driver.Tail).
const TailBytes = 4000

// ErrNoLine is returned by Driver.TryRead when no line arrived in time.
var ErrNoLine = errors.New("harness: no line within the deadline")

// Options describe one process a test drives through its stdio; the zero
// value of every field but Argv is a usable default.
type Options struct {
	// Argv is the command line: Argv[0] the executable (a path, or a name
	// looked up in PATH), the rest its arguments. It must not be empty.
	Argv []string
	// Dir is the working directory; "" means the test process's.
	Dir string
	// Env is appended to os.Environ() (a later entry for the same name wins).
	Env []string
	// Setpgid puts the process in a process group of its own.
	Setpgid bool
	// KillGroup makes cleanup send SIGKILL to the whole process group
	// (needs Setpgid) instead of to the process alone.
	KillGroup bool
	// Cred, when set, runs the process as another user.
	Cred *syscall.Credential
	// WaitDelay is exec.Cmd.WaitDelay: how long Wait waits for the stdio
	// pipes to close after the process exits (0: until they close). Set it
	// when a child that may outlive the process inherits its stderr.
	WaitDelay time.Duration
	// LineBuffer is the capacity of Lines, in lines (0 means 4096). A full
	// buffer stops the reader, which stops the process's writes.
	LineBuffer int
	// SendTimeout bounds one Send (0: no bound); a Send to a process that
	// stopped reading its stdin then fails instead of hanging.
	SendTimeout time.Duration
	// CleanupGrace is how long cleanup waits for the process to exit after
	// closing its stdin before it sends SIGKILL (0: kill at once).
	CleanupGrace time.Duration
	// Name names the process in failure messages ("" means "gatehouse").
	Name string
}

// Driver is a started process with a scripted client on its stdio: the
// test writes exact bytes to its stdin and reads exact lines from its
// stdout, each read with a deadline; its stderr is captured. Every method
// that fails the test calls t.Fatalf, so it must be called from the test's
// own goroutine; Sent, Received, Exited, Tail and the Stderr buffer are
// safe from any goroutine.
//
// Cleanup (registered with t.Cleanup by Start) closes stdin, waits
// Options.CleanupGrace for the process to exit and kills it (or its group)
// otherwise, sends SIGKILL to every process named in a pid file given to
// KillAtCleanup that is still alive, waits at most KillWait for the
// process to be reaped, then runs the functions given to OnCleanup, in
// order.
type Driver struct {
	// Cmd is the started command; Cmd.ProcessState is set once Done is
	// closed.
	Cmd *exec.Cmd
	// Lines receives every line the process writes to stdout, terminator
	// included (a last line without one too); it is closed at EOF.
	Lines chan []byte
	// Stderr holds everything the process wrote to stderr.
	Stderr *SyncBuffer
	// Done is closed once stdout has been read to its end and the process
	// has been waited for.
	Done chan struct{}

	t     testing.TB
	opts  Options
	stdin *os.File

	mu   sync.Mutex
	sent bytes.Buffer // every byte the client wrote, in order
	got  bytes.Buffer // every byte read from stdout, in order

	pidFiles []string
	after    []func()
}

// Start starts the process o describes and registers its cleanup; it fails
// the test when the process cannot be started. Stdin is a pipe of the
// driver's own (its write end supports deadlines, see SendTimeout); Wait
// runs only after stdout has been read to EOF, so no line written before
// the exit is lost.
func Start(t testing.TB, o Options) *Driver {
	t.Helper()
	if len(o.Argv) == 0 {
		t.Fatal("harness: Start without a command")
	}
	if o.Name == "" {
		o.Name = "gatehouse"
	}
	if o.LineBuffer == 0 {
		o.LineBuffer = 4096
	}
	cmd := exec.Command(o.Argv[0], o.Argv[1:]...)
	cmd.Dir = o.Dir
	cmd.Env = append(os.Environ(), o.Env...)
	cmd.WaitDelay = o.WaitDelay
	if o.Setpgid || o.Cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: o.Setpgid, Credential: o.Cred}
	}
	stdinR, stdin, err := os.Pipe()
	if err != nil {
		t.Fatalf("harness: stdin pipe: %v", err)
	}
	cmd.Stdin = stdinR
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		stdinR.Close()
		stdin.Close()
		t.Fatalf("harness: stdout pipe: %v", err)
	}
	d := &Driver{Cmd: cmd, Lines: make(chan []byte, o.LineBuffer), Stderr: &SyncBuffer{}, Done: make(chan struct{}), t: t, opts: o, stdin: stdin}
	cmd.Stderr = d.Stderr
	err = cmd.Start()
	stdinR.Close()
	if err != nil {
		stdin.Close()
		t.Fatalf("start %s: %v", o.Name, err)
	}
	go func() {
		br := bufio.NewReaderSize(stdout, 1<<20)
		for {
			l, err := br.ReadBytes('\n')
			if len(l) > 0 {
				d.mu.Lock()
				d.got.Write(l)
				d.mu.Unlock()
				d.Lines <- l
			}
			if err != nil {
				close(d.Lines)
				_ = cmd.Wait()
				close(d.Done)
				return
			}
		}
	}()
	t.Cleanup(d.cleanup)
	return d
}

func (d *Driver) cleanup() {
	_ = d.stdin.Close()
	if !d.Exited() {
		select {
		case <-d.Done:
		case <-time.After(d.opts.CleanupGrace):
			if d.opts.KillGroup {
				_ = syscall.Kill(-d.Cmd.Process.Pid, syscall.SIGKILL)
			} else {
				_ = d.Cmd.Process.Kill()
			}
		}
	}
	// Before waiting: a child that outlives the process may hold its
	// stdout or stderr open, and Done waits for both to close.
	for _, f := range d.pidFiles {
		if pid := ReadPID(f); pid > 0 && Alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	select {
	case <-d.Done:
	case <-time.After(KillWait):
	}
	for _, f := range d.after {
		f()
	}
}

// KillAtCleanup registers pid files (as the fake server writes them with
// --marker or --grandchild) whose processes cleanup kills if they are
// still running.
func (d *Driver) KillAtCleanup(pidFiles ...string) { d.pidFiles = append(d.pidFiles, pidFiles...) }

// OnCleanup registers f to run at cleanup once the process is gone (for
// example to check its stderr).
func (d *Driver) OnCleanup(f func()) { d.after = append(d.after, f) }

// Send writes s to the process's stdin exactly as it is (the caller adds
// the terminator), failing the test when the write fails or, with
// Options.SendTimeout, does not finish in time.
func (d *Driver) Send(s string) {
	d.t.Helper()
	d.mu.Lock()
	d.sent.WriteString(s)
	d.mu.Unlock()
	if d.opts.SendTimeout > 0 {
		_ = d.stdin.SetWriteDeadline(time.Now().Add(d.opts.SendTimeout))
	}
	if _, err := io.WriteString(d.stdin, s); err != nil {
		d.t.Fatalf("write to %s: %v\nstderr:\n%s", d.opts.Name, err, d.Tail())
	}
}

// SendLine writes s and a LF.
func (d *Driver) SendLine(s string) { d.t.Helper(); d.Send(s + "\n") }

// Sent returns every byte the client wrote so far.
func (d *Driver) Sent() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sent.String()
}

// Received returns a copy of every byte read from the process's stdout so
// far (including lines not yet taken from Lines).
func (d *Driver) Received() []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	return bytes.Clone(d.got.Bytes())
}

// CloseStdin closes the process's stdin (client EOF); closing twice is
// harmless.
func (d *Driver) CloseStdin() { _ = d.stdin.Close() }

// TryRead returns the next stdout line, terminator included; io.EOF once
// stdout is closed and every line was read, ErrNoLine when none arrives
// within timeout.
func (d *Driver) TryRead(timeout time.Duration) ([]byte, error) {
	select {
	case l, ok := <-d.Lines:
		if !ok {
			return nil, io.EOF
		}
		return l, nil
	case <-time.After(timeout):
		return nil, ErrNoLine
	}
}

// Read returns the next stdout line, terminator included, failing the test
// at EOF or when none arrives within timeout.
func (d *Driver) Read(timeout time.Duration) []byte {
	d.t.Helper()
	l, err := d.TryRead(timeout)
	switch {
	case errors.Is(err, io.EOF):
		d.t.Fatalf("%s closed its stdout; stderr:\n%s", d.opts.Name, d.Tail())
	case err != nil:
		d.t.Fatalf("no line from %s within %v; stderr:\n%s", d.opts.Name, timeout, d.Tail())
	}
	return l
}

// ReadUntil reads lines until match accepts one, all within timeout in
// total, and returns that line and the lines before it; it fails the test
// as Read does.
func (d *Driver) ReadUntil(timeout time.Duration, match func(line []byte) bool) (line []byte, before [][]byte) {
	d.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		l := d.Read(time.Until(deadline))
		if match(l) {
			return l, before
		}
		before = append(before, l)
	}
}

// ExpectNoLine fails the test if the process writes a line within timeout
// (stdout closing is not a line).
func (d *Driver) ExpectNoLine(timeout time.Duration) {
	d.t.Helper()
	if l, err := d.TryRead(timeout); err == nil {
		d.t.Fatalf("unexpected line from %s: %.300q", d.opts.Name, l)
	}
}

// Wait waits at most timeout for the process to exit and returns its exit
// code (-1 when a signal ended it); it fails the test on timeout.
func (d *Driver) Wait(timeout time.Duration) int {
	d.t.Helper()
	select {
	case <-d.Done:
		return d.Cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		d.t.Fatalf("%s did not exit within %v; stderr:\n%s", d.opts.Name, timeout, d.Tail())
	}
	return -1
}

// Exited reports whether the process has exited and been waited for.
func (d *Driver) Exited() bool {
	select {
	case <-d.Done:
		return true
	default:
		return false
	}
}

// Signal sends sig to the process itself (not its group), failing the test
// when that fails.
func (d *Driver) Signal(sig syscall.Signal) {
	d.t.Helper()
	if err := d.Cmd.Process.Signal(sig); err != nil {
		d.t.Fatalf("signal %s: %v", d.opts.Name, err)
	}
}

// Kill sends SIGKILL to the process alone (not its group) and waits at
// most timeout for it, failing the test when it is still there.
func (d *Driver) Kill(timeout time.Duration) {
	d.t.Helper()
	_ = d.Cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-d.Done:
	case <-time.After(timeout):
		d.t.Fatalf("%s survived SIGKILL", d.opts.Name)
	}
}

// Tail returns the last TailBytes bytes of the process's stderr, with "..."
// in front when it was cut, for failure messages.
func (d *Driver) Tail() string {
	s := d.Stderr.String()
	if len(s) > TailBytes {
		s = "..." + s[len(s)-TailBytes:]
	}
	return s
}

// WaitStderr waits at most timeout for the process's stderr to contain
// sub, failing the test otherwise. It polls every 10 ms.
func (d *Driver) WaitStderr(sub string, timeout time.Duration) {
	d.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if strings.Contains(d.Stderr.String(), sub) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	d.t.Fatalf("stderr does not contain %q after %v:\n%s", sub, timeout, d.Tail())
}
