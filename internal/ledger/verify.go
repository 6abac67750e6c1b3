package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// VerifyOptions configure Verify.
type VerifyOptions struct {
	// Verifiers are the public keys checkpoints must be signed with. nil:
	// signatures are not checked (the report says so); everything else
	// still is.
	Verifiers note.Verifiers
	// Progress, if set, is called after each chunk of entries with the
	// number verified so far and the total.
	Progress func(done, total int64)
	// Entry, if set, is called for each entry that passed every check, in
	// seq order, on the goroutine that called Verify; e is valid only
	// during the call. It lets a caller read the records in the same pass
	// (`gatehouse ledger verify` counts calls whose outcome is unknown).
	Entry func(e *Entry)
}

// A Report is the outcome of Verify.
type Report struct {
	// LedgerID is the id recorded in the store.
	LedgerID string
	// Size is the number of entries the store holds (max seq + 1).
	Size int64
	// Verified is the number of entries that passed every check, a prefix
	// of the ledger.
	Verified int64
	// Checkpoints is the number of stored checkpoints that passed.
	Checkpoints int
	// SignaturesChecked reports whether checkpoint signatures were checked
	// (VerifyOptions.Verifiers was set).
	SignaturesChecked bool
	// Latest is the passing checkpoint with the largest size, or nil.
	Latest *Checkpoint
	// Problem is the first problem found, or nil when the ledger verifies.
	Problem *Problem
}

// A Problem is the first thing Verify found wrong. Verification stops there:
// nothing after it can be trusted.
type Problem struct {
	// Seq is the first bad entry, or -1 when the problem is a checkpoint's.
	Seq int64 `json:"seq"`
	// Checkpoint is the store's id of the bad checkpoint, or 0.
	Checkpoint int64 `json:"checkpoint,omitempty"`
	// Reason says what is wrong, in words.
	Reason string `json:"reason"`
}

// String is "entry N: reason" or "checkpoint ID: reason".
func (p *Problem) String() string {
	if p.Seq >= 0 {
		return fmt.Sprintf("entry %d: %s", p.Seq, p.Reason)
	}
	return fmt.Sprintf("checkpoint %d: %s", p.Checkpoint, p.Reason)
}

// verifyChunk is the number of entries Verify reads at a time.
const verifyChunk = 4096

// Verify checks the whole ledger in s, in one pass over its entries in seq
// order, in memory bounded by the chunk size (the Merkle tree is carried as
// its frontier, at most 63 hashes):
//
//   - every seq from 0 to Size-1 is present; each leaf parses (ParseLeaf:
//     canonical JSON, valid fields), names its own seq and the store's
//     ledger id, carries the chain hash of the previous leaf as
//     previous_hash (the zero hash for seq 0), and has a time not earlier
//     than the previous entry's;
//   - the tree hashes stored for it equal those recomputed from the leaves
//     with tlog.StoredHashes (so proofs served from the store are sound);
//   - every stored checkpoint, when the pass reaches its size: the note is
//     signed by one of opts.Verifiers (if given), its body parses, its
//     origin is the ledger's, its size matches the stored size, and its
//     root equals tlog.TreeHash of the entries verified so far;
//   - no checkpoint claims more entries than the store holds (truncation).
//
// The first failure is returned as Report.Problem with a nil error. The
// error is non-nil only when the store cannot be read (an I/O or
// connection failure, or an empty store that holds no ledger).
func Verify(ctx context.Context, s Store, opts VerifyOptions) (*Report, error) {
	id, err := s.Init(ctx, "")
	if err != nil {
		return nil, err
	}
	// Checkpoints first, then the size: a checkpoint is stored in the same
	// or a later transaction than the entries it covers, so every
	// checkpoint read here is covered by the size read after it.
	cps, err := s.Checkpoints(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading checkpoints: %w", err)
	}
	size, err := s.Size(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading size: %w", err)
	}
	v := &verifier{
		rep:     &Report{LedgerID: id, Size: size, SignaturesChecked: opts.Verifiers != nil},
		origin:  Origin(id),
		known:   opts.Verifiers,
		cps:     cps,
		prev:    ZeroHash,
		hashes:  map[int64]tlog.Hash{},
		onEntry: opts.Entry,
	}
	v.checkCheckpoints(0)
	// One goroutine reads the next chunk and checks its leaves (in
	// parallel) while this one walks the current chunk in order.
	rctx, cancel := context.WithCancel(ctx)
	chunks := make(chan *chunkData, 1)
	go func() {
		defer close(chunks)
		for lo := int64(0); lo < size; lo += verifyChunk {
			c := readChunk(rctx, s, lo, min(size, lo+verifyChunk))
			select {
			case chunks <- c:
			case <-rctx.Done():
				return
			}
			if c.err != nil {
				return
			}
		}
	}()
	defer func() {
		cancel()
		for range chunks { // wait for the reader to stop
		}
	}()
	for c := range chunks {
		if c.err != nil {
			return nil, c.err
		}
		if err := v.chunk(ctx, s, c); err != nil {
			return nil, err
		}
		if v.rep.Problem != nil {
			break
		}
		v.hashes = pruneToFrontier(v.hashes, v.next)
		if opts.Progress != nil {
			opts.Progress(v.next, size)
		}
	}
	if v.rep.Problem == nil && v.next < size {
		v.fail(v.next, "entry is missing")
	}
	if v.rep.Problem == nil && v.ci < len(cps) {
		c := cps[v.ci]
		v.failCheckpoint(c.ID, fmt.Sprintf("claims %d entries, but the ledger holds %d: entries were removed", c.Size, size))
	}
	v.rep.Verified = v.next
	return v.rep, nil
}

