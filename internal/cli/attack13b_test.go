package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/toolstate/postgres"
	"github.com/gatehouse-mcp/gatehouse/test/harness"
)

// TestToolsPostgresNeverCreates: as for a SQLite --state that does not
// exist, gatehouse tools refuses a PostgreSQL --state where no gateway
// ever recorded anything (exit 2, nothing created). It created the
// ledger and tool-state tables there, and tools quarantine placed a hold
// that no gateway reads (a wrong database or search_path).
func TestToolsPostgresNeverCreates(t *testing.T) {
	dsn := harness.PostgresSchema(t, "tools_nocreate")
	for _, args := range [][]string{
		{"tools", "list", "--state", dsn},
		{"tools", "quarantine", "srv", "t", "--by", "me", "--reason", "x", "--state", dsn, "--ledger-key", t.TempDir() + "/k.skey"},
	} {
		_, stderr, code := runToolsCLI(t, args...)
		if code != 2 || !strings.Contains(stderr, "no tool state at") {
			t.Errorf("%s: exit %d, stderr %q; want 2, no tool state", args[1], code, stderr)
		}
	}
	if ok, err := postgres.Exists(context.Background(), dsn); err != nil || ok {
		t.Fatalf("tables created in an empty PostgreSQL --state: %v %v", ok, err)
	}
}
