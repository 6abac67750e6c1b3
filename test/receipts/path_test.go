package receiptse2e

import (
	"github.com/gatehouse-mcp/gatehouse/test/harness"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestRefusedPathNeverSpawns checks every refused --request-receipts-out
// path: the run aborts before the server is spawned (the fake server's
// marker file is absent), exits 78, says why on stderr, and leaves what was
// at the path as it was.
func TestRefusedPathNeverSpawns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// setup prepares f.dir and returns the --request-receipts-out
		// and --decision-log arguments (relative ones are relative to
		// f.dir, gatehouse's working directory).
		setup func(t *testing.T, f files) (receipts, log string)
		// want is a part of the reason on stderr.
		want string
		// noLog leaves out --decision-log and --event-source.
		noLog bool
	}{
		{name: "existing file", want: "already exists", setup: func(t *testing.T, f files) (string, string) {
			write(t, f.receipts, "an operator's file\n")
			return f.receipts, f.log
		}},
		{name: "existing empty file", want: "already exists", setup: func(t *testing.T, f files) (string, string) {
			write(t, f.receipts, "")
			return f.receipts, f.log
		}},
		{name: "existing directory", want: "already exists", setup: func(t *testing.T, f files) (string, string) {
			mkdir(t, f.receipts)
			return f.receipts, f.log
		}},
		{name: "dangling symlink", want: "already exists", setup: func(t *testing.T, f files) (string, string) {
			symlink(t, filepath.Join(f.dir, "missing-target"), f.receipts)
			return f.receipts, f.log
		}},
		{name: "symlink to an existing file", want: "already exists", setup: func(t *testing.T, f files) (string, string) {
			write(t, filepath.Join(f.dir, "target"), "x\n")
			symlink(t, filepath.Join(f.dir, "target"), f.receipts)
			return f.receipts, f.log
		}},
		{name: "missing parent directory", want: "does not exist", setup: func(t *testing.T, f files) (string, string) {
			return filepath.Join(f.dir, "missing", "requests.jsonl"), f.log
		}},
		{name: "parent is a file", want: "not a directory", setup: func(t *testing.T, f files) (string, string) {
			write(t, filepath.Join(f.dir, "plain"), "")
			return filepath.Join(f.dir, "plain", "requests.jsonl"), f.log
		}},
		{name: "names a directory", want: "directory", setup: func(t *testing.T, f files) (string, string) {
			return f.dir + "/", f.log
		}},
		{name: "same path as the decision log", want: "aliases", setup: func(t *testing.T, f files) (string, string) {
			return f.log, f.log
		}},
		{name: "decision log via a relative path", want: "aliases", setup: func(t *testing.T, f files) (string, string) {
			return "decisions.jsonl", f.log
		}},
		{name: "decision log via ./", want: "aliases", setup: func(t *testing.T, f files) (string, string) {
			return "./decisions.jsonl", f.log
		}},
		{name: "decision log relative, receipts absolute", want: "aliases", setup: func(t *testing.T, f files) (string, string) {
			return f.log, "decisions.jsonl"
		}},
		{name: "decision log via ..", want: "aliases", setup: func(t *testing.T, f files) (string, string) {
			mkdir(t, filepath.Join(f.dir, "sub"))
			return "sub/../decisions.jsonl", f.log
		}},
		{name: "decision log via .. of a missing directory", want: "aliases", setup: func(t *testing.T, f files) (string, string) {
			return filepath.Join(f.dir, "nosuch") + "/../decisions.jsonl", f.log
		}},
		{name: "decision log via a symlinked directory", want: "aliases", setup: func(t *testing.T, f files) (string, string) {
			symlink(t, f.dir, filepath.Join(f.dir, "link"))
			return filepath.Join(f.dir, "link", "decisions.jsonl"), f.log
		}},
		{name: "decision log via a relative symlinked directory", want: "aliases", setup: func(t *testing.T, f files) (string, string) {
			symlink(t, ".", filepath.Join(f.dir, "here"))
			return "here/decisions.jsonl", f.log
		}},
		{name: "decision log given through a symlinked directory", want: "aliases", setup: func(t *testing.T, f files) (string, string) {
			symlink(t, f.dir, filepath.Join(f.dir, "link"))
			return f.log, filepath.Join(f.dir, "link", "decisions.jsonl")
		}},
		{name: "symlink to the decision log (not yet created)", want: "aliases", setup: func(t *testing.T, f files) (string, string) {
			symlink(t, "decisions.jsonl", f.receipts)
			return f.receipts, f.log
		}},
		{name: "symlink to the existing decision log", want: "aliases", setup: func(t *testing.T, f files) (string, string) {
			write(t, f.log, "")
			symlink(t, f.log, f.receipts)
			return f.receipts, f.log
		}},
		{name: "decision log is a dangling symlink to the receipts path", want: "aliases", setup: func(t *testing.T, f files) (string, string) {
			symlink(t, "requests.jsonl", filepath.Join(f.dir, "dl.jsonl"))
			return f.receipts, filepath.Join(f.dir, "dl.jsonl")
		}},
		{name: "hard link to the decision log", want: "aliases", setup: func(t *testing.T, f files) (string, string) {
			write(t, f.log, "")
			if err := os.Link(f.log, f.receipts); err != nil {
				t.Fatal(err)
			}
			return f.receipts, f.log
		}},
		{name: "the policy file", want: "aliases", setup: func(t *testing.T, f files) (string, string) {
			return harness.Testdata("deny-delete.yaml"), f.log
		}},
		{name: "without --decision-log", want: "requires --decision-log", noLog: true, setup: func(t *testing.T, f files) (string, string) {
			return f.receipts, ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFiles(t)
			receiptsArg, logArg := tt.setup(t, f)
			before := snapshot(t, f.dir)
			flags := []string{"--policy", harness.Testdata("deny-delete.yaml"), "--request-receipts-out", receiptsArg}
			if !tt.noLog {
				flags = append(flags, "--decision-log", logArg, "--event-source", eventSource)
			}
			h := start(t, wrapRun{dir: f.dir, flags: flags, server: f.server()})
			h.CloseStdin()
			code := h.wait()
			if code != exitConfig {
				t.Errorf("exit %d, want %d (configuration refused)", code, exitConfig)
			}
			if exists(f.marker) {
				t.Errorf("the server was started for a refused receipts path")
			}
			stderr := h.Stderr.String()
			if !strings.Contains(stderr, "gatehouse: --request-receipts-out") || !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr does not say --request-receipts-out ... %q:\n%s", tt.want, stderr)
			}
			if !tt.noLog && !strings.Contains(stderr, strings.TrimSuffix(receiptsArg, "/")) {
				t.Errorf("stderr does not name the path %s:\n%s", receiptsArg, stderr)
			}
			// Whatever was at the path, or at its symlink target,
			// is as it was; nothing was created in the directory
			// (in particular no receipts file, nothing through a
			// symlink).
			if after := snapshot(t, f.dir); after != before {
				t.Errorf("the refused run changed %s:\nbefore:\n%s\nafter:\n%s", f.dir, before, after)
			}
		})
	}
}

