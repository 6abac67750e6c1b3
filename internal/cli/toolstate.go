package cli

import (
	"context"
	"os"

	"github.com/gatehouse-mcp/gatehouse/internal/toolstate"
	"github.com/gatehouse-mcp/gatehouse/internal/toolstate/backends"
)

// openToolState opens the tool-state store (baselines, observations,
// holds; docs/drift.md) in the --state database.
func openToolState(ctx context.Context, state string) (toolstate.Store, error) {
	return backends.Open(ctx, state)
}

// gatewayIDOf is --gateway-id, or the host name as the audit recorder
// defaults it.
func gatewayIDOf(id string) string {
	if id == "" {
		id, _ = os.Hostname()
	}
	return id
}