type verifier struct {
	rep    *Report
	origin string
	known  note.Verifiers
	cps    []StoredCheckpoint
	ci     int // next checkpoint to check

	next   int64     // next expected seq = number verified
	prev   string    // chain hash of entry next-1
	last   time.Time // time of entry next-1
	hashes map[int64]tlog.Hash

	onEntry func(e *Entry) // VerifyOptions.Entry
}

func (v *verifier) fail(seq int64, format string, args ...any) {
	v.rep.Problem = &Problem{Seq: seq, Reason: fmt.Sprintf(format, args...)}
}

func (v *verifier) failCheckpoint(id int64, reason string) {
	v.rep.Problem = &Problem{Seq: -1, Checkpoint: id, Reason: reason}
}

// chunkData is one chunk of entries [lo, hi) as read and checked by
// readChunk.
type chunkData struct {
	first   int64       // storage index of the first stored hash of entry lo
	stored  []tlog.Hash // stored hashes of the chunk, nil if one is missing or malformed
	seqs    []int64
	leaves  [][]byte
	checked []checkedLeaf
	err     error // reading failed
}

// readChunk reads entries [lo, hi) and their stored hashes and checks each
// leaf on its own (checkLeaves).
func readChunk(ctx context.Context, s Store, lo, hi int64) *chunkData {
	c := &chunkData{first: tlog.StoredHashCount(lo)}
	end := tlog.StoredHashCount(hi)
	var err error
	c.stored, err = s.ReadHashes(ctx, indexRange(c.first, end-c.first))
	if errors.Is(err, ErrCorrupt) {
		// A stored hash is missing or malformed: chunk reads them entry
		// by entry to name the first entry whose hashes are affected.
		c.stored = nil
	} else if err != nil {
		c.err = fmt.Errorf("reading tree hashes: %w", err)
		return c
	}
	if err := s.Leaves(ctx, lo, hi, func(seq int64, leaf []byte) error {
		c.seqs = append(c.seqs, seq)
		c.leaves = append(c.leaves, bytes.Clone(leaf))
		return nil
	}); err != nil {
		c.err = err
		return c
	}
	c.checked = checkLeaves(c.leaves)
	return c
}

// chunk walks a chunk in order, checking everything that links an entry
// to the ones before it.
func (v *verifier) chunk(ctx context.Context, s Store, cd *chunkData) error {
	first, stored, seqs, checked := cd.first, cd.stored, cd.seqs, cd.checked
	reader := &mapHashReader{ctx: ctx, m: v.hashes}
	for i, seq := range seqs {
		if seq != v.next {
			v.fail(v.next, "entry is missing (the next stored entry is %d)", seq)
			return nil
		}
		c := &checked[i]
		if c.err != nil {
			v.fail(seq, "%v", c.err)
			return nil
		}
		e := &c.entry
		switch {
		case e.Seq != seq:
			v.fail(seq, "stored at seq %d but its leaf says ledger_seq %d", seq, e.Seq)
		case e.LedgerID != v.rep.LedgerID:
			v.fail(seq, "ledger_id %q, but this is ledger %q", e.LedgerID, v.rep.LedgerID)
		case e.PreviousHash != v.prev:
			v.fail(seq, "previous_hash %s, but entry %d hashes to %s", e.PreviousHash, seq-1, v.prev)
		case seq > 0 && e.Time.Before(v.last):
			v.fail(seq, "time %s is earlier than entry %d's %s", e.Time.Format("2006-01-02T15:04:05.999999Z07:00"), seq-1, v.last.Format("2006-01-02T15:04:05.999999Z07:00"))
		}
		if v.rep.Problem != nil {
			return nil
		}
		hs, err := tlog.StoredHashesForRecordHash(seq, c.leafHash, reader)
		if err != nil {
			return fmt.Errorf("computing tree hashes of entry %d: %w", seq, err)
		}
		base := tlog.StoredHashIndex(0, seq)
		var want []tlog.Hash
		if stored != nil {
			want = stored[base-first : base-first+int64(len(hs))]
		} else {
			want, err = s.ReadHashes(ctx, indexRange(base, int64(len(hs))))
			if errors.Is(err, ErrCorrupt) {
				v.fail(seq, "tree hashes: %v", err)
				return nil
			} else if err != nil {
				return fmt.Errorf("reading tree hashes: %w", err)
			}
		}
		for j, h := range hs {
			if want[j] != h {
				level, n := tlog.SplitStoredHashIndex(base + int64(j))
				if j == 0 {
					v.fail(seq, "stored leaf hash differs from the hash of the stored leaf")
				} else {
					v.fail(seq, "stored tree hash %d (level %d, node %d) differs from the one recomputed from the leaves", base+int64(j), level, n)
				}
				return nil
			}
			v.hashes[base+int64(j)] = h
		}
		v.prev = c.chain
		v.last = e.Time
		v.next++
		if v.onEntry != nil {
			v.onEntry(e)
		}
		if !v.checkCheckpoints(v.next) {
			return nil
		}
	}
	return nil
}

