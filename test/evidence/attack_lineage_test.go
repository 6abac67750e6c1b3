package evidencee2e

import (
	"fmt"
	"path/filepath"
	"testing"
)

// TestLineageDoesNotJoinCallsThatShareAServerReceiptID: two sessions on one
// ledger, each calling the receipt server's "unsigned" tool once. The
// server numbers its receipts per process (mcp_rcpt_rs_000001 in each
// session), as any server whose counter restarts does, or a server that
// replays a receipt. `ledger show --lineage` of the first call's decision
// follows server_receipt_id, which the server chose, into the second
// session's call: the lineage of one call lists four entries of two calls
// (evidence.md §9.1: a call's lineage is its decision and its outcome).
func TestLineageDoesNotJoinCallsThatShareAServerReceiptID(t *testing.T) {
	t.Parallel()
	state := filepath.Join(t.TempDir(), "ledger.db")
	runCalls(t, state, "a", "unsigned")
	runCalls(t, state, "b", "unsigned")
	all := showJSON(t, state)
	cs := callsAll(t, all)
	if len(cs) != 2 {
		t.Fatalf("%d calls in the ledger, want 2", len(cs))
	}
	if a, b := cs[0].outcomeRcp.ServerReceiptID, cs[1].outcomeRcp.ServerReceiptID; a != b {
		t.Skipf("the server's receipt ids differ (%s, %s): nothing shared", a, b)
	}
	for i, c := range cs {
		want := fmt.Sprint([]int64{c.decision.Seq, c.outcome.Seq})
		for what, id := range map[string]string{
			"gateway_decision_id (decision)": c.decisionRcpt.GatewayDecisionID,
			"audit_event_id (outcome)":       c.outcome.RecordID,
		} {
			if got := fmt.Sprint(seqs(showJSON(t, state, "--lineage", id))); got != want {
				t.Errorf("call %d: ledger show --lineage %s (%s): seqs %s, want %s (only this call's records)", i, id, what, got, want)
			}
		}
	}
}
