package evidencee2e

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"github.com/gatehouse-mcp/gatehouse/test/harness"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// fsizeLimit is the RLIMIT_FSIZE gatehouse runs under when its ledger must
// not be writable: enough for SQLite's 32 KiB shared-memory index, less
// than the write-ahead log left behind (see unwritableLedger).
const fsizeLimit = 64 << 10

// unwritableLedger prepares a SQLite ledger that a gatehouse running under
// `prlimit --fsize=fsizeLimit` can open and read but not append to: a
// gatehouse appends until the write-ahead log is well past the limit and is
// then killed with SIGKILL, so the log is not checkpointed away. The next
// writer must append after its last frame, beyond the limit (EFBIG).
func unwritableLedger(t *testing.T) string {
	t.Helper()
	state := filepath.Join(t.TempDir(), "ledger.db")
	g := startGW(t, nil, []string{"--state", state}, []string{fakeBin})
	g.handshake()
	for i := 0; ; i++ {
		expectResult(t, g.call(fmt.Sprintf("w%d", i), "echo", `{"fill":true}`), "filling call")
		fi, err := os.Stat(state + "-wal")
		if err == nil && fi.Size() > 2*fsizeLimit {
			break
		}
		if i == 100 {
			t.Fatalf("the write-ahead log did not grow past %d bytes", 2*fsizeLimit)
		}
	}
	g.kill()
	verifyLedger(t, state)
	return state
}

func needPrlimit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("prlimit (util-linux) is not installed")
	}
}

// waitStderr waits until gatehouse's stderr contains s.
func (g *gw) waitStderr(s string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if strings.Contains(g.Stderr.String(), s) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return strings.Contains(g.Stderr.String(), s)
}

// TestLedgerWriteFailureFailsClosed: when the ledger cannot be written, the
// error is on stderr and an allowed call is refused with -32081 before it
// reaches the server (the default, and on_log_failure: fail_closed).
func TestLedgerWriteFailureFailsClosed(t *testing.T) {
	t.Parallel()
	needPrlimit(t)
	for name, policy := range map[string]string{"built-in default": "", "fail_closed": "fail-closed.yaml"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			state := unwritableLedger(t)
			record := filepath.Join(t.TempDir(), "record")
			dlog := filepath.Join(t.TempDir(), "decisions.jsonl")
			flags := []string{"--state", state, "--decision-log", dlog, "--event-source", "gatehouse://test/failure"}
			if policy != "" {
				flags = append(flags, "--policy", harness.Testdata(policy))
			}
			g := startGW(t, []string{"prlimit", "--fsize=" + strconv.Itoa(fsizeLimit), "--"}, flags, []string{fakeBin, "--record", record})
			g.handshake()
			for _, id := range []string{"x1", "x2"} {
				m := g.call(id, "echo", `{"a":1}`)
				expectError(t, m, -32081, "call with an unwritable ledger")
				if !strings.Contains(string(m.Raw), "decision_not_recorded") {
					t.Errorf("refusal does not say why: %s", m.Raw)
				}
			}
			if !g.waitStderr("ledger: write failed", 5*time.Second) {
				t.Errorf("the ledger write error is not on stderr:\n%s", g.Tail())
			}
			g.finish()
			rec, err := os.ReadFile(record)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(rec, []byte(`"tools/call"`)) {
				t.Errorf("a refused call reached the server:\n%s", rec)
			}
			// What was stored before still verifies.
			verifyLedger(t, state)
			checkRefusedEvents(t, dlog, []string{`"x1"`, `"x2"`})
		})
	}
}

