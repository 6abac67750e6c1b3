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

// receiptIDOf returns the receipt_id of the server receipt in a tools/call
// result, or "".
func receiptIDOf(result []byte) string {
	var r struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(result, &r) != nil {
		return ""
	}
	var sr struct {
		ReceiptID string `json:"receipt_id"`
	}
	if json.Unmarshal(r.Meta["dev.gatehouse/security-receipt"], &sr) != nil {
		return ""
	}
	return sr.ReceiptID
}

// TestSIGKILLLeavesVerifiablePrefix kills gatehouse with SIGKILL while
// calls are in flight, twice: every time the ledger verifies, and every
// response the client received has its outcome record stored, with the
// server receipt as received (it is durable before the response is
// relayed). A gatehouse started afterwards continues the chain.
func TestSIGKILLLeavesVerifiablePrefix(t *testing.T) {
	t.Parallel()
	state := filepath.Join(t.TempDir(), "ledger.db")
	keys := writeKeysFile(t, t.TempDir())
	received := map[string]string{} // tool_call_id -> receipt_id the client saw
	for round, killAfter := range []int{7, 23} {
		g := startGW(t, nil, []string{"--state", state, "--receipt-keys", keys, "--server-id", keyedID}, receiptServer(keyedID))
		g.handshake()
		const inFlight = 400 // enough that the kill lands mid-stream even when the ledger is fast
		for i := 0; i < inFlight; i++ {
			g.send(callLine(fmt.Sprintf("k%d-%d", round, i), "signed_ok", fmt.Sprintf(`{"i":%d}`, i)))
		}
		got := 0
		deadline := time.After(readTimeout)
		collect := func(l []byte) {
			var m msg
			if json.Unmarshal(l, &m) != nil || m.Method != "" || m.Result == nil {
				return
			}
			var id string
			if json.Unmarshal(m.ID, &id) != nil || !strings.HasPrefix(id, "k") {
				return
			}
			rid := receiptIDOf(m.Result)
			if rid == "" {
				t.Errorf("response %s without a server receipt", id)
			}
			received["req_"+id] = rid
			got++
		}
		for got < killAfter {
			select {
			case l, ok := <-g.Lines:
				if !ok {
					t.Fatalf("gatehouse closed stdout early; stderr:\n%s", g.Tail())
				}
				collect(l)
			case <-deadline:
				t.Fatalf("only %d responses within %v", got, readTimeout)
			}
		}
		g.kill()
		// Whatever reached the client before the kill counts too.
		for l := range g.Lines {
			collect(l)
		}
		if got >= inFlight {
			t.Fatalf("round %d: all %d calls were answered before the kill", round, got)
		}
		t.Logf("round %d: killed after %d of %d responses", round, got, inFlight)

		rep, r := verifyReport(t, state)
		if r.Code != 0 || !rep.OK {
			t.Fatalf("round %d: the ledger left by SIGKILL does not verify: exit %d %+v\n%s", round, r.Code, rep, r.Stderr)
		}
		es := showJSON(t, state)
		checkLinearChain(t, es)
		// Each phase of a call is one entry, and calls() checks that
		// every outcome completes a stored decision; what reached the
		// client has its outcome, with the server receipt as received.
		stored := map[string]string{} // tool_call_id -> receipt_id of a stored outcome
		for _, c := range callsAll(t, es) {
			if c.outcome == nil {
				continue
			}
			if c.receipt == nil {
				t.Errorf("round %d: outcome %s without its server receipt", round, c.outcome.RecordID)
				continue
			}
			sr := c.receipt.receipt(t)
			if sr.ReceiptID != c.outcomeRcp.ServerReceiptID {
				t.Errorf("round %d: outcome %s names receipt %s but carries %s", round, c.outcome.RecordID, c.outcomeRcp.ServerReceiptID, sr.ReceiptID)
			}
			stored[sr.ToolCallID] = sr.ReceiptID
		}
		for tcid, rid := range received {
			if stored[tcid] != rid {
				t.Errorf("round %d: the client received %s (receipt %s) but the ledger lacks its outcome (%q)", round, tcid, rid, stored[tcid])
			}
		}
	}
	// The chain continues after the crashes.
	before := len(showJSON(t, state))
	runCalls(t, state, "after", "signed_ok", "none")
	verifyLedger(t, state)
	es := showJSON(t, state)
	if len(es) != before+4 {
		t.Errorf("%d entries after two more calls, want %d", len(es), before+4)
	}
	checkLinearChain(t, es)
}

// checkLinearChain checks, independently of gatehouse, that es are seqs
// 0..n-1 of one ledger, each linking to the SHA-256 of the previous leaf.
func checkLinearChain(t testing.TB, es []entry) {
	t.Helper()
	prev := "sha256:" + strings.Repeat("0", 64)
	for i, e := range es {
		if e.Seq != int64(i) || e.LedgerID != es[0].LedgerID {
			t.Fatalf("entry %d: seq %d ledger %q", i, e.Seq, e.LedgerID)
		}
		if e.PreviousHash != prev {
			t.Fatalf("entry %d: previous_hash %s, want %s", i, e.PreviousHash, prev)
		}
		sum := sha256.Sum256([]byte(e.leaf))
		prev = "sha256:" + hex.EncodeToString(sum[:])
	}
}
