// Package harness is what the end-to-end test packages (test/relay,
// test/receipts, test/evidence, test/e2e) share:
//
//   - Setup: a temporary directory holding the binaries they drive, built
//     once per test binary with `go build`, and an XDG_STATE_HOME of its
//     own so that every gatehouse the tests start keeps its audit ledger
//     and checkpoint key there, not in the user's home;
//   - Start and Driver: one process (gatehouse wrap, or any command) with a
//     scripted client on its stdio: exact bytes written to stdin, stdout
//     read line by line with a deadline, stderr captured, the exit status
//     waited for with a bound, and the process killed at cleanup;
//   - RunCLI: a command run to completion under a deadline (gatehouse
//     verify, ledger, keys);
//   - small helpers several packages need: pid files and liveness
//     (ReadPID, WaitPID, Alive, ExpectGone), files (ReadFile, SplitLines,
//     Testdata) and JSON strings (JSONString, Str).
//
// What stays in each package is what is its own: the frames it sends, how
// it matches responses, and the records (receipts, ledger entries) it
// checks.
package harness

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
)

// Build is one binary to build: Out is its file name in the directory, Pkg
// its package path, Flags extra `go build` flags (e.g. -race).
type Build struct {
	Out, Pkg string
	Flags    []string
}

// Setup creates a temporary directory (name prefix prefix, mode 0755 so
// that a test may run a binary as another user), points XDG_STATE_HOME at
// its "state" subdirectory (created 0700), and builds every binary into it
// concurrently. It returns the directory and a cleanup function that
// removes it. Errors name the package whose build failed; the build's own
// output goes to stderr.
func Setup(prefix string, builds ...Build) (dir string, cleanup func(), err error) {
	dir, err = os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, fmt.Errorf("harness: %w", err)
	}
	cleanup = func() { os.RemoveAll(dir) }
	fail := func(err error) (string, func(), error) {
		cleanup()
		return "", nil, fmt.Errorf("harness: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return fail(err)
	}
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		return fail(err)
	}
	if err := os.Setenv("XDG_STATE_HOME", state); err != nil {
		return fail(err)
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		goCmd = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	errs := make([]error, len(builds))
	var wg sync.WaitGroup
	for i, b := range builds {
		wg.Go(func() {
			args := append(append([]string{"build", "-o", filepath.Join(dir, b.Out)}, b.Flags...), b.Pkg)
			cmd := exec.Command(goCmd, args...)
			cmd.Stdout = os.Stderr
			cmd.Stderr = os.Stderr
			if err := cmd.Run(); err != nil {
				errs[i] = fmt.Errorf("go build %s: %w", b.Pkg, err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fail(err)
	}
	return dir, cleanup, nil
}

// SyncBuffer is a bytes.Buffer safe for concurrent use: a process's stderr
// written by one goroutine and read by the test.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p; it never fails.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
