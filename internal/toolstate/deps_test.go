package toolstate_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCoreLinksNoDatabaseDriver: package toolstate (the types, the Store
// interface, the in-memory store), which the gateway's drift handling
// imports, links neither database driver; the SQLite backend links no
// pgx and the PostgreSQL one no SQLite. It runs `go list -deps`, so it
// needs the go command (skipped without it).
func TestCoreLinksNoDatabaseDriver(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH")
	}
	const mod = "github.com/gatehouse-mcp/gatehouse/internal/toolstate"
	for _, tc := range []struct {
		pkg           string
		without, with []string
	}{
		{mod, []string{"github.com/jackc/pgx", "modernc.org/sqlite", "database/sql"}, nil},
		{mod + "/sqlite", []string{"github.com/jackc/pgx"}, []string{"modernc.org/sqlite"}},
		{mod + "/postgres", []string{"modernc.org/sqlite"}, []string{"github.com/jackc/pgx"}},
		{mod + "/backends", nil, []string{"modernc.org/sqlite", "github.com/jackc/pgx"}},
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
