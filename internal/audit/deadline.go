package audit

import (
	"context"
	"sync"
	"time"
)

// deadlines hands out the contexts that bound ledger appends. A context
// with a deadline costs a runtime timer; the writes of one short window
// share one instead: a write at time t gets a context whose deadline is in
// [t+timeout, t+timeout+slack]. Safe for concurrent use.
type deadlines struct {
	timeout, slack time.Duration

	mu       sync.Mutex
	ctx      context.Context
	deadline time.Time
	// cancel is the current context's; it is never called: the context
	// ends at its deadline, when writes may still be waiting on it, and
	// its timer releases it then.
	cancel context.CancelFunc
}

// newDeadlines returns deadlines for timeout, shared within windows of a
// hundredth of it, at most 10 ms.
func newDeadlines(timeout time.Duration) *deadlines {
	return &deadlines{timeout: timeout, slack: min(timeout/100, 10*time.Millisecond)}
}

// get returns a context that ends between timeout and timeout+slack after
// now.
func (d *deadlines) get(now time.Time) context.Context {
	earliest := now.Add(d.timeout)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ctx == nil || d.deadline.Before(earliest) || d.deadline.Sub(earliest) > d.slack {
		d.deadline = earliest.Add(d.slack)
		d.ctx, d.cancel = context.WithDeadline(context.Background(), d.deadline)
	}
	return d.ctx
}
