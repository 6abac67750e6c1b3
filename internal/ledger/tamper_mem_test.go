package ledger

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// TestTamperEveryLeafByteMemory: changing any single byte of any leaf of a
// memory ledger (payload, previous_hash, seq, time, ids, the JSON syntax)
// is found, and reported at that entry (internal/ledger/sqlite's
// TestTamperEveryLeafByte does the same through SQLite).
func TestTamperEveryLeafByteMemory(t *testing.T) {
	const n = 6
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
}

func verifyProblem(t *testing.T, s Store, v note.Verifiers) *Problem {
	t.Helper()
	rep, err := Verify(context.Background(), s, VerifyOptions{Verifiers: v})
	if err != nil {
		t.Fatal(err)
	}
	return rep.Problem
}
