package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"
)

// appendRecorder is a Store that records the entries of every committed
// transaction (one Tx.Append call each, as (start, count)).
type appendRecorder struct {
	Store
	mu      sync.Mutex
	appends [][2]int64
}

func (a *appendRecorder) Update(ctx context.Context, f func(context.Context, Tx) error) error {
	return a.Store.Update(ctx, func(ctx context.Context, tx Tx) error {
		return f(ctx, &recordingTx{Tx: tx, a: a})
	})
}

type recordingTx struct {
	Tx
	a *appendRecorder
}

func (t *recordingTx) Append(ctx context.Context, start int64, leaves [][]byte, hashStart int64, hashes []tlog.Hash) error {
	t.a.mu.Lock()
	t.a.appends = append(t.a.appends, [2]int64{start, int64(len(leaves))})
	t.a.mu.Unlock()
	return t.Tx.Append(ctx, start, leaves, hashStart, hashes)
}

// TestEnqueueAllIsOneTransaction: concurrent groups, each larger than
// MaxBatch, are each committed whole in one transaction with consecutive
// sequence numbers, in the order given.
func TestEnqueueAllIsOneTransaction(t *testing.T) {
	ctx := context.Background()
	store := &appendRecorder{Store: NewMemStore()}
	l, err := New(ctx, store, Options{LedgerID: "groups", MaxBatch: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	const groups, size = 40, 3
	results := make([][]Entry, groups)
	var wg sync.WaitGroup
	for g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			recs := make([]Record, size)
			for i := range recs {
				recs[i] = Record{Kind: KindAuditEvent, RecordID: fmt.Sprintf("g%d-%d", g, i), Payload: testPayload}
			}
			wait, err := l.EnqueueAll(ctx, recs)
			if err != nil {
				t.Error(err)
				return
			}
			if results[g], err = wait(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	store.mu.Lock()
	defer store.mu.Unlock()
	for g, es := range results {
		if len(es) != size {
			t.Fatalf("group %d: %d entries", g, len(es))
		}
		for i, e := range es {
			if e.RecordID != fmt.Sprintf("g%d-%d", g, i) || e.Seq != es[0].Seq+int64(i) {
				t.Fatalf("group %d entry %d: %s at seq %d (first at %d)", g, i, e.RecordID, e.Seq, es[0].Seq)
			}
		}
		inOne := false
		for _, a := range store.appends {
			if a[0] <= es[0].Seq && es[size-1].Seq < a[0]+a[1] {
				inOne = true
			}
		}
		if !inOne {
			t.Errorf("group %d (seq %d..%d) was split between transactions %v", g, es[0].Seq, es[size-1].Seq, store.appends)
		}
	}
}

// TestEnqueueAllRejectsBeforeQueueing: one bad record refuses the whole
// group, naming it, and nothing is written.
func TestEnqueueAllRejectsBeforeQueueing(t *testing.T) {
	ctx := context.Background()
	l, err := New(ctx, NewMemStore(), Options{LedgerID: "groups"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	_, err = l.EnqueueAll(ctx, []Record{
		{Kind: KindAuditEvent, RecordID: "ok", Payload: testPayload},
		{Kind: KindAuditEvent, RecordID: "bad", Payload: []byte(`{"b":1,"a":2}`)},
	})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "record 1 (audit_event)") {
		t.Fatalf("err = %v, want ErrInvalid naming record 1", err)
	}
	if _, err := l.EnqueueAll(ctx, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty group: err = %v, want ErrInvalid", err)
	}
	if n, err := l.Store().Size(ctx); err != nil || n != 0 {
		t.Fatalf("size %d, %v after refused groups", n, err)
	}
}

// uncomparableCtx is a context whose type cannot be compared with ==.
type uncomparableCtx struct {
	context.Context
	tags []string
}

// TestEnqueueAllAnyContext: groups whose contexts cannot be compared (a
// struct holding a slice) are committed like any other (a review found
// the writer comparing contexts, which panics on such a type).
func TestEnqueueAllAnyContext(t *testing.T) {
	ctx := context.Background()
	l, err := New(ctx, NewMemStore(), Options{LedgerID: "ctx"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	var waits []func() ([]Entry, error)
	for i := range 3 {
		c := uncomparableCtx{ctx, []string{"a"}}
		w, err := l.EnqueueAll(c, []Record{{Kind: KindAuditEvent, RecordID: fmt.Sprintf("a%d", i), Payload: testPayload}, {Kind: KindAuditEvent, RecordID: fmt.Sprintf("b%d", i), Payload: testPayload}})
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, w)
	}
	for i, w := range waits {
		if es, err := w(); err != nil || len(es) != 2 {
			t.Fatalf("group %d: %d entries, %v", i, len(es), err)
		}
	}
}

// TestEnqueueAllExpiredGroupIsDroppedWhole: a group whose context has
// ended before its batch is written is dropped whole; the groups around it
// are written.
func TestEnqueueAllExpiredGroupIsDroppedWhole(t *testing.T) {
	ctx := context.Background()
	store := &appendRecorder{Store: NewMemStore()}
	l, err := New(ctx, store, Options{LedgerID: "exp"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	gone, cancel := context.WithCancel(ctx)
	w1, _ := l.EnqueueAll(ctx, []Record{{Kind: KindAuditEvent, RecordID: "before", Payload: testPayload}})
	w2, err := l.EnqueueAll(gone, []Record{{Kind: KindAuditEvent, RecordID: "x0", Payload: testPayload}, {Kind: KindAuditEvent, RecordID: "x1", Payload: testPayload}})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	w3, _ := l.EnqueueAll(ctx, []Record{{Kind: KindAuditEvent, RecordID: "after", Payload: testPayload}})
	if _, err := w1(); err != nil {
		t.Fatal(err)
	}
	if _, err := w2(); err == nil {
		t.Log("the cancelled group was written before its context ended (the writer was faster); nothing to check")
	}
	if _, err := w3(); err != nil {
		t.Fatal(err)
	}
	var ids []string
	if err := store.Leaves(ctx, 0, 10, func(_ int64, leaf []byte) error {
		e, err := ParseLeaf(leaf)
		ids = append(ids, e.RecordID)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(ids, ",")
	if got != "before,after" && got != "before,x0,x1,after" {
		t.Fatalf("entries %s: the group was split", got)
	}
}

// TestDeferredGroupRidesTheNextCommit: a deferred group starts no
// transaction of its own: it is committed with the next group that is not
// deferred, in order, or on its own once its time is up; Close commits
// what is held. Its wait returns once it is durable, like any other.
func TestDeferredGroupRidesTheNextCommit(t *testing.T) {
	ctx := context.Background()
	rec := func(id string) []Record {
		return []Record{{Kind: KindGatewayOutcome, RecordID: id, Payload: []byte(`{"action":"allow"}`)}}
	}
	t.Run("rides", func(t *testing.T) {
		store := &appendRecorder{Store: NewMemStore()}
		l, err := New(ctx, store, Options{LedgerID: "defer"})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close(ctx)
		wd, err := l.EnqueueAllDeferred(ctx, rec("outcome_1"), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // the writer has it; it must not commit it alone
		store.mu.Lock()
		n := len(store.appends)
		store.mu.Unlock()
		if n != 0 {
			t.Fatalf("the deferred group was committed on its own (%v)", store.appends)
		}
		w, err := l.EnqueueAll(ctx, rec("decision_2"))
		if err != nil {
			t.Fatal(err)
		}
		es, err := w()
		if err != nil {
			t.Fatal(err)
		}
		ds, err := wd()
		if err != nil {
			t.Fatal(err)
		}
		if ds[0].Seq != 0 || es[0].Seq != 1 {
			t.Fatalf("seqs deferred %d, next %d; want 0, 1", ds[0].Seq, es[0].Seq)
		}
		if fmt.Sprint(store.appends) != "[[0 2]]" {
			t.Fatalf("transactions %v, want one of both", store.appends)
		}
	})
	t.Run("time is up", func(t *testing.T) {
		store := &appendRecorder{Store: NewMemStore()}
		l, err := New(ctx, store, Options{LedgerID: "defer"})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close(ctx)
		start := time.Now()
		wd, err := l.EnqueueAllDeferred(ctx, rec("outcome_1"), 30*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := wd(); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < 30*time.Millisecond || d > 5*time.Second {
			t.Fatalf("a lone deferred group was committed after %v, want its 30ms", d)
		}
		if fmt.Sprint(store.appends) != "[[0 1]]" {
			t.Fatalf("transactions %v", store.appends)
		}
	})
	t.Run("close", func(t *testing.T) {
		store := &appendRecorder{Store: noClose{NewMemStore()}}
		l, err := New(ctx, store, Options{LedgerID: "defer"})
		if err != nil {
			t.Fatal(err)
		}
		wd, err := l.EnqueueAllDeferred(ctx, rec("outcome_1"), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := wd(); err != nil {
			t.Fatalf("held group at Close: %v", err)
		}
		if n, _ := store.Size(ctx); n != 1 {
			t.Fatalf("size %d after Close, want 1", n)
		}
	})
}
