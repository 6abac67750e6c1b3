package backends_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
	ledgerbackends "github.com/gatehouse-mcp/gatehouse/internal/ledger/backends"
	"github.com/gatehouse-mcp/gatehouse/internal/toolstate"
	"github.com/gatehouse-mcp/gatehouse/internal/toolstate/backends"
)

// TestOpenRefusesOtherLocations: what the ledger refuses as a --state
// location the tool-state store refuses too, creating nothing.
func TestOpenRefusesOtherLocations(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, state := range []string{"sqlite:///tmp/x.db", "file:ledger.db", "mysql://u:secret@h/db", "host=127.0.0.1 user=u password=secret dbname=x"} {
		if _, err := backends.Open(context.Background(), state); !errors.Is(err, ledger.ErrNotALedgerLocation) {
			t.Errorf("Open(%q) = %v, want ErrNotALedgerLocation", state, err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("refused locations created %v", ents)
	}
	if _, err := backends.Open(context.Background(), ""); !errors.Is(err, backends.ErrNoState) {
		t.Errorf(`Open("") = %v, want ErrNoState`, err)
	}
}

// TestOpenPicksTheLedgerFile: a path opens the SQLite file the ledger
// opens for the same --state value; both live in it.
func TestOpenPicksTheLedgerFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state", "gatehouse.db")
	l, err := ledgerbackends.Open(ctx, path, ledger.Options{LedgerID: "pick"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	s, err := backends.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	d := []byte(`{"name":"t"}`)
	if _, won, err := s.FirstUse(ctx, toolstate.Baseline{ServerID: "srv", Tool: "t", Hash: toolstate.DefinitionHash(d), Definition: d}); err != nil || !won {
		t.Fatalf("FirstUse: %v, won %v", err, won)
	}
	s.Close()
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) == 0 {
		t.Fatal("no file")
	}
	s, err = backends.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Tool(ctx, "srv", "t"); err != nil {
		t.Fatalf("Tool after reopening: %v", err)
	}
}

// TestOpenPicksPostgres: a postgres:// URL opens the PostgreSQL backend
// (an unreachable one fails to connect rather than creating a file).
func TestOpenPicksPostgres(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	_, err := backends.Open(context.Background(), "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2")
	if err == nil {
		t.Fatal("Open of an unreachable PostgreSQL succeeded")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("a PostgreSQL URL created %v", ents)
	}
}
