// Package backends opens the tool-state store (package toolstate) in the
// database a --state location names, the audit ledger's: a SQLite file
// path (package sqlite), chosen as the ledger chooses (ledger.IsPostgresDSN,
// ledger.CheckPath), so that one --state value puts the ledger and the tool
// states in one database.
//
// This build has no PostgreSQL tool-state backend: a PostgreSQL URL is
// refused with ErrNoPostgres. (internal/toolstate/postgres is written
// separately; once it is in, Open picks it for PostgreSQL URLs.)
package backends

import (
	"context"
	"errors"

	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
	"github.com/gatehouse-mcp/gatehouse/internal/toolstate"
	"github.com/gatehouse-mcp/gatehouse/internal/toolstate/sqlite"
)

// ErrNoState: Open was given an empty location. A gateway run without
// --state keeps its tool states in memory (toolstate.NewMem) instead.
var ErrNoState = errors.New("toolstate: no state location (a gateway without --state uses toolstate.NewMem)")

// ErrNoPostgres: Open was given a PostgreSQL URL, and this build has no
// PostgreSQL tool-state backend.
var ErrNoPostgres = errors.New("PostgreSQL tool state: not available in this build")

// Open opens the tool-state store at state: a file path (sqlite.Open; the
// file and its directory are created, 0600 and 0700), its tables created
// when missing. Errors: ErrNoState for "", ErrNoPostgres for a PostgreSQL
// URL, ledger.ErrNotALedgerLocation for a location meant as another URL or
// a keyword/value connection string (nothing is created), and sqlite.Open's
// errors.
func Open(ctx context.Context, state string) (toolstate.Store, error) {
	if state == "" {
		return nil, ErrNoState
	}
	if ledger.IsPostgresDSN(state) {
		return nil, ErrNoPostgres
	}
	if err := ledger.CheckPath(state); err != nil {
		return nil, err
	}
	return sqlite.Open(ctx, state)
}
