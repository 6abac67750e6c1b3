package gateway

import (
	"context"

	"github.com/gatehouse-mcp/gatehouse/internal/pipeline"
)

// argumentNameCaseStage denies a call to a known tool with an argument
// whose name differs from one of the tool's inputSchema properties only in
// case ("Path" for "path"), with rule argument_name_case: the policy would
// read one argument and a server matching names case-insensitively
// another. The properties come from the catalog, folded once per listed
// definition.
type argumentNameCaseStage struct{ catalog *catalog }

func (argumentNameCaseStage) Name() string { return StageArgumentNameCase }

func (s argumentNameCaseStage) Decide(_ context.Context, c *pipeline.Call) error {
	if c.Known && s.catalog.argumentNameMismatch(c.Name, c.Arguments) {
		c.Decide(pipeline.Verdict{Action: pipeline.Deny, Rule: RuleArgumentNameCase, ReasonCode: RuleArgumentNameCase, Reason: reasonArgumentNameCase, Code: CodeDenied})
	}
	return nil
}
