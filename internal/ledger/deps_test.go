package ledger_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCoreLinksNoDatabaseDriver: the ledger's core — entries, tree,
// checkpoints, Verify and the offline proof check VerifyProof — links
// neither database driver (pgx, modernc.org/sqlite): the backends are in
// internal/ledger/sqlite and internal/ledger/postgres, and only
// internal/ledger/backends links both. It runs `go list -deps` on the
// package, so it needs the go command (skipped without it).
func TestCoreLinksNoDatabaseDriver(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH")
	}
	for _, tc := range []struct {
		pkg     string
		without []string
		with    []string
	}{
		{"github.com/gatehouse-mcp/gatehouse/internal/ledger", []string{"github.com/jackc/pgx", "modernc.org/sqlite", "database/sql"}, nil},
		{"github.com/gatehouse-mcp/gatehouse/internal/ledger/sqlite", []string{"github.com/jackc/pgx"}, []string{"modernc.org/sqlite"}},
		{"github.com/gatehouse-mcp/gatehouse/internal/ledger/postgres", []string{"modernc.org/sqlite"}, []string{"github.com/jackc/pgx"}},
		{"github.com/gatehouse-mcp/gatehouse/internal/ledger/backends", nil, []string{"modernc.org/sqlite", "github.com/jackc/pgx"}},
	} {
		out, err := exec.Command(goBin, "list", "-deps", tc.pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", tc.pkg, err)
		}
		deps := strings.Fields(string(out))
		has := func(prefix string) bool {
			for _, d := range deps {
				if d == prefix || strings.HasPrefix(d, prefix+"/") {
					return true
				}
			}
			return false
		}
		for _, m := range tc.without {
			if has(m) {
				t.Errorf("%s links %s", tc.pkg, m)
			}
		}
		for _, m := range tc.with {
			if !has(m) {
				t.Errorf("%s does not link %s (the check would not see it)", tc.pkg, m)
			}
		}
	}
}
