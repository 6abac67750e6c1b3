package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/evidence"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
)

// receiptsOf calls tool n times and returns the receipts found, in order.
func receiptsOf(t *testing.T, cfg config, tool string, n int) (raws [][]byte, rs []*evidence.ServerReceipt) {
	t.Helper()
	var lines []string
	for i := range n {
		lines = append(lines, call(fmt.Sprint(i+1), tool, `{}`))
	}
	for i, res := range exchange(t, cfg, lines...) {
		raw, _, found := evidence.Find(res.Result, evidence.DefaultReceiptKeys)
		if !found {
			t.Fatalf("call %d: no receipt", i+1)
		}
		r, problems, err := evidence.Parse(raw)
		if err != nil || problems != nil {
			t.Fatalf("call %d: %v %v", i+1, problems, err)
		}
		raws, rs = append(raws, raw), append(rs, r)
	}
	return raws, rs
}

// TestChainFlag checks each --chain fault as the gateway will see it: one
// call at a time through an evidence.ChainTracker, exactly the second
// receipt is tampered (or none for ok and none).
func TestChainFlag(t *testing.T) {
	for _, tc := range []struct {
		chain    string
		seqs     []int64
		tampered int // index of the tampered receipt, -1 for none
	}{
		{chainOK, []int64{1, 2, 3, 4}, -1},
		{chainNone, nil, -1},
		{chainGap, []int64{1, 3, 4, 5}, 1},
		{chainRepeat, []int64{1, 1, 2, 3}, 1},
		{chainBroken, []int64{1, 2, 3, 4}, 1},
	} {
		t.Run(tc.chain, func(t *testing.T) {
			raws, rs := receiptsOf(t, mustConfig(t, "--chain", tc.chain), "unsigned", 4)
			tr := evidence.NewChainTracker()
			for i, r := range rs {
				if tc.seqs == nil {
					if r.LedgerID != "" || r.LedgerSeq != nil || r.PreviousHash != "" {
						t.Errorf("receipt %d has chain fields", i)
					}
				} else if r.LedgerSeq == nil || *r.LedgerSeq != tc.seqs[i] {
					t.Errorf("receipt %d: ledger_seq %v, want %d", i, r.LedgerSeq, tc.seqs[i])
				}
				if want := fmt.Sprintf("mcp_rcpt_rs_%06d", i+1); r.ReceiptID != want {
					t.Errorf("receipt %d: receipt_id %q, want %q", i, r.ReceiptID, want)
				}
				h, _ := evidence.Hash(raws[i])
				res := tr.Arrived(tr.Sent(), "receiptserver", r, h)
				if res.Tampered != (i == tc.tampered) {
					t.Errorf("receipt %d: %+v", i, res)
				}
			}
		})
	}
}

func TestToolHashesFlag(t *testing.T) {
	schemaHash, _ := evidence.Hash([]byte(inputSchema))
	descHash, _ := evidence.DescriptionHash("Answers with a unsigned security receipt.")
	facts := evidence.CallFacts{ToolSchemaHash: schemaHash, ToolDescriptionHash: descHash}
	for _, tc := range []struct {
		flag string
		want []string
	}{
		{"none", nil},
		{"match", nil},
		{"mismatch", []string{evidence.ConflictToolSchemaHash, evidence.ConflictToolDescriptionHash}},
	} {
		_, rs := receiptsOf(t, mustConfig(t, "--tool-hashes", tc.flag), "unsigned", 1)
		if got := evidence.Conflicts(rs[0], facts); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("--tool-hashes %s: Conflicts %q, want %q", tc.flag, got, tc.want)
		}
		if (rs[0].ToolSchemaHash == "") != (tc.flag == "none") {
			t.Errorf("--tool-hashes %s: tool_schema_hash %q", tc.flag, rs[0].ToolSchemaHash)
		}
	}
}