// TestLookalikePathAccepted is the control for the alias refusals: paths
// that look like the decision log but are another file are accepted, and
// the receipts go to the file the kernel resolves the path to (".." after a
// symlink goes up from the symlink's target, not lexically).
func TestLookalikePathAccepted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// setup returns the --request-receipts-out argument and where
		// the file must end up.
		setup func(t *testing.T, f files) (arg, physical string)
	}{
		{name: "same name in another directory", setup: func(t *testing.T, f files) (string, string) {
			mkdir(t, filepath.Join(f.dir, "other"))
			p := filepath.Join(f.dir, "other", "decisions.jsonl")
			return p, p
		}},
		{name: ".. after a symlink is not lexical", setup: func(t *testing.T, f files) (string, string) {
			mkdir(t, filepath.Join(f.dir, "a", "b"))
			symlink(t, filepath.Join(f.dir, "a", "b"), filepath.Join(f.dir, "link"))
			return filepath.Join(f.dir, "link") + "/../decisions.jsonl", filepath.Join(f.dir, "a", "decisions.jsonl")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFiles(t)
			arg, physical := tt.setup(t, f)
			flags := []string{"--policy", harness.Testdata("deny-delete.yaml"), "--decision-log", f.log, "--event-source", eventSource, "--request-receipts-out", arg}
			h, code := run(t, wrapRun{dir: f.dir, flags: flags, server: f.server()}, []step{{line: toolCall("1", "echo", `{}`), reply: "1"}})
			if code != 0 {
				t.Fatalf("exit %d, want 0; stderr:\n%s", code, h.Tail())
			}
			if recs, _ := readReceipts(t, physical); len(recs) != 1 {
				t.Errorf("%d receipts at %s, want 1", len(recs), physical)
			}
			if code, v := verifyCapture(t, arg, f.log); code != 0 {
				t.Errorf("verify exit %d (%v), want 0", code, v.failed())
			}
		})
	}
}

