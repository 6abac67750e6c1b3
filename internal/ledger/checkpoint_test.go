package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Fixed test keys (note.GenerateKey over a constant reader). Never use them
// for anything but tests.
const (
	testSignerKey     = "PRIVATE+KEY+gatehouse-test+090a88b5+AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEB"
	testVerifierKey   = "gatehouse-test+090a88b5+AYqI4910CfGV/VLbLTy6XXLKZwm/HZQSG/N0iAG0D29c"
	attackerSignerKey = "PRIVATE+KEY+gatehouse-attacker+b71b5890+AQICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIC"
	attackerVerifier  = "gatehouse-attacker+b71b5890+AYE5dw6ofRdfVqNUZsNMfszLjYqRtO43ol32D1uPybOU"
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

func TestCheckpointGolden(t *testing.T) {
	signer, verifiers := testKeys(t)
	c := Checkpoint{Origin: Origin("gw-prod"), Size: 1000, Hash: tlog.RecordHash([]byte("x"))}
	msg, err := SignCheckpoint(&c, signer)
	if err != nil {
		t.Fatal(err)
	}
	const want = "gatehouse-ledger/gw-prod\n" +
		"1000\n" +
		"PH6byTDck/AfppmF7yQtn56GHzxTVaokzl70tLinDMs=\n" +
		"\n" +
		"— gatehouse-test CQqItTgJNFryaoA7vgYI66XSn65GSYHGFZ0y8PUzXBIQVNKzm/7+3o0M9YvclfmhQRuAVhI0MUXkh5dB3733W4pO6gM=\n"
	if string(msg) != want {
		t.Fatalf("signed checkpoint\n%s\nwant\n%s", msg, want)
	}
	got, err := OpenCheckpoint(msg, verifiers)
	if err != nil {
		t.Fatal(err)
	}
	if got.Origin != c.Origin || got.Size != c.Size || got.Hash != c.Hash || !bytes.Equal(got.Note, msg) {
		t.Fatalf("OpenCheckpoint = %+v", got)
	}
}

func TestParseCheckpointRejects(t *testing.T) {
	good := string(FormatCheckpoint("o", 5, tlog.Hash{1}))
	if _, err := ParseCheckpoint([]byte(good)); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"empty":          "",
		"no final nl":    strings.TrimSuffix(good, "\n"),
		"extension line": good + "ext\n",
		"blank line":     good + "\n",
		"empty origin":   "\n" + good[2:],
		"origin space":   "o o" + good[1:],
		"origin plus":    "o+o" + good[1:],
		"leading zero":   strings.Replace(good, "\n5\n", "\n05\n", 1),
		"plus sign":      strings.Replace(good, "\n5\n", "\n+5\n", 1),
		"negative":       strings.Replace(good, "\n5\n", "\n-5\n", 1),
		"huge":           strings.Replace(good, "\n5\n", "\n99999999999999999999\n", 1),
		"short hash":     "o\n5\nAAAA\n",
		"unpadded hash":  strings.Replace(good, "=\n", "\n", 1),
		"cr in hash":     strings.Replace(good, "AAAA", "AA\rAA", 1),
		"noncanonical":   strings.Replace(good, "AAA=", "AAB=", 1),
	} {
		if _, err := ParseCheckpoint([]byte(text)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: ParseCheckpoint(%q) = %v, want ErrInvalid", name, text, err)
		}
	}
}

// Changing any single byte of a signed checkpoint makes OpenCheckpoint fail.
func TestOpenCheckpointMangled(t *testing.T) {
	signer, verifiers := testKeys(t)
	c := Checkpoint{Origin: Origin("gw-prod"), Size: 7, Hash: tlog.RecordHash([]byte("y"))}
	msg, err := SignCheckpoint(&c, signer)
	if err != nil {
		t.Fatal(err)
	}
	for i := range msg {
		for _, delta := range []byte{1, 0x20, 0x80} {
			m := bytes.Clone(msg)
			m[i] ^= delta
			if got, err := OpenCheckpoint(m, verifiers); err == nil {
				t.Fatalf("byte %d ^ %#x: accepted %+v from\n%s", i, delta, got, m)
			}
		}
	}
	// Another key's signature is not enough, nor is an added one.
	_, attacker := attackerKeys(t)
	if _, err := OpenCheckpoint(msg, attacker); !errors.Is(err, ErrInvalid) {
		t.Fatalf("checkpoint opened with the wrong key: %v", err)
	}
}

