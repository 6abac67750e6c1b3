package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
)

// tamperLedger builds a small signed SQLite ledger (n entries, checkpoints
// every 3) and returns its path, a raw connection for tampering, and a
// read-only store for verifying. The entries are appended one by one (one
// block each) and then stored again in blocks of several entries, so that
// the tampered-with entries sit inside blocks: entries [0,2) [2,5) [5,n),
// hashes [0,4) [4,7) [7,...).
func tamperLedger(t *testing.T, n int) (path string, raw *sql.DB, ro ledger.Store, verifiers note.Verifiers) {
	t.Helper()
	ctx := context.Background()
	signer, verifiers := testKeys(t)
	path = filepath.Join(t.TempDir(), "ledger.db")
	l, err := openLedger(t, ctx, path, ledger.Options{LedgerID: "tamper", Signer: signer, CheckpointEveryN: 3, CheckpointEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		p := fmt.Appendf(nil, `{"action":"deny","n":%d,"tool_name":"write_file"}`, i)
		if _, err := l.Append(ctx, ledger.KindGatewayDecision, fmt.Sprintf("gw_dec_%d", i), p); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	raw, err = sql.Open("sqlite", sqliteDSN(path, "_synchronous=OFF"))
	if err != nil {
		t.Fatal(err)
	}
	raw.SetMaxOpenConns(1)
	t.Cleanup(func() { raw.Close() })
	if got := blockStarts(t, raw, "ledger_blocks"); len(got) != n {
		t.Fatalf("%d entries appended one by one are stored in blocks at %v, want one block each", n, got)
	}
	writeBlocks(t, raw, storedLeaves(t, raw), []int{2, 5}, storedHashBytes(t, raw), []int{4, 7})
	ro, err = Open(ctx, path, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ro.Close() })
	if p := verifyProblem(t, ro, verifiers); p != nil {
		t.Fatalf("untouched ledger: %v", p)
	}
	return path, raw, ro, verifiers
}

func verifyProblem(t *testing.T, s ledger.Store, v note.Verifiers) *ledger.Problem {
	t.Helper()
	rep, err := ledger.Verify(context.Background(), s, ledger.VerifyOptions{Verifiers: v})
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return rep.Problem
}

func exec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// blockStarts returns the start column of table, ascending.
func blockStarts(t *testing.T, db *sql.DB, table string) []int64 {
	t.Helper()
	rows, err := db.Query(`SELECT start FROM ` + table + ` ORDER BY start`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var s int64
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// storedLeaves returns the leaf of every entry, read from the blocks by
// splitting them at line feeds (untampered blocks: start, count and lines
// agree).
func storedLeaves(t *testing.T, db *sql.DB) [][]byte {
	t.Helper()
	rows, err := db.Query(`SELECT start, count, leaves FROM ledger_blocks ORDER BY start`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][]byte
	for rows.Next() {
		var start, count int64
		var b []byte
		if err := rows.Scan(&start, &count, &b); err != nil {
			t.Fatal(err)
		}
		lines := bytes.SplitAfter(b, []byte("\n"))
		if start != int64(len(out)) || int64(len(lines)) != count+1 || len(lines[count]) != 0 {
			t.Fatalf("block at %d (count %d, %d lines) does not follow entry %d", start, count, len(lines)-1, len(out))
		}
		for _, l := range lines[:count] {
			out = append(out, bytes.TrimSuffix(l, []byte("\n")))
		}
	}
	return out
}

// storedHashBytes returns every stored hash, the hash blocks concatenated.
func storedHashBytes(t *testing.T, db *sql.DB) []byte {
	t.Helper()
	var out []byte
	for _, start := range blockStarts(t, db, "ledger_hash_blocks") {
		var b []byte
		if err := db.QueryRow(`SELECT hashes FROM ledger_hash_blocks WHERE start = ?`, start).Scan(&b); err != nil {
			t.Fatal(err)
		}
		if start*32 != int64(len(out)) {
			t.Fatalf("hash block at %d follows %d hashes", start, len(out)/32)
		}
		out = append(out, b...)
	}
	return out
}

// writeBlocks replaces every block: the leaves (one per entry) cut before
// the seqs in cuts, the hashes (32 bytes each) before the indexes in
// hcuts.
func writeBlocks(t *testing.T, db *sql.DB, leaves [][]byte, cuts []int, hashes []byte, hcuts []int) {
	t.Helper()
	exec(t, db, `DELETE FROM ledger_blocks`)
	exec(t, db, `DELETE FROM ledger_hash_blocks`)
	lo := 0
	for _, hi := range append(cuts, len(leaves)) {
		var b []byte
		for _, l := range leaves[lo:hi] {
			b = append(append(b, l...), '\n')
		}
		exec(t, db, `INSERT INTO ledger_blocks (start, count, leaves) VALUES (?, ?, ?)`, lo, hi-lo, b)
		lo = hi
	}
	lo = 0
	for _, hi := range append(hcuts, len(hashes)/32) {
		exec(t, db, `INSERT INTO ledger_hash_blocks (start, hashes) VALUES (?, ?)`, lo, hashes[lo*32:hi*32])
		lo = hi
	}
}

// leafAt returns the block holding entry seq (its start and bytes) and the
// offsets of the entry's leaf in it: block[off:end] is the leaf, block[end]
// its line feed.
func leafAt(t *testing.T, db *sql.DB, seq int64) (start int64, block []byte, off, end int) {
	t.Helper()
	if err := db.QueryRow(`SELECT start, leaves FROM ledger_blocks WHERE start <= ? ORDER BY start DESC LIMIT 1`, seq).Scan(&start, &block); err != nil {
		t.Fatal(err)
	}
	for i := start; i < seq; i++ {
		off += bytes.IndexByte(block[off:], '\n') + 1
	}
	return start, block, off, off + bytes.IndexByte(block[off:], '\n')
}

func readLeaf(t *testing.T, db *sql.DB, seq int) []byte {
	t.Helper()
	_, block, off, end := leafAt(t, db, int64(seq))
	return block[off:end]
}

// setBlock stores block as the leaves of the block at start.
func setBlock(t *testing.T, db *sql.DB, start int64, block []byte) {
	t.Helper()
	exec(t, db, `UPDATE ledger_blocks SET leaves = ? WHERE start = ?`, block, start)
}

// Changing any single byte of any stored leaf (payload, previous_hash,
// seq, time, ids, the JSON syntax) is found, and reported at that entry:
// every byte of one leaf stored in SQLite, the real storage path of the
// checks internal/ledger's TestTamperEveryLeafByteMemory makes of every
// byte of every leaf of a memory ledger.
func TestTamperEveryLeafByte(t *testing.T) {
	const n = 6
	t.Run("sqlite", func(t *testing.T) {
		_, raw, ro, v := tamperLedger(t, n)
		// Entry 3 is the middle line of the block of entries 2..4.
		const seq = 3
		start, orig, off, end := leafAt(t, raw, seq)
		if start != 2 || off == 0 || end == len(orig)-1 {
			t.Fatalf("entry %d is at bytes %d..%d of the block at %d (%d bytes), want the middle of the block at 2", seq, off, end, start, len(orig))
		}
		// Every byte of the leaf, and its line feed (which joins it to
		// the next leaf).
		for i := off; i <= end; i++ {
			m := bytes.Clone(orig)
			m[i] ^= 0x01
			setBlock(t, raw, start, m)
			p := verifyProblem(t, ro, v)
			if p == nil || p.Seq != int64(seq) {
				t.Fatalf("entry %d byte %d (%q -> %q): Verify reported %v, want a problem at entry %d\n%s", seq, i-off, orig[i], m[i], p, seq, m[off:end+1])
			}
		}
		// The line feed before it ends entry 2.
		m := bytes.Clone(orig)
		m[off-1] ^= 0x01
		setBlock(t, raw, start, m)
		if p := verifyProblem(t, ro, v); p == nil || p.Seq != seq-1 {
			t.Fatalf("line feed of entry %d changed: Verify reported %v, want a problem at entry %d", seq-1, p, seq-1)
		}
		setBlock(t, raw, start, orig)
		if p := verifyProblem(t, ro, v); p != nil {
			t.Fatalf("restored ledger: %v", p)
		}
	})
}

// Changing any byte of any stored tree hash is reported at the entry that
// stored it, wherever the hash is in its block; so is a hash block cut
// short or moved.
func TestTamperEveryStoredHash(t *testing.T) {
	_, raw, ro, v := tamperLedger(t, 6)
	all := storedHashBytes(t, raw)
	starts := blockStarts(t, raw, "ledger_hash_blocks")
	if len(all) != 10*32 || len(starts) != 3 {
		t.Fatalf("%d hashes in %d blocks, want 10 in 3", len(all)/32, len(starts))
	}
	for idx := int64(0); idx < int64(len(all)/32); idx++ {
		// The entry whose StoredHashes wrote index idx.
		owner := int64(0)
		for storedHashStart(owner+1) <= idx {
			owner++
		}
		start := starts[0]
		for _, s := range starts {
			if s <= idx {
				start = s
			}
		}
		var orig []byte
		if err := raw.QueryRow(`SELECT hashes FROM ledger_hash_blocks WHERE start = ?`, start).Scan(&orig); err != nil {
			t.Fatal(err)
		}
		off := (idx - start) * 32
		for i := off; i < off+32; i++ {
			m := bytes.Clone(orig)
			m[i] ^= 0x80
			exec(t, raw, `UPDATE ledger_hash_blocks SET hashes = ? WHERE start = ?`, m, start)
			if p := verifyProblem(t, ro, v); p == nil || p.Seq != owner {
				t.Fatalf("hash %d byte %d: Verify reported %v, want a problem at entry %d", idx, i-off, p, owner)
			}
		}
		exec(t, raw, `UPDATE ledger_hash_blocks SET hashes = ? WHERE start = ?`, orig, start)
	}
	if p := verifyProblem(t, ro, v); p != nil {
		t.Fatalf("restored ledger: %v", p)
	}
	// The block of hashes 0..3 cut inside hash 3, and right before it:
	// hash 3 (entry 2's) is short, then missing.
	for _, keep := range []int{3*32 + 5, 3 * 32} {
		exec(t, raw, `UPDATE ledger_hash_blocks SET hashes = ? WHERE start = 0`, all[:keep])
		if p := verifyProblem(t, ro, v); p == nil || p.Seq != 2 || !strings.Contains(p.Reason, "stored hash 3 is missing") {
			t.Fatalf("hash block cut to %d bytes: %v, want entry 2 and hash 3 missing", keep, p)
		}
	}
	exec(t, raw, `UPDATE ledger_hash_blocks SET hashes = ? WHERE start = 0`, all[:4*32])
	// The block of hashes 4..6 moved by one: hash 4 (entry 3's) is
	// missing.
	exec(t, raw, `UPDATE ledger_hash_blocks SET start = 5 WHERE start = 4`)
	if p := verifyProblem(t, ro, v); p == nil || p.Seq != 3 {
		t.Fatalf("hash block moved: %v, want entry 3", p)
	}
}

func storedHashStart(seq int64) int64 {
	var n int64
	for i := int64(0); i < seq; i++ {
		n++
		for j := i; j&1 == 1; j >>= 1 {
			n++
		}
	}
	return n
}

// Changing any byte of a stored checkpoint, or its size column, is found
// and reported at that checkpoint.
func TestTamperEveryCheckpointByte(t *testing.T) {
	_, raw, ro, v := tamperLedger(t, 6)
	cps, err := ro.Checkpoints(context.Background())
	if err != nil || len(cps) != 2 {
		t.Fatalf("checkpoints: %d, %v", len(cps), err)
	}
	for _, c := range cps {
		for i := range c.Note {
			m := bytes.Clone(c.Note)
			m[i] ^= 0x01
			exec(t, raw, `UPDATE ledger_checkpoints SET note = ? WHERE id = ?`, m, c.ID)
			if p := verifyProblem(t, ro, v); p == nil || p.Seq != -1 || p.Checkpoint != c.ID {
				t.Fatalf("checkpoint %d byte %d: Verify reported %v, want a problem at that checkpoint\n%s", c.ID, i, p, m)
			}
		}
		exec(t, raw, `UPDATE ledger_checkpoints SET note = ? WHERE id = ?`, c.Note, c.ID)
		exec(t, raw, `UPDATE ledger_checkpoints SET size = size - 1 WHERE id = ?`, c.ID)
		if p := verifyProblem(t, ro, v); p == nil || p.Checkpoint != c.ID {
			t.Fatalf("checkpoint %d size column: %v", c.ID, p)
		}
		exec(t, raw, `UPDATE ledger_checkpoints SET size = size + 1 WHERE id = ?`, c.ID)
	}
	if p := verifyProblem(t, ro, v); p != nil {
		t.Fatalf("restored ledger: %v", p)
	}
	// A checkpoint signed by another key is not accepted...
	att, _ := attackerKeys(t)
	forged := ledger.Checkpoint{Origin: ledger.Origin("tamper"), Size: 6}
	forged.Hash = mustOpen(t, cps[1].Note, v).Hash
	msg, err := ledger.SignCheckpoint(&forged, att)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, raw, `INSERT INTO ledger_checkpoints (size, note, created) VALUES (6, ?, '')`, msg)
	if p := verifyProblem(t, ro, v); p == nil || !strings.Contains(p.Reason, "not signed by a known key") {
		t.Fatalf("forged checkpoint: %v", p)
	}
}

func mustOpen(t *testing.T, msg []byte, v note.Verifiers) ledger.Checkpoint {
	c, err := ledger.OpenCheckpoint(msg, v)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Structural tampering: blocks moved, removed, shortened, lengthened,
// entries removed from or swapped between blocks, truncation, and a
// consistent rewrite of everything but the signed checkpoints. The blocks
// are entries [0,2) [2,5) [5,6).
func TestTamperStructure(t *testing.T) {
	// editLines replaces the lines (leaves) of the block at start.
	editLines := func(start int64, f func(lines [][]byte) [][]byte) func(*testing.T, *sql.DB) {
		return func(t *testing.T, raw *sql.DB) {
			_, block, _, _ := leafAt(t, raw, start)
			lines := bytes.SplitAfter(block, []byte("\n"))
			setBlock(t, raw, start, bytes.Join(f(lines[:len(lines)-1]), nil))
		}
	}
	sqlEdit := func(q string) func(*testing.T, *sql.DB) {
		return func(t *testing.T, raw *sql.DB) { exec(t, raw, q) }
	}
	for _, tc := range []struct {
		name    string
		edit    func(*testing.T, *sql.DB)
		wantSeq int64 // -1: a checkpoint problem
		reason  string
	}{
		{"block moved", sqlEdit(`UPDATE ledger_blocks SET start = 100 WHERE start = 2`), 2, "missing"},
		{"middle block deleted", sqlEdit(`DELETE FROM ledger_blocks WHERE start = 2`), 2, "missing"},
		{"last block deleted", sqlEdit(`DELETE FROM ledger_blocks WHERE start = 5`), -1, "entries were removed"},
		{"block count lowered", sqlEdit(`UPDATE ledger_blocks SET count = 2 WHERE start = 2`), 4, "missing"},
		{"last block count raised", sqlEdit(`UPDATE ledger_blocks SET count = 2 WHERE start = 5`), 6, "missing"},
		{"last entry of a block deleted", func(t *testing.T, raw *sql.DB) {
			editLines(2, func(l [][]byte) [][]byte { return l[:2] })(t, raw)
			exec(t, raw, `UPDATE ledger_blocks SET count = 2 WHERE start = 2`)
		}, 4, "missing"},
		{"middle entry of a block deleted", editLines(2, func(l [][]byte) [][]byte { return [][]byte{l[0], l[2]} }), 3, "ledger_seq"},
		{"entries swapped across blocks", func(t *testing.T, raw *sql.DB) {
			one := readLeaf(t, raw, 1)
			three := readLeaf(t, raw, 3)
			editLines(0, func(l [][]byte) [][]byte { return [][]byte{l[0], append(three, '\n')} })(t, raw)
			editLines(2, func(l [][]byte) [][]byte { return [][]byte{l[0], append(one, '\n'), l[2]} })(t, raw)
		}, 1, "ledger_seq"},
		{"ledger id changed", sqlEdit(`UPDATE ledger_meta SET value = 'other' WHERE key = 'ledger_id'`), 0, "ledger_id"},
		{"leaf emptied", editLines(2, func(l [][]byte) [][]byte { return [][]byte{l[0], []byte("\n"), l[2]} }), 3, "not a ledger entry"},
		{"block emptied", sqlEdit(`UPDATE ledger_blocks SET leaves = x'' WHERE start = 2`), 2, "missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, raw, ro, v := tamperLedger(t, 6)
			tc.edit(t, raw)
			p := verifyProblem(t, ro, v)
			if p == nil || p.Seq != tc.wantSeq || !strings.Contains(p.Reason, tc.reason) {
				t.Fatalf("Verify reported %v, want seq %d and %q", p, tc.wantSeq, tc.reason)
			}
		})
	}
}

// An attacker who rewrites entry 1 and recomputes the whole chain and tree
// consistently is caught by the signed checkpoints alone.
func TestTamperConsistentRewrite(t *testing.T) {
	ctx := context.Background()
	path, raw, ro, v := tamperLedger(t, 6)
	_ = path
	// Rebuild the entries in memory with entry 1 changed, as an attacker
	// with write access to the database (but not the key) would.
	var leaves [][]byte
	for seq := range 6 {
		leaves = append(leaves, readLeaf(t, raw, seq))
	}
	mem := ledger.NewMemStore()
	if _, err := mem.Init(ctx, "tamper"); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.New(ctx, mem, ledger.Options{LedgerID: "tamper"})
	if err != nil {
		t.Fatal(err)
	}
	for seq, leaf := range leaves {
		e, err := ledger.ParseLeaf(leaf)
		if err != nil {
			t.Fatal(err)
		}
		if seq == 1 {
			e.Payload = []byte(`{"action":"allow","n":1,"tool_name":"write_file"}`)
		}
		if _, err := l.Append(ctx, e.Kind, e.RecordID, e.Payload); err != nil {
			t.Fatal(err)
		}
	}
	var rewritten [][]byte
	mem.Leaves(ctx, 0, 6, func(seq int64, leaf []byte) error {
		rewritten = append(rewritten, bytes.Clone(leaf))
		return nil
	})
	idx := make([]int64, storedHashStart(6))
	for i := range idx {
		idx[i] = int64(i)
	}
	hs, err := mem.ReadHashes(ctx, idx)
	if err != nil {
		t.Fatal(err)
	}
	var hashes []byte
	for _, h := range hs {
		hashes = append(hashes, h[:]...)
	}
	writeBlocks(t, raw, rewritten, nil, hashes, nil)
	// Chain and tree are internally consistent: without checkpoints the
	// rewrite would pass.
	rep, err := ledger.Verify(ctx, ro, ledger.VerifyOptions{Verifiers: v})
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Problem
	if p == nil || p.Seq != -1 || !strings.Contains(p.Reason, "changed after it was signed") || rep.Verified != 3 {
		t.Fatalf("consistent rewrite: %v (verified %d), want the size-3 checkpoint to fail", p, rep.Verified)
	}
	t.Logf("caught: %v", p)
}

// openLedger opens a read-write Ledger on the SQLite file at path.
func openLedger(t *testing.T, ctx context.Context, path string, opts ledger.Options) (*ledger.Ledger, error) {
	t.Helper()
	s, err := Open(ctx, path, false)
	if err != nil {
		return nil, err
	}
	l, err := ledger.New(ctx, s, opts)
	if err != nil {
		s.Close()
	}
	return l, err
}

// Fixed test keys (the ledger package's). Never use them for anything but
// tests.
const (
	testSignerKey   = "PRIVATE+KEY+gatehouse-test+090a88b5+AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEB"
	testVerifierKey = "gatehouse-test+090a88b5+AYqI4910CfGV/VLbLTy6XXLKZwm/HZQSG/N0iAG0D29c"
)

func testKeys(t testing.TB) (note.Signer, note.Verifiers) {
	s, err := note.NewSigner(testSignerKey)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(testVerifierKey)
	if err != nil {
		t.Fatal(err)
	}
	return s, note.VerifierList(v)
}

const (
	attackerSignerKey = "PRIVATE+KEY+gatehouse-attacker+b71b5890+AQICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIC"
	attackerVerifier  = "gatehouse-attacker+b71b5890+AYE5dw6ofRdfVqNUZsNMfszLjYqRtO43ol32D1uPybOU"
)

func attackerKeys(t testing.TB) (note.Signer, note.Verifiers) {
	s, err := note.NewSigner(attackerSignerKey)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(attackerVerifier)
	if err != nil {
		t.Fatal(err)
	}
	return s, note.VerifierList(v)
}
