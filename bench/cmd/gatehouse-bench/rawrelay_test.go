//go:build unix

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// rawRelayEnv makes the test binary act as `gatehouse-bench rawrelay --`.
const rawRelayEnv = "GATEHOUSE_BENCH_TEST_RAWRELAY"

func TestMain(m *testing.M) {
	if os.Getenv(rawRelayEnv) != "" {
		os.Exit(rawRelay(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// relayCmd runs argv behind the raw relay (this test binary re-executed).
func relayCmd(argv ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], argv...)
	cmd.Env = append(os.Environ(), rawRelayEnv+"=1")
	return cmd
}

func TestRawRelay(t *testing.T) {
	// Bytes both ways, unchanged: more than one 64 KiB read, CRLF, no
	// final line feed.
	in := bytes.Repeat([]byte("{\"jsonrpc\":\"2.0\",\"id\":1}\r\n"), 10000)
	in = append(in, "tail"...)
	cmd := relayCmd("cat")
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("relay cat: %v", err)
	}
	if !bytes.Equal(out, in) {
		t.Fatalf("relayed %d bytes, want the %d given, unchanged", len(out), len(in))
	}

	tests := []struct {
		name string
		argv []string
		code int
	}{
		{"exit status passed on", []string{"sh", "-c", "exit 3"}, 3},
		{"killed by a signal", []string{"sh", "-c", "kill -TERM $$"}, 128 + 15},
		{"no command", nil, 64},
		{"command not found", []string{"gatehouse-bench-no-such-command"}, 71},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := relayCmd(tc.argv...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tc.code {
				t.Fatalf("exit: %v (stderr %q), want code %d", err, stderr.String(), tc.code)
			}
		})
	}
}
