package ledger

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// proofLedger is a signed memory ledger of n entries with checkpoints every
// 4 entries and a final one.
func proofLedger(t testing.TB, n int) (Store, note.Verifiers) {
	ctx := context.Background()
	signer, verifiers := testKeys(t)
	s := NewMemStore()
	l, err := New(ctx, noClose{s}, Options{LedgerID: "proofs", Signer: signer, CheckpointEveryN: 4, CheckpointEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	// A fixed clock: the ledger is the same in every process (the fuzzer's
	// workers rebuild it).
	l.now = func() time.Time { return time.Date(2026, 5, 19, 8, 15, 31, 0, time.UTC) }
	for i := range n {
		if _, err := l.Append(ctx, KindServerReceipt, fmt.Sprintf("rcpt-%d", i), fmt.Appendf(nil, `{"i":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return s, verifiers
}

func TestInclusionProofOffline(t *testing.T) {
	ctx := context.Background()
	s, verifiers := proofLedger(t, 10)
	p, err := ProveEntry(ctx, s, 6, 0) // latest: size 10
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	// Offline: only the bundle bytes and the public key.
	parsed, err := ParseProof(b)
	if err != nil {
		t.Fatalf("ParseProof: %v\n%s", err, b)
	}
	got, err := VerifyProof(parsed, verifiers)
	if err != nil {
		t.Fatalf("VerifyProof: %v", err)
	}
	if got.Entry.Seq != 6 || got.Entry.RecordID != "rcpt-6" || got.Checkpoint.Size != 10 {
		t.Fatalf("VerifyProof = entry %+v, checkpoint %+v", got.Entry, got.Checkpoint)
	}

	_, attacker := attackerKeys(t)
	attSigner, _ := attackerKeys(t)
	other, err := ProveEntry(ctx, s, 7, 0)
	if err != nil {
		t.Fatal(err)
	}
	forge := func(f func(p *Proof)) *Proof {
		q := *parsed
		q.Leaf = bytes.Clone(parsed.Leaf)
		q.Hashes = append([]string(nil), parsed.Hashes...)
		i := *parsed.LeafIndex
		q.LeafIndex = &i
		f(&q)
		return &q
	}
	forgedNote := func(size int64, h tlog.Hash, origin string, s note.Signer) string {
		c := Checkpoint{Origin: origin, Size: size, Hash: h}
		msg, err := SignCheckpoint(&c, s)
		if err != nil {
			t.Fatal(err)
		}
		return string(msg)
	}
	honest, _ := testKeys(t)
	for name, tc := range map[string]struct {
		p *Proof
		v note.Verifiers
	}{
		"wrong key":                  {parsed, attacker},
		"wrong entry (another leaf)": {forge(func(p *Proof) { p.Leaf = other.Leaf }), verifiers},
		"wrong entry (payload changed)": {forge(func(p *Proof) {
			p.Leaf = bytes.Replace(p.Leaf, []byte(`{"i":6}`), []byte(`{"i":9}`), 1)
		}), verifiers},
		"wrong entry (another leaf and its index)": {forge(func(p *Proof) {
			p.Leaf = other.Leaf
			i := int64(7)
			p.LeafIndex = &i
		}), verifiers},
		"wrong index": {forge(func(p *Proof) { i := int64(7); p.LeafIndex = &i }), verifiers},
		"proof hash flipped": {forge(func(p *Proof) {
			raw, _ := base64.StdEncoding.DecodeString(p.Hashes[0])
			raw[0] ^= 1
			p.Hashes[0] = base64.StdEncoding.EncodeToString(raw)
		}), verifiers},
		"proof hash dropped": {forge(func(p *Proof) { p.Hashes = p.Hashes[1:] }), verifiers},
		"forged checkpoint (attacker key)": {forge(func(p *Proof) {
			p.Checkpoint = forgedNote(10, tlog.Hash{1}, Origin("proofs"), attSigner)
		}), verifiers},
		"checkpoint body edited": {forge(func(p *Proof) {
			p.Checkpoint = strings.Replace(p.Checkpoint, "\n10\n", "\n11\n", 1)
			p.TreeSize = 11
		}), verifiers},
		"checkpoint of another ledger": {forge(func(p *Proof) {
			p.Checkpoint = forgedNote(10, mustOpen(t, []byte(parsed.Checkpoint), verifiers).Hash, Origin("elsewhere"), honest)
		}), verifiers},
		"tree size mismatch": {forge(func(p *Proof) { p.TreeSize = 9 }), verifiers},
	} {
		if _, err := VerifyProof(tc.p, tc.v); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: VerifyProof = %v, want ErrInvalid", name, err)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

func TestConsistencyProofOffline(t *testing.T) {
	ctx := context.Background()
	s, verifiers := proofLedger(t, 10)
	cps, err := s.Checkpoints(ctx)
	if err != nil || len(cps) != 3 { // sizes 4, 8, 10
		t.Fatalf("checkpoints %v, %v", cps, err)
	}
	for _, old := range cps {
		p, err := ProveConsistency(ctx, s, old.Note, 0)
		if err != nil {
			t.Fatalf("ProveConsistency from %d: %v", old.Size, err)
		}
		b, _ := p.Marshal()
		parsed, err := ParseProof(b)
		if err != nil {
			t.Fatalf("ParseProof: %v\n%s", err, b)
		}
		got, err := VerifyProof(parsed, verifiers)
		if err != nil {
			t.Fatalf("VerifyProof %d -> 10: %v", old.Size, err)
		}
		if got.Old.Size != old.Size || got.Checkpoint.Size != 10 {
			t.Fatalf("VerifyProof = %+v", got)
		}
	}
	p, err := ProveConsistency(ctx, s, cps[0].Note, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, attacker := attackerKeys(t)
	if _, err := VerifyProof(p, attacker); !errors.Is(err, ErrInvalid) {
		t.Errorf("wrong key: %v", err)
	}
	// A fork: an old checkpoint over different entries, honestly signed,
	// is not extended by this ledger.
	honest, _ := testKeys(t)
	fork := Checkpoint{Origin: Origin("proofs"), Size: 4, Hash: tlog.Hash{9}}
	forkNote, _ := SignCheckpoint(&fork, honest)
	if _, err := ProveConsistency(ctx, s, forkNote, 0); !errors.Is(err, ErrCorrupt) {
		t.Errorf("ProveConsistency from a forked checkpoint: %v, want ErrCorrupt", err)
	}
	q := *p
	q.OldCheckpoint = string(forkNote)
	if _, err := VerifyProof(&q, verifiers); !errors.Is(err, ErrInvalid) {
		t.Errorf("consistency proof against a forked old checkpoint: %v", err)
	}
	q = *p
	q.Hashes = append([]string(nil), p.Hashes...)
	q.Hashes[len(q.Hashes)-1] = base64.StdEncoding.EncodeToString(make([]byte, 32))
	if _, err := VerifyProof(&q, verifiers); !errors.Is(err, ErrInvalid) {
		t.Errorf("consistency proof with a replaced hash: %v", err)
	}
	// Swapped old and new.
	q = *p
	q.OldCheckpoint, q.Checkpoint = p.Checkpoint, p.OldCheckpoint
	if _, err := VerifyProof(&q, verifiers); !errors.Is(err, ErrInvalid) {
		t.Errorf("consistency proof with old and new swapped: %v", err)
	}
}

func TestParseProofRejects(t *testing.T) {
	ctx := context.Background()
	s, _ := proofLedger(t, 5)
	p, err := ProveEntry(ctx, s, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	good, _ := p.Marshal()
	if _, err := ParseProof(good); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]string{
		"empty":           ``,
		"array":           `[]`,
		"unknown member":  strings.Replace(string(good), `"format"`, `"x":1,"format"`, 1),
		"duplicate":       strings.Replace(string(good), `"format"`, `"type":"inclusion","format"`, 1),
		"wrong format":    strings.Replace(string(good), ProofFormat, "other/v1", 1),
		"wrong type":      strings.Replace(string(good), `"inclusion"`, `"exclusion"`, 1),
		"index too large": strings.Replace(string(good), `"leaf_index": 2`, `"leaf_index": 5`, 1),
		"bad hash":        strings.Replace(string(good), `"proof": [`, `"proof": ["AAAA",`, 1),
		"trailing data":   string(good) + "{}",
		"mixed types":     strings.Replace(string(good), `"format"`, `"old_size":1,"format"`, 1),
	} {
		if _, err := ParseProof([]byte(b)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: ParseProof = %v, want ErrInvalid", name, err)
		}
	}
	// An empty file (a failed "ledger prove > file") is named as such.
	for _, b := range []string{"", " \n"} {
		if _, err := ParseProof([]byte(b)); err == nil || !strings.Contains(err.Error(), "proof bundle is empty") {
			t.Errorf("ParseProof(%q) = %v, want the empty-bundle error", b, err)
		}
	}
}

func FuzzParseProof(f *testing.F) {
	ctx := context.Background()
	s, verifiers := proofLedger(f, 6)
	cps, _ := s.Checkpoints(ctx)
	for _, seq := range []int64{0, 3, 5} {
		p, err := ProveEntry(ctx, s, seq, 0)
		if err != nil {
			f.Fatal(err)
		}
		b, _ := p.Marshal()
		f.Add(b)
	}
	p, err := ProveConsistency(ctx, s, cps[0].Note, 0)
	if err != nil {
		f.Fatal(err)
	}
	b, _ := p.Marshal()
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseProof(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error does not wrap ErrInvalid: %v", err)
			}
			return
		}
		// A parsed bundle survives a round trip unchanged.
		b, err := p.Marshal()
		if err != nil {
			t.Fatalf("Marshal of a parsed bundle: %v", err)
		}
		q, err := ParseProof(b)
		if err != nil {
			t.Fatalf("re-parse: %v\n%s", err, b)
		}
		b2, _ := q.Marshal()
		if !bytes.Equal(b, b2) {
			t.Fatalf("round trip changed the bundle:\n%s\n%s", b, b2)
		}
		// Verification never panics, and whatever it accepts is a real
		// entry or extension of this ledger.
		got, err := VerifyProof(p, verifiers)
		if err != nil {
			return
		}
		if got.Entry != nil {
			stored := false
			s.Leaves(ctx, got.Entry.Seq, got.Entry.Seq+1, func(_ int64, leaf []byte) error {
				stored = bytes.Equal(leaf, p.Leaf)
				return nil
			})
			if !stored {
				t.Fatalf("VerifyProof accepted an entry that is not in the ledger: %s", p.Leaf)
			}
		}
	})
}

// TestProveEntryThatDoesNotExist: an entry past the end is named as
// missing, with the ledger's size, before any checkpoint is looked at;
// an empty ledger says so.
func TestProveEntryThatDoesNotExist(t *testing.T) {
	ctx := context.Background()
	store := NewMemStore()
	l, err := New(ctx, store, Options{LedgerID: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ProveEntry(ctx, store, 0, 0); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "the ledger is empty") {
		t.Fatalf("empty ledger: %v", err)
	}
	for i := range 3 {
		if _, err := l.Append(ctx, KindAuditEvent, fmt.Sprintf("a%d", i), testPayload); err != nil {
			t.Fatal(err)
		}
	}
	// No checkpoint at all: the missing entry is still what is reported.
	if _, err := ProveEntry(ctx, store, 99, 0); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "entry 99 does not exist (the ledger has 3 entries, 0..2)") {
		t.Fatalf("past the end: %v", err)
	}
	if _, err := ProveEntry(ctx, store, 1, 0); !errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("an entry without a checkpoint: %v, want ErrNoCheckpoint", err)
	}
}

func mustOpen(t *testing.T, msg []byte, v note.Verifiers) Checkpoint {
	c, err := OpenCheckpoint(msg, v)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
