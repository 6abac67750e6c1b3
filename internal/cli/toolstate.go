package cli

import (
	"context"
	"errors"
	"os"

	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
	"github.com/gatehouse-mcp/gatehouse/internal/toolstate"
	"github.com/gatehouse-mcp/gatehouse/internal/toolstate/sqlite"
)

// openToolState opens the tool-state store (baselines, observations,
// holds; docs/drift.md) in the --state database.
func openToolState(ctx context.Context, state string) (toolstate.Store, error) {
	if ledger.IsPostgresDSN(state) {
		return nil, errors.New("PostgreSQL tool state is not available in this build")
	}
	return sqlite.Open(ctx, state)
}

// gatewayIDOf is --gateway-id, or the host name as the audit recorder
// defaults it.
func gatewayIDOf(id string) string {
	if id == "" {
		id, _ = os.Hostname()
	}
	return id
}
