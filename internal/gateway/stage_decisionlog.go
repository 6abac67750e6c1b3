package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/gatehouse-mcp/gatehouse/internal/decisionlog"
	"github.com/gatehouse-mcp/gatehouse/internal/pipeline"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
)

// errNotLogged wraps the error of a decision event that was not written
// to the decision log: the call is refused (fail closed) and, the event
// not being in the log, nothing is corrected.
var errNotLogged = errors.New("decision event not written")

// decisionLogStage records every tools/call decision (PhaseDecision) as a
// gatehouse.tool.decision.v1 event (docs/decision-log.md): evidence
// before effect. The event is written before Record returns, and a write
// that failed refuses the allowed call at once (callState.notRecorded), so
// that the recorders after it (evidence) record the refusal; its Future
// reports the failure (wrapping errNotLogged). A call of the client loop's
// burst (callState.stage) has its event encoded instead, for the burst's
// one write (logBurst): its Future then reports that write's result, and
// must be called only after it (the call's Ready in the Sequencer, once
// the burst's done is closed by Session.flushBurst).
//
// Without a decision log the decision goes to the diagnostic logger.
type decisionLogStage struct {
	log      *decisionlog.Log // nil: diagnostics only
	diag     *slog.Logger
	failOpen bool
	scanning bool // the session has a scanner (argument_scan_result)
}

func (*decisionLogStage) Name() string { return StageDecisionLog }

func (s *decisionLogStage) Record(_ context.Context, c *pipeline.Call, p pipeline.Phase) pipeline.Future {
	if p != pipeline.PhaseDecision {
		return nil
	}
	st, err := stateOf(c)
	if err != nil {
		return func() error { return fmt.Errorf("%w: %w", errNotLogged, err) }
	}
	if s.log == nil {
		s.diag.Info("tools/call decision", "tool", c.Name, "decision", st.decision.Action, "rule", st.decision.Rule, "tool_call_id", st.toolCallID)
		return nil
	}
	data := toolDecisionData(c, st, s.scanning)
	if st.stage {
		if ev, err := s.log.Encode(decisionlog.TypeToolDecision, data); err == nil {
			st.staged, st.eventID = ev.Bytes, ev.ID
			return func() error {
				if st.logErr != nil {
					return fmt.Errorf("%w: %w", errNotLogged, st.logErr)
				}
				return nil
			}
		}
	}
	ev, err := s.log.Emit(decisionlog.TypeToolDecision, data)
	st.event, st.eventID = ev, ev.ID
	if err != nil {
		s.diag.Error("decision log write failed", "err", err)
		st.notRecorded(s.failOpen)
		return func() error { return fmt.Errorf("%w: %w", errNotLogged, err) }
	}
	return nil
}

// toolDecisionData is the data of c's gatehouse.tool.decision.v1 event.
// Its rpc_id aliases the frame's id while the call is being decided.
func toolDecisionData(c *pipeline.Call, st *callState, scanning bool) decisionlog.ToolDecision {
	d := st.decision
	data := decisionlog.ToolDecision{
		Tool:               c.Name,
		Decision:           string(d.Action),
		ReasonCode:         d.ReasonCode,
		Reason:             d.Reason,
		MatchedRule:        d.Rule,
		PolicyName:         d.PolicyName,
		PolicyVersion:      d.PolicyVersion,
		RPCIDPresent:       c.ID.Present(),
		RPCID:              json.RawMessage("null"),
		ToolCallID:         st.toolCallID,
		ToolCallIDStrength: st.strength,
		ToolCallIDSource:   st.source,
		PrincipalID:        c.Session.PrincipalID,
		Role:               c.Session.Role,
		ServerID:           c.Session.ServerID,
		// The normalized side effect (evidence.md §4), as policy saw it.
		SideEffect: st.facts.intent.SideEffect,
		ToolKnown:  c.Known,
		Forwarded:  st.allowed,
	}
	if c.ID.Present() {
		data.RPCID = json.RawMessage(c.ID.Raw())
	}
	data.ArgumentScanResult = scanJSON(st.argumentScanResult(scanning))
	data.DriftResult = driftJSON(st.drift.result)
	data.ShadowMode = st.shadow
	data.ShadowDecisions = logShadows(d.Shadows)
	return data
}

// logShadows are shadow decisions as the decision log writes them, nil
// for none.
func logShadows(ds []policy.ShadowDecision) []decisionlog.ShadowDecision {
	if len(ds) == 0 {
		return nil
	}
	out := make([]decisionlog.ShadowDecision, len(ds))
	for i, sd := range ds {
		out[i] = decisionlog.ShadowDecision{Action: string(sd.Action), MatchedRule: sd.Rule, Reason: sd.Reason, Stage: sd.Stage}
	}
	return out
}
