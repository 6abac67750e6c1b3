package evidencee2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBatchResponseWithOneWithheldMember: under protocol revision
// 2025-03-26 a server may answer in a JSON-RPC batch. When receipts.require
// withholds one member, that member's caller gets -32082 and every other
// member still reaches its caller: one missing receipt must not swallow the
// other responses (the ledger records them as relayed).
//
// The fake server's emit tool writes the batch response to two pending
// sleep calls: b1 with an unsigned receipt (monitor under present), b2
// with none (withheld).
func TestBatchResponseWithOneWithheldMember(t *testing.T) {
	t.Parallel()
	const serverID = "fx-batch"
	state := filepath.Join(t.TempDir(), "ledger.db")
	g := startGW(t, nil, []string{"--state", state, "--require-receipts", "present", "--server-id", serverID}, []string{fakeBin})
	g.handshakeRevision("2025-03-26")
	// Two calls the server will not answer by itself for a minute.
	g.send(callLine("b1", "sleep", `{"ms":60000}`))
	g.send(callLine("b2", "sleep", `{"ms":60000}`))
	receipt := `{"receipt_id":"mcp_rcpt_batch_1","schema_version":"0.1","issued_at":"2026-01-01T00:00:00Z","server_id":"` + serverID + `","tool_name":"sleep","tool_call_id":"req_b1"}`
	batch := `[{"jsonrpc":"2.0","id":"b1","result":{"content":[{"type":"text","text":"one"}],"_meta":{"dev.gatehouse/security-receipt":` + receipt + `}}},` +
		`{"jsonrpc":"2.0","id":"b2","result":{"content":[{"type":"text","text":"two"}]}}]` + "\n"
	args, err := json.Marshal(map[string]any{"lines": []string{batch}})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // both sleeps are forwarded first
	g.send(callLine("b3", "emit", string(args)))

	m2 := g.responseWithin(`"b2"`, 5*time.Second)
	expectError(t, m2, -32082, "batch member without a receipt")
	m1 := g.responseWithin(`"b1"`, 5*time.Second)
	expectResult(t, m1, "batch member with an unsigned receipt (monitor)")
	if !strings.Contains(string(m1.Result), `"one"`) {
		t.Errorf("b1 got %s", m1.Result)
	}
	g.finish()
	for _, e := range showJSON(t, state, "--kind", "gateway_decision") {
		d := e.decision(t)
		if d.ServerReceiptID == "mcp_rcpt_batch_1" && d.Action != "monitor" {
			t.Errorf("b1's outcome action %q, want monitor", d.Action)
		}
	}
}
