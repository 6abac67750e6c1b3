package evidencee2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// receiptRulesPolicy decides responses on the receipt's status: a tampered
// receipt withholds the response, an unsigned one is monitored, and a
// shadow rule tries "verified only".
const receiptRulesPolicy = `name: e2e-receipt-rules
version: "e2e-rr-1"
rules:
  - id: no_tampered_receipts
    when: receipt.status == "tampered"
    action: deny
    reason: the server's receipt does not verify
  - id: watch_unsigned
    when: receipt.status == "unsigned"
    action: monitor
    reason: the server's receipt is not signed
  - id: verified_only_trial
    when: receipt.status != "ok"
    action: deny
    reason: only verified receipts
    mode: shadow
`

// TestReceiptRules: policy rules that read receipt decide each forwarded
// call again on its response, through the real binary and the receipt
// server: the tampered receipt's response is withheld (-32082, the rule's
// reason) and the outcome receipt names the rule; the unsigned one passes,
// monitored by its rule; the verified one passes; the request's decisions are the
// policy's default. --no-ledger with such a policy is refused before the
// server starts.
func TestReceiptRules(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte(receiptRulesPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "ledger.db")
	g := startGW(t, nil, []string{"--state", state, "--policy", pol, "--receipt-keys", writeKeysFile(t, dir), "--server-id", keyedID}, receiptServer(keyedID))
	g.handshake()
	expectResult(t, g.call("c1", "signed_ok", `{"q":"x"}`), "signed_ok")
	m := g.call("c2", "bad_signature", `{"q":"x"}`)
	expectError(t, m, -32082, "bad_signature")
	if !strings.Contains(m.Error.Message, "the server's receipt does not verify") {
		t.Errorf("-32082 does not give the rule's reason: %s", m.Raw)
	}
	expectResult(t, g.call("c3", "unsigned", `{"q":"x"}`), "unsigned")
	if code := g.finish(); code != 0 {
		t.Fatalf("gatehouse exited %d; stderr:\n%s", code, g.Tail())
	}
	recs := calls(t, showJSON(t, state))
	for tool, want := range map[string]struct{ action, rule, warning, shadows string }{
		"signed_ok":     {"allow", "default", "", ""},
		"bad_signature": {"deny", "no_tampered_receipts", "", "deny verified_only_trial evidence"},
		"unsigned":      {"monitor", "watch_unsigned", "receipt rule watch_unsigned: the server's receipt is not signed", "deny verified_only_trial evidence"},
	} {
		r := recs[tool]
		if r == nil || r.outcome == nil {
			t.Fatalf("%s: no outcome in the ledger", tool)
		}
		if d := r.decision.decision(t); d.Action != "allow" || d.MatchedRule != "default" {
			t.Errorf("%s: the request was decided %s by %s, want allow by default", tool, d.Action, d.MatchedRule)
		}
		out := r.outcome.decision(t)
		if out.Action != want.action || out.MatchedRule != want.rule {
			t.Errorf("%s: outcome %s by %s, want %s by %s", tool, out.Action, out.MatchedRule, want.action, want.rule)
		}
		if want.warning != "" && !strings.Contains(strings.Join(out.Warnings, "; "), want.warning) {
			t.Errorf("%s: outcome warnings %q lack %q", tool, out.Warnings, want.warning)
		}
		// The shadow receipt rule is a would-have decision of the outcome
		// (shadow_decisions), not enforced.
		var sh struct {
			ShadowMode      bool `json:"shadow_mode"`
			ShadowDecisions []struct {
				Action      string `json:"action"`
				MatchedRule string `json:"matched_rule"`
				Stage       string `json:"stage"`
			} `json:"shadow_decisions"`
		}
		if err := json.Unmarshal(r.outcome.Payload, &sh); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range sh.ShadowDecisions {
			got = append(got, d.Action+" "+d.MatchedRule+" "+d.Stage)
		}
		if strings.Join(got, "; ") != want.shadows || sh.ShadowMode {
			t.Errorf("%s: outcome shadow_decisions %q (shadow_mode %v), want %q (false)", tool, got, sh.ShadowMode, want.shadows)
		}
	}
	// Without the ledger there are no receipts to decide on: refused.
	res := gh(t, "wrap", "--no-ledger", "--policy", pol, "--", receiptBin)
	if res.Code != 78 || !strings.Contains(res.Stderr, "read receipt, which need the audit ledger") {
		t.Errorf("--no-ledger with receipt rules: exit %d, stderr %s", res.Code, res.Stderr)
	}
}
