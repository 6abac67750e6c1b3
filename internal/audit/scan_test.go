package audit

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/evidence"
	"github.com/gatehouse-mcp/gatehouse/internal/gateway"
	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
)

// TestScanResultsInRecords: the gateway's argument scan goes into the
// decision record (with the argument keys), its response scan and the
// response's verdict into the outcome record, whose action becomes the
// verdict's (redact over allow); without a scanner both say not_run.
func TestScanResultsInRecords(t *testing.T) {
	led := &memLedger{}
	r, _ := New(Config{Ledger: led})
	c := call(true)
	c.ArgumentScan = &evidence.ScanResult{Status: evidence.ScanPass, Action: "allow"}
	if err := r.Decided(c)(); err != nil {
		t.Fatal(err)
	}
	c.ResponseScan = &evidence.ScanResult{Status: evidence.ScanFail, Action: "redact",
		Findings:   []evidence.ScanFinding{{Rule: "github-pat", Class: "secret", Confidence: "high", Path: "/result/content/0/text", Excerpt: "ghp_…(40)", Action: "redact"}},
		Redactions: []evidence.Redaction{{Field: "/result/content/0/text", Class: "secret", Method: "pattern", Replacement: "[REDACTED_SECRET]"}}}
	c.ResponseVerdict = &gateway.ResponseVerdict{Action: policy.ActionRedact, Rule: "scanning", Reason: "the response holds secret (github-pat)"}
	if withhold, why := r.Responded(c, &jsonrpc.Message{Kind: jsonrpc.KindResponse, Result: []byte(`{"content":[]}`)})(); withhold {
		t.Fatalf("withheld: %s", why)
	}
	d := led.payload(t, KindGatewayDecision, 0)
	arg, _ := json.Marshal(d["argument_scan_result"])
	if !strings.Contains(string(arg), `"status":"pass"`) || !strings.Contains(string(arg), `"argument_keys":["path"]`) {
		t.Errorf("decision argument_scan_result %s", arg)
	}
	o := led.payload(t, KindGatewayOutcome, 0)
	resp, _ := json.Marshal(o["response_scan_result"])
	for _, w := range []string{`"status":"fail"`, `"rule":"github-pat"`, `"replacement":"[REDACTED_SECRET]"`} {
		if !strings.Contains(string(resp), w) {
			t.Errorf("outcome response_scan_result %s lacks %s", resp, w)
		}
	}
	if o["action"] != "redact" || o["matched_rule"] != "scanning" {
		t.Errorf("outcome action %v rule %v, want redact scanning", o["action"], o["matched_rule"])
	}

	led2 := &memLedger{}
	r2, _ := New(Config{Ledger: led2})
	c2 := call(true)
	_ = r2.Decided(c2)()
	r2.Responded(c2, &jsonrpc.Message{Kind: jsonrpc.KindResponse, Result: []byte(`{"content":[]}`)})()
	for kind, field := range map[string]string{KindGatewayDecision: "argument_scan_result", KindGatewayOutcome: "response_scan_result"} {
		p := led2.payload(t, kind, 0)
		if s, _ := p[field].(map[string]any); s["status"] != "not_run" {
			t.Errorf("%s without a scanner: %s %v", kind, field, p[field])
		}
	}
}

// TestSecretArgumentNameNotInKeys: an argument name the scan found a
// secret in is listed as [REDACTED_NAME] in argument_keys.
func TestSecretArgumentNameNotInKeys(t *testing.T) {
	led := &memLedger{}
	r, _ := New(Config{Ledger: led})
	c := call(true)
	c.Arguments = []byte(`{"path":"/a","AKIAZ7QRSTUVWX2YB4CD":"x"}`)
	c.SecretNames = map[string]bool{"AKIAZ7QRSTUVWX2YB4CD": true}
	if err := r.Decided(c)(); err != nil {
		t.Fatal(err)
	}
	d, _ := json.Marshal(led.payload(t, KindGatewayDecision, 0))
	if strings.Contains(string(d), "AKIAZ7") || !strings.Contains(string(d), `"[REDACTED_NAME]"`) {
		t.Errorf("decision record %s", d)
	}
}
