package policy

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
)

func mustParse(t testing.TB, src string) *Policy {
	t.Helper()
	p, err := Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// decided returns the enforce part of a decision of policy "t" version "1".
func decided(action Action, rule, reason, code string) Decision {
	return Decision{Action: action, Rule: rule, Reason: reason, ReasonCode: code, PolicyName: "t", PolicyVersion: "1"}
}

func byDefault(action Action) Decision {
	return decided(action, "default", "no rule matched; default action", "default")
}

func TestEvaluate(t *testing.T) {
	const ordered = `
name: t
version: "1"
defaults: {action: monitor}
rules:
  - id: first
    tools: ["delete_*"]
    action: deny
    reason: first rule
  - id: second
    tools: ["delete_*", "drop_*"]
    action: allow
    reason: second rule
  - id: agent_only
    when: principal.role == "agent"
    action: deny
    reason: agents are denied the rest
`
	const globs = `
name: t
version: "1"
defaults: {action: allow}
rules:
  - id: literal
    tools: [exact_name]
    action: deny
    reason: literal
  - id: question
    tools: ["get_?"]
    action: deny
    reason: question
  - id: class
    tools: ["[xy]_tool", "[^a-m]_other"]
    action: deny
    reason: class
  - id: escaped
    tools: ['star\*']
    action: deny
    reason: escaped
  - id: slashes
    tools: ["github/*"]
    action: monitor
    reason: slashes
  - id: middle
    tools: ["a*z"]
    action: deny
    reason: middle
`
	const shadows = `
name: t
version: "1"
defaults: {action: allow}
rules:
  - id: shadow_before
    mode: shadow
    tools: ["write_*"]
    action: deny
    reason: shadow before
  - id: enforce_delete
    tools: ["delete_*", "write_secret"]
    action: deny
    reason: enforced
  - id: shadow_after
    mode: shadow
    tools: ["delete_*", "read_*"]
    action: monitor
    reason: shadow after
  - id: shadow_last
    mode: shadow
    action: deny
    reason: shadow last
    when: tool.name == "read_secret"
`
	const errs = `
name: t
version: "1"
defaults: {action: allow}
rules:
  - id: shadow_broken
    mode: shadow
    tools: ["shadow_*"]
    when: arguments.missing == "x"
    action: allow
    reason: shadow broken
  - id: guarded
    when: has(arguments.path) && arguments.path == "/etc/passwd"
    action: deny
    reason: guarded with has
  - id: guarded_in
    when: '"mode" in arguments && arguments.mode == "force"'
    action: deny
    reason: guarded with in
  - id: broken
    tools: ["broken_*", "shadow_*"]
    when: arguments.path.startsWith("/secret")
    action: allow
    reason: broken
  - id: after_broken
    action: allow
    reason: never reached for broken_*
    tools: ["broken_*"]
`
	tests := []struct {
		name   string
		policy string
		in     Input
		want   Decision
		shadow []ShadowDecision
	}{
		{"first match wins", ordered, Input{Tool: Tool{Name: "delete_repo"}}, decided(ActionDeny, "first", "first rule", "rule"), nil},
		{"second rule by second pattern", ordered, Input{Tool: Tool{Name: "drop_table"}}, decided(ActionAllow, "second", "second rule", "rule"), nil},
		{"condition rule", ordered, Input{Principal: Principal{Role: "agent"}, Tool: Tool{Name: "x"}}, decided(ActionDeny, "agent_only", "agents are denied the rest", "rule"), nil},
		{"default", ordered, Input{Principal: Principal{Role: "human"}, Tool: Tool{Name: "x"}}, byDefault(ActionMonitor), nil},

		{"glob literal", globs, Input{Tool: Tool{Name: "exact_name"}}, decided(ActionDeny, "literal", "literal", "rule"), nil},
		{"glob literal is whole-name", globs, Input{Tool: Tool{Name: "exact_names"}}, byDefault(ActionAllow), nil},
		{"glob ?", globs, Input{Tool: Tool{Name: "get_x"}}, decided(ActionDeny, "question", "question", "rule"), nil},
		{"glob ? is one character", globs, Input{Tool: Tool{Name: "get_xy"}}, byDefault(ActionAllow), nil},
		{"glob class", globs, Input{Tool: Tool{Name: "y_tool"}}, decided(ActionDeny, "class", "class", "rule"), nil},
		{"glob negated class", globs, Input{Tool: Tool{Name: "z_other"}}, decided(ActionDeny, "class", "class", "rule"), nil},
		{"glob negated class excludes", globs, Input{Tool: Tool{Name: "b_other"}}, byDefault(ActionAllow), nil},
		{"glob escape", globs, Input{Tool: Tool{Name: "star*"}}, decided(ActionDeny, "escaped", "escaped", "rule"), nil},
		{"glob escape is literal", globs, Input{Tool: Tool{Name: "starry"}}, byDefault(ActionAllow), nil},
		{"glob * after slash", globs, Input{Tool: Tool{Name: "github/create_issue"}}, decided(ActionMonitor, "slashes", "slashes", "rule"), nil},
		{"glob * crosses slashes", globs, Input{Tool: Tool{Name: "github/a/b"}}, decided(ActionMonitor, "slashes", "slashes", "rule"), nil},
		{"glob a*z crosses slash", globs, Input{Tool: Tool{Name: "a/b/z"}}, decided(ActionDeny, "middle", "middle", "rule"), nil},
		{"glob no match", globs, Input{Tool: Tool{Name: "gitlab/x"}}, byDefault(ActionAllow), nil},

		{"shadow before enforce", shadows, Input{Tool: Tool{Name: "write_secret"}}, decided(ActionDeny, "enforce_delete", "enforced", "rule"),
			[]ShadowDecision{{Action: ActionDeny, Rule: "shadow_before", Reason: "shadow before", ReasonCode: "rule"}}},
		{"shadow after enforce", shadows, Input{Tool: Tool{Name: "delete_x"}}, decided(ActionDeny, "enforce_delete", "enforced", "rule"),
			[]ShadowDecision{{Action: ActionMonitor, Rule: "shadow_after", Reason: "shadow after", ReasonCode: "rule"}}},
		{"only shadow matches", shadows, Input{Tool: Tool{Name: "write_x"}}, byDefault(ActionAllow),
			[]ShadowDecision{{Action: ActionDeny, Rule: "shadow_before", Reason: "shadow before", ReasonCode: "rule"}}},
		{"every matching shadow is recorded, in file order", shadows, Input{Tool: Tool{Name: "read_secret"}}, byDefault(ActionAllow),
			[]ShadowDecision{{Action: ActionMonitor, Rule: "shadow_after", Reason: "shadow after", ReasonCode: "rule"},
				{Action: ActionDeny, Rule: "shadow_last", Reason: "shadow last", ReasonCode: "rule"}}},
		{"nothing matches", shadows, Input{Tool: Tool{Name: "other"}, Arguments: map[string]any{}}, byDefault(ActionAllow), nil},

		{"has guard, key absent", errs, Input{Tool: Tool{Name: "t"}}, byDefault(ActionAllow), nil},
		{"has guard, key present", errs, Input{Tool: Tool{Name: "t"}, Arguments: map[string]any{"path": "/etc/passwd"}}, decided(ActionDeny, "guarded", "guarded with has", "rule"), nil},
		{"in guard, key present", errs, Input{Tool: Tool{Name: "t"}, Arguments: map[string]any{"mode": "force"}}, decided(ActionDeny, "guarded_in", "guarded with in", "rule"), nil},
		{"condition error fails closed", errs, Input{Tool: Tool{Name: "broken_x"}, Arguments: map[string]any{"other": "/secret"}},
			decided(ActionDeny, "broken", "condition of rule broken failed to evaluate", "condition_error"), nil},
		{"condition error on wrong type", errs, Input{Tool: Tool{Name: "broken_x"}, Arguments: map[string]any{"path": int64(7)}},
			decided(ActionDeny, "broken", "condition of rule broken failed to evaluate", "condition_error"), nil},
		{"condition evaluates", errs, Input{Tool: Tool{Name: "broken_x"}, Arguments: map[string]any{"path": "/secret/x"}},
			decided(ActionAllow, "broken", "broken", "rule"), nil},
		{"shadow condition error is reported, not enforced", errs, Input{Tool: Tool{Name: "shadow_x"}, Arguments: map[string]any{"path": "/secret/x"}},
			decided(ActionAllow, "broken", "broken", "rule"),
			[]ShadowDecision{{Action: ActionDeny, Rule: "shadow_broken", Reason: "condition of rule shadow_broken failed to evaluate", ReasonCode: "condition_error"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, tt.policy)
			got := p.Evaluate(&tt.in)
			want := tt.want
			want.Shadows = tt.shadow
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Evaluate\n got: %s\nwant: %s", jsonString(got), jsonString(want))
			}
		})
	}
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestReadonlyExample runs the shipped readonly-agent policy against the
// side effects the mcp package derives from annotations.
func TestReadonlyExample(t *testing.T) {
	p, err := Load("../../examples/policies/readonly-agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	yes, no := true, false
	known := func(name string, a mcp.Annotations) Tool {
		return Tool{Name: name, Known: true, Annotations: a.Map(), SideEffect: a.SideEffect()}
	}
	tools := []struct {
		name string
		tool Tool
		deny bool // for readonly_agent
	}{
		{"read_only", known("read_file", mcp.Annotations{ReadOnlyHint: &yes}), false},
		{"mutating", known("write_file", mcp.Annotations{DestructiveHint: &no}), true},
		{"destructive", known("delete_file", mcp.Annotations{DestructiveHint: &yes}), true},
		{"no annotations", known("mystery", mcp.Annotations{}), true},
		{"unknown tool", Tool{Name: "never_listed"}, true},
		{"unknown tool, explicit destructive", Tool{Name: "never_listed", SideEffect: mcp.SideEffectDestructive}, true},
		{"namespaced name", known("fs/write", mcp.Annotations{DestructiveHint: &no}), true},
	}
	const rule = "readonly_agent_no_mutating_tools"
	const reason = "readonly_agent cannot call tools with declared write side effects"
	for _, tt := range tools {
		for _, role := range []string{"readonly_agent", "developer_agent", ""} {
			t.Run(tt.name+"/"+role, func(t *testing.T) {
				got := p.Evaluate(&Input{Principal: Principal{ID: "user_1", Role: role}, ServerID: "fs", Tool: tt.tool})
				want := Decision{Action: ActionAllow, Rule: "default", Reason: defaultReason, ReasonCode: "default"}
				if role == "readonly_agent" && tt.deny {
					want = Decision{Action: ActionDeny, Rule: rule, Reason: reason, ReasonCode: "rule"}
				}
				want.PolicyName, want.PolicyVersion = "readonly-agent", "2026-11-30"
				if !reflect.DeepEqual(got, want) {
					t.Errorf("got %+v\nwant %+v", got, want)
				}
			})
		}
	}
}

// TestConditionValues checks the CEL view of Input: variables, numbers,
// nested values, absent maps.
func TestConditionValues(t *testing.T) {
	in := Input{
		Principal: Principal{ID: "user_1", Role: "agent"},
		ServerID:  "srv",
		Tool: Tool{Name: "t", Known: true, Title: "Title", Description: "desc",
			Annotations: map[string]any{"readOnlyHint": true}, SideEffect: "read_only",
			DeclaredSideEffects: []string{"read", "network"}, DataClasses: []string{"pii"}, Externality: "third_party",
			RequiredScopes: []string{"docs.read"}, MetadataConfidence: 0.62,
			Sources:           map[string]string{"declared_side_effects": "meta", "side_effect": "annotation", "data_classes": "heuristic", "externality": "meta", "required_scopes": "meta"},
			MetadataConflicts: []string{"side_effect"}},
		Arguments: map[string]any{
			"int":    int64(42),
			"float":  1.5,
			"big":    1e20,
			"num":    json.Number("7"),
			"numf":   json.Number("2.5"),
			"numbig": json.Number("100000000000000000000"),
			"goint":  3,
			"null":   nil,
			"list":   []any{"a", int64(2), map[string]any{"deep": json.Number("9")}},
			"obj":    map[string]any{"k": "v"},
		},
		Meta: map[string]any{"progressToken": "p1"},
	}
	tests := []struct {
		cond string
		in   *Input
		want any // true, false or "error"
	}{
		{`principal.id == "user_1" && principal.role == "agent"`, &in, true},
		{`server.id == "srv"`, &in, true},
		{`tool.name == "t" && tool.known && tool.title == "Title" && tool.description == "desc"`, &in, true},
		{`tool.annotations.readOnlyHint == true && tool.side_effect == "read_only"`, &in, true},
		{`arguments.int == 42 && arguments.int > 41.5 && arguments.int == 42.0`, &in, true},
		{`arguments.float > 1 && arguments.float < 2`, &in, true},
		{`arguments.big > 9223372036854775807`, &in, true},
		{`arguments.num == 7 && arguments.num + 1 == 8`, &in, true},
		{`arguments.numf == 2.5`, &in, true},
		{`arguments.numbig > 1e19`, &in, true},
		{`arguments.goint == 3`, &in, true},
		{`arguments["null"] == null`, &in, true},
		{`arguments.list[1] == 2 && arguments.list[2].deep == 9 && "a" in arguments.list`, &in, true},
		{`arguments.obj.k == "v" && size(arguments) == 10`, &in, true},
		{`arguments.?missing.orValue("d") == "d"`, &in, true},
		{`meta.progressToken == "p1"`, &in, true},
		{`arguments.int.lowerAscii() == ""`, &in, "error"},
		{`"a,b".split(",").size() == 2`, &in, true},
		// Claims of docs/policy.md.
		{`arguments.int == 42.0 && arguments.float > 1 && arguments.big > 1`, &in, true},
		{`arguments.?path.orValue("").startsWith("/tmp/allowed/")`, &in, false},
		{`has(tool.annotations.readOnlyHint) && tool.annotations.readOnlyHint`, &in, true},
		{`arguments.obj.k == true`, &in, false},
		{`false && arguments.missing == 1`, &in, false},
		{`arguments.missing == 1 && false`, &in, false},
		{`arguments.missing == 1 || true`, &in, true},
		{`arguments.missing == 1 || false`, &in, "error"},
		{`type(arguments.obj.k) == string && type(arguments.int) == int && type(arguments.big) == double`, &in, true},
		{`meta["progressToken"] == "p1" && !("io.modelcontextprotocol/protocolVersion" in meta)`, &in, true},
		// The normalized fields (evidence.md §4).
		{`"network" in tool.declared_side_effects && !("write" in tool.declared_side_effects) && tool.data_classes == ["pii"] && tool.externality == "third_party"`, &in, true},
		{`tool.required_scopes.exists(s, s.startsWith("docs.")) && tool.metadata_confidence > 0.6 && tool.metadata_confidence < 0.7`, &in, true},
		{`tool.sources.side_effect == "annotation" && tool.sources["data_classes"] == "heuristic" && tool.metadata_conflicts == ["side_effect"]`, &in, true},
		{`tool.sources.side_effect == "unknown" && tool.sources.externality == "meta"`, &Input{Tool: Tool{Sources: map[string]string{"externality": "meta"}}}, true},
		// Zero input: empty maps and lists, destructive side effect,
		// external, every source unknown, confidence 0.
		{`size(tool.declared_side_effects) == 0 && size(tool.data_classes) == 0 && size(tool.required_scopes) == 0 && size(tool.metadata_conflicts) == 0`, &Input{}, true},
		{`tool.externality == "external" && tool.metadata_confidence == 0.0 && tool.sources.all(f, tool.sources[f] == "unknown") && size(tool.sources) == 5`, &Input{}, true},
		// Zero input: empty maps, destructive side effect.
		{`size(arguments) == 0 && size(meta) == 0 && size(tool.annotations) == 0`, &Input{}, true},
		{`tool.side_effect == "destructive" && !tool.known && tool.name == ""`, &Input{}, true},
		{`principal.role == "" && server.id == ""`, nil, true},
		{`tool.annotations.readOnlyHint == true`, &Input{}, "error"},
		{`has(tool.annotations.readOnlyHint)`, &Input{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.cond, func(t *testing.T) {
			src := fmt.Sprintf("name: t\nversion: '1'\nrules:\n  - id: c\n    when: %s\n    action: deny\n    reason: r\n", jsonString(tt.cond))
			p := mustParse(t, src)
			d := p.Evaluate(tt.in)
			var got any
			switch {
			case d.ReasonCode == ReasonCodeConditionError:
				got = "error"
			case d.Rule == "c":
				got = true
			default:
				got = false
			}
			if got != tt.want {
				t.Errorf("condition %s: got %v (%+v), want %v", tt.cond, got, d, tt.want)
			}
			// The same through a ToolView made once from the tool.
			if tt.in != nil {
				viewed := *tt.in
				viewed.ToolView = NewToolView(tt.in.Tool)
				if dv := p.Evaluate(&viewed); !reflect.DeepEqual(dv, d) {
					t.Errorf("condition %s with a ToolView: %+v, without %+v", tt.cond, dv, d)
				}
			}
		})
	}
}

// TestEvalBudget: a condition whose work grows with the arguments is cut off
// by the time budget and fails closed.
func TestEvalBudget(t *testing.T) {
	p := mustParse(t, `
name: t
version: "1"
rules:
  - id: quadratic
    when: arguments.items.all(x, arguments.items.all(y, x == y || true))
    action: allow
    reason: r
  - id: plain
    when: arguments.items[0] == 0
    action: allow
    reason: r
`)
	if !p.rules[0].loops || p.rules[1].loops {
		t.Fatalf("loops = %v %v, want true false", p.rules[0].loops, p.rules[1].loops)
	}
	items := make([]any, 100_000)
	for i := range items {
		items[i] = int64(i)
	}
	start := time.Now()
	d := p.Evaluate(&Input{Arguments: map[string]any{"items": items}})
	if d.Action != ActionDeny || d.ReasonCode != ReasonCodeConditionError || d.Rule != "quadratic" {
		t.Errorf("got %+v, want a condition_error deny", d)
	}
	if took := time.Since(start); took > 20*evalBudget {
		t.Errorf("Evaluate took %v, budget %v", took, evalBudget)
	}
	d = p.Evaluate(&Input{Arguments: map[string]any{"items": items[:10]}})
	if d.Action != ActionAllow || d.Rule != "quadratic" {
		t.Errorf("small input: got %+v, want allow by quadratic", d)
	}
}

// TestEvaluateConcurrent evaluates from many goroutines (run with -race)
// and checks that the input is left alone.
func TestEvaluateConcurrent(t *testing.T) {
	p, err := Load("../../examples/policies/sandboxed-writes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	in := &Input{
		Principal: Principal{Role: "ci_agent"},
		Tool:      Tool{Name: "write_file", Known: true, Annotations: map[string]any{"openWorldHint": false}},
		Arguments: map[string]any{"path": "/tmp/allowed/x", "content": "hello"},
	}
	before := jsonString(in)
	want := p.Evaluate(in)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				if got := p.Evaluate(in); !reflect.DeepEqual(got, want) {
					t.Errorf("concurrent Evaluate = %+v, want %+v", got, want)
					return
				}
			}
		})
	}
	wg.Wait()
	if after := jsonString(in); after != before {
		t.Errorf("Evaluate modified its input:\n%s\n%s", before, after)
	}
}

