// Package backends opens the audit ledger (package ledger) on the storage
// a location names: a PostgreSQL URL (package postgres) or a SQLite file
// path (package sqlite). It is the one package that links both database
// drivers; the ledger's core, and with it offline verification of proofs
// (ledger.VerifyProof), links neither (TestCoreLinksNoDatabaseDriver).
package backends

import (
	"context"

	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger/postgres"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger/sqlite"
)

// Open opens the ledger at dsn and starts its writer. dsn is either a
// PostgreSQL URL ("postgres://..." or "postgresql://...": postgres.Open)
// or a file path (sqlite.Open; the file and its directory are created,
// 0600 and 0700). See ledger.New for opts. Errors: OpenStore's, and
// ledger.New's (ledger.ErrLedgerID among them).
func Open(ctx context.Context, dsn string, opts ledger.Options) (*ledger.Ledger, error) {
	s, err := OpenStore(ctx, dsn, false)
	if err != nil {
		return nil, err
	}
	l, err := ledger.New(ctx, s, opts)
	if err != nil {
		s.Close()
		return nil, err
	}
	return l, nil
}

// OpenStore opens the store named by dsn (see Open) without a Ledger on
// top, read-only if readOnly (verification, proofs, show): a read-only
// store never creates or modifies anything and fails on a missing file. A
// location meant as another URL or a keyword/value connection string is
// refused with ledger.ErrNotALedgerLocation (ledger.CheckPath).
func OpenStore(ctx context.Context, dsn string, readOnly bool) (ledger.Store, error) {
	pg, err := IsPostgres(dsn)
	if err != nil {
		return nil, err
	}
	if pg {
		return postgres.Open(ctx, dsn, readOnly)
	}
	return sqlite.Open(ctx, dsn, readOnly)
}

// IsPostgres is OpenStore's choice of backend for dsn: true for a
// PostgreSQL URL, false for a SQLite file path, and
// ledger.ErrNotALedgerLocation for a location meant as another URL or a
// keyword/value connection string. Other stores kept in the ledger's
// database (internal/toolstate/backends) choose with it, so that one
// --state value names one database for all of them.
func IsPostgres(dsn string) (bool, error) {
	if ledger.IsPostgresDSN(dsn) {
		return true, nil
	}
	if err := ledger.CheckPath(dsn); err != nil {
		return false, err
	}
	return false, nil
}
