package gateway

import (
	"fmt"
	"log/slog"

	"github.com/gatehouse-mcp/gatehouse/internal/decisionlog"
	"github.com/gatehouse-mcp/gatehouse/internal/evidence"
	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/pipeline"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
)

// Stage names of the session's chain, in chain order. They are also the
// names verdicts and diagnostics carry (pipeline.Verdict.Stage).
const (
	StageUnknownTool = "unknown_tool"
	// StageDrift ("drift") is declared in stage_drift.go.
	StageArgumentNameCase = "argument_name_case"
	StageScan             = "scan"
	StagePolicy           = "policy"
	StageDecisionLog      = "decision_log"
	StageRequestReceipts  = "request_receipts"
	StageEvidence         = "evidence"
)

// callState is what the session's stages share about one tools/call
// (pipeline.Call.State). The deciders read the catalogue's facts of the
// tool as the call was looked up, the catalog generation they belong to
// (for the policy stage's decision cache) and params._meta decoded once.
// The recorders read the decision and fill in what they recorded, which
// finishToolCall then reads; the call's goroutines hand it over through
// the Sequencer, never share it at once.
type callState struct {
	facts *toolFacts
	gen   uint64
	meta  map[string]any
	// shadow is whether the session runs in shadow mode (the records'
	// shadow_mode).
	shadow bool

	// line is the exact received line (nil for a batch member); id the
	// call's id (a copy once the call may finish elsewhere); slot its
	// pending entry (nil for a notification).
	line      []byte
	id        jsonrpc.ID
	slot      *pending
	isRequest bool
	// name is the tool's name (params.name), for the refused event.
	name string

	// decision is the chain's verdict as a policy.Decision; allowed
	// whether the call goes to the server, code the JSON-RPC code of its
	// denial. A record that fails changes all three (notRecorded).
	decision policy.Decision
	allowed  bool
	code     int
	// toolCallID, strength and source are the call's tool_call_id
	// (request-receipts §7).
	toolCallID, strength, source string

	// stage asks decisionLogStage to encode the event for the burst's
	// one write (logBurst) instead of writing it; staged is that event,
	// logErr that write's result, set before the Future is called.
	stage  bool
	staged []byte
	logErr error
	// event is the decision event written (zero when the write failed or
	// the event was staged) and eventID its id.
	event   decisionlog.Event
	eventID string
	// evCall is the call as the Evidence saw it (evidenceStage), nil
	// without Evidence.
	evCall *Call
	// argScan and respScan are the scans of the arguments and of the
	// response (scanStage), nil when no scanner is configured;
	// respVerdict is the response's verdict when it is not allow.
	argScan, respScan *scanOutcome
	respVerdict       *pipeline.Verdict
	// drift is what the tool's drift decides (driftStage); zero before
	// the drift stage ran (a value: no allocation per call).
	drift callDrift
}

// notRecorded refuses an allowed call whose decision or evidence could
// not be recorded (fail closed), unless failOpen (on_log_failure:
// fail_open). It is idempotent.
func (st *callState) notRecorded(failOpen bool) {
	if st.allowed && !failOpen {
		st.allowed = false
		st.code = CodeNotRecorded
		st.decision.Rule, st.decision.Reason = RuleNotRecorded, "the decision could not be recorded; refused (fail closed)"
	}
}

// dropFrame lets go of everything of c and its state that aliases the
// request frame (or holds the decision event's bytes) once the decision is recorded: the reader reuses its
// buffer, and a call kept for its outcome (pending.call) must not keep a
// big frame's buffer alive. What finishToolCall and the outcome need (the
// id, a copy once the call may finish elsewhere; the event's id; the
// decision) stays.
func (st *callState) dropFrame(c *pipeline.Call) {
	c.Arguments, c.Meta = nil, nil
	if st.argScan != nil {
		st.argScan.report = nil // its texts alias the frame
	}
	st.line = nil
	st.event = decisionlog.Event{ID: st.event.ID}
}

// argumentScanResult is the call's argument_scan_result: the scan's, nil
// without a scanner (the records then say no scanner was configured), or
// not_run for a call decided before the scan stage ran (a deny that
// stopped the chain).
func (st *callState) argumentScanResult(scanning bool) *evidence.ScanResult {
	switch {
	case st.argScan != nil:
		return st.argScan.result
	case scanning:
		return &evidence.ScanResult{Status: evidence.ScanNotRun, Reason: "the call was decided (" + st.decision.Rule + ") before its arguments were scanned"}
	}
	return nil
}

// stateOf returns the session's state of c; an error for a call made
// elsewhere (a stage then fails closed).
func stateOf(c *pipeline.Call) (*callState, error) {
	st, _ := c.State.(*callState)
	if st == nil {
		return nil, fmt.Errorf("call %s has no session state", c.ID.String())
	}
	return st, nil
}

