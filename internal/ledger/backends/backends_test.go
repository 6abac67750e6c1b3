package backends

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
)

// TestOpenStoreRefusesOtherLocations: a location meant as another URL or
// a keyword/value connection string is refused (ledger.CheckPath) before
// anything is created, rather than taken as a SQLite file name.
func TestOpenStoreRefusesOtherLocations(t *testing.T) {
	for _, dsn := range []string{"sqlite:///tmp/x.db", "file:ledger.db", "mysql://u:secret@h/db", "host=127.0.0.1 user=u password=secret dbname=x"} {
		if _, err := OpenStore(context.Background(), dsn, false); !errors.Is(err, ledger.ErrNotALedgerLocation) {
			t.Errorf("OpenStore(%q) = %v, want ErrNotALedgerLocation", dsn, err)
		}
	}
}

// TestOpenPicksSQLiteForAPath: a file path opens (and creates) a SQLite
// ledger, which a read-only OpenStore then reads.
func TestOpenPicksSQLiteForAPath(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state", "ledger.db")
	l, err := Open(ctx, path, ledger.Options{LedgerID: "pick"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, ledger.KindGatewayDecision, "audit_1", []byte(`{"action":"allow"}`)); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := OpenStore(ctx, path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, err := s.Size(ctx); err != nil || n != 1 {
		t.Fatalf("Size = %d, %v; want 1", n, err)
	}
}
