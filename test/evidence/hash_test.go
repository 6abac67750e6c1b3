package evidencee2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hashArgs are arguments whose bytes are far from canonical: whitespace,
// member order, number spellings (1.0, 1e2, -0, 1E-7), escapes, names that
// sort differently by UTF-16 code units than by UTF-8 bytes.
const hashArgs = `{ "z" : 1.0, "a": [1e2, "\u00e9", {"y": null, "b": true}], "\ud83d\ude00": "x", "דּ": -0,
	"n": 0.000001, "m": 1E-7, "big": 9007199254740992, "s": "\u2028<>&\u001f" }`

// TestInputAndOutputHashes: input_hash is "sha256:" + hex of the RFC 8785
// canonical arguments, computed here with jsontext alone; output_hash is the
// same over the whole result as the client received it. The gateway, the
// receipt server and the synthesized receipt agree, and no conflict is
// raised.
func TestInputAndOutputHashes(t *testing.T) {
	t.Parallel()
	want := jcsHash(t, hashArgs)
	raw := sha256.Sum256([]byte(hashArgs))
	if want == "sha256:"+hex.EncodeToString(raw[:]) {
		t.Fatal("the test arguments are already canonical")
	}
	state := filepath.Join(t.TempDir(), "ledger.db")
	g := startGW(t, nil, []string{"--state", state, "--receipt-keys", writeKeysFile(t, t.TempDir()), "--server-id", keyedID}, receiptServer(keyedID))
	g.handshake()
	args := strings.ReplaceAll(hashArgs, "\n\t", " ")
	results := map[string][]byte{}
	for i, tool := range []string{"signed_ok", "unsigned", "none"} {
		m := g.call(fmt.Sprintf("h%d", i), tool, args)
		expectResult(t, m, tool)
		results[tool] = m.Result
	}
	if code := g.finish(); code != 0 {
		t.Fatalf("gatehouse exited %d; stderr:\n%s", code, g.Tail())
	}
	verifyLedger(t, state)
	recs := calls(t, showJSON(t, state))
	for tool, result := range results {
		r := recs[tool]
		if r == nil || r.outcome == nil || r.receipt == nil {
			t.Fatalf("%s: incomplete records", tool)
		}
		// The decision record holds the input hash; the outcome names it.
		if d := r.decisionRcpt; d.InputHash == nil || *d.InputHash != want {
			t.Errorf("%s decision: input_hash %v, want %s", tool, strPtr(d.InputHash), want)
		}
		if d := r.outcomeRcp; d.InputHash != nil {
			t.Errorf("%s outcome: input_hash %v repeated from the decision", tool, strPtr(d.InputHash))
		}
		if got, wantOut := r.outcomeRcp.OutputHash, jcsHash(t, string(result)); got != wantOut {
			t.Errorf("%s: output_hash %s, want %s (the result as received)", tool, got, wantOut)
		}
		if sr := r.receipt.receipt(t); sr.InputHash != want {
			t.Errorf("%s: server receipt input_hash %s, want %s", tool, sr.InputHash, want)
		}
		for _, w := range r.outcomeRcp.Warnings {
			if strings.Contains(w, "hash") {
				t.Errorf("%s: warning %q", tool, w)
			}
		}
	}
}

