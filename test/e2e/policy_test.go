package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Policy tests: decisions on the fake server's tools, the two deny
// response forms, the catalog across pages and after list_changed, and the
// decision log's id projection.

// policyFile writes a policy to a temporary file and returns its path.
func policyFile(t *testing.T, yaml string) string {
	t.Helper()
	return writeFile(t, t.TempDir(), "policy.yaml", yaml)
}

const toolResultPolicy = `name: e2e-tool-result
version: "1"
defaults:
  action: allow
  deny_response: tool_result
rules:
  - id: no_writes
    when: tool.side_effect != "read_only"
    action: deny
    reason: only read-only tools in this test
`

// TestPolicyDecisions checks allowed and denied calls on the fake server
// with both deny response forms: the denied call never reaches the server,
// the answer carries the request's id unchanged, and the decision log
// records each decision.
func TestPolicyDecisions(t *testing.T) {
	readonly := examplePolicy(t, "readonly-agent.yaml")
	toolResult := policyFile(t, toolResultPolicy)
	tests := []struct {
		name     string
		policy   string
		role     string
		tool     string
		id       string
		allow    bool
		rule     string
		asResult bool // denied with a tool result (isError) rather than a JSON-RPC error
	}{
		{"read-only tool allowed", readonly, "readonly_agent", "echo", `"e1"`, true, "", false},
		{"mutating tool denied", readonly, "readonly_agent", "write", `"w1"`, false, denyRule, false},
		{"unannotated tool denied", readonly, "readonly_agent", "delete", "12345678901234567890", false, denyRule, false},
		{"other role allowed", readonly, "admin", "delete", "3", true, "", false},
		{"denied as tool result", toolResult, "", "write", `"r1"`, false, "no_writes", true},
		{"allowed under tool_result policy", toolResult, "", "echo", "4", true, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			record := filepath.Join(dir, "record")
			dl := filepath.Join(dir, "decisions.jsonl")
			src := "gatehouse://e2e/policy"
			args := []string{"wrap", "--policy", tt.policy, "--decision-log", dl, "--event-source", src}
			if tt.role != "" {
				args = append(args, "--role", tt.role)
			}
			p := startGatehouse(t, append(args, "--", fakeServerBin, "--record", record)...)
			p.initialize("2025-06-18")
			p.call("1", "tools/list", "")
			resp, _ := p.call(tt.id, "tools/call", `{"name":"`+tt.tool+`","arguments":{"k":"v"}}`)
			p.CloseStdin()
			if code := p.wait(); code != 0 {
				t.Errorf("exit code %d", code)
			}

			rec, _ := os.ReadFile(record)
			reached := strings.Contains(string(rec), `"name":"`+tt.tool+`"`)
			switch {
			case tt.allow:
				if resp["result"] == nil || !reached {
					t.Fatalf("allowed call: reached server %v, answer %v", reached, resp)
				}
			case reached:
				t.Fatalf("denied call reached the server")
			case tt.asResult:
				var r struct {
					IsError bool `json:"isError"`
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
				}
				if err := json.Unmarshal(resp["result"], &r); err != nil || !r.IsError || len(r.Content) == 0 || !strings.Contains(r.Content[0].Text, tt.rule) {
					t.Fatalf("deny as tool result: got %s %s", resp["result"], resp["error"])
				}
			default:
				var e struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				}
				if err := json.Unmarshal(resp["error"], &e); err != nil || e.Code != codeDenied || !strings.Contains(e.Message, tt.rule) {
					t.Fatalf("deny error: got %s, want code %d naming %s", resp["error"], codeDenied, tt.rule)
				}
			}

			ds := decisions(t, readDecisionLog(t, dl, src), true)
			if len(ds) != 1 {
				t.Fatalf("%d decision events, want 1", len(ds))
			}
			d := ds[0]
			wantDecision := "deny"
			if tt.allow {
				wantDecision = "allow"
			}
			if d.Tool != tt.tool || d.Decision != wantDecision || (tt.rule != "" && d.MatchedRule != tt.rule) {
				t.Errorf("decision %+v, want %s %s %s", d, tt.tool, wantDecision, tt.rule)
			}
			if string(d.RPCID) != tt.id {
				t.Errorf("rpc_id %s, want %s exactly", d.RPCID, tt.id)
			}
		})
	}
}

