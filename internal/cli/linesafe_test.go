package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gatehouse-mcp/gatehouse/internal/jcs"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger/backends"
	"github.com/gatehouse-mcp/gatehouse/internal/linesafe"
)

// hostileTool is a tool name as a server may send it: a terminal title
// rewrite (OSC ... BEL), a CSI as one C1 control, NEL, DEL and the two
// Unicode line separators.
const hostileTool = "x\u001b]0;pwned\u0007\u009b31m\u0085\u007f a\u2028b\u2029c"

// rawHazard returns the first character of s that linesafe escapes, as it
// is, or -1. LF is allowed only at the end of a line: callers pass lines.
func rawHazard(s string) rune {
	for _, r := range s {
		if linesafe.Escaped(r) {
			return r
		}
	}
	return -1
}

// hostileLedger is a ledger whose entries name hostileTool and a hostile
// record id.
func hostileLedger(t *testing.T) (path, vkey string) {
	t.Helper()
	dir := t.TempDir()
	if _, errOut, code := runLedgerCLI(t, "", "keys", "generate", "--name", "gw-test", "--out", dir); code != 0 {
		t.Fatal(errOut)
	}
	signer, err := ledger.LoadSigner(filepath.Join(dir, "gw-test.skey"))
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, "ledger.db")
	ctx := context.Background()
	l, err := backends.Open(ctx, path, ledger.Options{LedgerID: "cli-test", Signer: signer, CheckpointEveryN: 1, CheckpointEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	payload, err := os.ReadFile(filepath.Join("testdata", "hostile_payload.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, ledger.KindGatewayDecision, "gw_dec_\u0085x", payload); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return path, filepath.Join(dir, "gw-test.vkey")
}

// TestCLIOutputIsLineSafe: every JSON the CLI prints for a ledger whose
// entries carry controls and line separators holds none of them as they
// are, each record stays one line under Unicode line splitting, and the
// values are unchanged (ledger show --json canonicalizes back to the exact
// leaf); the table shows them escaped.
func TestCLIOutputIsLineSafe(t *testing.T) {
	path, vkey := hostileLedger(t)

	out, errOut, code := runLedgerCLI(t, "", "ledger", "show", "--state", path, "--json")
	wantCode(t, code, 0, out, errOut)
	lines := strings.SplitAfter(out, "\n")
	if len(lines) != 2 || lines[1] != "" {
		t.Fatalf("show --json: %d lines, want 1:\n%q", len(lines)-1, out)
	}
	line := strings.TrimSuffix(lines[0], "\n")
	if r := rawHazard(line); r >= 0 {
		t.Fatalf("show --json holds U+%04X as it is: %q", r, line)
	}
	leaf, err := jcs.Canonical([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	e, err := ledger.ParseLeaf(leaf)
	if err != nil {
		t.Fatalf("show --json line does not canonicalize to a leaf: %v\n%q", err, leaf)
	}
	var p struct {
		ToolName string `json:"tool_name"`
	}
	if err := json.Unmarshal(e.Payload, &p); err != nil || p.ToolName != hostileTool {
		t.Fatalf("tool_name %q (%v), want %q", p.ToolName, err, hostileTool)
	}

	out, errOut, code = runLedgerCLI(t, "", "ledger", "show", "--state", path)
	wantCode(t, code, 0, out, errOut)
	if r := rawHazard(strings.ReplaceAll(out, "\n", "")); r >= 0 || !strings.Contains(out, `x\u001b]0;pwned`) {
		t.Fatalf("show table holds U+%04X as it is, or not the escaped name: %q", r, out)
	}

	out, errOut, code = runLedgerCLI(t, "", "ledger", "verify", "--state", path, "--key", vkey, "--json")
	wantCode(t, code, 0, out, errOut)
	if r := rawHazard(strings.TrimSuffix(out, "\n")); r >= 0 || !utf8.ValidString(out) {
		t.Fatalf("verify --json holds U+%04X as it is: %q", r, out)
	}
	out, errOut, code = runLedgerCLI(t, "", "ledger", "verify", "--state", path, "--key", vkey)
	wantCode(t, code, 0, out, errOut)
	if r := rawHazard(strings.ReplaceAll(out, "\n", "")); r >= 0 {
		t.Fatalf("verify report holds U+%04X as it is: %q", r, out)
	}

	proof, errOut, code := runLedgerCLI(t, "", "ledger", "prove", "--state", path, "--entry", "0")
	wantCode(t, code, 0, proof, errOut)
	if r := rawHazard(strings.ReplaceAll(proof, "\n", "")); r >= 0 {
		t.Fatalf("prove holds U+%04X as it is: %q", r, proof)
	}
	out, errOut, code = runLedgerCLI(t, proof, "ledger", "verify-proof", "--key", vkey, "--proof", "-", "--entry-json")
	wantCode(t, code, 0, out, errOut)
	if r := rawHazard(strings.TrimSuffix(out, "\n")); r >= 0 {
		t.Fatalf("verify-proof --entry-json holds U+%04X as it is: %q", r, out)
	}
	if got, err := jcs.Canonical([]byte(strings.TrimSuffix(out, "\n"))); err != nil || string(got) != string(leaf) {
		t.Fatalf("verify-proof --entry-json does not canonicalize to the leaf: %v", err)
	}
}
