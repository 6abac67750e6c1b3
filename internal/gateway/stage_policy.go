package gateway

import (
	"context"
	"fmt"

	"github.com/gatehouse-mcp/gatehouse/internal/pipeline"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
)

// policyStage evaluates the YAML/CEL policy (policy.Evaluate) on the call:
// the principal and server of the session, the tool as catalogued (its
// normalized intent, evidence.md §4), params._meta and, only for a policy
// that reads them, the decoded arguments. Its decision becomes the call's
// verdict; every matching shadow rule becomes a shadow verdict
// (pipeline.Call.Shadow), recorded and never enforced.
//
// For a policy that reads only the principal, the server and the tool
// (policy.DependsOnlyOnTool), decisions are cached per tool name and
// catalog generation (catalog.decision): any change of the catalog empties
// the cache.
//
// A rule's redact redacts every finding of the argument scan (scanStage;
// with no scanner, or no finding, nothing changes).
type policyStage struct {
	policy  *policy.Policy
	catalog *catalog
	scan    *scanStage // nil without a scanner
}

func (*policyStage) Name() string { return StagePolicy }

func (s *policyStage) Decide(_ context.Context, c *pipeline.Call) error {
	st, err := stateOf(c)
	if err != nil {
		return fmt.Errorf("policy stage: %w", err)
	}
	d, ok := s.catalog.decision(c.Name, st.gen)
	if !ok {
		in := &policy.Input{
			Principal: policy.Principal{ID: c.Session.PrincipalID, Role: c.Session.Role},
			ServerID:  c.Session.ServerID,
			Tool:      st.facts.policyTool(c.Name), // computed once per catalogued definition
			ToolView:  st.facts.viewFor(c.Name),    // likewise: no map of the tool per call
			Meta:      st.meta,
		}
		if st.argScan != nil {
			in.ArgumentScan = st.argScan.view
		}
		in.Drift = st.drift.view
		if s.policy.UsesArguments() {
			// Decoded only for a policy that reads them: a large argument
			// object costs a copy and a map otherwise.
			in.Arguments = decodeObject(c.Arguments)
		}
		d = s.policy.Evaluate(in)
		if s.policy.DependsOnlyOnTool() {
			s.catalog.keepDecision(c.Name, st.gen, d)
		}
	}
	v, ok := verdictOf(StagePolicy, d.Action, d.Rule, d.ReasonCode, d.Reason)
	if !ok {
		return fmt.Errorf("policy stage: action %q is not in the pipeline's vocabulary", d.Action)
	}
	if v.Action == pipeline.Redact && s.scan != nil && !c.Shadowing() {
		// (In shadow the redaction is recorded, not prepared: nothing
		// is rewritten.)
		if err := s.scan.redactArguments(c, st, true); err != nil {
			v = pipeline.Verdict{Action: pipeline.Deny, Stage: StagePolicy, Rule: d.Rule, ReasonCode: d.ReasonCode,
				Reason: "rule " + d.Rule + " redacts the arguments, which could not be redacted: " + err.Error(), Code: CodeDenied}
		}
	}
	c.Decide(v)
	policyShadows(StagePolicy, d.Shadows, c.Shadow)
	return nil
}
