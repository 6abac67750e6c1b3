package postgres_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
	ledgerpostgres "github.com/gatehouse-mcp/gatehouse/internal/ledger/postgres"
	"github.com/gatehouse-mcp/gatehouse/internal/toolstate"
	"github.com/gatehouse-mcp/gatehouse/internal/toolstate/postgres"
	"github.com/gatehouse-mcp/gatehouse/internal/toolstate/storetest"
	"github.com/gatehouse-mcp/gatehouse/test/harness"
)

// database returns a URL for a fresh schema of GATEHOUSE_TEST_POSTGRES
// (harness.PostgresSchema).
func database(t *testing.T) string { return harness.PostgresSchema(t, "toolstate") }

func open(t *testing.T, dsn string) toolstate.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

// TestStore runs the storage suite on a fresh schema per test, every
// Store of a test (a gateway each) a pool of its own on that schema.
func TestStore(t *testing.T) {
	if os.Getenv("GATEHOUSE_TEST_POSTGRES") == "" {
		database(t) // skips, or fails under CI
	}
	storetest.Run(t, storetest.PerTest(database, open))
}

// TestLaterSchema: a database whose tool-state tables are of a later
// schema is refused.
func TestLaterSchema(t *testing.T) {
	dsn := database(t)
	open(t, dsn).Close()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `UPDATE tool_state_meta SET value = $1 WHERE key = 'schema'`, postgres.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	_, err = postgres.Open(ctx, dsn)
	if err == nil || !strings.Contains(err.Error(), "later than this gatehouse's") {
		t.Fatalf("Open of a later schema: %v", err)
	}
}

// TestLedgerDatabase: the store shares the ledger's schema, created
// before or after the ledger's tables, with both writing at once; the
// ledger verifies and the tool states are all there.
func TestLedgerDatabase(t *testing.T) {
	ctx := context.Background()
	for _, ledgerFirst := range []bool{true, false} {
		t.Run(fmt.Sprint("ledgerFirst=", ledgerFirst), func(t *testing.T) {
			dsn := database(t)
			appendEntries := func(n int) error {
				st, err := ledgerpostgres.Open(ctx, dsn, false)
				if err != nil {
					return err
				}
				l, err := ledger.New(ctx, st, ledger.Options{LedgerID: "gw-test"})
				if err != nil {
					st.Close()
					return err
				}
				for i := range n {
					payload, _ := ledger.Canonicalize(fmt.Appendf(nil, `{"i":%d}`, i))
					if _, err := l.Append(ctx, ledger.KindGatewayDecision, fmt.Sprint("rec-", i), payload); err != nil {
						l.Close(ctx)
						return err
					}
				}
				return l.Close(ctx)
			}
			want := int64(0)
			if ledgerFirst {
				if err := appendEntries(5); err != nil {
					t.Fatal(err)
				}
				want = 5
			}
			s := open(t, dsn)
			defer s.Close()
			const n = 30
			done := make(chan error)
			go func() { done <- appendEntries(n) }()
			for i := range n {
				d := fmt.Appendf(nil, `{"name":"t%d"}`, i)
				if _, _, err := s.FirstUse(ctx, toolstate.Baseline{ServerID: "srv", Tool: fmt.Sprint("t", i), Hash: toolstate.DefinitionHash(d), Definition: d, By: "gw"}); err != nil {
					t.Fatalf("FirstUse beside the ledger's writer: %v", err)
				}
			}
			if err := <-done; err != nil {
				t.Fatalf("appending to the ledger: %v", err)
			}
			want += n
			ro, err := ledgerpostgres.Open(ctx, dsn, true)
			if err != nil {
				t.Fatal(err)
			}
			defer ro.Close()
			rep, err := ledger.Verify(ctx, ro, ledger.VerifyOptions{})
			if err != nil || rep.Problem != nil || rep.Size != want {
				t.Fatalf("Verify: %v, problem %v, size %d, want %d", err, rep.Problem, rep.Size, want)
			}
			if all, err := s.Tools(ctx, ""); err != nil || len(all) != n {
				t.Fatalf("Tools: %v, %d states, want %d", err, len(all), n)
			}
		})
	}
}
