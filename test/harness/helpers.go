package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// CLIResult is what one finished command printed and its exit status.
type CLIResult struct {
	Stdout, Stderr string
	// Code is the exit code (0 on success).
	Code int
}

// RunCLI runs argv (argv[0] the executable) to completion with no stdin,
// in dir ("" for the test's directory) with env appended to os.Environ(),
// killing it after timeout. It fails the test when the command cannot be
// run or does not finish in time; a non-zero exit is not a failure, it is
// returned in Code.
func RunCLI(t testing.TB, timeout time.Duration, dir string, env []string, argv ...string) CLIResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	r := CLIResult{Stdout: so.String(), Stderr: se.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.Code = ee.ExitCode()
	default:
		t.Fatalf("%s: %v", strings.Join(argv, " "), err)
	}
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish within %v; stderr:\n%s", strings.Join(argv, " "), timeout, r.Stderr)
	}
	return r
}

// ReadPID reads a pid file (as the fake server writes with --marker and
// --grandchild); it returns 0 when the file is absent or holds no number.
func ReadPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// WaitPID waits at most timeout for a pid file to hold a pid and returns
// it, failing the test otherwise. It polls every 10 ms.
func WaitPID(t testing.TB, path string, timeout time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if pid := ReadPID(path); pid > 0 {
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no pid in %s after %v", path, timeout)
	return 0
}

// Alive reports whether pid is a live process, read from /proc (Linux): a
// zombie has exited, it only waits for its parent, and is not alive.
func Alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] != 'Z' && b[i+2] != 'X'
}

// ExpectGone fails the test unless process pid (named what in the message)
// has ended within timeout. It polls every 10 ms.
func ExpectGone(t testing.TB, what string, pid int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for Alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) is still running %v after gatehouse exited", what, pid, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ReadFile returns the content of path, nil when it does not exist; any
// other error fails the test.
func ReadFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return b
}

// SplitLines splits b after every LF, terminators kept; a last line
// without LF is kept too. It returns nil for empty input.
func SplitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	ls := strings.SplitAfter(string(b), "\n")
	if ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}

// Testdata returns the absolute path of name in the test package's
// testdata directory (the test binary runs in the package directory).
func Testdata(name string) string {
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		panic(err)
	}
	return p
}

// JSONString returns s encoded as a JSON string, without HTML escaping
// (so "<", ">" and "&" stay as they are).
func JSONString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// Str decodes a JSON string value; "" when raw is absent or not a string.
func Str(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}
