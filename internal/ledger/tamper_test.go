package ledger

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// tamperLedger builds a small signed SQLite ledger (6 entries, checkpoints
// at sizes 3 and 6) and returns its path, a raw connection for tampering,
// and a read-only store for verifying.
func tamperLedger(t *testing.T, n int) (path string, raw *sql.DB, ro Store, verifiers note.Verifiers) {
	t.Helper()
	ctx := context.Background()
	signer, verifiers := testKeys(t)
	path = filepath.Join(t.TempDir(), "ledger.db")
	l, err := Open(ctx, path, Options{LedgerID: "tamper", Signer: signer, CheckpointEveryN: 3, CheckpointEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		p := fmt.Appendf(nil, `{"action":"deny","n":%d,"tool_name":"write_file"}`, i)
		if _, err := l.Append(ctx, KindGatewayDecision, fmt.Sprintf("gw_dec_%d", i), p); err != nil {
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
	ro, err = OpenSQLite(ctx, path, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ro.Close() })
	if p := verifyProblem(t, ro, verifiers); p != nil {
		t.Fatalf("untouched ledger: %v", p)
	}
	return path, raw, ro, verifiers
}

func verifyProblem(t *testing.T, s Store, v note.Verifiers) *Problem {
	t.Helper()
	rep, err := Verify(context.Background(), s, VerifyOptions{Verifiers: v})
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

func readLeaf(t *testing.T, db *sql.DB, seq int) []byte {
	var leaf []byte
	if err := db.QueryRow(`SELECT leaf FROM ledger_entries WHERE seq = ?`, seq).Scan(&leaf); err != nil {
		t.Fatal(err)
	}
	return leaf
}

// Changing any single byte of any stored leaf (payload, previous_hash,
// seq, time, ids, the JSON syntax) is found, and reported at that entry:
// every byte of every leaf of a memory ledger, and every byte of one leaf
// stored in SQLite (the same checks, through the real storage path).
func TestTamperEveryLeafByte(t *testing.T) {
	const n = 6
	t.Run("memory", func(t *testing.T) {
		ctx := context.Background()
		signer, v := testKeys(t)
		mem := NewMemStore().(*memStore)
		l, err := New(ctx, noClose{mem}, Options{LedgerID: "tamper", Signer: signer, CheckpointEveryN: 3, CheckpointEvery: -1})
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			p := fmt.Appendf(nil, `{"action":"deny","n":%d,"tool_name":"write_file"}`, i)
			if _, err := l.Append(ctx, KindGatewayDecision, fmt.Sprintf("gw_dec_%d", i), p); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Close(ctx); err != nil {
			t.Fatal(err)
		}
		for seq := range n {
			orig := mem.leaves[seq]
			for i := range orig {
				m := bytes.Clone(orig)
				m[i] ^= 0x01
				mem.leaves[seq] = m
				p := verifyProblem(t, mem, v)
				if p == nil || p.Seq != int64(seq) {
					t.Fatalf("entry %d byte %d (%q -> %q): Verify reported %v, want a problem at entry %d\n%s", seq, i, orig[i], m[i], p, seq, m)
				}
			}
			mem.leaves[seq] = orig
		}
		if p := verifyProblem(t, mem, v); p != nil {
			t.Fatalf("restored ledger: %v", p)
		}
	})
	t.Run("sqlite", func(t *testing.T) {
		_, raw, ro, v := tamperLedger(t, n)
		const seq = 3
		orig := readLeaf(t, raw, seq)
		for i := range orig {
			m := bytes.Clone(orig)
			m[i] ^= 0x01
			exec(t, raw, `UPDATE ledger_entries SET leaf = ? WHERE seq = ?`, m, seq)
			p := verifyProblem(t, ro, v)
			if p == nil || p.Seq != int64(seq) {
				t.Fatalf("entry %d byte %d (%q -> %q): Verify reported %v, want a problem at entry %d\n%s", seq, i, orig[i], m[i], p, seq, m)
			}
		}
		exec(t, raw, `UPDATE ledger_entries SET leaf = ? WHERE seq = ?`, orig, seq)
		if p := verifyProblem(t, ro, v); p != nil {
			t.Fatalf("restored ledger: %v", p)
		}
	})
}

// Changing any byte of any stored tree hash is reported at the entry that
// stored it.
func TestTamperEveryStoredHash(t *testing.T) {
	_, raw, ro, v := tamperLedger(t, 6)
	rows, err := raw.Query(`SELECT idx, hash FROM ledger_hashes ORDER BY idx`)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		idx  int64
		hash []byte
	}
	var all []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.idx, &r.hash); err != nil {
			t.Fatal(err)
		}
		all = append(all, r)
	}
	rows.Close()
	for _, r := range all {
		// The entry whose StoredHashes wrote index r.idx.
		owner := int64(0)
		for int64(len(all)) > 0 && storedHashStart(owner+1) <= r.idx {
			owner++
		}
		for i := range r.hash {
			m := bytes.Clone(r.hash)
			m[i] ^= 0x80
			exec(t, raw, `UPDATE ledger_hashes SET hash = ? WHERE idx = ?`, m, r.idx)
			if p := verifyProblem(t, ro, v); p == nil || p.Seq != owner {
				t.Fatalf("hash %d byte %d: Verify reported %v, want a problem at entry %d", r.idx, i, p, owner)
			}
		}
		exec(t, raw, `UPDATE ledger_hashes SET hash = ? WHERE idx = ?`, r.hash, r.idx)
	}
	// A missing or short hash too.
	exec(t, raw, `UPDATE ledger_hashes SET hash = x'00' WHERE idx = 3`)
	if p := verifyProblem(t, ro, v); p == nil || p.Seq != 2 {
		t.Fatalf("short hash: %v", p)
	}
	exec(t, raw, `DELETE FROM ledger_hashes WHERE idx = 3`)
	if p := verifyProblem(t, ro, v); p == nil || p.Seq != 2 {
		t.Fatalf("missing hash: %v", p)
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
	forged := Checkpoint{Origin: Origin("tamper"), Size: 6}
	forged.Hash = mustOpen(t, cps[1].Note, v).Hash
	msg, err := SignCheckpoint(&forged, att)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, raw, `INSERT INTO ledger_checkpoints (size, note, created) VALUES (6, ?, '')`, msg)
	if p := verifyProblem(t, ro, v); p == nil || !strings.Contains(p.Reason, "not signed by a known key") {
		t.Fatalf("forged checkpoint: %v", p)
	}
}

