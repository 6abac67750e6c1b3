package gateway

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/pipeline"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
)

// stagesPolicy is testdata/stages/policy.yaml: deny what is not read-only,
// a shadow rule matching every call.
func stagesPolicy(t *testing.T) *policy.Policy {
	t.Helper()
	data, err := os.ReadFile("testdata/stages/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse("testdata/stages/policy.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

// decideOn runs the session chain of pol and cat on a call to name with
// args, looked up in cat as the session does, and returns the decision.
func decideOn(t *testing.T, ch *pipeline.Chain, pol *policy.Policy, cat *catalog, name, args string) (policy.Decision, pipeline.Verdict) {
	t.Helper()
	tool, facts, known, stale, gen := cat.lookupGen(name)
	if stale {
		known = false
	}
	if !known || facts == nil {
		facts = factsOf(tool, known)
	}
	c := &pipeline.Call{
		Session: pipeline.SessionInfo{PrincipalID: "p", Role: "r", ServerID: "s"},
		ID:      jsonrpc.NewID([]byte("1")), Name: name, Arguments: []byte(args),
		Tool: tool, Known: known, State: &callState{facts: facts, gen: gen, meta: map[string]any{}},
	}
	v := ch.Decide(context.Background(), c)
	return decisionOf(pol, c, v), v
}

// TestSessionChain pins the session's deciders: their order, which stage
// decides which call, that a deny by unknown_tool or argument_name_case
// stops the chain before policy (no shadow decision then), and that
// policy's shadow rule reaches the decision as Shadow.
func TestSessionChain(t *testing.T) {
	pol := stagesPolicy(t)
	cat := newCatalog()
	yes := true
	cat.replace([]mcp.Tool{
		{Name: "read", InputSchema: []byte(`{"type":"object","properties":{"path":{"type":"string"}}}`), Annotations: mcp.Annotations{ReadOnlyHint: &yes}},
		{Name: "write", InputSchema: []byte(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
	})
	ch, err := compileChain(pol, cat)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ch.Stages(), []string{StageUnknownTool, StageArgumentNameCase, StagePolicy}; !slices.Equal(got, want) {
		t.Fatalf("stages %v, want %v", got, want)
	}
	shadow := &policy.ShadowDecision{Action: policy.ActionMonitor, Rule: "watch_everything", Reason: "every call is watched", ReasonCode: policy.ReasonCodeRule}
	for _, tc := range []struct {
		name, tool, args string
		stage            string
		want             policy.Decision
	}{
		{name: "unknown tool", tool: "rm_rf", args: `{}`, stage: StageUnknownTool,
			want: policy.Decision{Action: policy.ActionDeny, Rule: RuleUnknownTool, ReasonCode: RuleUnknownTool, Reason: reasonUnknownTool}},
		{name: "argument name case", tool: "read", args: `{"Path":"/etc"}`, stage: StageArgumentNameCase,
			want: policy.Decision{Action: policy.ActionDeny, Rule: RuleArgumentNameCase, ReasonCode: RuleArgumentNameCase, Reason: reasonArgumentNameCase}},
		{name: "allowed with shadow", tool: "read", args: `{"path":"/etc"}`, stage: StagePolicy,
			want: policy.Decision{Action: policy.ActionAllow, Rule: "default", ReasonCode: policy.ReasonCodeDefault, Reason: "no rule matched; default action", Shadow: shadow}},
		{name: "denied by policy with shadow", tool: "write", args: `{"path":"/etc"}`, stage: StagePolicy,
			want: policy.Decision{Action: policy.ActionDeny, Rule: "no_write", ReasonCode: policy.ReasonCodeRule, Reason: "no writes", Shadow: shadow}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.PolicyName, tc.want.PolicyVersion = "stages", "7"
			for round := range 2 { // the second round is answered from the decision cache
				d, v := decideOn(t, ch, pol, cat, tc.tool, tc.args)
				if v.Stage != tc.stage {
					t.Errorf("round %d: decided by stage %q, want %q", round, v.Stage, tc.stage)
				}
				if d.Action == policy.ActionDeny && v.Code != CodeDenied {
					t.Errorf("round %d: deny with code %d, want %d", round, v.Code, CodeDenied)
				}
				if d.Shadow != nil && tc.want.Shadow != nil && *d.Shadow == *tc.want.Shadow {
					d.Shadow = tc.want.Shadow
				}
				if d != tc.want {
					t.Errorf("round %d: decision\n%+v\nwant\n%+v", round, d, tc.want)
				}
			}
		})
	}
	if _, ok := cat.decision("read", cat.gen); !ok {
		t.Error("the policy stage kept no decision for a tool-only policy")
	}
	cat.markStale()
	if d, _ := decideOn(t, ch, pol, cat, "read", `{}`); d.Rule != RuleUnknownTool {
		t.Errorf("a stale catalog's tool decided by %q, want %q", d.Rule, RuleUnknownTool)
	}
}

// TestPolicyStageNeedsState: a call without the session's catalog state
// cannot be judged by policy, and the chain denies it (fail closed) with
// pipeline.RuleStageFailed.
func TestPolicyStageNeedsState(t *testing.T) {
	pol := stagesPolicy(t)
	ch, err := compileChain(pol, newCatalog())
	if err != nil {
		t.Fatal(err)
	}
	c := &pipeline.Call{Name: "read", Known: true}
	if v := ch.Decide(context.Background(), c); v.Action != pipeline.Deny || v.Rule != pipeline.RuleStageFailed || v.Stage != StagePolicy {
		t.Fatalf("verdict %+v, want a deny by stage %s with rule %s", v, StagePolicy, pipeline.RuleStageFailed)
	}
}