func FuzzParseCheckpoint(f *testing.F) {
	f.Add(FormatCheckpoint("gatehouse-ledger/x", 0, tlog.Hash{}))
	f.Add(FormatCheckpoint("o", 123456789, tlog.Hash{0xff}))
	f.Add([]byte("o\n1\n\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		c, err := ParseCheckpoint(text)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error does not wrap ErrInvalid: %v", err)
			}
			return
		}
		// Only the canonical encoding is accepted.
		if got := FormatCheckpoint(c.Origin, c.Size, c.Hash); !bytes.Equal(got, text) {
			t.Fatalf("ParseCheckpoint accepted %q, which formats as %q", text, got)
		}
	})
}

func FuzzOpenCheckpoint(f *testing.F) {
	signer, verifiers := testKeys(f)
	c := Checkpoint{Origin: "o", Size: 3, Hash: tlog.Hash{7}}
	msg, err := SignCheckpoint(&c, signer)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(msg)
	f.Fuzz(func(t *testing.T, m []byte) {
		got, err := OpenCheckpoint(m, verifiers)
		if err != nil {
			return
		}
		// Whatever opens must be exactly the signed note: a signature
		// cannot be malleated and the body cannot change.
		if !bytes.Equal(m, msg) {
			t.Fatalf("accepted a note other than the one signed: %q", m)
		}
		if got.Size != 3 || got.Hash != (tlog.Hash{7}) {
			t.Fatalf("opened %+v", got)
		}
	})
}

// TestCheckpointAfterKeyRotation: a forced checkpoint with a new key signs
// a new checkpoint even when the latest one (by the old key) covers every
// entry; with the same key the latest one is returned as it is.
func TestCheckpointAfterKeyRotation(t *testing.T) {
	ctx := context.Background()
	store := NewMemStore()
	oldS, oldV := testKeys(t)
	newS, newV := attackerKeys(t) // any second key
	l, err := New(ctx, store, Options{LedgerID: "rot", Signer: oldS})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, KindAuditEvent, "a0", testPayload); err != nil {
		t.Fatal(err)
	}
	first, err := l.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	again, err := l.Checkpoint(ctx)
	if err != nil || !bytes.Equal(again.Note, first.Note) {
		t.Fatalf("same key: a new checkpoint (%v) instead of the latest", err)
	}
	// A Ledger over the same store with the new key (no Close: the
	// memory store would go with it).
	l2, err := New(ctx, store, Options{LedgerID: "rot", Signer: newS})
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := l2.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenCheckpoint(rotated.Note, newV); err != nil {
		t.Fatalf("the forced checkpoint after rotation is not signed by the new key: %v\n%s", err, rotated.Note)
	}
	if _, err := OpenCheckpoint(first.Note, oldV); err != nil {
		t.Fatalf("the old checkpoint: %v", err)
	}
	if rotated.Size != first.Size || rotated.Hash != first.Hash {
		t.Fatalf("rotated checkpoint of size %d root %v, want the same tree as %d %v", rotated.Size, rotated.Hash, first.Size, first.Hash)
	}
}

// TestCloseDoesNotResignWithAnOldKey: a Ledger closing with a key other
// than the latest checkpoint's (an old replica after a rotation) leaves
// the covering checkpoint as it is.
func TestCloseDoesNotResignWithAnOldKey(t *testing.T) {
	ctx := context.Background()
	store := NewMemStore()
	oldS, _ := testKeys(t)
	newS, newV := attackerKeys(t)
	l, err := New(ctx, store, Options{LedgerID: "rot", Signer: newS})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, KindAuditEvent, "a0", testPayload); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	before, _ := store.Checkpoints(ctx)
	old, err := New(ctx, noCloseStore{store}, Options{LedgerID: "rot", Signer: oldS})
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Close(ctx); err != nil {
		t.Fatal(err)
	}
	after, _ := store.Checkpoints(ctx)
	if len(after) != len(before) {
		t.Fatalf("%d checkpoints after an old-key Close, want %d", len(after), len(before))
	}
	if _, err := OpenCheckpoint(after[len(after)-1].Note, newV); err != nil {
		t.Fatalf("the latest checkpoint is no longer the new key's: %v", err)
	}
}

