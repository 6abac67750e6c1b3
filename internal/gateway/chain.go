package gateway

import (
	"fmt"

	"github.com/gatehouse-mcp/gatehouse/internal/pipeline"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
)

// Stage names of the session's chain, in chain order. They are also the
// names verdicts and diagnostics carry (pipeline.Verdict.Stage).
const (
	StageUnknownTool      = "unknown_tool"
	StageArgumentNameCase = "argument_name_case"
	StagePolicy           = "policy"
)

// callState is what the session's stages share about one tools/call
// (pipeline.Call.State): the catalogue's facts of the tool as the call was
// looked up, the catalog generation they belong to (for the policy stage's
// decision cache) and params._meta decoded once.
type callState struct {
	facts *toolFacts
	gen   uint64
	meta  map[string]any
}

// compileChain builds the session's stages, compiled once at New: the
// deciders unknown_tool, argument_name_case and policy, in that order (an
// unknown tool is denied before policy is asked; the first deny stops the
// chain, so the decision names the stage that denied). The stages share
// the session's catalog.
func compileChain(pol *policy.Policy, cat *catalog) (*pipeline.Chain, error) {
	ch, err := pipeline.Compile(
		unknownToolStage{},
		argumentNameCaseStage{catalog: cat},
		&policyStage{policy: pol, catalog: cat},
	)
	if err != nil {
		return nil, fmt.Errorf("gateway: compile the stage chain: %w", err)
	}
	return ch, nil
}

// decisionOf maps the chain's merged verdict of c (and its first shadow
// verdict) back to the policy.Decision the decision event and the
// Evidence record: action, rule, reason, reason_code, the policy's name
// and version, and the shadow decision.
func decisionOf(pol *policy.Policy, c *pipeline.Call, v pipeline.Verdict) policy.Decision {
	d := policy.Decision{
		Action:        policy.Action(v.Action.String()),
		Rule:          v.Rule,
		Reason:        v.Reason,
		ReasonCode:    v.ReasonCode,
		PolicyName:    pol.Name(),
		PolicyVersion: pol.Version(),
	}
	if sh := c.Shadows(); len(sh) > 0 {
		d.Shadow = &policy.ShadowDecision{Action: policy.Action(sh[0].Action.String()), Rule: sh[0].Rule, Reason: sh[0].Reason, ReasonCode: sh[0].ReasonCode}
	}
	return d
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
