package e2e

import (
	"github.com/gatehouse-mcp/gatehouse/test/harness"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Lifecycle tests: exit codes, configuration refused before spawn, stderr
// passed through without blocking, shutdown of a server that will not stop,
// signals, and no process left behind.

// TestExitCodes checks each exit code of the CLI contract. When the fake
// server is the command, its marker file tells whether it was spawned.
func TestExitCodes(t *testing.T) {
	tests := []struct {
		name      string
		args      func(marker string) []string // gatehouse arguments
		stdin     string
		wantCode  int
		wantSpawn bool
		wantErr   string // in gatehouse's stderr
	}{
		{
			name: "server's own code on client EOF",
			args: func(m string) []string {
				return []string{"wrap", "--", fakeServerBin, "--marker", m, "--exit-code", "3"}
			},
			wantCode:  3,
			wantSpawn: true,
		},
		{
			name: "server's own code when it exits mid-session",
			args: func(m string) []string { return []string{"wrap", "--", fakeServerBin, "--marker", m} },
			// The call is decided before the tools/list result arrives: the
			// gateway fetches the catalog itself, which it does only after
			// notifications/initialized.
			stdin: `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
				`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n" +
				`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exit","arguments":{"code":5}}}` + "\n",
			wantCode:  5,
			wantSpawn: true,
		},
		{
			name:     "server killed by SIGKILL",
			args:     func(string) []string { return []string{"wrap", "--", "/bin/sh", "-c", "kill -KILL $$"} },
			wantCode: 128 + 9,
		},
		{
			name:     "server killed by SIGTERM",
			args:     func(string) []string { return []string{"wrap", "--", "/bin/sh", "-c", "kill -TERM $$"} },
			wantCode: 128 + 15,
		},
		{
			name:     "usage: no command",
			args:     func(string) []string { return []string{"wrap"} },
			wantCode: 64,
		},
		{
			name:     "usage: command without --",
			args:     func(m string) []string { return []string{"wrap", fakeServerBin, "--marker", m} },
			wantCode: 64,
		},
		{
			name:     "usage: unknown flag",
			args:     func(m string) []string { return []string{"wrap", "--no-such-flag", "--", fakeServerBin, "--marker", m} },
			wantCode: 64,
		},
		{
			name: "config: missing policy file",
			args: func(m string) []string {
				return []string{"wrap", "--policy", "/nonexistent/policy.yaml", "--", fakeServerBin, "--marker", m}
			},
			wantCode: 78,
			wantErr:  "/nonexistent/policy.yaml",
		},
		{
			name: "config: invalid policy",
			args: func(m string) []string {
				return []string{"wrap", "--policy", policyFile(t, "name: x\nrules: [oops\n"), "--", fakeServerBin, "--marker", m}
			},
			wantCode: 78,
		},
		{
			name: "config: decision log without event source",
			args: func(m string) []string {
				return []string{"wrap", "--decision-log", filepath.Join(t.TempDir(), "d.jsonl"), "--", fakeServerBin, "--marker", m}
			},
			wantCode: 78,
		},
		{
			name: "config: invalid event source",
			args: func(m string) []string {
				return []string{"wrap", "--decision-log", filepath.Join(t.TempDir(), "d.jsonl"), "--event-source", "not a uri", "--", fakeServerBin, "--marker", m}
			},
			wantCode: 78,
		},
		{
			name: "config: decision log in a missing directory",
			args: func(m string) []string {
				return []string{"wrap", "--decision-log", "/nonexistent/dir/d.jsonl", "--event-source", "gatehouse://e2e/x", "--", fakeServerBin, "--marker", m}
			},
			wantCode: 78,
		},
		{
			name: "config: decision log is the policy file",
			args: func(m string) []string {
				pol := policyFile(t, toolResultPolicy)
				return []string{"wrap", "--policy", pol, "--decision-log", pol, "--event-source", "gatehouse://e2e/x", "--", fakeServerBin, "--marker", m}
			},
			wantCode: 78,
		},
		{
			name: "config: tiny frame limit",
			args: func(m string) []string {
				return []string{"wrap", "--max-frame-bytes", "10", "--", fakeServerBin, "--marker", m}
			},
			wantCode: 78,
		},
		{
			name: "config: unknown --baseline (nothing created: the --state file stays absent)",
			args: func(m string) []string {
				state := filepath.Join(filepath.Dir(m), "never", "ledger.db")
				return []string{"wrap", "--baseline", "required", "--state", state, "--", fakeServerBin, "--marker", m}
			},
			wantCode: 78,
			wantErr:  `--baseline "required": want first_use or require`,
		},
		{
			name:     "server cannot be started",
			args:     func(string) []string { return []string{"wrap", "--", "/nonexistent/mcp-server"} },
			wantCode: 69,
		},
		{
			name:     "server is not executable",
			args:     func(string) []string { return []string{"wrap", "--", "/etc/hostname"} },
			wantCode: 69,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "spawned")
			code, _, stderr := runGatehouse(t, tt.stdin, tt.args(marker)...)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d\nstderr:\n%s", code, tt.wantCode, stderr)
			}
			if spawned := fileExists(marker); spawned != tt.wantSpawn {
				t.Errorf("server spawned: %v, want %v", spawned, tt.wantSpawn)
			}
			if !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("stderr lacks %q:\n%s", tt.wantErr, stderr)
			}
			if tt.wantCode == 78 && fileExists(filepath.Join(filepath.Dir(marker), "never")) {
				t.Errorf("a refused configuration created its --state directory")
			}
			if tt.wantCode >= 64 && tt.wantCode < 128 && strings.TrimSpace(stderr) == "" {
				t.Errorf("exit code %d without a message on stderr", tt.wantCode)
			}
		})
	}
}

