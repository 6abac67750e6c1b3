package decisionlog

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/linesafe"
)

// referenceEvent is what Emit writes for an event that the fast path
// declines: the envelope marshalled by encoding/json with HTML escaping
// off, made line-safe by linesafe.Append.
func referenceEvent(t *testing.T, id, source, eventType string, tm time.Time, data any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(envelope{SpecVersion: SpecVersion, ID: id, Source: source, Type: eventType, Time: tm.Format(time.RFC3339Nano), DataContentType: DataContentType, Data: data}); err != nil {
		t.Fatalf("reference encoding: %v", err)
	}
	return linesafe.Append(nil, buf.Bytes())
}

// checkSameAsReference asserts that the fast path either declines or
// writes exactly the reference bytes.
func checkSameAsReference(t *testing.T, d ToolDecision, wantFast bool) {
	t.Helper()
	tm := time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.UTC)
	got, ok := appendEnvelope(nil, "0b6f6bb0-0000-4000-8000-000000000000", "gatehouse://t/x", TypeToolDecision, tm, d)
	if ok != wantFast && wantFast {
		t.Fatalf("fast path declined %+v", d)
	}
	if !ok {
		return
	}
	want := referenceEvent(t, "0b6f6bb0-0000-4000-8000-000000000000", "gatehouse://t/x", TypeToolDecision, tm, d)
	if !bytes.Equal(got, want) {
		t.Fatalf("fast path differs from encoding/json:\n got %s\nwant %s", got, want)
	}
}

func TestAppendEventMatchesEncodingJSON(t *testing.T) {
	full := ToolDecision{
		Tool: "write_file", Decision: DecisionDeny, ReasonCode: "policy_rule", Reason: "role <readonly> & \"quotes\" \\ \u2028\u2029 \x00\x1f\b\f\n\r\t é 𝄞 \x7f\u0085\u009b\x1b]0;pwned\x07",
		MatchedRule: "readonly_agent_no_mutating_tools", PolicyName: "p", PolicyVersion: "1",
		ShadowMode: true,
		ShadowDecisions: []ShadowDecision{{Action: "deny", MatchedRule: "s", Reason: "would <deny>", Stage: "policy"},
			{Action: "redact", MatchedRule: "scanning", Reason: "\u2028 \x1b", Stage: "scan"}},
		RPCIDPresent: true, RPCID: json.RawMessage(`"a\u2028b"`), ToolCallID: "req_7", ToolCallIDStrength: StrengthWeak, ToolCallIDSource: SourceJSONRPCID,
		PrincipalID: "alice", Role: "readonly_agent", ServerID: "fs", SideEffect: "mutating", ToolKnown: true, Forwarded: false,
		ArgumentScanResult: json.RawMessage(`{"action":"redact","findings":[{"action":"redact","class":"secret","confidence":"high","excerpt":"ghp_…(40) <>","path":"/arguments/token","rule":"github-pat"}],"status":"fail"}`),
		DriftResult:        json.RawMessage(`{"action":"quarantine","changes":["externality_changed_to_external"],"severity":"critical"}`),
	}
	tests := []struct {
		name     string
		d        ToolDecision
		wantFast bool
	}{
		{"every field", full, true},
		{"empty optional fields and nil id", ToolDecision{Tool: "echo", Decision: DecisionAllow}, true},
		{"one shadow decision, not in shadow mode", ToolDecision{Tool: "echo", ShadowDecisions: []ShadowDecision{{Action: "monitor", MatchedRule: "r"}}}, true},
		{"shadow mode without shadow decisions", ToolDecision{Tool: "echo", ShadowMode: true}, true},
		{"numeric id kept verbatim", ToolDecision{Tool: "echo", RPCID: json.RawMessage(`12345678901234567890`), RPCIDPresent: true}, true},
		{"fraction id", ToolDecision{Tool: "echo", RPCID: json.RawMessage(`1.0e2`), RPCIDPresent: true}, true},
		{"null id", ToolDecision{Tool: "echo", RPCID: json.RawMessage(`null`)}, true},
		{"invalid UTF-8 in a string", ToolDecision{Tool: "ec\xffho\xc3", Reason: "\xed\xa0\x80"}, true},
		{"id with whitespace goes the slow way", ToolDecision{Tool: "echo", RPCID: json.RawMessage(` 7`)}, false},
		{"id that is an object goes the slow way", ToolDecision{Tool: "echo", RPCID: json.RawMessage(`{"a": 1}`)}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { checkSameAsReference(t, tc.d, tc.wantFast) })
	}
}