// TestDecisionLogIDs checks the id projection of decision events: the
// JSON-RPC id with its type and exact text, and the tool call id with its
// strength (strong only when the caller supplied one in _meta).
func TestDecisionLogIDs(t *testing.T) {
	tests := []struct {
		name         string
		id           string // raw id text, "" for a notification
		meta         string
		wantPresent  bool
		wantRPCID    string
		wantCallID   string
		wantStrength string
	}{
		{"number", "7", "", true, "7", "req_7", "weak"},
		{"number beyond 2^53", "12345678901234567890", "", true, "12345678901234567890", "req_12345678901234567890", "weak"},
		{"string", `"abc"`, "", true, `"abc"`, "req_abc", "weak"},
		{"tool_call_id in _meta", "8", `{"tool_call_id":"call-42"}`, true, "8", "call-42", "strong"},
		{"claudecode/toolUseId in _meta", "9", `{"claudecode/toolUseId":"toolu_01"}`, true, "9", "toolu_01", "strong"},
		{"notification", "", "", false, "null", "", "weak"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			dl := filepath.Join(dir, "decisions.jsonl")
			src := "gatehouse://e2e/ids"
			p := startGatehouse(t, "wrap", "--decision-log", dl, "--event-source", src, "--", fakeServerBin)
			p.initialize("2025-06-18")
			p.call("1", "tools/list", "")
			params := `{"name":"echo","arguments":{}`
			if tt.meta != "" {
				params += `,"_meta":` + tt.meta
			}
			params += "}"
			if tt.id == "" {
				p.SendLine(`{"jsonrpc":"2.0","method":"tools/call","params":` + params + `}`)
			} else {
				p.call(tt.id, "tools/call", params)
			}
			p.call("2", "ping", "")
			p.CloseStdin()
			p.wait()
			ds := decisions(t, readDecisionLog(t, dl, src), true)
			if len(ds) != 1 {
				t.Fatalf("%d decision events, want 1", len(ds))
			}
			d := ds[0]
			if d.RPCIDPresent == nil || *d.RPCIDPresent != tt.wantPresent || string(d.RPCID) != tt.wantRPCID {
				t.Errorf("rpc_id_present %v rpc_id %s, want %v %s", d.RPCIDPresent, d.RPCID, tt.wantPresent, tt.wantRPCID)
			}
			if tt.wantCallID != "" && d.ToolCallID != tt.wantCallID {
				t.Errorf("tool_call_id %q, want %q", d.ToolCallID, tt.wantCallID)
			}
			if tt.id == "" && !strings.HasPrefix(d.ToolCallID, "gen_") {
				t.Errorf("tool_call_id %q for a call without id, want gen_<random>", d.ToolCallID)
			}
			if d.ToolCallIDStrength != tt.wantStrength {
				t.Errorf("tool_call_id_strength %q, want %q", d.ToolCallIDStrength, tt.wantStrength)
			}
		})
	}
}

