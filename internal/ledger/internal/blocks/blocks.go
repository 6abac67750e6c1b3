// Package blocks holds what the SQL backends of the audit ledger
// (internal/ledger/sqlite, internal/ledger/postgres) share: the layout of
// schema 2, where one committed batch is one row of leaves and one row of
// tree hashes (docs/ledger.md, "Storage"), and the copy of a schema-1
// ledger into blocks. It knows nothing of SQL; the backends do the queries.
package blocks

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
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

// SchemaVersion is the layout version recorded as "schema" in ledger_meta:
// 1 is one row per entry (ledger_entries) and per hash (ledger_hashes), 2
// the blocks.
const SchemaVersion = 2

// TombstoneMessage is what a gatehouse from before schema 2 reports on a
// schema-2 ledger (as SQLite's "no such table", or PostgreSQL's exception).
const TombstoneMessage = "this Gatehouse ledger is stored as blocks (schema 2): upgrade gatehouse to use it"

// CheckSchemaVersion refuses a store written by a newer gatehouse. v is
// the recorded version ("" and "1": schema 1, from before the version was
// checked).
func CheckSchemaVersion(v string, err error) error {
	if err != nil {
		return fmt.Errorf("reading the schema version: %w", err)
	}
	if v == "" {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return fmt.Errorf("%w: schema version %q in ledger_meta", ledger.ErrCorrupt, v)
	}
	if n > SchemaVersion {
		return fmt.Errorf("the ledger is in schema %d, written by a newer gatehouse (this one reads schema 1 and %d): upgrade gatehouse", n, SchemaVersion)
	}
	return nil
}

// Blocks written when migrating a store from schema 1 hold at most this
// many entries, or hashes: about what a busy writer's batches hold.
const (
	MigrateBlockEntries = 256
	MigrateBlockHashes  = 512
)