// TestServerStderrIsDrained checks that a server writing a lot on stderr
// before answering is never blocked by gatehouse, and that its stderr is
// passed through.
func TestServerStderrIsDrained(t *testing.T) {
	const n = 100000
	p := startGatehouse(t, "wrap", "--", fakeServerBin, "--stderr-lines", strconv.Itoa(n))
	p.initialize("2025-06-18")
	p.CloseStdin()
	if code := p.wait(); code != 0 {
		t.Errorf("exit code %d", code)
	}
	if last := "stderr line " + strconv.Itoa(n) + " of " + strconv.Itoa(n); !strings.Contains(p.Stderr.String(), last) {
		t.Errorf("the server's stderr was not passed through (no %q)", last)
	}
}

// TestShutdown checks how gatehouse stops a server after client EOF: a
// server that ignores EOF gets SIGTERM after the grace period, one that
// also ignores SIGTERM gets SIGKILL after another; the exit code tells the
// signal, and the server's own child does not outlive gatehouse.
func TestShutdown(t *testing.T) {
	const grace = 300 * time.Millisecond
	tests := []struct {
		name       string
		serverArgs []string
		wantCode   int
		min, max   time.Duration
	}{
		{"exits at EOF", nil, 0, 0, 5 * time.Second},
		{"ignores EOF", []string{"--ignore-eof"}, 128 + 15, grace, grace + 5*time.Second},
		{"ignores EOF and SIGTERM", []string{"--ignore-eof", "--ignore-sigterm"}, 128 + 9, 2 * grace, 2*grace + 5*time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pidfile := filepath.Join(t.TempDir(), "grandchild.pid")
			args := append([]string{"wrap", "--shutdown-grace", grace.String(), "--", fakeServerBin, "--grandchild", pidfile}, tt.serverArgs...)
			p := startGatehouse(t, args...)
			p.initialize("2025-06-18")
			grandchild := harness.WaitPID(t, pidfile, 10*time.Second)
			t.Cleanup(func() { _ = syscall.Kill(grandchild, syscall.SIGKILL) })

			start := time.Now()
			p.CloseStdin()
			code := p.wait()
			took := time.Since(start)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d", code, tt.wantCode)
			}
			if took < tt.min || took > tt.max {
				t.Errorf("shutdown took %v, want between %v and %v", took, tt.min, tt.max)
			}
			if !waitFor(5*time.Second, func() bool { return !harness.Alive(grandchild) }) {
				t.Errorf("the server's child %d outlived gatehouse", grandchild)
			}
		})
	}
}

// TestSignalForwarding checks that SIGTERM or SIGINT sent to gatehouse
// reaches the server, and that gatehouse then exits with 128+N.
func TestSignalForwarding(t *testing.T) {
	tests := []struct {
		sig  syscall.Signal
		want int
	}{
		{syscall.SIGTERM, 128 + 15},
		{syscall.SIGINT, 128 + 2},
	}
	for _, tt := range tests {
		t.Run(tt.sig.String(), func(t *testing.T) {
			p := startGatehouse(t, "wrap", "--shutdown-grace", "5s", "--", fakeServerBin, "--ignore-eof")
			p.initialize("2025-06-18")
			if err := p.Cmd.Process.Signal(tt.sig); err != nil {
				t.Fatal(err)
			}
			if code := p.wait(); code != tt.want {
				t.Errorf("exit code %d, want %d", code, tt.want)
			}
		})
	}
}