// noCloseStore shares a store between Ledgers: its Close leaves it open.
type noCloseStore struct{ Store }

func (noCloseStore) Close() error { return nil }

// TestCheckpointCadence: with a signer, checkpoints are signed on a
// cadence, not per append: when CheckpointEveryN entries are not covered
// (count trigger) or when CheckpointEvery has passed since the latest one
// (time trigger), whichever comes first, once at the first batch of a
// ledger without any, and at Close.
func TestCheckpointCadence(t *testing.T) {
	signer, err := note.NewSigner(testSignerKey)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		every time.Duration
		n     int64
		step  time.Duration // clock advance per append
		count int           // appends
		want  []int64       // checkpoint sizes, Close's included
	}{
		{"count", time.Hour, 10, time.Millisecond, 35, []int64{1, 11, 21, 31, 35}},
		{"time", time.Minute, -1, 25 * time.Second, 10, []int64{1, 4, 7, 10}},
		{"count before time", time.Minute, 3, 25 * time.Second, 10, []int64{1, 4, 7, 10}},
		{"time before count", 50 * time.Second, 1000, 20 * time.Second, 10, []int64{1, 4, 7, 10}},
		{"close only", -1, -1, time.Hour, 5, []int64{5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := NewMemStore()
			l, err := New(ctx, noClose{store}, Options{LedgerID: "cadence", Signer: signer, CheckpointEvery: tc.every, CheckpointEveryN: tc.n})
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
			l.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			for i := range tc.count {
				if _, err := l.Append(ctx, KindGatewayDecision, fmt.Sprintf("audit_%d", i), testPayload); err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				now = now.Add(tc.step)
				mu.Unlock()
			}
			if err := l.Close(ctx); err != nil {
				t.Fatal(err)
			}
			cps, err := store.Checkpoints(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, c := range cps {
				got = append(got, c.Size)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("checkpoint sizes %v, want %v", got, tc.want)
			}
		})
	}
}

// latestCounter counts Tx.LatestCheckpoint calls.
type latestCounter struct {
	Store
	n atomic.Int64
}

func (c *latestCounter) Update(ctx context.Context, f func(context.Context, Tx) error) error {
	return c.Store.Update(ctx, func(ctx context.Context, tx Tx) error { return f(ctx, &latestCountTx{Tx: tx, c: c}) })
}

type latestCountTx struct {
	Tx
	c *latestCounter
}

func (t *latestCountTx) LatestCheckpoint(ctx context.Context) (StoredCheckpoint, bool, error) {
	t.c.n.Add(1)
	return t.Tx.LatestCheckpoint(ctx)
}

// TestBatchesCacheTheLatestCheckpoint: deciding whether a checkpoint is
// due does not read the latest checkpoint in every batch: the Ledger keeps
// it with the head of the ledger and reads it again only when it reloads
// the head (another writer appended, or a batch failed). The checkpoints
// signed are the same (TestCheckpointCadence).
func TestBatchesCacheTheLatestCheckpoint(t *testing.T) {
	signer, err := note.NewSigner(testSignerKey)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	store := &latestCounter{Store: NewMemStore()}
	l, err := New(ctx, store, Options{LedgerID: "cache", Signer: signer, CheckpointEvery: time.Hour, CheckpointEveryN: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	for i := range 35 {
		if _, err := l.Append(ctx, KindGatewayDecision, fmt.Sprintf("audit_%d", i), testPayload); err != nil {
			t.Fatal(err)
		}
	}
	if n := store.n.Load(); n != 1 {
		t.Errorf("35 batches read the latest checkpoint %d times, want once", n)
	}
	// Another writer's entries make the head (and the cache) reload.
	other, err := New(ctx, noClose{store.Store}, Options{LedgerID: "cache"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	if _, err := other.Append(ctx, KindGatewayDecision, "audit_other", testPayload); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, KindGatewayDecision, "audit_35", testPayload); err != nil {
		t.Fatal(err)
	}
	if n := store.n.Load(); n != 2 {
		t.Errorf("after another writer's entry: %d reads, want 2", n)
	}
}
