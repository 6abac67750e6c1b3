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
// response the client received has its server receipt, outcome decision and
// outcome audit event stored (they are durable before the response is
// relayed). A gatehouse started afterwards continues the chain.
func TestSIGKILLLeavesVerifiablePrefix(t *testing.T) {
	t.Parallel()
	state := filepath.Join(t.TempDir(), "ledger.db")
	keys := writeKeysFile(t, t.TempDir())
	received := map[string]string{} // tool_call_id -> receipt_id the client saw
	for round, killAfter := range []int{7, 23} {
		g := startGW(t, nil, []string{"--state", state, "--receipt-keys", keys, "--server-id", keyedID}, receiptServer(keyedID))
		g.handshake()
		const inFlight = 80
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
			case l, ok := <-g.lines:
				if !ok {
					t.Fatalf("gatehouse closed stdout early; stderr:\n%s", g.tail())
				}
				collect(l)
			case <-deadline:
				t.Fatalf("only %d responses within %v", got, readTimeout)
			}
		}
		g.kill()
		// Whatever reached the client before the kill counts too.
		for l := range g.lines {
			collect(l)
		}
		if got >= inFlight {
			t.Fatalf("round %d: all %d calls were answered before the kill", round, got)
		}
		t.Logf("round %d: killed after %d of %d responses", round, got, inFlight)

		rep, r := verifyReport(t, state)
		if r.code != 0 || !rep.OK {
			t.Fatalf("round %d: the ledger left by SIGKILL does not verify: exit %d %+v\n%s", round, r.code, rep, r.stderr)
		}
		es := showJSON(t, state)
		checkLinearChain(t, es)
		stored := map[string]string{} // tool_call_id -> receipt_id
		outcomes := map[string]bool{} // server_receipt_id with an outcome decision
		outcomeEvents := map[string]bool{}
		events := map[string]bool{}       // audit_event ids stored
		wantEvents := map[string]string{} // audit_event_id a stored decision names -> its gateway_decision_id
		for _, e := range es {
			switch e.Kind {
			case "server_receipt":
				sr := e.receipt(t)
				stored[sr.ToolCallID] = sr.ReceiptID
			case "gateway_decision":
				d := e.decision(t)
				if d.ServerReceiptID != "" {
					outcomes[d.ServerReceiptID] = true
				}
				wantEvents[d.AuditEventID] = d.GatewayDecisionID
			case "audit_event":
				events[e.RecordID] = true
				if ev := e.event(t); ev.Phase == "outcome" {
					outcomeEvents[ev.ServerReceiptID] = true
				}
			}
		}
		// Each phase of a call is one transaction: no stored decision
		// lacks its audit event, and no stored server receipt lacks its
		// outcome, whenever the kill came.
		for evID, dID := range wantEvents {
			if !events[evID] {
				t.Errorf("round %d: decision %s is stored without its audit event %s", round, dID, evID)
			}
		}
		for _, rid := range stored {
			if !outcomes[rid] || !outcomeEvents[rid] {
				t.Errorf("round %d: server receipt %s is stored without its outcome decision (%v) or event (%v)", round, rid, outcomes[rid], outcomeEvents[rid])
			}
		}
		for tcid, rid := range received {
			if stored[tcid] != rid || !outcomes[rid] || !outcomeEvents[rid] {
				t.Errorf("round %d: the client received %s (receipt %s) but the ledger lacks its receipt (%q), outcome (%v) or outcome event (%v)",
					round, tcid, rid, stored[tcid], outcomes[rid], outcomeEvents[rid])
			}
		}
	}
	// The chain continues after the crashes.
	before := len(showJSON(t, state))
	runCalls(t, state, "after", "signed_ok", "none")
	verifyLedger(t, state)
	es := showJSON(t, state)
	if len(es) != before+10 {
		t.Errorf("%d entries after two more calls, want %d", len(es), before+10)
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
