package ledger

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"golang.org/x/mod/sumdb/tlog"
)

// A Store persists one ledger: its leaves (the exact bytes of each entry,
// keyed by seq), the tlog stored hashes of its Merkle tree (keyed by
// tlog.StoredHashIndex), its checkpoints and its ledger id. It knows nothing
// of hashing, chaining or signing; the [Ledger] computes everything and the
// Store only makes it durable.
//
// All methods are safe for concurrent use. Several Store values (in one or
// several processes) may refer to the same database; Update serializes them.
// Reads outside Update see committed data only; leaves and hashes never
// change once committed, so a read may be served from any committed state
// whose size covers it.
//
// Every backend runs the suite in internal/ledger/storetest.
type Store interface {
	// Init prepares the store for use (schema creation in a read-write
	// store) and returns the ledger id recorded in it. When none is
	// recorded yet, a non-empty proposed is recorded and returned; an
	// empty proposed records nothing and makes Init fail, as does a
	// read-only store with no ledger in it.
	Init(ctx context.Context, proposed string) (id string, err error)

	// Update runs f in one exclusive read-write transaction: no other
	// Update on the same database (from any process) runs concurrently, and
	// reads through tx see every transaction committed before it. If f
	// returns an error, nothing f wrote is kept and Update returns that
	// error. If f returns nil, Update commits and returns nil only once the
	// commit is durable (survives a crash of the process and of the
	// machine, as far as the database's own guarantees go). f is called at
	// most once.
	Update(ctx context.Context, f func(ctx context.Context, tx Tx) error) error

	// Size returns the number of committed entries.
	Size(ctx context.Context) (int64, error)

	// Leaves calls f for each stored entry with from <= seq < to in
	// increasing seq order, from one consistent snapshot. It passes the seq
	// as stored; a gap (a missing row) shows up as a skipped seq and is the
	// caller's to detect. leaf is valid only during the call. An error from
	// f stops the iteration and is returned.
	Leaves(ctx context.Context, from, to int64, f func(seq int64, leaf []byte) error) error

	// ReadHashes returns the stored hashes at the given storage indexes
	// (tlog.StoredHashIndex), in the order given. A missing hash is an
	// error.
	ReadHashes(ctx context.Context, indexes []int64) ([]tlog.Hash, error)

	// Checkpoints returns every stored checkpoint ordered by size, then by
	// ID.
	Checkpoints(ctx context.Context) ([]StoredCheckpoint, error)

	// Close releases the store's resources. Calls after Close fail.
	Close() error
}

// Tx is the view of a Store inside Update. It is valid only during the call
// to f and must not be used concurrently.
type Tx interface {
	// Size returns the number of entries, including those written by this
	// transaction.
	Size(ctx context.Context) (int64, error)
	// Leaf returns the leaf of entry seq.
	Leaf(ctx context.Context, seq int64) ([]byte, error)
	// ReadHashes is Store.ReadHashes within the transaction.
	ReadHashes(ctx context.Context, indexes []int64) ([]tlog.Hash, error)
	// Append stores leaves[i] as entry start+i and hashes[j] at storage
	// index hashStart+j. start must be Size and hashStart the number of
	// stored hashes; the backend rejects anything else (a seq or index
	// already stored, or a gap), which is what makes a lost race between
	// writers fail instead of forking the chain. A leaf must not contain
	// a line feed (no leaf does: it is canonical JSON).
	Append(ctx context.Context, start int64, leaves [][]byte, hashStart int64, hashes []tlog.Hash) error
	// LatestCheckpoint returns the stored checkpoint with the largest size
	// (the latest stored among equals), and ok=false if there is none.
	LatestCheckpoint(ctx context.Context) (c StoredCheckpoint, ok bool, err error)
	// AddCheckpoint stores a signed checkpoint note with its Size and
	// Created; the store assigns the ID.
	AddCheckpoint(ctx context.Context, c StoredCheckpoint) error
}

// StoredCheckpoint is a signed checkpoint as a Store keeps it.
type StoredCheckpoint struct {
	// ID is the store's identifier of the checkpoint, increasing in the
	// order they were stored.
	ID int64
	// Size is the tree size the checkpoint covers; the same as in Note's
	// body (Verify checks that).
	Size int64
	// Note is the signed note, exactly as signed.
	Note []byte
	// Created is when the checkpoint was stored (not signed; informative).
	Created time.Time
}

// Every backend implements Store; the compiler checks it.
var (
	_ Store = (*sqliteStore)(nil)
	_ Store = (*pgStore)(nil)
	_ Store = (*memStore)(nil)
	_ Tx    = (*sqliteTx)(nil)
	_ Tx    = (*pgTx)(nil)
	_ Tx    = (*memTx)(nil)
)

