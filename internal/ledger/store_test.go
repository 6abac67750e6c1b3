package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger/postgres"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger/sqlite"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger/storetest"
	"github.com/jackc/pgx/v5"
	"golang.org/x/mod/sumdb/tlog"
)

func TestMemStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) func() ledger.Store {
		shared := ledger.NewMemStore()
		return func() ledger.Store { return &memHandle{s: shared} }
	})
}

func TestSQLiteStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) func() ledger.Store {
		return sqliteBackend(t, filepath.Join(t.TempDir(), "state", "ledger.db"))
	})
}

func TestPostgresStore(t *testing.T) {
	postgresDSN(t) // skip (or fail under CI=true) once, not per subtest
	storetest.Run(t, postgresBackend)
}

func sqliteBackend(t *testing.T, path string) func() ledger.Store {
	return func() ledger.Store {
		s, err := sqlite.Open(context.Background(), path, false)
		if err != nil {
			t.Fatalf("OpenSQLite: %v", err)
		}
		return s
	}
}

// postgresDSN returns GATEHOUSE_TEST_POSTGRES, skips the test when it is
// unset, and fails it when it is unset under CI=true: CI must run the
// PostgreSQL backend.
func postgresDSN(t testing.TB) string {
	dsn := os.Getenv("GATEHOUSE_TEST_POSTGRES")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but GATEHOUSE_TEST_POSTGRES is unset: CI must start PostgreSQL (scripts/postgres.sh start) and export the DSN it prints")
		}
		t.Skip("PostgreSQL backend not tested: GATEHOUSE_TEST_POSTGRES is unset (run `scripts/postgres.sh start` and export the DSN it prints)")
	}
	return dsn
}

var pgSchemas atomic.Int64

// postgresBackend gives each subtest a fresh schema in the test database,
// dropped at cleanup, and handles whose search_path is that schema.
func postgresBackend(t *testing.T) func() ledger.Store { return postgresBackendTB(t) }

func postgresBackendTB(t testing.TB) func() ledger.Store {
	scoped := postgresSchemaDSN(t)
	return func() ledger.Store {
		s, err := postgres.Open(context.Background(), scoped, false)
		if err != nil {
			t.Fatalf("OpenPostgres: %v", err)
		}
		return s
	}
}

// postgresSchemaDSN creates a fresh schema in the test database, dropped at
// cleanup, and returns a DSN whose search_path is that schema.
func postgresSchemaDSN(t testing.TB) string {
	dsn := postgresDSN(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connecting to GATEHOUSE_TEST_POSTGRES: %v", err)
	}
	defer conn.Close(ctx)
	schema := fmt.Sprintf("ledger_test_%d_%d", os.Getpid(), pgSchemas.Add(1))
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE; CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("creating schema: %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("GATEHOUSE_TEST_POSTGRES: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// memHandle is one handle on a shared memory store: closing it fails its
// own later calls, not the other handles'.
type memHandle struct {
	s      ledger.Store
	closed atomic.Bool
}

var errHandleClosed = errors.New("handle is closed")

func (h *memHandle) Init(ctx context.Context, p string) (string, error) {
	if h.closed.Load() {
		return "", errHandleClosed
	}
	return h.s.Init(ctx, p)
}

func (h *memHandle) Update(ctx context.Context, f func(context.Context, ledger.Tx) error) error {
	if h.closed.Load() {
		return errHandleClosed
	}
	return h.s.Update(ctx, f)
}

func (h *memHandle) Size(ctx context.Context) (int64, error) {
	if h.closed.Load() {
		return 0, errHandleClosed
	}
	return h.s.Size(ctx)
}

func (h *memHandle) Leaves(ctx context.Context, from, to int64, f func(int64, []byte) error) error {
	if h.closed.Load() {
		return errHandleClosed
	}
	return h.s.Leaves(ctx, from, to, f)
}

func (h *memHandle) ReadHashes(ctx context.Context, idx []int64) ([]tlog.Hash, error) {
	if h.closed.Load() {
		return nil, errHandleClosed
	}
	return h.s.ReadHashes(ctx, idx)
}

func (h *memHandle) Checkpoints(ctx context.Context) ([]ledger.StoredCheckpoint, error) {
	if h.closed.Load() {
		return nil, errHandleClosed
	}
	return h.s.Checkpoints(ctx)
}

func (h *memHandle) Close() error {
	h.closed.Store(true)
	return nil
}
