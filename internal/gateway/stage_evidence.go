package gateway

import (
	"context"
	"strings"

	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/pipeline"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
)

// evidenceStage hands every tools/call to the Evidence (package audit:
// gateway decision receipts, server receipts, the audit ledger): its
// decision (PhaseDecision, Evidence.Decided) after decision_log, with the
// decision event's id and the decision as recorded (a failed event write
// already refused the call), and the outcome of a forwarded call
// (PhaseOutcome, Evidence.Responded) with the server's response
// (pipeline.Call.Response). Its Futures are the Evidence's waits: the
// decision's reports a record that is not durable (the call is then
// refused and its decision event corrected, finishToolCall); the
// outcome's reports a withheld response as a *WithheldError.
//
// scanning says whether the session has a scanner: a call decided before
// its arguments were scanned then says so in its argument_scan_result.
type evidenceStage struct {
	evidence Evidence
	scanning bool
}

func (evidenceStage) Name() string { return StageEvidence }

func (s evidenceStage) Record(_ context.Context, c *pipeline.Call, p pipeline.Phase) pipeline.Future {
	st, err := stateOf(c)
	if err != nil {
		return func() error { return err }
	}
	if p == pipeline.PhaseOutcome {
		r := c.Response
		if st.evCall == nil || r == nil {
			return nil
		}
		if st.respScan != nil {
			st.evCall.ResponseScan = st.respScan.result
		}
		if v := st.respVerdict; v != nil {
			st.evCall.ResponseVerdict = &ResponseVerdict{Action: policy.Action(v.Action.String()), Rule: v.Rule, Reason: v.Reason}
		}
		st.evCall.ResponseShadows = shadowDecisions(r.Shadows())
		wait := s.evidence.Responded(st.evCall, &jsonrpc.Message{Kind: jsonrpc.KindResponse, ID: r.ID, Result: r.Result, Error: r.Error, Raw: r.Raw})
		return func() error {
			if withhold, reason := wait(); withhold {
				return &WithheldError{Reason: reason}
			}
			return nil
		}
	}
	call := &Call{
		Name: c.Name, Tool: c.Tool, Known: c.Known, Intent: st.facts.intent, facts: st.facts,
		ServerID: c.Session.ServerID, Principal: policy.Principal{ID: c.Session.PrincipalID, Role: c.Session.Role},
		ID: c.ID, Arguments: c.Arguments, Meta: c.Meta, ToolCallID: st.toolCallID, ToolCallIDStrength: st.strength,
		Decision: st.decision, Forwarded: st.allowed, DecisionEventID: st.eventID, Received: c.Received,
		ShadowMode: st.shadow,
	}
	call.ArgumentScan = st.argumentScanResult(s.scanning)
	call.DriftResult, call.DriftWarnings = st.drift.result, st.drift.warnings
	if st.argScan != nil && st.argScan.secretNames != nil {
		call.SecretNames = map[string]bool{}
		for n := range st.argScan.secretNames {
			call.SecretNames[strings.NewReplacer("~1", "/", "~0", "~").Replace(n)] = true
		}
	}
	wait := s.evidence.Decided(call)
	call.Arguments, call.Meta = nil, nil // only valid during Decided
	st.evCall = call
	return pipeline.Future(wait)
}

// WithheldError is the error of the outcome Future of a response the
// Evidence withheld (receipts.require, a receipt rule, an outcome that
// could not be recorded): the client gets CodeWithheld carrying Reason
// instead of the response.
type WithheldError struct{ Reason string }

func (e *WithheldError) Error() string { return "tools/call response withheld: " + e.Reason }