// checkRefusedEvents: the decision log has, for each JSON-RPC id in ids, a
// tool decision event that forwarded the call (the policy allowed it,
// before the ledger failed) and a gatehouse.tool.refused.v1 event naming
// that event, not forwarded, reason decision_not_recorded: the decision log
// never leaves a refused call marked forwarded.
func checkRefusedEvents(t *testing.T, path string, ids []string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type event struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		Data struct {
			RPCID           json.RawMessage `json:"rpc_id"`
			Forwarded       bool            `json:"forwarded"`
			DecisionEventID string          `json:"decision_event_id"`
			ReasonCode      string          `json:"reason_code"`
		} `json:"data"`
	}
	decided := map[string]string{} // rpc id -> decision event id
	refused := map[string]event{}  // decision event id -> refused event
	for _, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("decision log line %q: %v", line, err)
		}
		switch ev.Type {
		case "gatehouse.tool.decision.v1":
			if ev.Data.Forwarded {
				decided[string(ev.Data.RPCID)] = ev.ID
			}
		case "gatehouse.tool.refused.v1":
			refused[ev.Data.DecisionEventID] = ev
		}
	}
	for _, id := range ids {
		evID, ok := decided[id]
		if !ok {
			t.Errorf("no forwarded decision event for id %s:\n%s", id, raw)
			continue
		}
		r, ok := refused[evID]
		if !ok {
			t.Errorf("call %s was refused, but no gatehouse.tool.refused.v1 event names its decision event %s:\n%s", id, evID, raw)
			continue
		}
		if r.Data.Forwarded || r.Data.ReasonCode != "decision_not_recorded" || string(r.Data.RPCID) != id {
			t.Errorf("refused event for %s: %+v", id, r.Data)
		}
	}
}

// TestLedgerWriteFailureFailOpen: with on_log_failure: fail_open an allowed
// call whose decision cannot be recorded still goes to the server; its
// response is then withheld with -32082 because the outcome cannot be
// recorded either (docs/policy.md, on_log_failure). The error is on stderr.
func TestLedgerWriteFailureFailOpen(t *testing.T) {
	t.Parallel()
	needPrlimit(t)
	state := unwritableLedger(t)
	record := filepath.Join(t.TempDir(), "record")
	g := startGW(t, []string{"prlimit", "--fsize=" + strconv.Itoa(fsizeLimit), "--"},
		[]string{"--state", state, "--policy", harness.Testdata("fail-open.yaml")}, []string{fakeBin, "--record", record})
	g.handshake()
	m := g.call("o1", "echo", `{"a":1}`)
	if m.Error != nil && m.Error.Code == -32081 {
		t.Fatalf("fail_open: the call was refused: %s", m.Raw)
	}
	expectError(t, m, -32082, "fail_open call whose outcome cannot be recorded")
	if !strings.Contains(m.Error.Message, "could not be recorded") {
		t.Errorf("-32082 does not say why: %s", m.Raw)
	}
	if !g.waitStderr("ledger: write failed", 5*time.Second) {
		t.Errorf("the ledger write error is not on stderr:\n%s", g.Tail())
	}
	g.finish()
	rec, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(rec, []byte(`"id":"o1"`)) {
		t.Errorf("fail_open: the call did not reach the server; it read:\n%s", rec)
	}
}

// TestLedgerWriteFailureRecovers: a gatehouse whose ledger writes fail
// (-32081) and then succeed again, in the same process, continues the
// chain: the next calls are allowed and recorded, and the ledger verifies.
func TestLedgerWriteFailureRecovers(t *testing.T) {
	t.Parallel()
	needPrlimit(t)
	state := unwritableLedger(t)
	before := len(showJSON(t, state))
	// Only the soft limit, so that it can be raised again.
	g := startGW(t, []string{"prlimit", "--fsize=" + strconv.Itoa(fsizeLimit) + ":unlimited", "--"},
		[]string{"--state", state}, []string{fakeBin})
	g.handshake()
	expectError(t, g.call("r1", "echo", `{"a":1}`), -32081, "call with an unwritable ledger")
	raise := exec.Command("prlimit", "--pid", strconv.Itoa(g.Cmd.Process.Pid), "--fsize=unlimited:unlimited")
	if out, err := raise.CombinedOutput(); err != nil {
		t.Skipf("cannot raise gatehouse's file size limit: %v: %s", err, out)
	}
	for _, id := range []string{"r2", "r3"} {
		expectResult(t, g.call(id, "echo", `{"a":1}`), "call after the ledger became writable")
	}
	if code := g.finish(); code != 0 {
		t.Fatalf("gatehouse exited %d; stderr:\n%s", code, g.Tail())
	}
	verifyLedger(t, state)
	es := showJSON(t, state)
	checkLinearChain(t, es)
	if len(es) != before+4 {
		t.Errorf("%d entries after two recorded calls, want %d", len(es), before+4)
	}
}

