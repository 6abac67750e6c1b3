package harness

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// schemas numbers the schemas of one test process: parallel tests may
// ask for one in the same nanosecond.
var schemas atomic.Int64

// PostgresSchema returns a DSN for a fresh schema (search_path) of the
// database named by GATEHOUSE_TEST_POSTGRES, dropped at cleanup: a ledger
// and tool state of the test's own on a shared server. It skips the test
// when the variable is unset, and fails it when it is unset under
// CI=true (CI starts PostgreSQL with scripts/postgres.sh).
func PostgresSchema(t *testing.T, prefix string) string {
	t.Helper()
	dsn := os.Getenv("GATEHOUSE_TEST_POSTGRES")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but GATEHOUSE_TEST_POSTGRES is unset: CI must start PostgreSQL (scripts/postgres.sh start) and export the DSN it prints")
		}
		t.Skip("PostgreSQL not tested: GATEHOUSE_TEST_POSTGRES is unset (export GATEHOUSE_TEST_POSTGRES=$(scripts/postgres.sh start))")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connecting to GATEHOUSE_TEST_POSTGRES: %v", err)
	}
	defer conn.Close(ctx)
	schema := fmt.Sprintf("%s_%d_%d_%d", prefix, os.Getpid(), time.Now().UnixNano(), schemas.Add(1))
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("creating schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, dsn); err == nil {
			conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
			conn.Close(ctx)
		}
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