func mustOpen(t *testing.T, msg []byte, v note.Verifiers) Checkpoint {
	c, err := OpenCheckpoint(msg, v)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Structural tampering: rows moved, removed, swapped, truncated, and a
// consistent rewrite of everything but the signed checkpoints.
func TestTamperStructure(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sql     []string
		wantSeq int64 // -1: a checkpoint problem
		reason  string
	}{
		{"seq column moved", []string{`UPDATE ledger_entries SET seq = 100 WHERE seq = 2`}, 2, "missing"},
		{"middle entry deleted", []string{`DELETE FROM ledger_entries WHERE seq = 4`}, 4, "missing"},
		{"last entry deleted", []string{`DELETE FROM ledger_entries WHERE seq = 5`}, -1, "entries were removed"},
		{"entries swapped", []string{
			`UPDATE ledger_entries SET seq = -1 WHERE seq = 1`,
			`UPDATE ledger_entries SET seq = 1 WHERE seq = 3`,
			`UPDATE ledger_entries SET seq = 3 WHERE seq = -1`}, 1, "ledger_seq"},
		{"ledger id changed", []string{`UPDATE ledger_meta SET value = 'other' WHERE key = 'ledger_id'`}, 0, "ledger_id"},
		{"leaf emptied", []string{`UPDATE ledger_entries SET leaf = x'' WHERE seq = 3`}, 3, "not a ledger entry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, raw, ro, v := tamperLedger(t, 6)
			for _, q := range tc.sql {
				exec(t, raw, q)
			}
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
	mem := NewMemStore()
	if _, err := mem.Init(ctx, "tamper"); err != nil {
		t.Fatal(err)
	}
	l, err := New(ctx, mem, Options{LedgerID: "tamper"})
	if err != nil {
		t.Fatal(err)
	}
	for seq, leaf := range leaves {
		e, err := ParseLeaf(leaf)
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
	exec(t, raw, `DELETE FROM ledger_entries`)
	exec(t, raw, `DELETE FROM ledger_hashes`)
	mem.Leaves(ctx, 0, 6, func(seq int64, leaf []byte) error {
		exec(t, raw, `INSERT INTO ledger_entries (seq, leaf) VALUES (?, ?)`, seq, leaf)
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
	for i, h := range hs {
		exec(t, raw, `INSERT INTO ledger_hashes (idx, hash) VALUES (?, ?)`, i, h[:])
	}
	// Chain and tree are internally consistent: without checkpoints the
	// rewrite would pass.
	rep, err := Verify(ctx, ro, VerifyOptions{Verifiers: v})
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Problem
	if p == nil || p.Seq != -1 || !strings.Contains(p.Reason, "changed after it was signed") || rep.Verified != 3 {
		t.Fatalf("consistent rewrite: %v (verified %d), want the size-3 checkpoint to fail", p, rep.Verified)
	}
	t.Logf("caught: %v", p)
}