// TestCatalogPagesAndListChanged checks that decisions use the tool catalog
// from every tools/list page, even pages the client never asked for, and
// the new catalog after notifications/tools/list_changed.
func TestCatalogPagesAndListChanged(t *testing.T) {
	dir := t.TempDir()
	tools := writeFile(t, dir, "tools.json", `[
 {"name":"echo","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},
 {"name":"sendlistchanged","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},
 {"name":"filler1","inputSchema":{"type":"object"}},
 {"name":"filler2","inputSchema":{"type":"object"}},
 {"name":"late_reader","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},
 {"name":"late_writer","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":false,"destructiveHint":false}}
]`)
	// After list_changed, late_writer becomes read-only and a new tool appears.
	tools2 := writeFile(t, dir, "tools2.json", `[
 {"name":"echo","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},
 {"name":"late_writer","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},
 {"name":"late_reader","inputSchema":{"type":"object"}},
 {"name":"added","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}
]`)
	p := startGatehouse(t, "wrap", "--policy", examplePolicy(t, "readonly-agent.yaml"), "--role", "readonly_agent",
		"--", fakeServerBin, "--tools", tools, "--tools2", tools2, "--page-size", "2")
	p.initialize("2025-06-18")
	first, _ := p.call("1", "tools/list", "") // page 1 only
	if !strings.Contains(string(first["result"]), `"nextCursor"`) {
		t.Fatalf("the fake server did not paginate: %s", first["result"])
	}

	callTool := func(id, name string) bool {
		t.Helper()
		resp, _ := p.call(id, "tools/call", `{"name":"`+name+`","arguments":{}}`)
		if resp["result"] == nil {
			t.Logf("%s: %s", name, resp["error"])
		}
		return resp["result"] != nil
	}
	steps := []struct {
		tool  string
		allow bool
	}{
		{"late_reader", true},  // on page 3, read-only
		{"late_writer", false}, // on page 3, mutating
		{"sendlistchanged", true},
		{"late_writer", true},  // now read-only
		{"late_reader", false}, // now unannotated
		{"added", true},        // new
	}
	for i, s := range steps {
		if s.tool == "sendlistchanged" {
			resp, before := p.call(`"lc"`, "tools/call", `{"name":"sendlistchanged","arguments":{}}`)
			if resp["result"] == nil || len(before) != 1 || !strings.Contains(before[0], "notifications/tools/list_changed") {
				t.Fatalf("sendlistchanged: %v, before: %q", resp, before)
			}
			continue
		}
		if got := callTool(jsonString(s.tool+string(rune('0'+i))), s.tool); got != s.allow {
			t.Errorf("step %d: %s allowed=%v, want %v", i, s.tool, got, s.allow)
		}
	}
	p.CloseStdin()
	p.wait()
}

// TestDenyMessageIsJSON checks that the deny error is valid JSON whatever
// characters the policy's reason holds, and carries the reason unchanged.
func TestDenyMessageIsJSON(t *testing.T) {
	tests := []struct {
		name   string
		yaml   string // the YAML scalar of the reason
		reason string // its value
	}{
		{"plain", `"no writes here"`, "no writes here"},
		{"quotes and backslash", `'say "no" \ please'`, `say "no" \ please`},
		{"non-ASCII", `"caf\u00e9 \U0001F600 \u2028"`, "café \U0001F600 \u2028"},
		{"control characters", `"bell\a vtab\v nul\0 esc\e"`, "bell\a vtab\v nul\x00 esc\x1b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pol := policyFile(t, "name: msg\nversion: \"1\"\ndefaults:\n  action: allow\nrules:\n  - id: r1\n    tools: [\"write\"]\n    action: deny\n    reason: "+tt.yaml+"\n")
			p := startGatehouse(t, "wrap", "--policy", pol, "--", fakeServerBin)
			p.initialize("2025-06-18")
			p.call("1", "tools/list", "")
			p.SendLine(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write","arguments":{}}}`)
			l := p.readLine()
			var m struct {
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("deny answer is not valid JSON (%v): %q", err, l)
			}
			if m.Error.Code != codeDenied || !strings.Contains(m.Error.Message, tt.reason) {
				t.Errorf("deny error %+v does not carry the reason %q", m.Error, tt.reason)
			}
			p.CloseStdin()
			p.wait()
		})
	}
}

// noteTools is a tool set with a tool that is read-only by its
// annotations and writing by its _meta security declaration.
const noteTools = `[
 {"name":"echo","description":"Returns its arguments.","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},
 {"name":"note","description":"Keeps a note.","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true},
  "_meta":{"dev.gatehouse/security":{"declared_side_effects":["write"]}}}
]`