// TestEmitFastPathDeclinesInvalidID: an rpc_id that is not JSON is not
// written by the fast path; Emit reports encoding/json's error and writes
// nothing.
func TestEmitFastPathDeclinesInvalidID(t *testing.T) {
	if _, ok := (ToolDecision{RPCID: json.RawMessage(`{`)}).appendJSON(nil); ok {
		t.Fatal("fast path accepted an invalid rpc_id")
	}
}

func FuzzAppendEvent(f *testing.F) {
	f.Add("echo", "allow", "because <x> & y", "7", "alice", true)
	f.Add("w\u2028", "deny", "\x00\xff", `"s"`, "", false)
	f.Add("", "", "", "-0.0e-7", "\t", true)
	f.Fuzz(func(t *testing.T, tool, decision, reason, id, principal string, shadow bool) {
		d := ToolDecision{Tool: tool, Decision: decision, Reason: reason, ReasonCode: reason, MatchedRule: tool, PolicyName: principal,
			PolicyVersion: decision, RPCIDPresent: shadow, RPCID: json.RawMessage(id), ToolCallID: id, PrincipalID: principal, Role: tool, ServerID: reason, SideEffect: decision, ToolKnown: shadow}
		if id == "" {
			d.RPCID = nil
		}
		if shadow {
			d.ShadowMode = true
			d.ShadowDecisions = []ShadowDecision{{Action: decision, MatchedRule: reason, Reason: tool, Stage: principal}, {Action: reason}}
		}
		if !json.Valid(d.RPCID) && d.RPCID != nil {
			if _, ok := d.appendJSON(nil); ok {
				t.Fatalf("fast path accepted invalid rpc_id %q", id)
			}
			return
		}
		checkSameAsReference(t, d, false)
	})
}

func BenchmarkEmitToolDecision(b *testing.B) {
	d := ToolDecision{Tool: "echo", Decision: DecisionAllow, ReasonCode: "policy_rule", Reason: "read-only tool", MatchedRule: "allow_reads",
		PolicyName: "readonly-agent", PolicyVersion: "1", RPCIDPresent: true, RPCID: json.RawMessage(`42`), ToolCallID: "req_42",
		ToolCallIDStrength: StrengthWeak, ToolCallIDSource: SourceJSONRPCID, Role: "readonly_agent", SideEffect: "read_only", ToolKnown: true, Forwarded: true}
	tm := time.Now()
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = appendEnvelope(buf[:0], "0b6f6bb0-0000-4000-8000-000000000000", "gatehouse://bench", TypeToolDecision, tm, d)
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.Encode(envelope{SpecVersion: SpecVersion, ID: "0b6f6bb0-0000-4000-8000-000000000000", Source: "gatehouse://bench", Type: TypeToolDecision, Time: tm.Format(time.RFC3339Nano), DataContentType: DataContentType, Data: d})
		}
	})
}

func TestPlainToken(t *testing.T) {
	for raw, want := range map[string]bool{
		`7`: true, `"7"`: true, `-1.5e3`: true, `null`: true, `"a b"`: true,
		` 7`: false, `7 `: false, `"7" `: false, ` "7"`: false, `{}`: false, `[1]`: false, ``: false, `"`: false, `07`: false,
	} {
		if got := plainToken(json.RawMessage(raw)); got != want {
			t.Errorf("plainToken(%q) = %v, want %v", raw, got, want)
		}
	}
}
