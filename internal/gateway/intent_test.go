package gateway

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/decisionlog"
	"github.com/gatehouse-mcp/gatehouse/internal/evidence"
	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
)

// callRecorder is an Evidence that keeps every Call it is given.
type callRecorder struct {
	mu    sync.Mutex
	calls []*Call
}

func (r *callRecorder) Decided(c *Call) func() error {
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
	return func() error { return nil }
}

func (r *callRecorder) Responded(*Call, *jsonrpc.Message) func() (bool, string) {
	return func() (bool, string) { return false, "" }
}

func (r *callRecorder) byName(name string) *Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.calls {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// TestNormalizedIntentDecides is the acceptance case of evidence.md §4
// and §5 through the gateway: with examples/policies/readonly-agent.yaml
// and role readonly_agent, a tool annotated readOnlyHint true whose _meta
// declaration says it writes is denied by readonly_agent_no_mutating_tools;
// the decision event records side_effect mutating; the policy saw the
// normalized fields and the Evidence recorder gets the same intent. A tool
// that is read-only by every source is still allowed.
func TestNormalizedIntentDecides(t *testing.T) {
	pol, err := policy.Load("../../examples/policies/readonly-agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	logPath := filepath.Join(dir, "d.jsonl")
	log, err := decisionlog.Open(logPath, "gatehouse://test/x")
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	ev := &callRecorder{}
	h := newHarness(t, Config{Policy: pol, Log: log, Evidence: ev, Principal: policy.Principal{ID: "u", Role: "readonly_agent"}})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
	h.recv()
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"note","arguments":{"text":"x"}}}` + "\n")
	if got := h.recv(); !strings.Contains(got, `"code":-32080`) || !strings.Contains(got, "readonly_agent_no_mutating_tools") {
		t.Fatalf("note = %s, want the readonly denial", got)
	}
	h.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read","arguments":{"path":"/tmp/a"}}}` + "\n")
	if got := h.recv(); !strings.Contains(got, `"id":3,"result"`) {
		t.Fatalf("read = %s, want it forwarded", got)
	}
	for _, l := range h.serverGot() { // read was forwarded after note was decided
		if strings.Contains(l, `"name":"note"`) {
			t.Fatalf("the denied call reached the server: %s", l)
		}
	}

	// The decision events carry the normalized side effect.
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	sides := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e struct {
			Data decisionlog.ToolDecision `json:"data"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		sides[e.Data.Tool] = e.Data.SideEffect
	}
	if sides["note"] != "mutating" || sides["read"] != "read_only" {
		t.Fatalf("decision events' side_effect = %v", sides)
	}

	// The Evidence recorder gets the intent the policy decided on.
	c := ev.byName("note")
	if c == nil {
		t.Fatal("no Call for note")
	}
	if c.Intent.SideEffect != "mutating" || c.Intent.Sources[evidence.FieldSideEffect] != evidence.SourceMeta {
		t.Fatalf("Call.Intent = %+v", c.Intent)
	}
	if w := c.Intent.Warnings(); !reflect.DeepEqual(w, []string{"metadata_conflict:declared_side_effects", "metadata_conflict:side_effect"}) {
		t.Fatalf("Call.Intent.Warnings() = %v", w)
	}
	pt := c.PolicyTool()
	want := policy.Tool{Name: "note", Known: true, Annotations: mcp.Annotations{ReadOnlyHint: ptr(true)}.Map(),
		DeclaredSideEffects: []string{"write", "read"}, SideEffect: "mutating", Externality: "external", MetadataConfidence: 0.45,
		Sources:           map[string]string{"declared_side_effects": "meta", "side_effect": "meta", "data_classes": "unknown", "externality": "annotation", "required_scopes": "unknown"},
		MetadataConflicts: []string{"declared_side_effects", "side_effect"}}
	if !reflect.DeepEqual(pt, want) {
		t.Fatalf("PolicyTool() =\n%+v\nwant\n%+v", pt, want)
	}
	// A Call made elsewhere (no catalogue facts) gets the same view.
	other := &Call{Name: c.Name, Tool: c.Tool, Known: true}
	if got := other.PolicyTool(); !reflect.DeepEqual(got, want) {
		t.Fatalf("PolicyTool() of a bare Call =\n%+v\nwant\n%+v", got, want)
	}
}

// TestToolFactsOncePerDefinition: the catalogue computes a tool's facts
// when it is listed and every call of that definition shares them; a
// changed definition gets new facts, and a stale catalogue makes the tool
// unknown (destructive) whatever it was listed as.
func TestToolFactsOncePerDefinition(t *testing.T) {
	c := newCatalog()
	tools, _ := parseToolsPage([]byte(testTools))
	c.replace(tools)
	_, f1, known, _, _ := c.lookupGen("note")
	_, f2, _, _, _ := c.lookupGen("note")
	if !known || f1 == nil || f1 != f2 || f1.intent.SideEffect != "mutating" {
		t.Fatalf("facts %p %p known %v", f1, f2, known)
	}
	if f1.viewFor("note") == nil || f1.viewFor("Note") != nil || unknownFacts.viewFor("note") != nil {
		t.Fatal("the policy view is kept for the listed name only")
	}
	redefined, _ := parseToolsPage([]byte(`{"tools":[{"name":"note","annotations":{"readOnlyHint":true}}]}`))
	c.upsert(redefined)
	if _, f3, _, _, _ := c.lookupGen("note"); f3 == f1 || f3.intent.SideEffect != "read_only" {
		t.Fatalf("facts after the definition changed: %+v", f3)
	}
	if f := factsOf(mcp.Tool{Name: "note", Annotations: mcp.Annotations{ReadOnlyHint: ptr(true)}}, false); f != unknownFacts ||
		f.intent.SideEffect != "destructive" || f.policyTool("x").Externality != "external" || f.policyTool("x").Known {
		t.Fatalf("facts of an unknown tool: %+v", f)
	}
}

func ptr[T any](v T) *T { return &v }

// TestCachedDecisionFollowsTheDeclaration: a cached decision (a policy
// that depends only on the tool) is taken again when a new listing
// changes only the tool's _meta declaration: the read-only tool that now
// declares it writes is denied.
func TestCachedDecisionFollowsTheDeclaration(t *testing.T) {
	pol := readonlyPolicy(t, "")
	h := newHarness(t, Config{Policy: pol, Principal: policy.Principal{Role: "readonly_agent"}})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
	h.recv()
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read","arguments":{"path":"/tmp/a"}}}` + "\n")
	if got := h.recv(); !strings.Contains(got, `"id":2,"result"`) {
		t.Fatalf("read-only call refused: %s", got)
	}
	if _, ok := h.sess.catalog.decision("read", h.sess.catalog.gen); !ok {
		t.Fatal("no decision cached")
	}
	tools, _ := parseToolsPage([]byte(`{"tools":[{"name":"read","inputSchema":{"type":"object","properties":{"path":{"type":"string"}}},"annotations":{"readOnlyHint":true},` +
		`"_meta":{"dev.gatehouse/security":{"side_effect":"mutating"}}}]}`))
	h.sess.catalog.replace(tools)
	h.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read","arguments":{"path":"/tmp/b"}}}` + "\n")
	if got := h.recv(); !strings.Contains(got, `"code":-32080`) || !strings.Contains(got, "readonly_agent_no_mutating_tools") {
		t.Fatalf("call after the declaration changed = %s, want the readonly denial", got)
	}
}