// TestNormalizedIntentDecides: through the binary and the fake server,
// with the ledger off and on, the readonly-agent example denies a
// readonly_agent the tool whose annotations say readOnlyHint but whose
// _meta declaration says it writes (evidence.md §4: conflicts resolve
// toward the more dangerous value), the decision event records
// side_effect mutating, and with the ledger on the decision receipt
// carries the metadata_conflict warnings and the lowered
// metadata_confidence. Another role may call it; echo stays allowed.
func TestNormalizedIntentDecides(t *testing.T) {
	readonly := examplePolicy(t, "readonly-agent.yaml")
	for _, mode := range []string{"no-ledger", "ledger"} {
		for _, role := range []string{"readonly_agent", "admin"} {
			t.Run(mode+"/"+role, func(t *testing.T) {
				dir := t.TempDir()
				tools := writeFile(t, dir, "tools.json", noteTools)
				record := filepath.Join(dir, "record")
				dl := filepath.Join(dir, "decisions.jsonl")
				state := filepath.Join(dir, "ledger.db")
				src := "gatehouse://e2e/intent"
				args := []string{"wrap", "--policy", readonly, "--role", role, "--decision-log", dl, "--event-source", src}
				if mode == "no-ledger" {
					args = append(args, "--no-ledger")
				} else {
					args = append(args, "--state", state)
				}
				p := startGatehouse(t, append(args, "--", fakeServerBin, "--tools", tools, "--record", record)...)
				p.initialize("2025-06-18")
				p.call("1", "tools/list", "")
				note, _ := p.call("2", "tools/call", `{"name":"note","arguments":{"text":"x"}}`)
				echo, _ := p.call("3", "tools/call", `{"name":"echo","arguments":{}}`)
				p.CloseStdin()
				if code := p.wait(); code != 0 {
					t.Fatalf("exit code %d", code)
				}
				if echo["result"] == nil {
					t.Fatalf("echo: %v", echo)
				}
				rec, _ := os.ReadFile(record)
				reached := strings.Contains(string(rec), `"name":"note"`)
				if role == "readonly_agent" {
					var e struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
					}
					if err := json.Unmarshal(note["error"], &e); err != nil || e.Code != codeDenied || !strings.Contains(e.Message, denyRule) {
						t.Fatalf("note: %s %s, want denied by %s", note["error"], note["result"], denyRule)
					}
					if reached {
						t.Fatal("the denied call reached the server")
					}
				} else if note["result"] == nil || !reached {
					t.Fatalf("note for %s: reached %v, answer %v", role, reached, note)
				}
				sides := map[string]string{}
				for _, ev := range readDecisionLog(t, dl, src) {
					if ev.Type != typeDecision {
						continue
					}
					var d struct {
						Tool       string `json:"tool"`
						SideEffect string `json:"side_effect"`
					}
					if err := json.Unmarshal(ev.DataRaw, &d); err != nil {
						t.Fatal(err)
					}
					sides[d.Tool] = d.SideEffect
				}
				if sides["note"] != "mutating" || sides["echo"] != "read_only" {
					t.Errorf("decision events' side_effect %v, want note mutating and echo read_only", sides)
				}
				if mode != "ledger" {
					return
				}
				code, out, stderr := runGatehouse(t, "", "ledger", "show", "--state", state, "--json", "--kind", "gateway_decision")
				if code != 0 {
					t.Fatalf("ledger show: exit %d: %s", code, stderr)
				}
				n := 0
				for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
					var e struct {
						Payload struct {
							ToolName           string   `json:"tool_name"`
							MetadataConfidence float64  `json:"metadata_confidence"`
							Warnings           []string `json:"warnings"`
						} `json:"payload"`
					}
					if err := json.Unmarshal([]byte(l), &e); err != nil {
						t.Fatalf("ledger show line %q: %v", l, err)
					}
					if e.Payload.ToolName != "note" {
						continue
					}
					n++
					w := strings.Join(e.Payload.Warnings, ",")
					if !strings.Contains(w, "metadata_conflict:declared_side_effects,metadata_conflict:side_effect") || e.Payload.MetadataConfidence != 0.45 {
						t.Errorf("note's decision receipt: warnings %v, metadata_confidence %v", e.Payload.Warnings, e.Payload.MetadataConfidence)
					}
				}
				// One decision record per call; a forwarded call's outcome
				// is a gateway_outcome entry, which carries only what the
				// outcome adds (docs/ledger.md, "Per-call records").
				if n != 1 {
					t.Errorf("%d decision receipts for note, want 1", n)
				}
			})
		}
	}
}