// listed returns the tools/list entries of a server run with cfg.
func listed(t *testing.T, cfg config) []json.RawMessage {
	t.Helper()
	rs := exchange(t, cfg, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	var result struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(rs[0].Result, &result); err != nil {
		t.Fatal(err)
	}
	return result.Tools
}

func TestToolReceiptsFlag(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		status evidence.Status
	}{
		{[]string{"--ed25519-seed-hex", seedHex}, evidence.StatusOK},
		{nil, evidence.StatusUnsigned},
	} {
		tools := listed(t, mustConfig(t, append(tc.args, "--tool-receipts")...))
		for _, raw := range tools {
			var tool mcp.Tool
			if err := json.Unmarshal(raw, &tool); err != nil {
				t.Fatal(err)
			}
			rr, found := evidence.FindToolReceipt(raw)
			if !found {
				t.Fatalf("%s: no tool-level receipt", tool.Name)
			}
			r, problems, err := evidence.Parse(rr)
			if err != nil || problems != nil {
				t.Fatalf("%s: %v %v", tool.Name, problems, err)
			}
			if r.ReceiptID != "mcp_rcpt_rs_tool_"+tool.Name || r.ToolName != tool.Name || r.ToolCallID != "tools/list" {
				t.Errorf("%s: %+v", tool.Name, r)
			}
			if s := evidence.Verify(rr, r, testKeys()); s != tc.status {
				t.Errorf("%s: Verify %s, want %s", tool.Name, s, tc.status)
			}
			schemaHash, _ := evidence.Hash(tool.InputSchema)
			descHash, _ := evidence.DescriptionHash(tool.Description)
			if c := evidence.Conflicts(r, evidence.CallFacts{ServerID: "receiptserver", ToolName: tool.Name, ToolSchemaHash: schemaHash, ToolDescriptionHash: descHash}); c != nil {
				t.Errorf("%s: conflicts %q", tool.Name, c)
			}
		}
	}
	// Without the flag the declarations are not receipts.
	for _, raw := range listed(t, mustConfig(t)) {
		if _, found := evidence.FindToolReceipt(raw); found {
			t.Errorf("a declaration is a receipt without --tool-receipts: %s", raw)
		}
	}
}

func TestToolReceiptFileFlag(t *testing.T) {
	const file = "testdata/draft_server_receipt.json"
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cfg := mustConfig(t, "--tool-receipt-file", file)
	tools := listed(t, cfg)
	if len(tools) != len(toolNames)+1 {
		t.Fatalf("%d tools", len(tools))
	}
	last := tools[len(tools)-1]
	rr, found := evidence.FindToolReceipt(last)
	// Compacted: a stdio message is one line.
	var compact bytes.Buffer
	if err := json.Compact(&compact, want); err != nil {
		t.Fatal(err)
	}
	if !found || !bytes.Equal(rr, compact.Bytes()) {
		t.Fatalf("the extra tool's receipt is not the file's receipt: %s", rr)
	}
	var tool mcp.Tool
	if err := json.Unmarshal(last, &tool); err != nil || tool.Name != "publish_artifact" {
		t.Fatalf("extra tool %q: %v", tool.Name, err)
	}
	rs := exchange(t, cfg, call("1", "publish_artifact", `{}`))
	if rs[0].Error != nil {
		t.Fatalf("calling it: error %d", rs[0].Error.Code)
	}
	if _, _, found := evidence.Find(rs[0].Result, evidence.DefaultReceiptKeys); found {
		t.Error("a call to the extra tool has a receipt")
	}
	for _, args := range [][]string{
		{"--tool-receipt-file", "testdata/missing.json"},
		{"--chain", "sideways"},
		{"--tool-hashes", "some"},
	} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}

// TestSwapPairsFlag: each pair of calls is answered in reverse, with the
// receipts numbered in request order; a tracker that saw both calls sent
// finds nothing wrong.
func TestSwapPairsFlag(t *testing.T) {
	rs := exchange(t, mustConfig(t, "--swap-pairs"), call("1", "unsigned", `{}`), call("2", "unsigned", `{}`), call("3", "unsigned", `{}`), call("4", "unsigned", `{}`))
	var ids []string
	tr := evidence.NewChainTracker()
	tickets := map[string]evidence.ChainTicket{}
	for _, id := range []string{"1", "2", "3", "4"} {
		tickets[id] = tr.Sent()
	}
	for _, res := range rs {
		ids = append(ids, string(res.ID))
		raw, _, _ := evidence.Find(res.Result, evidence.DefaultReceiptKeys)
		r, _, err := evidence.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]int64{"1": 1, "2": 2, "3": 3, "4": 4}[string(res.ID)]; *r.LedgerSeq != want {
			t.Errorf("response %s: ledger_seq %d", res.ID, *r.LedgerSeq)
		}
		h, _ := evidence.Hash(raw)
		if c := tr.Arrived(tickets[string(res.ID)], "receiptserver", r, h); c.Tampered {
			t.Errorf("response %s: %+v", res.ID, c)
		}
	}
	if !reflect.DeepEqual(ids, []string{"2", "1", "4", "3"}) {
		t.Errorf("responses in order %v", ids)
	}
}
