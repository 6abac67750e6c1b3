package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
)

// A real SQLite write failure (the write connection made read-only) is
// returned wrapped in ErrWrite with SQLite's own message, and appends
// continue once the cause is gone, with an intact chain.
func TestSQLiteWriteErrorVisible(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := openLedger(t, ctx, path, ledger.Options{LedgerID: "werr"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	if _, err := l.Append(ctx, ledger.KindAuditEvent, "a0", []byte(`{"action":"allow"}`)); err != nil {
		t.Fatal(err)
	}
	rw := l.Store().(*sqliteStore).rw // one connection: the pragma sticks to it
	if _, err := rw.Exec(`PRAGMA query_only = 1`); err != nil {
		t.Fatal(err)
	}
	_, err = l.Append(ctx, ledger.KindAuditEvent, "a1", []byte(`{"action":"allow"}`))
	if !errors.Is(err, ledger.ErrWrite) || !strings.Contains(err.Error(), "readonly") {
		t.Fatalf("Append on a read-only database: %v, want ErrWrite with SQLite's message", err)
	}
	t.Logf("visible error: %v", err)
	if _, err := rw.Exec(`PRAGMA query_only = 0`); err != nil {
		t.Fatal(err)
	}
	e, err := l.Append(ctx, ledger.KindAuditEvent, "a2", []byte(`{"action":"allow"}`))
	if err != nil || e.Seq != 1 {
		t.Fatalf("Append after recovery: seq %d, %v; want seq 1", e.Seq, err)
	}
	rep, err := ledger.Verify(ctx, l.Store(), ledger.VerifyOptions{})
	if err != nil || rep.Problem != nil || rep.Size != 2 {
		t.Fatalf("Verify: %+v, %v", rep, err)
	}
}
