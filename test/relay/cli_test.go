package relay

import (
	"fmt"
	"github.com/gatehouse-mcp/gatehouse/test/harness"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServerArgsLiteral checks that the server command runs without a shell:
// an argument with spaces, $HOME, a backquote, ';' and '*' reaches the server
// as one literal argument.
func TestServerArgsLiteral(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	odd := "a b  $HOME `echo x` ;*'\""
	marker := filepath.Join(dir, odd)
	banner := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"  two  spaces $HOME $(id) *"}}`
	h := startGH(t, run{server: []string{"--marker", marker, "--banner", banner}})
	h.KillAtCleanup(marker)
	if got := h.read(5 * time.Second); got != banner+"\n" {
		t.Errorf("banner arrived as %q, want %q", got, banner+"\n")
	}
	expectResult(t, h.call(ping("1"), "1"), "1")
	h.CloseStdin()
	if code := h.Wait(5 * time.Second); code != 0 {
		t.Errorf("exit code %d, want 0\n%s", code, h.Tail())
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the server did not get the literal argument %q: %v", marker, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("files in the marker dir: %q, want only %q", names, odd)
	}
}

// TestServerEnvironmentInherited checks that the server gets Gatehouse's
// environment. The server command here is itself a shell (the test's
// choice) that writes the variable to a file and execs the fake server.
func TestServerEnvironmentInherited(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	envFile := filepath.Join(dir, "env")
	const value = "inherited value with spaces=and=equals"
	h := startGH(t, run{
		env:     []string{"GATEHOUSE_RELAY_TEST_VAR=" + value},
		command: []string{"/bin/sh", "-c", `printf '%s' "$GATEHOUSE_RELAY_TEST_VAR" > "$1"; exec "$2"`, "sh", envFile, fakeBin},
	})
	expectResult(t, h.call(ping("1"), "1"), "1")
	h.CloseStdin()
	if code := h.Wait(5 * time.Second); code != 0 {
		t.Errorf("exit code %d\n%s", code, h.Tail())
	}
	if got := readFile(t, envFile); got != value {
		t.Errorf("server saw GATEHOUSE_RELAY_TEST_VAR=%q, want %q", got, value)
	}
}

// TestServerStderrDrained checks that the server's stderr is drained
// continuously and passed to Gatehouse's stderr: a server that writes
// 200000 lines to stderr before reading stdin is not blocked.
func TestServerStderrDrained(t *testing.T) {
	t.Parallel()
	h := startGH(t, run{server: []string{"--stderr-lines", "200000"}})
	expectResult(t, h.call(initialize("1", "2025-06-18"), "1"), "1")
	h.CloseStdin()
	if code := h.Wait(10 * time.Second); code != 0 {
		t.Errorf("exit code %d", code)
	}
	errOut := h.Stderr.String()
	for _, want := range []string{"fakeserver: stderr line 1 of 200000\n", "fakeserver: stderr line 200000 of 200000\n"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("gatehouse's stderr lacks the server's %q", want)
		}
	}
}

// TestRefusedConfigNeverSpawns checks that everything checkable is checked
// before the server is spawned: each refused configuration exits 78, says
// why on stderr, and never starts the server (its --marker is absent).
func TestRefusedConfigNeverSpawns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	data, err := os.ReadFile(harness.Testdata("deny-delete.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pol, data, 0o644); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(pol, filepath.Join(dir, "link.jsonl")))
	must(os.Symlink(pol, filepath.Join(dir, "policy-link.yaml")))
	must(os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	must(os.Symlink(dir, filepath.Join(dir, "dirlink")))
	must(os.Link(pol, filepath.Join(dir, "hardlink.jsonl")))
	must(os.Mkdir(filepath.Join(dir, "adir"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "notadir"), nil, 0o644))
	relPol, err := filepath.Rel(mustGetwd(t), pol)
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "decisions.jsonl")

	tests := []struct {
		name  string
		flags []string
		want  []string // substrings of stderr
	}{
		{"policy with a bad rule names file, line and rule",
			[]string{"--policy", harness.Testdata("bad-rule.yaml")}, []string{"bad-rule.yaml:13", "rule broken_rule"}},
		{"missing policy file",
			[]string{"--policy", filepath.Join(dir, "nope.yaml")}, []string{"nope.yaml"}},
		{"decision log directory missing",
			[]string{"--decision-log", filepath.Join(dir, "missing", "log.jsonl"), "--event-source", eventSource}, []string{"missing"}},
		{"decision log directory is a file",
			[]string{"--decision-log", filepath.Join(dir, "notadir", "log.jsonl"), "--event-source", eventSource}, []string{"notadir"}},
		{"decision log is a directory",
			[]string{"--decision-log", filepath.Join(dir, "adir"), "--event-source", eventSource}, []string{"adir"}},
		{"decision log is the policy file",
			[]string{"--policy", pol, "--decision-log", pol, "--event-source", eventSource}, []string{"--decision-log"}},
		{"decision log is the policy file through a symlink",
			[]string{"--policy", pol, "--decision-log", filepath.Join(dir, "link.jsonl"), "--event-source", eventSource}, []string{"--decision-log"}},
		{"policy is the decision log through a symlink",
			[]string{"--policy", filepath.Join(dir, "policy-link.yaml"), "--decision-log", pol, "--event-source", eventSource}, []string{"--decision-log"}},
		{"decision log is the policy file through ..",
			[]string{"--policy", pol, "--decision-log", filepath.Join(dir, "sub", "..", "policy.yaml"), "--event-source", eventSource}, []string{"--decision-log"}},
		{"decision log is the policy file through a symlinked directory",
			[]string{"--policy", pol, "--decision-log", filepath.Join(dir, "dirlink", "policy.yaml"), "--event-source", eventSource}, []string{"--decision-log"}},
		{"decision log is the policy file through a relative path",
			[]string{"--policy", relPol, "--decision-log", pol, "--event-source", eventSource}, []string{"--decision-log"}},
		{"decision log is a hard link to the policy file",
			[]string{"--policy", pol, "--decision-log", filepath.Join(dir, "hardlink.jsonl"), "--event-source", eventSource}, []string{"--decision-log"}},
		{"decision log without an event source",
			[]string{"--decision-log", log}, []string{"--event-source"}},
		{"event source without a decision log",
			[]string{"--event-source", eventSource}, []string{"--event-source"}},
		{"event source not a URI",
			[]string{"--decision-log", log, "--event-source", "not a uri"}, []string{"--event-source"}},
		{"event source without ://",
			[]string{"--decision-log", log, "--event-source", "gatehouse:/x"}, []string{"--event-source"}},
		{"event source scheme starts with a digit",
			[]string{"--decision-log", log, "--event-source", "1gh://x"}, []string{"--event-source"}},
		{"event source with a space",
			[]string{"--decision-log", log, "--event-source", "gatehouse://local host"}, []string{"--event-source"}},
		{"event source empty after ://",
			[]string{"--decision-log", log, "--event-source", "gatehouse://"}, []string{"--event-source"}},
		{"max frame bytes too small",
			[]string{"--max-frame-bytes", "100"}, []string{"--max-frame-bytes"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			marker := filepath.Join(t.TempDir(), "marker")
			h := startGH(t, run{flags: tt.flags, server: []string{"--marker", marker}})
			h.KillAtCleanup(marker)
			code := h.Wait(10 * time.Second)
			if code != 78 {
				t.Errorf("exit code %d, want 78 (configuration refused)\n%s", code, h.Tail())
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("the server was spawned for a refused configuration")
			}
			errOut := h.Stderr.String()
			for _, w := range tt.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr does not mention %q:\n%s", w, errOut)
				}
			}
			if i >= 5 && i <= 11 {
				// The policy file must be left alone.
				if got, _ := os.ReadFile(pol); string(got) != string(data) {
					t.Errorf("the policy file was modified")
				}
			}
			if _, err := os.Stat(log); err == nil {
				t.Errorf("a refused configuration created the decision log")
			}
		})
	}
}

// TestOutputNeverAliasesLedgerFiles: an output path (the decision log,
// the request-receipts file) that names a file the run reads or keeps,
// the ledger's signing key, its verifier key, SQLite's side files, the
// receipt keys, is refused before the server starts, and the file is left
// as it was. Appending CloudEvents to the default signing key used to be
// accepted, and every later run then failed to load the key.
func TestOutputNeverAliasesLedgerFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	gh := filepath.Join(state, "gatehouse")
	if err := os.MkdirAll(gh, 0o700); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, name := range []string{"ledger.skey", "ledger.vkey", "ledger.skey.lock", "ledger.db", "ledger.db-lock", "ledger.db-wal", "ledger.db-shm"} {
		files[name] = filepath.Join(gh, name)
	}
	files["custom.db-shm"] = filepath.Join(dir, "custom.db-shm")
	// A --state that is a symlink: SQLite keeps its files beside the
	// target. And one with ".." after a symlinked directory, which the
	// kernel resolves from the symlink's target.
	if err := os.MkdirAll(filepath.Join(dir, "real", "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	files["real/x.db-wal"] = filepath.Join(dir, "real", "x.db-wal")
	files["real/a/ledger.db"] = filepath.Join(dir, "real", "a", "ledger.db")
	if err := os.Symlink(filepath.Join(dir, "real", "x.db"), filepath.Join(dir, "link.db")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "real", "a", "b"), filepath.Join(dir, "lnk")); err != nil {
		t.Fatal(err)
	}
	files["keys.yaml"] = filepath.Join(dir, "keys.yaml")
	files["other.skey"] = filepath.Join(dir, "other.skey")
	for name, p := range files {
		if err := os.WriteFile(p, []byte("kept: "+name+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	log := filepath.Join(dir, "decisions.jsonl")
	tests := []struct {
		name   string
		target string // the key of files the output names
		flags  []string
		flag   string // the refused flag, as stderr names it
	}{
		{"default signing key", "ledger.skey", nil, "--decision-log"},
		{"default verifier key", "ledger.vkey", nil, "--decision-log"},
		{"default key's lock file", "ledger.skey.lock", nil, "--decision-log"},
		{"default ledger's lock file", "ledger.db-lock", nil, "--decision-log"},
		{"default ledger's WAL", "ledger.db-wal", nil, "--decision-log"},
		{"custom ledger's shared memory file", "custom.db-shm", []string{"--state", filepath.Join(dir, "custom.db")}, "--decision-log"},
		{"receipt keys", "keys.yaml", []string{"--receipt-keys", filepath.Join(dir, "keys.yaml")}, "--decision-log"},
		{"explicit signing key", "other.skey", []string{"--ledger-key", filepath.Join(dir, "other.skey")}, "--decision-log"},
		{"request receipts on the default signing key", "ledger.skey", []string{"--decision-log", log}, "--request-receipts-out"},
		{"WAL beside a symlinked --state's target", "real/x.db-wal", []string{"--state", filepath.Join(dir, "link.db")}, "--decision-log"},
		{"--state through a symlinked directory and ..", "real/a/ledger.db", []string{"--state", dir + "/lnk/../ledger.db"}, "--decision-log"}, // not filepath.Join: it would drop the ".."
		{"default signing key with --no-ledger", "ledger.skey", []string{"--no-ledger"}, "--decision-log"},
		{"default ledger with --no-ledger", "ledger.db", []string{"--no-ledger"}, "--decision-log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			flags := append([]string{"--event-source", eventSource}, tt.flags...)
			if tt.flag == "--decision-log" {
				flags = append(flags, "--decision-log", files[tt.target])
			} else {
				flags = append(flags, tt.flag, files[tt.target])
			}
			marker := filepath.Join(t.TempDir(), "marker")
			h := startGH(t, run{flags: flags, server: []string{"--marker", marker}, env: []string{"XDG_STATE_HOME=" + state}})
			h.KillAtCleanup(marker)
			if code := h.Wait(10 * time.Second); code != 78 {
				t.Errorf("exit code %d, want 78 (configuration refused)\n%s", code, h.Tail())
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("the server was spawned for a refused configuration")
			}
			if errOut := h.Stderr.String(); !strings.Contains(errOut, tt.flag) || !strings.Contains(errOut, "is the same file as") && !strings.Contains(errOut, "aliases") {
				t.Errorf("stderr does not say that %s is the same file as another:\n%s", tt.flag, errOut)
			}
			if got, _ := os.ReadFile(files[tt.target]); string(got) != "kept: "+tt.target+"\n" {
				t.Errorf("%s was modified: %q", tt.target, got)
			}
		})
	}
}

// TestStateOpenedAsResolved: a SQLite --state with ".." after a symlinked
// directory is opened where the kernel resolves it (beside the symlink's
// target), the path the alias checks use, not where a lexical clean of the
// path points.
func TestStateOpenedAsResolved(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "real", "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "real", "a", "b"), filepath.Join(dir, "lnk")); err != nil {
		t.Fatal(err)
	}
	h := startGH(t, run{flags: []string{"--state", dir + "/lnk/../ledger.db"}})
	h.CloseStdin()
	if code := h.Wait(10 * time.Second); code != 0 {
		t.Fatalf("exit %d\n%s", code, h.Tail())
	}
	if _, err := os.Stat(filepath.Join(dir, "real", "a", "ledger.db")); err != nil {
		t.Errorf("the ledger is not where the kernel resolves --state: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ledger.db")); err == nil {
		t.Errorf("the ledger was created at the lexically cleaned path")
	}
}

// TestStateWithUnknownScheme: a --state that starts like a URL but is not
// a PostgreSQL URL is refused before the server starts, names only the
// scheme (the rest may hold a password), and creates nothing; it used to
// become a SQLite file named after the URL in the working directory.
func TestStateWithUnknownScheme(t *testing.T) {
	t.Parallel()
	for i, state := range []string{"mysql://u:hunter2@127.0.0.1/db", "postgres:/u:hunter2@127.0.0.1/db", "sqlite:///tmp/x.db", "file:ledger.db", "Postgres://u:hunter2@127.0.0.1/db",
		"mysql://127.0.0.1/db?pwd=hunter2", "host=127.0.0.1 user=u password=hunter2 dbname=x"} {
		t.Run(fmt.Sprint(i), func(t *testing.T) { // the name is in temporary paths: no password
			t.Parallel()
			dir := t.TempDir()
			marker := filepath.Join(t.TempDir(), "marker")
			h := startGH(t, run{flags: []string{"--state", state}, server: []string{"--marker", marker}, dir: dir})
			h.KillAtCleanup(marker)
			if code := h.Wait(10 * time.Second); code != 78 {
				t.Errorf("exit code %d, want 78 (configuration refused)\n%s", code, h.Tail())
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("the server was spawned for a refused configuration")
			}
			errOut := h.Stderr.String()
			if !strings.Contains(errOut, "not a ledger location") || strings.Contains(errOut, "hunter2") {
				t.Errorf("stderr should name the scheme and never the password:\n%s", errOut)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("the refused --state created %s in the working directory", left[0].Name())
			}
		})
	}
	// A file whose name starts like a URL is named with a directory; a
	// colon inside a file name (a timestamp) needs nothing.
	for _, state := range []string{"./mysql:x.db", "ledger-2026-11-30T18:38:00.db"} {
		dir := t.TempDir()
		h := startGH(t, run{flags: []string{"--state", state}, dir: dir})
		h.CloseStdin()
		if code := h.Wait(10 * time.Second); code != 0 {
			t.Fatalf("--state %s: exit %d\n%s", state, code, h.Tail())
		}
		if _, err := os.Stat(filepath.Join(dir, state)); err != nil {
			t.Errorf("--state %s: %v", state, err)
		}
	}
}

func mustGetwd(t testing.TB) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

// TestUnwritableDecisionLogDir checks that a decision log in a directory
// Gatehouse cannot write to is refused before spawn. As root, gatehouse runs
// as nobody so that directory permissions apply.
func TestUnwritableDecisionLogDir(t *testing.T) {
	t.Parallel()
	base, err := os.MkdirTemp("", "gatehouse-relay-unwritable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o777); err != nil {
		t.Fatal(err)
	}
	ro := filepath.Join(base, "readonly")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(base, "marker")
	state := filepath.Join(base, "state")
	if err := os.Mkdir(state, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(state, 0o777); err != nil {
		t.Fatal(err)
	}
	r := run{flags: []string{"--decision-log", filepath.Join(ro, "log.jsonl"), "--event-source", eventSource}, server: []string{"--marker", marker}, env: []string{"XDG_STATE_HOME=" + state}}
	if os.Geteuid() == 0 {
		r.cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	h := startGH(t, r)
	h.KillAtCleanup(marker)
	if code := h.Wait(10 * time.Second); code != 78 {
		t.Errorf("exit code %d, want 78\n%s", code, h.Tail())
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the server was spawned")
	}
	if !strings.Contains(h.Stderr.String(), "readonly") {
		t.Errorf("stderr does not name the directory:\n%s", h.Tail())
	}
	// A decision log file that exists but cannot be written is refused too.
	roFile := filepath.Join(base, "readonly.jsonl")
	if err := os.WriteFile(roFile, nil, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(roFile, 0o444); err != nil {
		t.Fatal(err)
	}
	r2 := r
	r2.flags = []string{"--decision-log", roFile, "--event-source", eventSource}
	h = startGH(t, r2)
	h.KillAtCleanup(marker)
	if code := h.Wait(10 * time.Second); code != 78 {
		t.Errorf("read-only decision log file: exit code %d, want 78\n%s", code, h.Tail())
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("read-only decision log file: the server was spawned")
	}
	// Control: the same run with a writable directory spawns the server,
	// so the refusal above is about the directory.
	r.flags = []string{"--decision-log", filepath.Join(base, "log.jsonl"), "--event-source", eventSource}
	h = startGH(t, r)
	h.KillAtCleanup(marker)
	expectResult(t, h.call(ping("1"), "1"), "1")
	h.CloseStdin()
	if code := h.Wait(10 * time.Second); code != 0 {
		t.Errorf("control run: exit code %d\n%s", code, h.Tail())
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("control run: the server did not start")
	}
}

// TestUsageErrors checks command-line misuse: exit 64, nothing spawned.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for name, args := range map[string][]string{
		"no command":           {"wrap"},
		"no -- before command": {"wrap", fakeBin},
		"unknown flag":         {"wrap", "--no-such-flag", "--", fakeBin},
		"bad log level":        {"wrap", "--log-level", "loud", "--", fakeBin},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := startGH(t, run{raw: args})
			if code := h.Wait(10 * time.Second); code != 64 {
				t.Errorf("exit code %d, want 64\n%s", code, h.Tail())
			}
		})
	}
}

// TestExitStatusIsServers checks that gatehouse exits with the server's own
// exit code, and that a server exiting first ends Gatehouse promptly while
// the client still holds its stdin open (no further client write needed),
// leaving no grandchild behind.
func TestExitStatusIsServers(t *testing.T) {
	t.Parallel()
	t.Run("exit tool", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		gc := filepath.Join(dir, "grandchild")
		h := startGH(t, run{flags: []string{"--shutdown-grace", "10s"}, server: []string{"--grandchild", gc}})
		h.KillAtCleanup(gc)
		h.handshake("2025-06-18")
		gpid := harness.WaitPID(t, gc, 5*time.Second)
		h.Send(toolCall("9", "exit", `{"code":7}`))
		start := time.Now()
		code := h.Wait(5 * time.Second)
		if code != 7 {
			t.Errorf("exit code %d, want the server's 7\n%s", code, h.Tail())
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("gatehouse took %v to end after the server exited", d)
		}
		harness.ExpectGone(t, "the server's grandchild", gpid, 2*time.Second)
	})
	t.Run("server exits by itself", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		gc := filepath.Join(dir, "grandchild")
		marker := filepath.Join(dir, "marker")
		h := startGH(t, run{flags: []string{"--shutdown-grace", "10s"}, server: []string{"--exit-after-ms", "500", "--exit-code", "3", "--grandchild", gc, "--marker", marker}})
		h.KillAtCleanup(gc, marker)
		expectResult(t, h.call(ping("1"), "1"), "1")
		gpid := harness.WaitPID(t, gc, 5*time.Second)
		spid := harness.WaitPID(t, marker, 5*time.Second)
		code := h.Wait(2500 * time.Millisecond) // 500 ms + a couple of seconds
		if code != 3 {
			t.Errorf("exit code %d, want the server's 3\n%s", code, h.Tail())
		}
		harness.ExpectGone(t, "the server", spid, 2*time.Second)
		harness.ExpectGone(t, "the server's grandchild", gpid, 2*time.Second)
	})
	t.Run("exit code at client EOF", func(t *testing.T) {
		t.Parallel()
		h := startGH(t, run{server: []string{"--exit-code", "5"}})
		expectResult(t, h.call(ping("1"), "1"), "1")
		h.CloseStdin()
		if code := h.Wait(5 * time.Second); code != 5 {
			t.Errorf("exit code %d, want 5\n%s", code, h.Tail())
		}
	})
}

// TestUnstartableCommand checks exit 69 when the server cannot be started.
func TestUnstartableCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notExec := filepath.Join(dir, "not-executable")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, argv := range map[string][]string{
		"missing":        {filepath.Join(dir, "no-such-server")},
		"not executable": {notExec},
		"a directory":    {dir},
		"not in PATH":    {"gatehouse-relay-test-no-such-command"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := startGH(t, run{command: argv})
			if code := h.Wait(10 * time.Second); code != 69 {
				t.Errorf("exit code %d, want 69\n%s", code, h.Tail())
			}
			if !strings.Contains(h.Stderr.String(), filepath.Base(argv[0])) {
				t.Errorf("stderr does not name the command:\n%s", h.Tail())
			}
		})
	}
}

// TestServerKilledBySignal checks exit 128+N and a stderr line saying so
// when the server is killed by signal N.
func TestServerKilledBySignal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sig  syscall.Signal
		name string
	}{{syscall.SIGKILL, "SIGKILL"}, {syscall.SIGTERM, "SIGTERM"}, {syscall.SIGHUP, "SIGHUP"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			marker := filepath.Join(dir, "marker")
			gc := filepath.Join(dir, "grandchild")
			h := startGH(t, run{server: []string{"--marker", marker, "--grandchild", gc}})
			h.KillAtCleanup(marker, gc)
			expectResult(t, h.call(ping("1"), "1"), "1")
			spid := harness.WaitPID(t, marker, 5*time.Second)
			gpid := harness.WaitPID(t, gc, 5*time.Second)
			if err := syscall.Kill(spid, tc.sig); err != nil {
				t.Fatal(err)
			}
			code := h.Wait(5 * time.Second)
			if code != 128+int(tc.sig) {
				t.Errorf("exit code %d, want %d", code, 128+int(tc.sig))
			}
			if !strings.Contains(h.Stderr.String(), "signal") || !strings.Contains(h.Stderr.String(), tc.name) {
				t.Errorf("stderr does not say the server was killed by %s:\n%s", tc.name, h.Tail())
			}
			harness.ExpectGone(t, "the server's grandchild", gpid, 2*time.Second)
		})
	}
}

// TestShutdownOnClientEOF checks the shutdown sequence after client EOF:
// the server's stdin is closed; a server that does not exit gets SIGTERM
// after the grace period, and SIGKILL after another one. No grandchild is
// left in any path.
func TestShutdownOnClientEOF(t *testing.T) {
	t.Parallel()
	const grace = time.Second
	tests := []struct {
		name     string
		server   []string
		code     int
		min, max time.Duration
	}{
		{"server exits at EOF", nil, 0, 0, grace - 100*time.Millisecond},
		{"server ignores EOF: SIGTERM after the grace", []string{"--ignore-eof"}, 128 + int(syscall.SIGTERM), grace, grace + 1500*time.Millisecond},
		{"server ignores EOF and SIGTERM: SIGKILL after two graces", []string{"--ignore-eof", "--ignore-sigterm"}, 128 + int(syscall.SIGKILL), 2 * grace, 2*grace + 1500*time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			gc := filepath.Join(dir, "grandchild")
			marker := filepath.Join(dir, "marker")
			h := startGH(t, run{flags: []string{"--shutdown-grace", grace.String()}, server: append([]string{"--grandchild", gc, "--marker", marker}, tt.server...)})
			h.KillAtCleanup(gc, marker)
			expectResult(t, h.call(ping("1"), "1"), "1")
			gpid := harness.WaitPID(t, gc, 5*time.Second)
			spid := harness.WaitPID(t, marker, 5*time.Second)
			start := time.Now()
			h.CloseStdin()
			code := h.Wait(10 * time.Second)
			d := time.Since(start)
			if code != tt.code {
				t.Errorf("exit code %d, want %d\n%s", code, tt.code, h.Tail())
			}
			if d < tt.min || d > tt.max {
				t.Errorf("gatehouse exited %v after client EOF, want between %v and %v", d, tt.min, tt.max)
			}
			harness.ExpectGone(t, "the server", spid, 2*time.Second)
			harness.ExpectGone(t, "the server's grandchild", gpid, 2*time.Second)
		})
	}
}

// TestSignalsReachServerGroup checks that SIGINT and SIGTERM sent to
// gatehouse are forwarded to the server's process group.
func TestSignalsReachServerGroup(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			gc := filepath.Join(dir, "grandchild")
			marker := filepath.Join(dir, "marker")
			h := startGH(t, run{flags: []string{"--shutdown-grace", "5s"}, server: []string{"--grandchild", gc, "--marker", marker}})
			h.KillAtCleanup(gc, marker)
			expectResult(t, h.call(ping("1"), "1"), "1")
			gpid := harness.WaitPID(t, gc, 5*time.Second)
			spid := harness.WaitPID(t, marker, 5*time.Second)
			start := time.Now()
			h.Signal(sig)
			code := h.Wait(4 * time.Second) // well before the 5 s grace
			if code != 128+int(sig) {
				t.Errorf("exit code %d, want %d (the server died of the forwarded signal)\n%s", code, 128+int(sig), h.Tail())
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v", d)
			}
			harness.ExpectGone(t, "the server", spid, 2*time.Second)
			harness.ExpectGone(t, "the server's grandchild", gpid, 2*time.Second)
		})
	}
	// The signal goes to the whole group, not only the server: a group
	// member that does not ignore SIGTERM dies at once while the server,
	// which ignores it, runs on until SIGKILL after the grace period.
	t.Run("group", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		gc := filepath.Join(dir, "grandchild")
		marker := filepath.Join(dir, "marker")
		const grace = 1500 * time.Millisecond
		h := startGH(t, run{
			flags:   []string{"--shutdown-grace", grace.String()},
			command: []string{"/bin/sh", "-c", `sleep 300 & echo $! > "$1"; exec "$2" --ignore-sigterm --marker "$3"`, "sh", gc, fakeBin, marker},
		})
		h.KillAtCleanup(gc, marker)
		expectResult(t, h.call(ping("1"), "1"), "1")
		gpid := harness.WaitPID(t, gc, 5*time.Second)
		spid := harness.WaitPID(t, marker, 5*time.Second)
		start := time.Now()
		h.Signal(syscall.SIGTERM)
		harness.ExpectGone(t, "the group member that does not ignore SIGTERM", gpid, grace/2)
		if !harness.Alive(spid) {
			t.Errorf("the server, which ignores SIGTERM, died before the grace period")
		}
		code := h.Wait(5 * time.Second)
		if d := time.Since(start); d < grace {
			t.Errorf("gatehouse exited %v after SIGTERM, before the %v grace", d, grace)
		}
		if code != 128+int(syscall.SIGKILL) {
			t.Errorf("exit code %d, want %d\n%s", code, 128+int(syscall.SIGKILL), h.Tail())
		}
		harness.ExpectGone(t, "the server", spid, 2*time.Second)
	})
}

// TestDefaultPolicyNotice checks the one stderr line saying that the
// built-in default policy applies when --policy is not given, and its
// absence with --policy.
func TestDefaultPolicyNotice(t *testing.T) {
	t.Parallel()
	count := func(h *gh) int {
		n := 0
		for _, l := range strings.Split(h.Stderr.String(), "\n") {
			if strings.Contains(l, "default policy") {
				n++
			}
		}
		return n
	}
	h := startGH(t, run{})
	expectResult(t, h.call(ping("1"), "1"), "1")
	h.CloseStdin()
	h.Wait(5 * time.Second)
	if n := count(h); n != 1 {
		t.Errorf("%d stderr lines about the default policy without --policy, want 1:\n%s", n, h.Tail())
	}
	if !strings.Contains(h.Stderr.String(), "built-in default") {
		t.Errorf("stderr does not say the built-in default applies:\n%s", h.Tail())
	}
	if !strings.Contains(h.Stderr.String(), "every decision recorded in the audit ledger)") {
		t.Errorf("stderr does not say where the decisions are recorded:\n%s", h.Tail())
	}
	// Nothing records the decisions: the line must not claim otherwise.
	h = startGH(t, run{flags: []string{"--no-ledger"}})
	expectResult(t, h.call(ping("1"), "1"), "1")
	h.CloseStdin()
	h.Wait(5 * time.Second)
	if errOut := h.Stderr.String(); !strings.Contains(errOut, "decisions are not recorded") || strings.Contains(errOut, "every decision recorded") {
		t.Errorf("with --no-ledger and no --decision-log, stderr should say decisions are not recorded:\n%s", h.Tail())
	}
	h = startGH(t, run{flags: []string{"--policy", harness.Testdata("deny-delete.yaml")}})
	expectResult(t, h.call(ping("1"), "1"), "1")
	h.CloseStdin()
	h.Wait(5 * time.Second)
	if n := count(h); n != 0 {
		t.Errorf("stderr mentions the default policy although --policy was given:\n%s", h.Tail())
	}
}

// TestServerArgsAfterDash checks that everything after "--" goes to the
// server as given, in order: its own flags (even ones gatehouse also has),
// a second "--", empty arguments, spaces and glob characters.
func TestServerArgsAfterDash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	argsFile := filepath.Join(dir, "args")
	want := []string{"--policy", "not-gatehouse's.yaml", "--", "-x", "", "a b", "$HOME", "*", "--decision-log"}
	script := `printf '%s\n' "$@" > "$GH_ARGS_FILE"; exec "$GH_FAKE"`
	h := startGH(t, run{
		env:     []string{"GH_ARGS_FILE=" + argsFile, "GH_FAKE=" + fakeBin},
		command: append([]string{"/bin/sh", "-c", script, "sh"}, want...),
	})
	expectResult(t, h.call(ping("1"), "1"), "1")
	h.CloseStdin()
	if code := h.Wait(5 * time.Second); code != 0 {
		t.Errorf("exit code %d\n%s", code, h.Tail())
	}
	if got := readFile(t, argsFile); got != strings.Join(want, "\n")+"\n" {
		t.Errorf("server arguments:\n%q\nwant\n%q", got, strings.Join(want, "\n")+"\n")
	}
}

// TestPipedSession checks a client that writes its whole session and closes
// its stdin at once: every answer still arrives before gatehouse exits 0.
func TestPipedSession(t *testing.T) {
	t.Parallel()
	h := startGH(t, run{})
	h.Send(initialize("1", "2025-06-18") + initialized + toolsList("2") + toolCall("3", "echo", `{"x":1}`) + ping("4"))
	h.CloseStdin()
	// JSON-RPC does not order answers: the tools/call may be answered after
	// the ping (it waits for the gateway's own tools/list when it arrives
	// before the client's tools/list result).
	got := map[string]bool{}
	for range 4 {
		line := h.read(5 * time.Second)
		m := decode(line)
		if m.Result == nil || m.Error != nil {
			t.Fatalf("got %.400q; want a result", line)
		}
		got[string(m.ID)] = true
	}
	for _, id := range []string{"1", "2", "3", "4"} {
		if !got[id] {
			t.Errorf("no result for id %s; got %v", id, got)
		}
	}
	if code := h.Wait(5 * time.Second); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

// TestServerExitWhileGrandchildHoldsStdout checks that a server that exits
// while a process it started still holds its stdout open ends gatehouse
// promptly all the same, and that process is killed.
func TestServerExitWhileGrandchildHoldsStdout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gc := filepath.Join(dir, "grandchild")
	h := startGH(t, run{
		flags:   []string{"--shutdown-grace", "10s"},
		command: []string{"/bin/sh", "-c", `sleep 300 & echo $! > "$1"; exec "$2" --exit-after-ms 400 --exit-code 4`, "sh", gc, fakeBin},
	})
	h.KillAtCleanup(gc)
	expectResult(t, h.call(ping("1"), "1"), "1")
	gpid := harness.WaitPID(t, gc, 5*time.Second)
	if code := h.Wait(3 * time.Second); code != 4 {
		t.Errorf("exit code %d, want 4\n%s", code, h.Tail())
	}
	harness.ExpectGone(t, "the process holding the server's stdout", gpid, 2*time.Second)
}

// TestConcurrentFirstStart checks that several gatehouse processes started
// at the same time on a fresh state directory (no audit ledger or key yet)
// all start and relay. The race is timing-dependent, so a few rounds run.
func TestConcurrentFirstStart(t *testing.T) {
	t.Parallel()
	for round := range 5 {
		state := stateDir(t)
		var hs []*gh
		for range 6 {
			hs = append(hs, startGH(t, run{env: []string{"XDG_STATE_HOME=" + state}}))
		}
		for i, h := range hs {
			h.Send(ping("1"))
			select {
			case l, ok := <-h.Lines:
				if !ok {
					code := h.Wait(5 * time.Second)
					t.Errorf("round %d: gatehouse %d exited %d without answering; stderr:\n%s", round, i, code, h.Stderr.String())
					continue
				}
				expectResult(t, string(l), "1")
			case <-time.After(10 * time.Second):
				t.Errorf("round %d: gatehouse %d did not answer", round, i)
			}
		}
	}
}