// TestHeuristicsAloneDoNotLetAReadonlyAgentThrough: a tool without
// annotations or declaration whose name reads like a read (get_weather)
// is still destructive for the policy, as before normalization reached
// the gateway (a guess from a name must not fail open); beside
// readOnlyHint a destructive name raises it.
func TestHeuristicsAloneDoNotLetAReadonlyAgentThrough(t *testing.T) {
	pol, err := policy.Load("../../examples/policies/readonly-agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tool mcp.Tool
		side string
		deny bool
	}{
		{mcp.Tool{Name: "get_weather", Description: "Current weather."}, "destructive", true},
		{mcp.Tool{Name: "get_weather", Annotations: mcp.Annotations{ReadOnlyHint: ptr(true)}}, "read_only", false},
		{mcp.Tool{Name: "delete_file", Annotations: mcp.Annotations{ReadOnlyHint: ptr(true)}}, "destructive", true},
	} {
		f := factsOf(tc.tool, true)
		d := pol.Evaluate(&policy.Input{Principal: policy.Principal{Role: "readonly_agent"}, Tool: f.policyTool(tc.tool.Name), ToolView: f.viewFor(tc.tool.Name)})
		if f.intent.SideEffect != tc.side || (d.Action == policy.ActionDeny) != tc.deny {
			t.Errorf("%s %+v: side effect %s, decision %s; want %s, deny %v", tc.tool.Name, tc.tool.Annotations, f.intent.SideEffect, d.Action, tc.side, tc.deny)
		}
	}
}