// The SQL backends store one block per Append (one committed batch), not
// one row per entry and per hash (schema 2; docs/ledger.md, "Storage"):
//
//	ledger_blocks(start PRIMARY KEY, count, leaves)
//	ledger_hash_blocks(start PRIMARY KEY, hashes)
//
// leaves is the batch's leaves, each followed by a line feed (JSON Lines:
// a leaf is canonical JSON, which never contains one), count their number;
// hashes is the batch's stored hashes, 32 bytes each, at the contiguous
// storage indexes start, start+1, ... Entry seq is line seq-start of the
// block with the greatest start <= seq, if that block has count > seq-start
// and that many lines; hash x is the 32 bytes at (x-start)*32 of the hash
// block with the greatest start <= x, if they are all there. Anything else
// is a missing entry or hash, which Verify reports at its seq. Size is the
// last block's start+count (one seek on the primary key).

// schemaVersion is the layout version recorded as "schema" in ledger_meta:
// 1 is one row per entry (ledger_entries) and per hash (ledger_hashes), 2
// the blocks.
const schemaVersion = 2

// Blocks written when migrating a store from schema 1 hold at most this
// many entries, or hashes: about what a busy writer's batches hold.
const (
	migrateBlockEntries = 256
	migrateBlockHashes  = 512
)

// encodeLeafBlock returns leaves as stored in a block: each leaf followed by
// a line feed. It fails if a leaf contains a line feed.
func encodeLeafBlock(leaves [][]byte) ([]byte, error) {
	n := 0
	for _, l := range leaves {
		n += len(l) + 1
	}
	b := make([]byte, 0, n)
	for i, l := range leaves {
		if bytes.IndexByte(l, '\n') >= 0 {
			return nil, fmt.Errorf("leaf %d of the block contains a line feed", i)
		}
		b = append(b, l...)
		b = append(b, '\n')
	}
	return b, nil
}

// blockLeaves calls f for each entry with lo <= seq < hi of the block of
// count leaves stored at start, in seq order, with the leaf's bytes (a
// slice of block; lines beyond count are ignored, missing ones end the
// block). A last line without its line feed is still a leaf: a
// tampered-with terminator shows up as a bad leaf, not as a missing one.
func blockLeaves(start, count int64, block []byte, lo, hi int64, f func(seq int64, leaf []byte) error) error {
	end := start + count
	if hi < end {
		end = hi
	}
	for seq := start; seq < end && len(block) > 0; seq++ {
		var leaf []byte
		if i := bytes.IndexByte(block, '\n'); i >= 0 {
			leaf, block = block[:i:i], block[i+1:]
		} else {
			leaf, block = block, nil
		}
		if seq >= lo {
			if err := f(seq, leaf); err != nil {
				return err
			}
		}
	}
	return nil
}

// leafBlock is a row of ledger_blocks.
type leafBlock struct {
	start, count int64
	leaves       []byte
}

// leafStream passes the leaves of entries from <= seq < to to f in seq
// order, given the blocks that may hold them in start order (the one with
// the greatest start <= from, then every one that starts before to), one
// at a time: the entries of a block stop where the next block starts, so
// it holds back one block.
type leafStream struct {
	from, to int64
	f        func(seq int64, leaf []byte) error
	cur      leafBlock
	have     bool
}

// add takes the next block; the stream keeps b.leaves until the next add
// or end.
func (s *leafStream) add(b leafBlock) error {
	if s.have {
		if err := blockLeaves(s.cur.start, s.cur.count, s.cur.leaves, s.from, min(s.to, b.start), s.f); err != nil {
			return err
		}
	}
	s.cur, s.have = b, true
	return nil
}

// end passes the leaves of the last block.
func (s *leafStream) end() error {
	if !s.have {
		return nil
	}
	s.have = false
	return blockLeaves(s.cur.start, s.cur.count, s.cur.leaves, s.from, s.to, s.f)
}

// hashBlock is a row of ledger_hash_blocks.
type hashBlock struct {
	start  int64
	hashes []byte
}

// hashLookup answers one ReadHashes call: the distinct indexes asked for,
// ascending, and what was found for each.
type hashLookup struct {
	sorted []int64
	got    []tlog.Hash
	found  []bool
}

func newHashLookup(indexes []int64) *hashLookup {
	sorted := slices.Clone(indexes)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	return &hashLookup{sorted: sorted, got: make([]tlog.Hash, len(sorted)), found: make([]bool, len(sorted))}
}

