package audit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
)

func TestDeadlinesShared(t *testing.T) {
	d := newDeadlines(10 * time.Second)
	if d.slack != 10*time.Millisecond {
		t.Fatalf("slack %v", d.slack)
	}
	now := time.Now()
	a := d.get(now)
	dl, ok := a.Deadline()
	if !ok || dl.Before(now.Add(10*time.Second)) || dl.After(now.Add(10*time.Second+d.slack)) {
		t.Fatalf("deadline %v for a write at %v", dl, now)
	}
	if b := d.get(now.Add(d.slack / 2)); b != a {
		t.Fatal("a write within the window got another context")
	}
	c := d.get(now.Add(2 * d.slack))
	if c == a {
		t.Fatal("a write after the window shares a deadline that is too early for it")
	}
	if dl, _ := c.Deadline(); dl.Before(now.Add(2*d.slack + 10*time.Second)) {
		t.Fatalf("deadline %v too early", dl)
	}
	if newDeadlines(50*time.Millisecond).slack != 500*time.Microsecond {
		t.Fatal("slack is not a hundredth of a short timeout")
	}
}

// stuckLedger queues but never commits: waits end with their context.
type stuckLedger struct{}

func (stuckLedger) EnqueueAll(ctx context.Context, _ []ledger.Record) (func() ([]ledger.Entry, error), error) {
	return func() ([]ledger.Entry, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}, nil
}

// TestTimeoutBoundsTheWait: a ledger that never commits fails the wait
// after Timeout (plus the shared window), not before and not never.
func TestTimeoutBoundsTheWait(t *testing.T) {
	r, err := New(Config{Ledger: stuckLedger{}, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = r.Decided(call(true))()
	if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took < 100*time.Millisecond || took > 5*time.Second {
		t.Fatalf("wait = %v after %v", err, took)
	}
}
