package gateway

import (
	"context"

	"github.com/gatehouse-mcp/gatehouse/internal/pipeline"
)

// receiptsStage binds the exact received line of every tools/call to its
// decision event in the request-receipt sidecar (PhaseDecision;
// request-receipts.md). It runs after decision_log and reads the event it
// wrote: a failed write (zero event) or a batch member (no line of its
// own) has no receipt of its own and marks the capture incomplete
// (request-receipts.md §4). The sidecar reports its own failures; its
// Future is nil.
type receiptsStage struct{ receipts Recorder }

func (receiptsStage) Name() string { return StageRequestReceipts }

func (s receiptsStage) Record(_ context.Context, c *pipeline.Call, p pipeline.Phase) pipeline.Future {
	if p != pipeline.PhaseDecision {
		return nil
	}
	st, err := stateOf(c)
	if err != nil {
		return func() error { return err }
	}
	var rpcRaw []byte
	if c.ID.Present() {
		rpcRaw = c.ID.Raw()
	}
	s.receipts.Record(st.line, st.event, c.ID.Present(), rpcRaw)
	return nil
}
