package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
	ledgersqlite "github.com/gatehouse-mcp/gatehouse/internal/ledger/sqlite"

	"github.com/gatehouse-mcp/gatehouse/internal/toolstate"
	"github.com/gatehouse-mcp/gatehouse/internal/toolstate/sqlite"
	"github.com/gatehouse-mcp/gatehouse/internal/toolstate/storetest"
)

// TestStore runs the storage suite on a fresh file per test, every Store
// of a test opened on the same file.
func TestStore(t *testing.T) {
	storetest.Run(t, storetest.PerTest(
		func(t *testing.T) string { return filepath.Join(t.TempDir(), "state", "gatehouse.db") },
		func(t *testing.T, path string) toolstate.Store {
			s, err := sqlite.Open(context.Background(), path)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			return s
		},
	))
}

// appendEntries appends n entries to the ledger in the file at path,
// opening it (and creating its tables) first.
func appendEntries(t *testing.T, path string, n int) {
	t.Helper()
	ctx := context.Background()
	st, err := ledgersqlite.Open(ctx, path, false)
	if err != nil {
		t.Fatalf("opening the ledger: %v", err)
	}
	l, err := ledger.New(ctx, st, ledger.Options{LedgerID: "gw-test"})
	if err != nil {
		t.Fatalf("ledger.New: %v", err)
	}
	for i := range n {
		payload, _ := ledger.Canonicalize(fmt.Appendf(nil, `{"i":%d}`, i))
		if _, err := l.Append(ctx, ledger.KindGatewayDecision, fmt.Sprint("rec-", i), payload); err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
	if err := l.Close(ctx); err != nil {
		t.Fatalf("closing the ledger: %v", err)
	}
}

// verifyLedger verifies the ledger in the file at path, read-only, and
// returns its size.
func verifyLedger(t *testing.T, path string) int64 {
	t.Helper()
	ctx := context.Background()
	st, err := ledgersqlite.Open(ctx, path, true)
	if err != nil {
		t.Fatalf("opening the ledger read-only: %v", err)
	}
	defer st.Close()
	rep, err := ledger.Verify(ctx, st, ledger.VerifyOptions{})
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if rep.Problem != nil {
		t.Fatalf("Verify: %v", rep.Problem)
	}
	return rep.Size
}

func mustOpen(t *testing.T, path string) toolstate.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func baseline(tool string) toolstate.Baseline {
	d := []byte(`{"name":"` + tool + `"}`)
	return toolstate.Baseline{ServerID: "srv", Tool: tool, Hash: toolstate.DefinitionHash(d), Definition: d, By: "gw"}
}

// TestLedgerFile: the store shares the ledger's file, opened before or
// after the ledger, with both writing at once; the ledger verifies and
// the tool states are all there.
func TestLedgerFile(t *testing.T) {
	ctx := context.Background()
	for _, ledgerFirst := range []bool{true, false} {
		t.Run(fmt.Sprint("ledgerFirst=", ledgerFirst), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "gatehouse.db")
			if ledgerFirst {
				appendEntries(t, path, 5)
			}
			s := mustOpen(t, path)
			if _, _, err := s.FirstUse(ctx, baseline("before")); err != nil {
				t.Fatal(err)
			}
			const n = 50
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				appendEntries(t, path, n)
			}()
			for i := range n {
				if _, _, err := s.FirstUse(ctx, baseline(fmt.Sprint("t", i))); err != nil {
					t.Errorf("FirstUse beside the ledger's writer: %v", err)
					break
				}
			}
			wg.Wait()
			want := int64(n)
			if ledgerFirst {
				want += 5
			}
			if size := verifyLedger(t, path); size != want {
				t.Fatalf("ledger size %d, want %d", size, want)
			}
			// Reopened, the store reads everything back.
			s.Close()
			all, err := mustOpen(t, path).Tools(ctx, "")
			if err != nil || len(all) != n+1 {
				t.Fatalf("Tools: %v, %d states, want %d", err, len(all), n+1)
			}
		})
	}
}

// TestFileModes: a new state file is 0600 in a new 0700 directory, as the
// ledger creates its own.
func TestFileModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	path := filepath.Join(dir, "gatehouse.db")
	mustOpen(t, path)
	for _, c := range []struct {
		path string
		mode os.FileMode
	}{{dir, 0o700 | os.ModeDir}, {path, 0o600}, {path + "-lock", 0o600}} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != c.mode {
			t.Errorf("%s: mode %v, want %v", c.path, fi.Mode(), c.mode)
		}
	}
}

// TestLaterSchema: a file whose tool-state tables are of a later schema
// is refused, and left as it is.
func TestLaterSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	mustOpen(t, path).Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE tool_state_meta SET value = ? WHERE key = 'schema'`, sqlite.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = sqlite.Open(context.Background(), path)
	if err == nil || !strings.Contains(err.Error(), "later than this gatehouse's") {
		t.Fatalf("Open of a later schema: %v", err)
	}
}

// TestNotADatabase: a file that is not SQLite is refused with its path.
func TestNotADatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	if err := os.WriteFile(path, []byte("this is not a database, not even close to one....................................................................................."), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := sqlite.Open(context.Background(), path)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open of a text file: %v", err)
	}
}

// FuzzSQLite: any names, definition and text are kept exactly by the
// SQLite file, or refused with ErrInvalid (storetest.RoundTrip).
func FuzzSQLite(f *testing.F) {
	f.Add("srv", "read_file", []byte(`{"name":"read_file"}`), "why")
	f.Add(`s "q"; DROP TABLE tool_observations; --`, "工具", []byte{0, 0xff}, "\u2028")
	f.Add("s", "t\x00", []byte(nil), "\xff")
	path := filepath.Join(f.TempDir(), "gatehouse.db")
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	other, err := sqlite.Open(context.Background(), path)
	if err != nil {
		f.Fatal(err)
	}
	defer other.Close()
	f.Fuzz(func(t *testing.T, server, tool string, def []byte, text string) {
		storetest.RoundTrip(t, s, other, server, tool, def, text)
	})
}