// EncodeLeafBlock returns leaves as stored in a block: each leaf followed by
// a line feed. It fails if a leaf contains a line feed.
func EncodeLeafBlock(leaves [][]byte) ([]byte, error) {
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

// BlockLeaves calls f for each entry with lo <= seq < hi of the block of
// count leaves stored at start, in seq order, with the leaf's bytes (a
// slice of block; lines beyond count are ignored, missing ones end the
// block). A last line without its line feed is still a leaf: a
// tampered-with terminator shows up as a bad leaf, not as a missing one.
func BlockLeaves(start, count int64, block []byte, lo, hi int64, f func(seq int64, leaf []byte) error) error {
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

// LeafBlock is a row of ledger_blocks.
type LeafBlock struct {
	Start, Count int64
	Leaves       []byte
}

// LeafStream passes the leaves of entries from <= seq < to to f in seq
// order, given the blocks that may hold them in start order (the one with
// the greatest start <= from, then every one that starts before to), one
// at a time: the entries of a block stop where the next block starts, so
// it holds back one block.
type LeafStream struct {
	From, To int64
	F        func(seq int64, leaf []byte) error
	cur      LeafBlock
	have     bool
}

// Add takes the next block; the stream keeps b.Leaves until the next Add
// or end.
func (s *LeafStream) Add(b LeafBlock) error {
	if s.have {
		if err := BlockLeaves(s.cur.Start, s.cur.Count, s.cur.Leaves, s.From, min(s.To, b.Start), s.F); err != nil {
			return err
		}
	}
	s.cur, s.have = b, true
	return nil
}

// End passes the leaves of the last block.
func (s *LeafStream) End() error {
	if !s.have {
		return nil
	}
	s.have = false
	return BlockLeaves(s.cur.Start, s.cur.Count, s.cur.Leaves, s.From, s.To, s.F)
}

// HashBlock is a row of ledger_hash_blocks.
type HashBlock struct {
	Start  int64
	Hashes []byte
}

// HashLookup answers one ReadHashes call: the distinct indexes asked for,
// ascending, and what was found for each.
type HashLookup struct {
	Sorted []int64 // the distinct indexes asked for, ascending
	got    []tlog.Hash
	found  []bool
}

// NewHashLookup returns the lookup of indexes (in any order, repeats
// allowed).
func NewHashLookup(indexes []int64) *HashLookup {
	sorted := slices.Clone(indexes)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	return &HashLookup{Sorted: sorted, got: make([]tlog.Hash, len(sorted)), found: make([]bool, len(sorted))}
}

// Runs returns the runs of consecutive indexes of l.Sorted as [i, j)
// ranges of positions.
func (l *HashLookup) Runs() [][2]int {
	var out [][2]int
	for i := 0; i < len(l.Sorted); {
		j := i + 1
		for j < len(l.Sorted) && l.Sorted[j] == l.Sorted[j-1]+1 {
			j++
		}
		out = append(out, [2]int{i, j})
		i = j
	}
	return out
}

// HashRunMin is the shortest run of consecutive indexes that a backend
// reads as a range of whole blocks; shorter ones are read hash by hash.
const HashRunMin = 4

// Set records the hash at position i of l.Sorted, given the stored bytes
// for it (a hash of another length counts as missing).
func (l *HashLookup) Set(i int, h []byte) {
	if len(h) == tlog.HashSize {
		copy(l.got[i][:], h)
		l.found[i] = true
	}
}

// Fill records the hashes at positions [i, j) of l.Sorted from blocks, in
// start order (those that may hold them: the one with the greatest start
// <= l.Sorted[i], then every one that starts up to l.Sorted[j-1]).
func (l *HashLookup) Fill(i, j int, blocks []HashBlock) {
	b := -1
	for k := i; k < j; k++ {
		x := l.Sorted[k]
		for b+1 < len(blocks) && blocks[b+1].Start <= x {
			b++
		}
		if b < 0 {
			continue
		}
		off := (x - blocks[b].Start) * tlog.HashSize
		if off+tlog.HashSize <= int64(len(blocks[b].Hashes)) {
			l.Set(k, blocks[b].Hashes[off:off+tlog.HashSize])
		}
	}
}

// Result returns the hashes at indexes in the order asked, or ledger.ErrCorrupt
// naming the first index (in that order) that is not stored.
func (l *HashLookup) Result(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		k, _ := slices.BinarySearch(l.Sorted, x)
		if !l.found[k] {
			return nil, fmt.Errorf("%w: stored hash %d is missing", ledger.ErrCorrupt, x)
		}
		out[i] = l.got[k]
	}
	return out, nil
}

// LegacyRow is a row of a schema-1 table: a seq and its leaf, or a storage
// index and its hash.
type LegacyRow struct {
	Key int64
	Val []byte
}

// Regroup copies the rows of a schema-1 table into blocks: page returns the
// rows with key > after in key order (at most a few thousand; none at the
// end), and put writes each run of consecutive keys, cut after max rows, as
// one block starting at its first key. It returns the number of rows.
func Regroup(page func(after int64) ([]LegacyRow, error), max int, put func(start int64, vals [][]byte) error) (int64, error) {
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
			if len(run) == max || len(run) > 0 && r.Key != start+int64(len(run)) {
				if err := flush(); err != nil {
					return n, err
				}
			}
			if len(run) == 0 {
				start = r.Key
			}
			run = append(run, r.Val)
			n++
		}
		after = rows[len(rows)-1].Key
	}
}

// LegacyLeafBlock is EncodeLeafBlock for the leaves of schema-1 entries
// start, start+1, ..., naming the entry whose leaf cannot be stored.
func LegacyLeafBlock(start int64, leaves [][]byte) ([]byte, error) {
	for i, l := range leaves {
		if bytes.IndexByte(l, '\n') >= 0 {
			return nil, fmt.Errorf("the leaf of entry %d contains a line feed; the ledger was altered: check it with `gatehouse ledger verify` (which reads it as it is) and move it aside to start a new ledger", start+int64(i))
		}
	}
	return EncodeLeafBlock(leaves)
}

// JoinHashes returns stored hashes as stored in a hash block; hashes of
// another length than 32 bytes (only a damaged schema-1 store has them)
// are an error naming the storage index.
func JoinHashes(start int64, hashes [][]byte) ([]byte, error) {
	b := make([]byte, 0, len(hashes)*tlog.HashSize)
	for i, h := range hashes {
		if len(h) != tlog.HashSize {
			return nil, fmt.Errorf("stored hash %d has %d bytes", start+int64(i), len(h))
		}
		b = append(b, h...)
	}
	return b, nil
}

// HashBytes returns hashes as stored in a hash block.
func HashBytes(hashes []tlog.Hash) []byte {
	b := make([]byte, 0, len(hashes)*tlog.HashSize)
	for i := range hashes {
		b = append(b, hashes[i][:]...)
	}
	return b
}
