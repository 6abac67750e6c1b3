package ledger

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"
)

var testPayload = []byte(`{"action":"allow","tool_name":"read_file"}`)

// faultStore fails Append with ENOSPC while full is set.
type faultStore struct {
	Store
	full atomic.Bool
}

func (s *faultStore) Update(ctx context.Context, f func(context.Context, Tx) error) error {
	return s.Store.Update(ctx, func(ctx context.Context, tx Tx) error {
		return f(ctx, &faultTx{Tx: tx, s: s})
	})
}

type faultTx struct {
	Tx
	s *faultStore
}

func (t *faultTx) Append(ctx context.Context, start int64, leaves [][]byte, hs int64, hashes []tlog.Hash) error {
	if t.s.full.Load() {
		return &os.PathError{Op: "write", Path: "/var/lib/ledger.db-wal", Err: syscall.ENOSPC}
	}
	return t.Tx.Append(ctx, start, leaves, hs, hashes)
}

// A disk-full error reaches the caller wrapped (errors.Is finds both
// ErrWrite and ENOSPC); the failed batch leaves no trace; the next batch
// continues the chain.
func TestDiskFullVisible(t *testing.T) {
	ctx := context.Background()
	fs := &faultStore{Store: NewMemStore()}
	l, err := New(ctx, fs, Options{LedgerID: "full"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	for i := range 3 {
		if _, err := l.Append(ctx, KindAuditEvent, "ok", testPayload); err != nil {
			t.Fatal(i, err)
		}
	}
	fs.full.Store(true)
	_, err = l.Append(ctx, KindAuditEvent, "lost", testPayload)
	if !errors.Is(err, ErrWrite) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Append on a full disk: %v, want ErrWrite wrapping ENOSPC", err)
	}
	t.Logf("visible error: %v", err)
	fs.full.Store(false)
	e, err := l.Append(ctx, KindAuditEvent, "after", testPayload)
	if err != nil || e.Seq != 3 {
		t.Fatalf("after the disk-full error: seq %d, %v; want 3", e.Seq, err)
	}
	rep, err := Verify(ctx, fs, VerifyOptions{})
	if err != nil || rep.Problem != nil || rep.Size != 4 {
		t.Fatalf("Verify: %+v, %v", rep, err)
	}
}

func TestAppendArgumentsAndLifecycle(t *testing.T) {
	ctx := context.Background()
	l, err := New(ctx, NewMemStore(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(l.ID(), "ledger-") {
		t.Fatalf("default ledger id %q", l.ID())
	}
	for _, tc := range []struct{ kind, id, payload string }{
		{"Bad Kind", "x", `{}`},
		{KindAuditEvent, "", `{}`},
		{KindAuditEvent, "x", `{"b":1,"a":2}`},
		{KindAuditEvent, "x", `{"n":12345678901234567890}`},
		{KindAuditEvent, "x", ``},
	} {
		if _, err := l.Append(ctx, tc.kind, tc.id, []byte(tc.payload)); !errors.Is(err, ErrInvalid) {
			t.Errorf("Append(%q, %q, %s) = %v, want ErrInvalid", tc.kind, tc.id, tc.payload, err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.Append(cctx, KindAuditEvent, "x", testPayload); !errors.Is(err, context.Canceled) {
		t.Errorf("Append with a canceled context: %v", err)
	}
	c, err := l.Checkpoint(ctx)
	if err != nil || c.Note != nil || c.Size != 0 {
		t.Fatalf("unsigned Checkpoint of an empty ledger: %+v, %v", c, err)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := l.Append(ctx, KindAuditEvent, "x", testPayload); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v, want ErrClosed", err)
	}
	if _, err := l.Checkpoint(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Checkpoint after Close: %v, want ErrClosed", err)
	}
}

// noClose keeps a store readable after the Ledger on it is closed.
type noClose struct{ Store }

func (noClose) Close() error { return nil }

// Appends queued when Close starts are committed, not dropped, and Close
// signs them.
func TestCloseFlushes(t *testing.T) {
	ctx := context.Background()
	signer, verifiers := testKeys(t)
	s := NewMemStore()
	l, err := New(ctx, noClose{s}, Options{LedgerID: "flush", Signer: signer, CheckpointEvery: time.Hour, CheckpointEveryN: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := l.Append(ctx, KindAuditEvent, "x", testPayload)
			errs <- err
		}()
	}
	time.Sleep(time.Millisecond)
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	ok := 0
	for range n {
		switch err := <-errs; {
		case err == nil:
			ok++
		case errors.Is(err, ErrClosed):
		default:
			t.Fatalf("Append during Close: %v", err)
		}
	}
	size, _ := s.Size(ctx)
	if int64(ok) != size {
		t.Fatalf("%d appends acknowledged, %d stored", ok, size)
	}
	rep, err := Verify(ctx, s, VerifyOptions{Verifiers: verifiers})
	if err != nil || rep.Problem != nil || rep.Latest == nil || rep.Latest.Size != size {
		t.Fatalf("after Close: %+v, %v; want a final checkpoint of size %d", rep, err, size)
	}
}

// The time trigger writes a checkpoint while the ledger is idle.
func TestCheckpointTimer(t *testing.T) {
	ctx := context.Background()
	signer, _ := testKeys(t)
	s := NewMemStore()
	l, err := New(ctx, s, Options{LedgerID: "timer", Signer: signer, CheckpointEvery: 40 * time.Millisecond, CheckpointEveryN: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	for range 3 {
		if _, err := l.Append(ctx, KindAuditEvent, "x", testPayload); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		cps, _ := s.Checkpoints(ctx)
		if len(cps) > 0 && cps[len(cps)-1].Size == 3 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	cps, _ := s.Checkpoints(ctx)
	t.Fatalf("no checkpoint of size 3 after idling: %v", cps)
}

// TestCheckPath: a location that starts with a URL scheme and is not a
// PostgreSQL URL is refused (ErrNotALedgerLocation), naming only the
// scheme; file paths, including one with a colon after a directory and a
// drive-letter-like one, are not.
func TestCheckPath(t *testing.T) {
	for _, tc := range []struct {
		dsn    string
		scheme string // "" when accepted
	}{
		{"/var/lib/gatehouse/ledger.db", ""},
		{"ledger.db", ""},
		{"./mysql:x.db", ""},
		{"C:ledger.db", ""},
		{"mysql://u:secret@h/db", "mysql"},
		{"postgres:/u:secret@h/db", "postgres"},
		{"sqlite:///tmp/x.db", "sqlite"},
		{"file:ledger.db", "file"},
		{"Postgres://u:secret@h/db", "Postgres"},
		{"mysql:x.db", "mysql"},
		// A colon in a file name is not a scheme unless "/" follows.
		{"ledger-2026-11-30T18:38:00.db", ""},
		{"backup:2026.db", ""},
		{"backup:/2026.db", "backup"},
	} {
		err := CheckPath(tc.dsn)
		if got := URLScheme(tc.dsn); got != tc.scheme {
			t.Errorf("URLScheme(%q) = %q, want %q", tc.dsn, got, tc.scheme)
		}
		if tc.scheme == "" {
			if err != nil {
				t.Errorf("CheckPath(%q) = %v, want nil", tc.dsn, err)
			}
			continue
		}
		if !errors.Is(err, ErrNotALedgerLocation) || !strings.Contains(err.Error(), `"`+tc.scheme+`:"`) || strings.Contains(err.Error(), "secret") {
			t.Errorf("CheckPath(%q) = %v, want ErrNotALedgerLocation naming %s: and nothing after it", tc.dsn, err, tc.scheme)
		}
	}
	// A libpq keyword/value string is refused, never echoed.
	kw := "host=127.0.0.1 user=u password=secret dbname=x"
	if err := CheckPath(kw); !errors.Is(err, ErrNotALedgerLocation) || strings.Contains(err.Error(), "secret") {
		t.Errorf("CheckPath(keyword DSN) = %v", err)
	}
}