// TestInexactNumberHasNoInputHash: arguments holding integers that a JSON
// number cannot carry exactly (beyond 2^53) get no input_hash and a warning
// saying why, never the hash of a rounded value; the call itself is still
// decided and relayed, and the value is recorded nowhere.
func TestInexactNumberHasNoInputHash(t *testing.T) {
	t.Parallel()
	argsList := map[string]string{
		"top":    `{"n":12345678901234567890}`,
		"nested": `{"a":{"b":[1,12345678901234567890]},"c":"d"}`,
	}
	state := filepath.Join(t.TempDir(), "ledger.db")
	g := startGW(t, nil, []string{"--state", state}, []string{fakeBin})
	g.handshake()
	// Two tools so that each call has its own record.
	tools := map[string]string{"top": "echo", "nested": "write"}
	for name, args := range argsList {
		expectResult(t, g.call("n-"+name, tools[name], args), name)
	}
	if code := g.finish(); code != 0 {
		t.Fatalf("gatehouse exited %d; stderr:\n%s", code, g.Tail())
	}
	verifyLedger(t, state)
	out := mustGH(t, "ledger", "show", "--state", state, "--json")
	recs := calls(t, parseEntries(t, out))
	for name, args := range argsList {
		r := recs[tools[name]]
		if r == nil || r.outcome == nil {
			t.Fatalf("%s: incomplete records", name)
		}
		for phase, d := range map[string]decision{"decision": r.decisionRcpt, "outcome": r.outcomeRcp} {
			if d.InputHash != nil {
				t.Errorf("%s %s: input_hash %s for arguments with 12345678901234567890", name, phase, *d.InputHash)
			}
		}
		if d := r.decisionRcpt; !contains(d.Warnings, "input_hash not computed: a number JSON cannot carry exactly") {
			t.Errorf("%s decision: warnings %q lack the inexact number warning", name, d.Warnings)
		}
		if r.receipt != nil && strings.Contains(string(r.receipt.Payload), `"input_hash"`) {
			t.Errorf("%s: the synthesized receipt has an input_hash: %s", name, r.receipt.Payload)
		}
		// jsontext rounds 12345678901234567890 to a double; that hash
		// must appear nowhere.
		if rounded := jcsHash(t, args); strings.Contains(out, rounded) {
			t.Errorf("%s: the ledger holds the hash of the rounded arguments %s", name, rounded)
		}
	}
	if strings.Contains(out, "1234567890123456") {
		t.Errorf("the ledger records the argument value")
	}
}

func strPtr(s *string) string {
	if s == nil {
		return "(absent)"
	}
	return *s
}

// TestInexactNumberInResult: a result holding an integer beyond 2^53 is
// relayed byte for byte, and its outcome has no output_hash (neither the
// decision's nor the synthesized receipt's) but a warning, never the hash
// of a rounded value.
func TestInexactNumberInResult(t *testing.T) {
	t.Parallel()
	state := filepath.Join(t.TempDir(), "ledger.db")
	g := startGW(t, nil, []string{"--state", state}, []string{fakeBin})
	g.handshake()
	g.send(callLine("o1", "sleep", `{"ms":60000}`))
	result := `{"content":[{"type":"text","text":"x"}],"structuredContent":{"n":12345678901234567890}}`
	emit, err := json.Marshal(map[string]any{"lines": []string{`{"jsonrpc":"2.0","id":"o1","result":` + result + "}\n"}})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the sleep call is forwarded first
	g.send(callLine("o2", "emit", string(emit)))
	m := g.response(`"o1"`)
	expectResult(t, m, "result with 12345678901234567890")
	if string(m.Result) != result {
		t.Errorf("result relayed as %s, want %s", m.Result, result)
	}
	expectResult(t, g.response(`"o2"`), "emit")
	g.finish()
	verifyLedger(t, state)
	out := mustGH(t, "ledger", "show", "--state", state, "--json")
	r := calls(t, parseEntries(t, out))["sleep"]
	if r == nil || r.outcome == nil || r.receipt == nil {
		t.Fatal("incomplete records for the sleep call")
	}
	if r.outcomeRcp.OutputHash != "" || !contains(r.outcomeRcp.Warnings, "output_hash not computed: a number JSON cannot carry exactly") {
		t.Errorf("outcome output_hash %q warnings %q", r.outcomeRcp.OutputHash, r.outcomeRcp.Warnings)
	}
	if strings.Contains(string(r.receipt.Payload), `"output_hash"`) {
		t.Errorf("the synthesized receipt has an output_hash: %s", r.receipt.Payload)
	}
	if rounded := jcsHash(t, result); strings.Contains(out, rounded) {
		t.Errorf("the ledger holds the hash of the rounded result %s", rounded)
	}
}
