package gateway

import (
	"context"
	"fmt"

	"github.com/gatehouse-mcp/gatehouse/internal/pipeline"
)

// StageDrift is the name of the drift stage (stage_drift.go).
const StageDrift = "drift"

// driftStage decides a tools/call by its tool's drift from the approved
// baseline (docs/drift.md; evidence.md §7): a quarantined tool's call is
// held (answered by the gateway with CodeQuarantined, never forwarded); a
// tool without an approved baseline under --baseline require is denied;
// otherwise the drift block's action for the tool's drift (changed,
// added, renamed) is the verdict. What it found is the policy's `drift`
// variable and the decision's drift_result.
type driftStage struct{ tracker *driftTracker }

func (driftStage) Name() string { return StageDrift }

func (s driftStage) Decide(_ context.Context, c *pipeline.Call) error {
	st, err := stateOf(c)
	if err != nil {
		return fmt.Errorf("drift stage: %w", err)
	}
	st.drift = s.tracker.forCall(c.Name, c.Known, st.facts.hash)
	if st.drift.decided {
		c.Decide(st.drift.verdict)
	}
	return nil
}
