// Package backends opens the tool-state store (package toolstate) in the
// database a --state location names, the audit ledger's: a PostgreSQL URL
// (package postgres) or a SQLite file path (package sqlite), chosen as the
// ledger chooses (internal/ledger/backends.IsPostgres), so that one
// --state value puts the ledger and the tool states in one database.
package backends

import (
	"context"
	"errors"

	ledgerbackends "github.com/gatehouse-mcp/gatehouse/internal/ledger/backends"
	"github.com/gatehouse-mcp/gatehouse/internal/toolstate"
	"github.com/gatehouse-mcp/gatehouse/internal/toolstate/postgres"
	"github.com/gatehouse-mcp/gatehouse/internal/toolstate/sqlite"
)

// ErrNoState: Open was given an empty location. A gateway run without
// --state keeps its tool states in memory (toolstate.NewMem) instead.
var ErrNoState = errors.New("toolstate: no state location (a gateway without --state uses toolstate.NewMem)")

// Open opens the tool-state store at state: a PostgreSQL URL
// ("postgres://..." or "postgresql://...": postgres.Open) or a file path
// (sqlite.Open; the file and its directory are created, 0600 and 0700),
// its tables created when missing. Errors: ErrNoState for "",
// ledger.ErrNotALedgerLocation for a location meant as another URL or a
// keyword/value connection string (nothing is created), and the backend's
// Open errors.
func Open(ctx context.Context, state string) (toolstate.Store, error) {
	if state == "" {
		return nil, ErrNoState
	}
	pg, err := ledgerbackends.IsPostgres(state)
	if err != nil {
		return nil, err
	}
	if pg {
		return postgres.Open(ctx, state)
	}
	return sqlite.Open(ctx, state)
}
