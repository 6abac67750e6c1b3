package ledger

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"golang.org/x/mod/sumdb/tlog"
)

// errStoreClosed is returned by MemStore methods after Close.
var errStoreClosed = errors.New("store is closed")

// NewMemStore returns an empty in-memory Store: nothing survives the
// process, so it suits tests and benchmarks of the core, not production. It
// passes the storetest suite; Update is atomic (buffered writes applied on
// success) and exclusive.
func NewMemStore() Store { return &memStore{} }

type memStore struct {
	wmu sync.Mutex // held for a whole Update: exclusivity

	mu     sync.RWMutex // guards the fields below
	closed bool
	id     string
	leaves [][]byte
	hashes []tlog.Hash
	cps    []StoredCheckpoint
}

func (s *memStore) Init(ctx context.Context, proposed string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", errStoreClosed
	}
	if s.id == "" {
		if proposed == "" {
			return "", errors.New("not a ledger (no ledger id)")
		}
		s.id = proposed
	}
	return s.id, nil
}

func (s *memStore) Update(ctx context.Context, f func(context.Context, Tx) error) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return errStoreClosed
	}
	tx := &memTx{s: s}
	if err := f(ctx, tx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errStoreClosed
	}
	s.leaves = append(s.leaves, tx.leaves...)
	s.hashes = append(s.hashes, tx.hashes...)
	for _, c := range tx.cps {
		c.ID = int64(len(s.cps) + 1)
		s.cps = append(s.cps, c)
	}
	return nil
}

func (s *memStore) Size(ctx context.Context) (int64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, errStoreClosed
	}
	return int64(len(s.leaves)), nil
}

func (s *memStore) Leaves(ctx context.Context, from, to int64, f func(int64, []byte) error) error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return errStoreClosed
	}
	leaves := s.leaves[:len(s.leaves):len(s.leaves)] // a snapshot: leaves never change
	s.mu.RUnlock()
	from = max(from, 0)
	to = min(to, int64(len(leaves)))
	for seq := from; seq < to; seq++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := f(seq, leaves[seq]); err != nil {
			return err
		}
	}
	return nil
}

func (s *memStore) ReadHashes(ctx context.Context, indexes []int64) ([]tlog.Hash, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, errStoreClosed
	}
	return readHashSlice(s.hashes, nil, indexes)
}

func readHashSlice(stored, pending []tlog.Hash, indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		switch {
		case x >= 0 && x < int64(len(stored)):
			out[i] = stored[x]
		case x >= int64(len(stored)) && x < int64(len(stored)+len(pending)):
			out[i] = pending[x-int64(len(stored))]
		default:
			return nil, fmt.Errorf("hash %d not stored", x)
		}
	}
	return out, nil
}

func (s *memStore) Checkpoints(ctx context.Context) ([]StoredCheckpoint, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, errStoreClosed
	}
	out := slices.Clone(s.cps)
	slices.SortStableFunc(out, func(a, b StoredCheckpoint) int {
		return cmp.Or(cmp.Compare(a.Size, b.Size), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

func (s *memStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errStoreClosed
	}
	s.closed = true
	return nil
}

// memTx buffers the writes of one Update.
type memTx struct {
	s      *memStore
	leaves [][]byte
	hashes []tlog.Hash
	cps    []StoredCheckpoint
}

func (t *memTx) Size(ctx context.Context) (int64, error) {
	t.s.mu.RLock()
	defer t.s.mu.RUnlock()
	return int64(len(t.s.leaves) + len(t.leaves)), nil
}

func (t *memTx) Leaf(ctx context.Context, seq int64) ([]byte, error) {
	t.s.mu.RLock()
	defer t.s.mu.RUnlock()
	n := int64(len(t.s.leaves))
	switch {
	case seq >= 0 && seq < n:
		return t.s.leaves[seq], nil
	case seq >= n && seq < n+int64(len(t.leaves)):
		return t.leaves[seq-n], nil
	}
	return nil, fmt.Errorf("entry %d not stored", seq)
}

func (t *memTx) ReadHashes(ctx context.Context, indexes []int64) ([]tlog.Hash, error) {
	t.s.mu.RLock()
	defer t.s.mu.RUnlock()
	return readHashSlice(t.s.hashes, t.hashes, indexes)
}

func (t *memTx) Append(ctx context.Context, start int64, leaves [][]byte, hashStart int64, hashes []tlog.Hash) error {
	t.s.mu.RLock()
	n, hn := int64(len(t.s.leaves)+len(t.leaves)), int64(len(t.s.hashes)+len(t.hashes))
	t.s.mu.RUnlock()
	if start != n {
		return fmt.Errorf("append at %d, but the ledger has %d entries", start, n)
	}
	if hashStart != hn {
		return fmt.Errorf("hashes at %d, but %d are stored", hashStart, hn)
	}
	for i, l := range leaves {
		if bytes.IndexByte(l, '\n') >= 0 {
			// What the SQL backends cannot store; kept the same here.
			return fmt.Errorf("%w: entries from %d: leaf %d contains a line feed", ErrInvalid, start, i)
		}
	}
	for _, l := range leaves {
		t.leaves = append(t.leaves, slices.Clone(l))
	}
	t.hashes = append(t.hashes, hashes...)
	return nil
}

func (t *memTx) LatestCheckpoint(ctx context.Context) (StoredCheckpoint, bool, error) {
	t.s.mu.RLock()
	defer t.s.mu.RUnlock()
	var best StoredCheckpoint
	ok := false
	for _, cs := range [][]StoredCheckpoint{t.s.cps, t.cps} {
		for _, c := range cs {
			if !ok || c.Size >= best.Size {
				best, ok = c, true
			}
		}
	}
	return best, ok, nil
}

func (t *memTx) AddCheckpoint(ctx context.Context, c StoredCheckpoint) error {
	c.Note = slices.Clone(c.Note)
	t.cps = append(t.cps, c)
	return nil
}
