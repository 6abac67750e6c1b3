package evidencee2e

import (
	"fmt"
	"path/filepath"
	"testing"
)

// TestDeferOutcome: with --defer-outcome an outcome record rides the next
// ledger commit instead of being durable before the response. A clean exit
// still records every outcome (the ledger's Close commits what is held). A
// SIGKILL loses at most the outcomes still held: the ledger verifies, the
// lost ones are reported as outcome unknown (not an error of the chain),
// and every decision is there, since decisions are never deferred.
func TestDeferOutcome(t *testing.T) {
	t.Parallel()
	t.Run("clean exit", func(t *testing.T) {
		state := filepath.Join(t.TempDir(), "ledger.db")
		g := startGW(t, nil, []string{"--state", state, "--defer-outcome", "1h", "--receipt-keys", writeKeysFile(t, t.TempDir()), "--server-id", keyedID}, receiptServer(keyedID))
		g.handshake()
		for i, tool := range []string{"signed_ok", "none", "unsigned"} {
			expectResult(t, g.call(fmt.Sprintf("c%d", i), tool, `{"path":"/a"}`), tool)
		}
		if code := g.finish(); code != 0 {
			t.Fatalf("gatehouse exited %d; stderr:\n%s", code, g.Tail())
		}
		rep, r := verifyReport(t, state)
		if r.Code != 0 || !rep.OK || rep.OutcomeUnknown != 0 || rep.Size != int64(len(showJSON(t, state))) || len(perCall(showJSON(t, state))) != 6 {
			t.Fatalf("ledger verify: exit %d %+v\n%s", r.Code, rep, r.Stderr)
		}
		for tool, c := range calls(t, showJSON(t, state)) {
			if c.outcome == nil || c.receipt == nil {
				t.Errorf("%s: no outcome after a clean exit", tool)
			}
		}
	})
	t.Run("SIGKILL", func(t *testing.T) {
		state := filepath.Join(t.TempDir(), "ledger.db")
		g := startGW(t, nil, []string{"--state", state, "--defer-outcome", "1h", "--receipt-keys", writeKeysFile(t, t.TempDir()), "--server-id", keyedID}, receiptServer(keyedID))
		g.handshake()
		const n = 3
		for i := range n {
			expectResult(t, g.call(fmt.Sprintf("k%d", i), "signed_ok", fmt.Sprintf(`{"i":%d}`, i)), "signed_ok")
		}
		g.kill()
		rep, r := verifyReport(t, state)
		if r.Code != 0 || !rep.OK {
			t.Fatalf("the ledger left by SIGKILL does not verify: exit %d %+v\n%s", r.Code, rep, r.Stderr)
		}
		cs := callsAll(t, showJSON(t, state))
		outcomes := 0
		for _, c := range cs {
			if c.outcome != nil {
				outcomes++
			}
		}
		// Each outcome rode the next call's decision; the last one was
		// held when the process died.
		if len(cs) != n || outcomes != n-1 || rep.OutcomeUnknown != 1 {
			t.Fatalf("%d decisions, %d outcomes, outcome_unknown %d; want %d, %d, 1", len(cs), outcomes, rep.OutcomeUnknown, n, n-1)
		}
	})
}
