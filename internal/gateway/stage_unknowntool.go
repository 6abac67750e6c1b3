package gateway

import (
	"context"

	"github.com/gatehouse-mcp/gatehouse/internal/pipeline"
)

// unknownToolStage denies a call to a tool the gateway has not seen listed
// (pipeline.Call.Known false: never listed, or the listing went stale and
// could not be fetched again), with rule unknown_tool. The catalog fetch
// that unknown_tool: fetch asks for happens before the chain runs.
type unknownToolStage struct{}

func (unknownToolStage) Name() string { return StageUnknownTool }

func (unknownToolStage) Decide(_ context.Context, c *pipeline.Call) error {
	if !c.Known {
		c.Decide(pipeline.Verdict{Action: pipeline.Deny, Rule: RuleUnknownTool, ReasonCode: RuleUnknownTool, Reason: reasonUnknownTool, Code: CodeDenied})
	}
	return nil
}