// checkedLeaf is what checkLeaves computes for one leaf.
type checkedLeaf struct {
	entry    Entry
	err      error     // from ParseLeaf
	chain    string    // chain hash
	leafHash tlog.Hash // tlog.RecordHash
}

// checkLeaves parses and hashes leaves on every CPU.
func checkLeaves(leaves [][]byte) []checkedLeaf {
	out := make([]checkedLeaf, len(leaves))
	one := func(i int) {
		c := &out[i]
		if c.entry, c.err = ParseLeaf(leaves[i]); c.err == nil {
			c.chain = chainHash(leaves[i])
			c.leafHash = tlog.RecordHash(leaves[i])
		}
	}
	workers := min(runtime.GOMAXPROCS(0), (len(leaves)+255)/256)
	if workers <= 1 {
		for i := range leaves {
			one(i)
		}
		return out
	}
	var wg sync.WaitGroup
	var next atomic.Int64
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(leaves) {
					return
				}
				one(i)
			}
		}()
	}
	wg.Wait()
	return out
}

func indexRange(base, n int64) []int64 {
	idx := make([]int64, n)
	for i := range idx {
		idx[i] = base + int64(i)
	}
	return idx
}

// checkCheckpoints checks every stored checkpoint of size n (the number of
// entries verified so far) and reports whether they all pass.
func (v *verifier) checkCheckpoints(n int64) bool {
	for ; v.ci < len(v.cps) && v.cps[v.ci].Size <= n; v.ci++ {
		sc := v.cps[v.ci]
		if sc.Size < n {
			// Sizes are sorted, so this one was skipped: it cannot be.
			v.failCheckpoint(sc.ID, fmt.Sprintf("stored size %d is out of order", sc.Size))
			return false
		}
		var c Checkpoint
		var err error
		if v.known != nil {
			c, err = OpenCheckpoint(sc.Note, v.known)
		} else {
			c, err = openCheckpointUnverified(sc.Note)
		}
		if err != nil {
			v.failCheckpoint(sc.ID, fmt.Sprintf("(size %d) %v", sc.Size, err))
			return false
		}
		if c.Origin != v.origin {
			v.failCheckpoint(sc.ID, fmt.Sprintf("origin %q, but this ledger's is %q", c.Origin, v.origin))
			return false
		}
		if c.Size != sc.Size {
			v.failCheckpoint(sc.ID, fmt.Sprintf("signed size %d, but stored as size %d", c.Size, sc.Size))
			return false
		}
		root, err := tlog.TreeHash(n, &mapHashReader{m: v.hashes})
		if err != nil {
			v.failCheckpoint(sc.ID, fmt.Sprintf("computing the tree at size %d: %v", n, err))
			return false
		}
		if root != c.Hash {
			if n == 0 {
				v.failCheckpoint(sc.ID, fmt.Sprintf("signed root %s for size 0, but the empty tree hashes to %s", c.Hash, root))
			} else {
				v.failCheckpoint(sc.ID, fmt.Sprintf("signed root %s for size %d, but the entries 0..%d hash to %s: an entry before %d was changed after it was signed", c.Hash, n, n-1, root, n))
			}
			return false
		}
		v.rep.Checkpoints++
		v.rep.Latest = &c
	}
	return true
}