// TestStopsEarly: once the decision and a shadow are known, later rules are
// not evaluated (a later broken rule does not matter).
func TestStopsEarly(t *testing.T) {
	p := mustParse(t, `
name: t
version: "1"
rules:
  - id: decide
    action: allow
    reason: first
  - id: broken_enforce
    when: arguments.nope == 1
    action: allow
    reason: never evaluated
`)
	if d := p.Evaluate(&Input{}); d.Rule != "decide" || d.Shadows != nil {
		t.Errorf("got %+v", d)
	}
}

// TestShadowsEveryPhase: response and receipt rules record every matching
// shadow rule too, before and after the enforce rule that decides, in file
// order; a request's evaluation never sees them.
func TestShadowsEveryPhase(t *testing.T) {
	p := mustParse(t, `
name: t
version: "1"
rules:
  - id: resp_shadow_1
    mode: shadow
    when: response_scan.status == "fail"
    action: deny
    reason: r1
  - id: resp_enforce
    when: response_scan.status == "fail"
    action: monitor
    reason: re
  - id: resp_shadow_2
    mode: shadow
    when: '"secret" in response_scan.classes'
    action: redact
    reason: r2
  - id: rcpt_enforce
    when: receipt.status == "unsigned"
    action: monitor
    reason: ce
  - id: rcpt_shadow_1
    mode: shadow
    when: receipt.status != "ok"
    action: deny
    reason: c1
  - id: rcpt_shadow_2
    mode: shadow
    when: receipt.conflicts > 0
    action: deny
    reason: c2
`)
	sh := func(a Action, rule, reason string) ShadowDecision {
		return ShadowDecision{Action: a, Rule: rule, Reason: reason, ReasonCode: ReasonCodeRule}
	}
	tests := []struct {
		name    string
		eval    func() (Decision, bool)
		rule    string
		shadows []ShadowDecision
	}{
		{"response", func() (Decision, bool) {
			return p.EvaluateResponse(&Input{ResponseScan: &ScanView{Status: "fail", Findings: []Finding{{Rule: "x", Class: "secret", Confidence: "high", Path: "/result"}}}})
		}, "resp_enforce", []ShadowDecision{sh(ActionDeny, "resp_shadow_1", "r1"), sh(ActionRedact, "resp_shadow_2", "r2")}},
		{"receipt", func() (Decision, bool) {
			return p.EvaluateReceipt(&Input{Receipt: &Receipt{Status: "unsigned", Conflicts: 1}})
		}, "rcpt_enforce", []ShadowDecision{sh(ActionDeny, "rcpt_shadow_1", "c1"), sh(ActionDeny, "rcpt_shadow_2", "c2")}},
		{"receipt, shadows only", func() (Decision, bool) {
			return p.EvaluateReceipt(&Input{Receipt: &Receipt{Status: "tampered", Conflicts: 2}})
		}, "", []ShadowDecision{sh(ActionDeny, "rcpt_shadow_1", "c1"), sh(ActionDeny, "rcpt_shadow_2", "c2")}},
		{"request sees none", func() (Decision, bool) { return p.Evaluate(&Input{}), true }, "default", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _ := tt.eval()
			if d.Rule != tt.rule || !reflect.DeepEqual(d.Shadows, tt.shadows) {
				t.Errorf("got rule %q shadows %s, want %q %s", d.Rule, jsonString(d.Shadows), tt.rule, jsonString(tt.shadows))
			}
		})
	}
}