// TestPathTakenAfterSpawn creates the receipts path after gatehouse
// checked it and started the server, before the first frame that is not
// server/discover: that frame must not be forwarded, the server is shut
// down, gatehouse exits 70, and what was planted is left alone.
func TestPathTakenAfterSpawn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		plant   func(t *testing.T, path string)
		trigger string
	}{
		{name: "file, then tools/call", trigger: toolCall("2", "echo", `{"n":1}`), plant: func(t *testing.T, p string) {
			write(t, p, "planted by someone else\n")
		}},
		{name: "dangling symlink, then tools/call CRLF", trigger: crlf(toolCall(`"x"`, "echo", `{}`)), plant: func(t *testing.T, p string) {
			symlink(t, p+".elsewhere", p)
		}},
		{name: "directory, then initialize", trigger: initialize("2", "2025-06-18"), plant: func(t *testing.T, p string) {
			mkdir(t, p)
		}},
		{name: "file, then a notification", trigger: initialized, plant: func(t *testing.T, p string) {
			write(t, p, "")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFiles(t)
			h := start(t, wrapRun{flags: f.flags(true), server: f.server()})
			disc := discover("1")
			discReply := h.readReplyAfter(disc, "1")
			if exists(f.receipts) {
				t.Fatalf("server/discover created the receipts file")
			}
			tt.plant(t, f.receipts)
			before := snapshot(t, f.dir, f.record, f.log)
			h.Send(tt.trigger)
			code := h.wait()
			if code != exitGatewayFailure {
				t.Errorf("exit %d, want %d", code, exitGatewayFailure)
			}
			if got := string(h.Received()); got != string(discReply) {
				t.Errorf("the client got %q after the discover reply", strings.TrimPrefix(got, string(discReply)))
			}
			if got := string(harness.ReadFile(t, f.record)); got != disc {
				t.Errorf("the server received %q, want only %q (the frame must not be forwarded)", got, disc)
			}
			if pid := harness.ReadPID(f.marker); pid == 0 || harness.Alive(pid) {
				t.Errorf("the server (pid %d) was not shut down", pid)
			}
			if after := snapshot(t, f.dir, f.record, f.log); after != before {
				t.Errorf("the planted path was touched:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			stderr := h.Stderr.String()
			if !strings.Contains(stderr, f.receipts) || !strings.Contains(stderr, "taken") {
				t.Errorf("stderr does not say the path was taken:\n%s", stderr)
			}
			evs := readEvents(t, f.log)
			if n := len(eventsOf(evs, typeDecision)); n != 0 {
				t.Errorf("%d tool decisions for a frame that ended the run", n)
			}
			if stop := sessionCapture(t, evs, typeStop); stop.State != "incomplete" {
				t.Errorf("stop capture %v, want incomplete", stop)
			}
		})
	}
}

// readReplyAfter sends line and reads the response to id.
func (h *gh) readReplyAfter(line, id string) []byte {
	h.t.Helper()
	h.Send(line)
	return h.readReply(id)
}

// Filesystem helpers.

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// snapshot describes every entry under dir (type, mode, size, content
// hash, symlink target), except the paths in skip.
func snapshot(t *testing.T, dir string, skip ...string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		for _, s := range skip {
			if p == s {
				return nil
			}
		}
		b.WriteString(p + " " + fi.Mode().String())
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			b.WriteString(" -> " + target)
		case fi.Mode().IsRegular():
			b.WriteString(" " + sha256hex(harness.ReadFile(t, p)))
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestUnwritableParentRefused checks the last pre-spawn condition of §2:
// the parent directory must be writable. Root may write anywhere, so
// gatehouse runs as nobody, in front of a directory owned by root.
func TestUnwritableParentRefused(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run gatehouse as another user")
	}
	const nobody = 65534
	// t.TempDir is private to root; this tree is readable by nobody.
	base, err := os.MkdirTemp("", "gatehouse-receipts-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	ro, rw := filepath.Join(base, "ro"), filepath.Join(base, "rw")
	mkdir(t, ro)
	mkdir(t, rw)
	for _, d := range []string{base, ro} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(rw, 0o777); err != nil {
		t.Fatal(err)
	}
	receipts, marker := filepath.Join(ro, "requests.jsonl"), filepath.Join(rw, "marker")
	h := start(t, wrapRun{
		dir:    rw,
		flags:  []string{"--decision-log", filepath.Join(rw, "decisions.jsonl"), "--event-source", eventSource, "--request-receipts-out", receipts},
		server: []string{"--marker", marker},
		cred:   &syscall.Credential{Uid: nobody, Gid: nobody},
	})
	h.CloseStdin()
	if code := h.wait(); code != exitConfig {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, exitConfig, h.Tail())
	}
	if exists(marker) {
		t.Errorf("the server was started")
	}
	if stderr := h.Stderr.String(); !strings.Contains(stderr, receipts) || !strings.Contains(stderr, "not writable") {
		t.Errorf("stderr does not say the directory is not writable:\n%s", stderr)
	}
	if exists(receipts) {
		t.Errorf("%s was created", receipts)
	}
}
