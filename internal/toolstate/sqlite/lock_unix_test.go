//go:build unix

package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestWritesTakeTheLedgersLock: a write waits while another process holds
// the ledger's writers' lock (the flock on path+"-lock"), and goes on when
// it is released, so that the ledger's writers and the store's take turns.
func TestWritesTakeTheLedgersLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	s := mustOpen(t, path)
	f, err := os.OpenFile(path+"-lock", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := s.FirstUse(context.Background(), baseline("t"))
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("FirstUse returned (%v) while the writers' lock was held elsewhere", err)
	case <-time.After(300 * time.Millisecond):
	}
	if v, err := s.Version(context.Background()); err != nil || v != 0 {
		t.Fatalf("reads do not wait for the lock: Version %d, %v", v, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("FirstUse after the lock was released: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("FirstUse still waiting after the lock was released")
	}
}