// compileChain builds the session's stages, compiled once at New:
//
//   - the deciders unknown_tool, drift, argument_name_case, scan (with a
//     Config.Scanner) and policy, in that order (an unknown tool is denied
//     before policy is asked; the first deny stops the chain, so the
//     decision names the stage that denied; policy reads what scan
//     found); scan is also the one Filter of the session's own stages;
//   - the recorders decision_log (always: without a decision log it
//     writes the decision to the diagnostic logger), request_receipts
//     (with a decision log and receipts) and evidence (with an Evidence),
//     in that order: each reads what the one before it recorded (the
//     event, its id);
//   - then Config.Stages, as given.
//
// In shadow mode (Config.Shadow, defaults.mode: shadow) every stage is
// compiled pipeline.InShadow: deciders and filters, the session's and
// Config.Stages alike, are evaluated and recorded, never enforced; the
// recorders record as usual.
//
// The stages share the session's catalog.
func compileChain(cfg Config, cat *catalog, diag *slog.Logger, sess *Session) (*pipeline.Chain, error) {
	failOpen := cfg.Policy.Settings().OnLogFailure == "fail_open"
	var sc *scanStage
	if cfg.Scanner != nil {
		sc = &scanStage{scanner: cfg.Scanner, policy: cfg.Policy, settings: cfg.Policy.Scanning(), session: sess,
			toolScans: map[string][]policy.Finding{}, policyNames: policyNamesBySkeleton(cfg.Policy)}
		if sess != nil {
			sess.scan = sc
			if sc.settings.Tools {
				cat.findings, cat.names = sc.toolFindings, sc.nameFindings
			}
		}
	}
	stages := []pipeline.Stage{unknownToolStage{}}
	if sess != nil && sess.drift != nil {
		stages = append(stages, driftStage{tracker: sess.drift})
	}
	stages = append(stages, argumentNameCaseStage{catalog: cat})
	if sc != nil {
		stages = append(stages, sc)
	}
	stages = append(stages,
		&policyStage{policy: cfg.Policy, catalog: cat, scan: sc},
		&decisionLogStage{log: cfg.Log, diag: diag, failOpen: failOpen, scanning: sc != nil},
	)
	if cfg.Log != nil && cfg.Receipts != nil {
		stages = append(stages, receiptsStage{receipts: cfg.Receipts})
	}
	if cfg.Evidence != nil {
		stages = append(stages, evidenceStage{evidence: cfg.Evidence, scanning: sc != nil})
	}
	stages = append(stages, cfg.Stages...)
	if cfg.shadowMode() {
		for i, s := range stages {
			stages[i] = pipeline.InShadow(s)
		}
	}
	ch, err := pipeline.Compile(stages...)
	if err != nil {
		return nil, fmt.Errorf("gateway: compile the stage chain: %w", err)
	}
	return ch, nil
}

// Rule, reason code and reason of the enforced decision of a call in
// shadow mode, where no stage decided: it is allowed.
const (
	RuleShadowMode   = "shadow_mode"
	reasonShadowMode = "shadow mode: every verdict is recorded (shadow_decisions), none is enforced"
)

// decisionOf maps the chain's merged verdict of c (and its shadow
// verdicts, every one) back to the policy.Decision the decision event and
// the Evidence record: action, rule, reason, reason_code, the policy's
// name and version, and the shadow decisions. In shadow mode (shadow),
// a call no stage decided is allowed with rule RuleShadowMode.
func decisionOf(pol *policy.Policy, c *pipeline.Call, v pipeline.Verdict, shadow bool) policy.Decision {
	d := policy.Decision{
		Action:        policy.Action(v.Action.String()),
		Rule:          v.Rule,
		Reason:        v.Reason,
		ReasonCode:    v.ReasonCode,
		PolicyName:    pol.Name(),
		PolicyVersion: pol.Version(),
	}
	if _, decided := c.Verdict(); shadow && !decided {
		d.Rule, d.ReasonCode, d.Reason = RuleShadowMode, RuleShadowMode, reasonShadowMode
	}
	d.Shadows = shadowDecisions(c.Shadows())
	return d
}

// shadowDecisions are the would-have verdicts vs as policy shadow
// decisions, nil for none.
func shadowDecisions(vs []pipeline.Verdict) []policy.ShadowDecision {
	if len(vs) == 0 {
		return nil
	}
	out := make([]policy.ShadowDecision, len(vs))
	for i, v := range vs {
		out[i] = policy.ShadowDecision{Action: policy.Action(v.Action.String()), Rule: v.Rule, Reason: v.Reason, ReasonCode: v.ReasonCode, Stage: v.Stage}
	}
	return out
}

// policyShadows records the shadow decisions of a policy evaluation as
// shadow verdicts of stage through add (pipeline.Call.Shadow,
// pipeline.Response.Shadow).
func policyShadows(stage string, ds []policy.ShadowDecision, add func(pipeline.Verdict)) {
	for _, sd := range ds {
		if sv, ok := verdictOf(stage, sd.Action, sd.Rule, sd.ReasonCode, sd.Reason); ok {
			add(sv)
		}
	}
}

// verdictOf is the verdict of a policy decision, given by stage; ok is
// false for an action outside pipeline's vocabulary (which Policy never
// returns).
func verdictOf(stage string, a policy.Action, rule, reasonCode, reason string) (pipeline.Verdict, bool) {
	act, err := pipeline.ParseAction(string(a))
	if err != nil {
		return pipeline.Verdict{}, false
	}
	v := pipeline.Verdict{Action: act, Stage: stage, Rule: rule, ReasonCode: reasonCode, Reason: reason}
	if act == pipeline.Deny {
		v.Code = CodeDenied
	}
	return v, true
}