// TestRefusedConfiguration: evidence options that cannot work are refused
// with exit 78 before the server is spawned.
func TestRefusedConfiguration(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	blocker := filepath.Join(dir, "not-a-directory")
	if err := os.WriteFile(blocker, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	badKeys := filepath.Join(dir, "bad-keys.yaml")
	if err := os.WriteFile(badKeys, []byte("rs-e2e:\n  ed25519_public_key: \"not base64!\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	okState := filepath.Join(dir, "ok", "ledger.db")
	skey, vkey, err := note.GenerateKey(rand.Reader, "gw-e2e")
	if err != nil {
		t.Fatal(err)
	}
	vkeyFile, openKey := filepath.Join(dir, "gw.vkey"), filepath.Join(dir, "open.skey")
	if err := os.WriteFile(vkeyFile, []byte(vkey+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(openKey, []byte(skey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(openKey, 0o644); err != nil { // past the umask
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		flags []string
		code  int
		in    string // stderr must contain this
	}{
		{"state directory cannot be created", []string{"--state", filepath.Join(blocker, "sub", "ledger.db")}, 78, "--state"},
		{"require-receipts bogus", []string{"--state", okState, "--require-receipts", "bogus"}, 78, "--require-receipts"},
		{"receipt-keys missing", []string{"--state", okState, "--receipt-keys", filepath.Join(dir, "missing.yaml")}, 78, "--receipt-keys"},
		{"receipt-keys malformed", []string{"--state", okState, "--receipt-keys", badKeys}, 78, "--receipt-keys"},
		{"ledger-key missing", []string{"--state", okState, "--ledger-key", filepath.Join(dir, "missing.skey")}, 78, "--ledger-key"},
		{"ledger-key is the verifier key", []string{"--state", okState, "--ledger-key", vkeyFile}, 78, "is a verifier key (the public one)"},
		// A signing key others can read is used, with a warning.
		{"ledger-key readable by others", []string{"--state", filepath.Join(dir, "open", "ledger.db"), "--ledger-key", openKey}, 0, "has mode 0644"},
		{"postgres unreachable", []string{"--state", "postgres://gatehouse@127.0.0.1:1/none?sslmode=disable&connect_timeout=3"}, 78, "--state"},
		// receipts.require needs the ledger.
		{"no-ledger with require-receipts", []string{"--no-ledger", "--require-receipts", "verified"}, 78, "ledger"},
		{"no-ledger with the policy's receipts.require", []string{"--no-ledger", "--policy", harness.Testdata("receipts-require.yaml")}, 78, "ledger"},
		// The control: the same command with a usable configuration
		// starts the server.
		{"control", []string{"--state", okState, "--require-receipts", "present", "--receipt-keys", writeKeysFile(t, dir)}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			marker := filepath.Join(t.TempDir(), "marker")
			code, stderr := runWrapNoInput(t, tt.flags, []string{fakeBin, "--marker", marker})
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
			_, err := os.Stat(marker)
			if spawned := err == nil; spawned != (tt.code == 0) {
				t.Errorf("server spawned: %v (exit %d)", spawned, code)
			}
			if !strings.Contains(stderr, tt.in) {
				t.Errorf("stderr does not mention %s:\n%s", tt.in, stderr)
			}
		})
	}
}

// runWrapNoInput runs gatehouse wrap with an empty stdin and returns its
// exit code and stderr.
func runWrapNoInput(t *testing.T, flags, server []string) (int, string) {
	t.Helper()
	args := append(append(append([]string{"wrap"}, flags...), "--"), server...)
	r := ghIn(t, "", nil, args...)
	return r.Code, r.Stderr
}
