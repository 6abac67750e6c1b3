package gateway

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/decisionlog"
	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/pipeline"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
	"github.com/gatehouse-mcp/gatehouse/internal/transport"
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
	return decideIn(t, ch, pol, cat, name, args, false)
}

// decideIn is decideOn, in shadow mode when shadow.
func decideIn(t *testing.T, ch *pipeline.Chain, pol *policy.Policy, cat *catalog, name, args string, shadow bool) (policy.Decision, pipeline.Verdict) {
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
	return decisionOf(pol, c, v, shadow), v
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
	ch, err := compileChain(Config{Policy: pol}, cat, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ch.Stages(), []string{StageUnknownTool, StageArgumentNameCase, StagePolicy, StageDecisionLog}; !slices.Equal(got, want) {
		t.Fatalf("stages %v, want %v", got, want)
	}
	shadow := []policy.ShadowDecision{{Action: policy.ActionMonitor, Rule: "watch_everything", Reason: "every call is watched", ReasonCode: policy.ReasonCodeRule, Stage: StagePolicy}}
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
			want: policy.Decision{Action: policy.ActionAllow, Rule: "default", ReasonCode: policy.ReasonCodeDefault, Reason: "no rule matched; default action", Shadows: shadow}},
		{name: "denied by policy with shadow", tool: "write", args: `{"path":"/etc"}`, stage: StagePolicy,
			want: policy.Decision{Action: policy.ActionDeny, Rule: "no_write", ReasonCode: policy.ReasonCodeRule, Reason: "no writes", Shadows: shadow}},
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
				if !reflect.DeepEqual(d, tc.want) {
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

// TestSessionChainShadowMode: with Config.Shadow (or defaults.mode:
// shadow) every stage runs and none enforces: the call is allowed with
// rule shadow_mode, and every stage's verdict, the policy's shadow rule's
// included, is a shadow decision naming its stage; a deny by unknown_tool
// does not stop the chain.
func TestSessionChainShadowMode(t *testing.T) {
	pol := stagesPolicy(t)
	cat := newCatalog()
	yes := true
	cat.replace([]mcp.Tool{
		{Name: "read", InputSchema: []byte(`{"type":"object","properties":{"path":{"type":"string"}}}`), Annotations: mcp.Annotations{ReadOnlyHint: &yes}},
		{Name: "write", InputSchema: []byte(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
	})
	watch := policy.ShadowDecision{Action: policy.ActionMonitor, Rule: "watch_everything", Reason: "every call is watched", ReasonCode: policy.ReasonCodeRule, Stage: StagePolicy}
	noWrite := policy.ShadowDecision{Action: policy.ActionDeny, Rule: "no_write", Reason: "no writes", ReasonCode: policy.ReasonCodeRule, Stage: StagePolicy}
	byDefault := policy.ShadowDecision{Action: policy.ActionAllow, Rule: "default", Reason: "no rule matched; default action", ReasonCode: policy.ReasonCodeDefault, Stage: StagePolicy}
	unknown := policy.ShadowDecision{Action: policy.ActionDeny, Rule: RuleUnknownTool, Reason: reasonUnknownTool, ReasonCode: RuleUnknownTool, Stage: StageUnknownTool}
	nameCase := policy.ShadowDecision{Action: policy.ActionDeny, Rule: RuleArgumentNameCase, Reason: reasonArgumentNameCase, ReasonCode: RuleArgumentNameCase, Stage: StageArgumentNameCase}
	for _, cfg := range []struct {
		name string
		cfg  Config
	}{
		{"--shadow", Config{Policy: pol, Shadow: true}},
		{"defaults.mode shadow", Config{Policy: shadowModePolicy(t)}},
	} {
		ch, err := compileChain(cfg.cfg, cat, slog.New(slog.DiscardHandler), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name, tool, args string
			shadows          []policy.ShadowDecision
		}{
			{"unknown tool", "rm_rf", `{}`, []policy.ShadowDecision{unknown, noWrite, watch}},
			{"argument name case", "read", `{"Path":"/etc"}`, []policy.ShadowDecision{nameCase, byDefault, watch}},
			{"allowed", "read", `{"path":"/etc"}`, []policy.ShadowDecision{byDefault, watch}},
			{"denied by policy", "write", `{"path":"/etc"}`, []policy.ShadowDecision{noWrite, watch}},
		} {
			t.Run(cfg.name+"/"+tc.name, func(t *testing.T) {
				d, v := decideIn(t, ch, cfg.cfg.Policy, cat, tc.tool, tc.args, cfg.cfg.shadowMode())
				want := policy.Decision{Action: policy.ActionAllow, Rule: RuleShadowMode, ReasonCode: RuleShadowMode, Reason: reasonShadowMode,
					Shadows: tc.shadows, PolicyName: cfg.cfg.Policy.Name(), PolicyVersion: cfg.cfg.Policy.Version()}
				if !reflect.DeepEqual(d, want) || !v.Action.Forwards() {
					t.Errorf("decision\n%+v\nwant\n%+v", d, want)
				}
			})
		}
	}
}

// shadowModePolicy is stagesPolicy with defaults.mode: shadow.
func shadowModePolicy(t *testing.T) *policy.Policy {
	t.Helper()
	data, err := os.ReadFile("testdata/stages/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.Replace(string(data), "defaults:\n", "defaults:\n  mode: shadow\n", 1))
	pol, err := policy.Parse("shadow.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	if pol.Settings().Mode != policy.ModeShadow {
		t.Fatalf("policy mode %q", pol.Settings().Mode)
	}
	return pol
}

// TestPolicyStageNeedsState: a call without the session's catalog state
// cannot be judged by policy, and the chain denies it (fail closed) with
// pipeline.RuleStageFailed.
func TestPolicyStageNeedsState(t *testing.T) {
	pol := stagesPolicy(t)
	ch, err := compileChain(Config{Policy: pol}, newCatalog(), slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &pipeline.Call{Name: "read", Known: true}
	if v := ch.Decide(context.Background(), c); v.Action != pipeline.Deny || v.Rule != pipeline.RuleStageFailed || v.Stage != StagePolicy {
		t.Fatalf("verdict %+v, want a deny by stage %s with rule %s", v, StagePolicy, pipeline.RuleStageFailed)
	}
}

// fakeEvidence records what the evidence stage hands it.
type fakeEvidence struct {
	decided   []Call
	responded int
	decideErr error
	withhold  string
}

func (e *fakeEvidence) Decided(c *Call) func() error {
	e.decided = append(e.decided, *c)
	return func() error { return e.decideErr }
}

func (e *fakeEvidence) Responded(c *Call, resp *jsonrpc.Message) func() (bool, string) {
	e.responded++
	return func() (bool, string) { return e.withhold != "", e.withhold }
}

// fakeReceipts counts the receipts the request_receipts stage binds.
type fakeReceipts struct{ events []decisionlog.Event }

func (*fakeReceipts) Open() error { return nil }
func (r *fakeReceipts) Record(_ []byte, ev decisionlog.Event, _ bool, _ []byte) {
	r.events = append(r.events, ev)
}

// TestSessionRecorders pins the recorders: decision_log, request_receipts
// and evidence run in that order, once per call and phase; a decision
// event that cannot be written refuses the allowed call before the
// evidence records it (fail closed, rule decision_not_recorded) and its
// Future says so (errNotLogged); the evidence records the event's id; the
// outcome phase reaches only the evidence, whose withhold comes back as a
// *WithheldError.
func TestSessionRecorders(t *testing.T) {
	pol := stagesPolicy(t)
	yes := true
	for _, tc := range []struct {
		name      string
		closedLog bool
		decideErr error
		withhold  string
	}{
		{name: "recorded"},
		{name: "decision event not written", closedLog: true},
		{name: "evidence not durable", decideErr: errors.New("ledger down")},
		{name: "response withheld", withhold: "no server receipt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log, err := decisionlog.Open(filepath.Join(t.TempDir(), "d.jsonl"), "gatehouse://test/x")
			if err != nil {
				t.Fatal(err)
			}
			if tc.closedLog {
				log.Close()
			} else {
				defer log.Close()
			}
			ev := &fakeEvidence{decideErr: tc.decideErr, withhold: tc.withhold}
			rc := &fakeReceipts{}
			cat := newCatalog()
			cat.replace([]mcp.Tool{{Name: "read", Annotations: mcp.Annotations{ReadOnlyHint: &yes}}})
			ch, err := compileChain(Config{Policy: pol, Log: log, Receipts: rc, Evidence: ev}, cat, slog.New(slog.DiscardHandler), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := ch.Stages(), []string{StageUnknownTool, StageArgumentNameCase, StagePolicy, StageDecisionLog, StageRequestReceipts, StageEvidence}; !slices.Equal(got, want) {
				t.Fatalf("stages %v, want %v", got, want)
			}
			tool, facts, known, _, gen := cat.lookupGen("read")
			st := &callState{facts: facts, gen: gen, meta: map[string]any{}, line: []byte(`{}` + "\n"), isRequest: true}
			c := &pipeline.Call{ID: jsonrpc.NewID([]byte("1")), Name: "read", Arguments: []byte(`{}`), Tool: tool, Known: known, State: st}
			st.decision = decisionOf(pol, c, ch.Decide(context.Background(), c), false)
			st.allowed, st.code = true, CodeDenied
			err = ch.Record(context.Background(), c, pipeline.PhaseDecision)()
			if len(ev.decided) != 1 || len(rc.events) != 1 {
				t.Fatalf("evidence decided %d times, receipts bound %d times; want once each", len(ev.decided), len(rc.events))
			}
			got := ev.decided[0]
			switch {
			case tc.closedLog:
				if !errors.Is(err, errNotLogged) {
					t.Errorf("decision Future: %v, want errNotLogged", err)
				}
				if got.Forwarded || got.Decision.Rule != RuleNotRecorded || st.allowed || st.code != CodeNotRecorded {
					t.Errorf("evidence saw forwarded %v rule %q (call allowed %v code %d), want the fail-closed refusal", got.Forwarded, got.Decision.Rule, st.allowed, st.code)
				}
				if rc.events[0].ID != "" {
					t.Errorf("receipt bound to event %q, want the zero event of a failed write", rc.events[0].ID)
				}
			case tc.decideErr != nil:
				if !errors.Is(err, tc.decideErr) || errors.Is(err, errNotLogged) {
					t.Errorf("decision Future: %v, want the evidence's error", err)
				}
			default:
				if err != nil {
					t.Errorf("decision Future: %v", err)
				}
			}
			if !tc.closedLog && (got.DecisionEventID == "" || got.DecisionEventID != st.eventID || rc.events[0].ID != st.eventID || !got.Forwarded) {
				t.Errorf("evidence saw event %q forwarded %v, receipt event %q; the decision event is %q", got.DecisionEventID, got.Forwarded, rc.events[0].ID, st.eventID)
			}
			c.Response = &pipeline.Response{ID: c.ID, Result: []byte(`{"content":[]}`)}
			err = ch.Record(context.Background(), c, pipeline.PhaseOutcome)()
			if ev.responded != 1 || len(ev.decided) != 1 || len(rc.events) != 1 {
				t.Errorf("after the outcome: responded %d, decided %d, receipts %d; want 1, 1, 1", ev.responded, len(ev.decided), len(rc.events))
			}
			var w *WithheldError
			if tc.withhold != "" {
				if !errors.As(err, &w) || w.Reason != tc.withhold {
					t.Errorf("outcome Future: %v, want a *WithheldError %q", err, tc.withhold)
				}
			} else if err != nil {
				t.Errorf("outcome Future: %v", err)
			}
		})
	}
}

// TestKeptCallHoldsNoFrame: a forwarded call kept for its outcome
// (pending.call, Evidence on) holds nothing that aliases its request
// frame, whose buffer the reader reuses (or, for a big frame, gives back):
// not the arguments, _meta, the line, the decision event's bytes nor the
// id.
func TestKeptCallHoldsNoFrame(t *testing.T) {
	cr, _ := io.Pipe()
	_, sw := io.Pipe()
	log, err := decisionlog.Open(filepath.Join(t.TempDir(), "d.jsonl"), "gatehouse://test/x")
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	s := New(Config{Policy: stagesPolicy(t), Log: log, Receipts: &fakeReceipts{}, Evidence: &fakeEvidence{}},
		transport.NewStream(cr, io.Discard, 0, nil), transport.NewStream(cr, sw, 0, nil))
	yes := true
	s.catalog.replace([]mcp.Tool{{Name: "read", Annotations: mcp.Annotations{ReadOnlyHint: &yes}}})
	line := []byte(`{"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{"name":"read","arguments":{"path":"/x"},"_meta":{"k":"v"}}}` + "\n")
	m, perr := jsonrpc.Parse(line)
	if perr != nil {
		t.Fatal(perr)
	}
	p, ok := parseToolCall(m.Params)
	if !ok {
		t.Fatal("params not read")
	}
	slot := &pending{method: mcp.MethodToolsCall}
	if !s.addPending(m.ID, slot) {
		t.Fatal("id in flight")
	}
	if fwd, reply, _ := s.runToolCall(line, &m, p, slot, false); !fwd || reply != nil {
		t.Fatalf("forward %v reply %q, want the call forwarded", fwd, reply)
	}
	pc := slot.call
	if pc == nil {
		t.Fatal("the forwarded call was not kept for its outcome")
	}
	st := pc.State.(*callState)
	for what, b := range map[string][]byte{"arguments": pc.Arguments, "_meta": pc.Meta, "line": st.line, "event bytes": st.event.Bytes} {
		if b != nil {
			t.Errorf("the kept call still holds the %s", what)
		}
	}
	// The reader reuses its buffer: the ids kept are copies.
	for i := range line {
		line[i] = 'X'
	}
	for what, id := range map[string]jsonrpc.ID{"call": pc.ID, "state": st.id, "evidence": st.evCall.ID} {
		if got := string(id.Raw()); got != `"call-1"` {
			t.Errorf("the %s id reads %s once the frame's buffer is reused, want \"call-1\"", what, got)
		}
	}
	if st.eventID == "" || st.evCall.DecisionEventID != st.eventID {
		t.Errorf("event id %q, evidence's %q: the kept call lost what its outcome needs", st.eventID, st.evCall.DecisionEventID)
	}
}