// TestSessionEvents checks the session start and stop events around a run.
func TestSessionEvents(t *testing.T) {
	dir := t.TempDir()
	dl := filepath.Join(dir, "decisions.jsonl")
	src := "gatehouse://e2e/session"
	code, _, stderr := runGatehouse(t, "", "wrap", "--decision-log", dl, "--event-source", src, "--", fakeServerBin, "--exit-code", "4")
	if code != 4 {
		t.Fatalf("exit code %d\n%s", code, stderr)
	}
	events := readDecisionLog(t, dl, src)
	if ds := decisions(t, events, true); len(ds) != 0 {
		t.Errorf("decision events without tool calls: %+v", ds)
	}
	if len(events) != 2 {
		t.Fatalf("%d events, want start and stop", len(events))
	}
	if !strings.Contains(string(events[1].DataRaw), `"exit_code":4`) {
		t.Errorf("stop event does not carry the exit code 4: %s", events[1].DataRaw)
	}
	fi, err := os.Stat(dl)
	if err != nil {
		t.Fatal(err)
	}
	if mode := fi.Mode().Perm(); mode != 0o600 {
		t.Errorf("decision log mode %v, want 0600", mode)
	}
}

// TestConfigWarnings: warnings that do not refuse the configuration are
// given when they apply and only then: a --role that no rule names (when
// some rule reads principal.role), and evidence inside a directory the
// server is given.
func TestConfigWarnings(t *testing.T) {
	served := t.TempDir()
	apart := t.TempDir()
	const roleWarning = "appears in no rule"
	const servedWarning = "which the server is given"
	tests := []struct {
		name     string
		args     []string
		want     []string // in stderr
		wantNone []string // not in stderr
	}{
		{
			name:     "role that no rule names",
			args:     []string{"--no-ledger", "--policy", examplePolicy(t, "readonly-agent.yaml"), "--role", "readonly-agent", "--", fakeServerBin},
			want:     []string{`--role "readonly-agent" ` + roleWarning},
			wantNone: []string{servedWarning},
		},
		{
			name:     "role named by a rule",
			args:     []string{"--no-ledger", "--policy", examplePolicy(t, "readonly-agent.yaml"), "--role", "readonly_agent", "--", fakeServerBin},
			wantNone: []string{roleWarning},
		},
		{
			name:     "policy that reads no role",
			args:     []string{"--no-ledger", "--policy", policyFile(t, toolResultPolicy), "--role", "dev", "--", fakeServerBin},
			wantNone: []string{roleWarning},
		},
		{
			name: "decision log and ledger inside the served directory",
			args: []string{"--decision-log", filepath.Join(served, "logs", "d.jsonl"), "--event-source", "gatehouse://e2e/x",
				"--state", filepath.Join(served, "ledger.db"), "--", "/bin/true", "--root=" + served},
			want: []string{"the decision log " + filepath.Join(served, "logs", "d.jsonl") + " is inside " + served + ", " + servedWarning,
				"the audit ledger " + filepath.Join(served, "ledger.db") + " is inside"},
		},
		{
			name: "decision log a symbolic link into the served directory",
			args: []string{"--no-ledger", "--decision-log", filepath.Join(apart, "link.jsonl"), "--event-source", "gatehouse://e2e/x", "--", "/bin/true", served},
			want: []string{"the decision log " + filepath.Join(apart, "link.jsonl") + " is inside " + served},
		},
		{
			name:     "signing key in the served directory, PostgreSQL ledger",
			args:     []string{"--state", "postgres://u@127.0.0.1:1/db?password=hunter2", "--ledger-key", filepath.Join(served, "k.skey"), "--", "/bin/true", served},
			want:     []string{"the ledger signing key " + filepath.Join(served, "k.skey") + " is inside " + served},
			wantNone: []string{"hunter2"},
		},
		{
			name: "--require-receipts weaker than the policy's",
			args: []string{"--policy", policyFile(t, "name: r\nversion: \"1\"\nreceipts:\n  require: verified\n"), "--require-receipts", "none", "--server-id", "fs", "--", "/bin/true"},
			want: []string{`--require-receipts none overrides receipts.require verified that policy`, `for server "fs"`},
		},
		{
			name:     "--require-receipts as strict as the policy's",
			args:     []string{"--policy", policyFile(t, "name: r\nversion: \"1\"\nreceipts:\n  require: present\n"), "--require-receipts", "verified", "--", "/bin/true"},
			wantNone: []string{"overrides receipts.require"},
		},
		{
			name: "evidence beside the served directory",
			args: []string{"--decision-log", filepath.Join(apart, "d.jsonl"), "--event-source", "gatehouse://e2e/x",
				"--state", filepath.Join(apart, "ledger.db"), "--", "/bin/true", served},
			wantNone: []string{servedWarning},
		},
	}
	if err := os.MkdirAll(filepath.Join(served, "logs"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(served, "logs", "target.jsonl"), filepath.Join(apart, "link.jsonl")); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, stderr := runGatehouse(t, "", append([]string{"wrap"}, tt.args...)...)
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			for _, w := range tt.wantNone {
				if strings.Contains(stderr, w) {
					t.Errorf("stderr has %q:\n%s", w, stderr)
				}
			}
		})
	}
}