// runs returns the runs of consecutive indexes of l.sorted as [i, j)
// ranges of positions.
func (l *hashLookup) runs() [][2]int {
	var out [][2]int
	for i := 0; i < len(l.sorted); {
		j := i + 1
		for j < len(l.sorted) && l.sorted[j] == l.sorted[j-1]+1 {
			j++
		}
		out = append(out, [2]int{i, j})
		i = j
	}
	return out
}

// hashRunMin is the shortest run of consecutive indexes that a backend
// reads as a range of whole blocks; shorter ones are read hash by hash.
const hashRunMin = 4

// set records the hash at position i of l.sorted, given the stored bytes
// for it (a hash of another length counts as missing).
func (l *hashLookup) set(i int, h []byte) {
	if len(h) == tlog.HashSize {
		copy(l.got[i][:], h)
		l.found[i] = true
	}
}

// fill records the hashes at positions [i, j) of l.sorted from blocks, in
// start order (those that may hold them: the one with the greatest start
// <= l.sorted[i], then every one that starts up to l.sorted[j-1]).
func (l *hashLookup) fill(i, j int, blocks []hashBlock) {
	b := -1
	for k := i; k < j; k++ {
		x := l.sorted[k]
		for b+1 < len(blocks) && blocks[b+1].start <= x {
			b++
		}
		if b < 0 {
			continue
		}
		off := (x - blocks[b].start) * tlog.HashSize
		if off+tlog.HashSize <= int64(len(blocks[b].hashes)) {
			l.set(k, blocks[b].hashes[off:off+tlog.HashSize])
		}
	}
}

// result returns the hashes at indexes in the order asked, or ErrCorrupt
// naming the first index (in that order) that is not stored.
func (l *hashLookup) result(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		k, _ := slices.BinarySearch(l.sorted, x)
		if !l.found[k] {
			return nil, fmt.Errorf("%w: stored hash %d is missing", ErrCorrupt, x)
		}
		out[i] = l.got[k]
	}
	return out, nil
}

// legacyRow is a row of a schema-1 table: a seq and its leaf, or a storage
// index and its hash.
type legacyRow struct {
	key int64
	val []byte
}

// regroup copies the rows of a schema-1 table into blocks: page returns the
// rows with key > after in key order (at most a few thousand; none at the
// end), and put writes each run of consecutive keys, cut after max rows, as
// one block starting at its first key. It returns the number of rows.
func regroup(page func(after int64) ([]legacyRow, error), max int, put func(start int64, vals [][]byte) error) (int64, error) {
	var n int64
	var start int64
	var run [][]byte
	flush := func() error {
		if len(run) == 0 {
			return nil
		}
		err := put(start, run)
		run = run[:0]
		return err
	}
	after := int64(-1 << 63)
	for {
		rows, err := page(after)
		if err != nil {
			return n, err
		}
		if len(rows) == 0 {
			return n, flush()
		}
		for _, r := range rows {
			if len(run) == max || len(run) > 0 && r.key != start+int64(len(run)) {
				if err := flush(); err != nil {
					return n, err
				}
			}
			if len(run) == 0 {
				start = r.key
			}
			run = append(run, r.val)
			n++
		}
		after = rows[len(rows)-1].key
	}
}

// legacyLeafBlock is encodeLeafBlock for the leaves of schema-1 entries
// start, start+1, ..., naming the entry whose leaf cannot be stored.
func legacyLeafBlock(start int64, leaves [][]byte) ([]byte, error) {
	for i, l := range leaves {
		if bytes.IndexByte(l, '\n') >= 0 {
			return nil, fmt.Errorf("the leaf of entry %d contains a line feed; the ledger was altered: check it with `gatehouse ledger verify` (which reads it as it is) and move it aside to start a new ledger", start+int64(i))
		}
	}
	return encodeLeafBlock(leaves)
}

// joinHashes returns stored hashes as stored in a hash block; hashes of
// another length than 32 bytes (only a damaged schema-1 store has them)
// are an error naming the storage index.
func joinHashes(start int64, hashes [][]byte) ([]byte, error) {
	b := make([]byte, 0, len(hashes)*tlog.HashSize)
	for i, h := range hashes {
		if len(h) != tlog.HashSize {
			return nil, fmt.Errorf("stored hash %d has %d bytes", start+int64(i), len(h))
		}
		b = append(b, h...)
	}
	return b, nil
}

// hashBytes returns hashes as stored in a hash block.
func hashBytes(hashes []tlog.Hash) []byte {
	b := make([]byte, 0, len(hashes)*tlog.HashSize)
	for i := range hashes {
		b = append(b, hashes[i][:]...)
	}
	return b
}
