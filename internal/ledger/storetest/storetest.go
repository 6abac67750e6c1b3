// Package storetest is the conformance suite of ledger.Store: every backend
// (SQLite, PostgreSQL, memory) runs [Run] from its tests, so that they all
// keep the same contract: atomic and exclusive updates, reads of committed
// data from any handle, durable acknowledgement, group commit, and one
// linear chain when several Ledger values (replicas) append to one database
// concurrently.
package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// A Backend creates a fresh, empty database for one subtest and returns a
// function that opens a new, independent handle (its own connections) to
// that same database. Each call of the returned function must return a
// distinct Store; the suite closes every handle it opens (directly or
// through Ledger.Close). Failures inside either function should call
// t.Fatal.
type Backend func(t *testing.T) (open func() ledger.Store)

// Run runs the suite against b, one subtest per property.
func Run(t *testing.T, b Backend) {
	skey, vkey, err := note.GenerateKey(rand.Reader, "storetest")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	k := &keys{signer: signer, verifiers: note.VerifierList(verifier)}
	tests := []struct {
		name string
		f    func(*testing.T, func() ledger.Store, *keys)
	}{
		{"Init", testInit},
		{"AppendRead", testAppendRead},
		{"Range", testRange},
		{"UpdateAtomic", testUpdateAtomic},
		{"Blocks", testBlocks},
		{"Checkpoints", testCheckpoints},
		{"LedgerID", testLedgerID},
		{"GroupCommit", testGroupCommit},
		{"Replicas", testReplicas},
		{"Proofs", testProofs},
		{"ClosedStore", testClosedStore},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			open := b(t)
			tt.f(t, open, k)
		})
	}
}

type keys struct {
	signer    note.Signer
	verifiers note.Verifiers
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func openLedger(t *testing.T, s ledger.Store, opts ledger.Options) *ledger.Ledger {
	t.Helper()
	l, err := ledger.New(ctxT(t), s, opts)
	if err != nil {
		s.Close()
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	return l
}

func closeLedger(t *testing.T, l *ledger.Ledger) {
	t.Helper()
	if err := l.Close(ctxT(t)); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// handle opens a store handle that the test closes at cleanup.
func handle(t *testing.T, open func() ledger.Store) ledger.Store {
	s := open()
	t.Cleanup(func() { s.Close() })
	return s
}

// payload returns canonical JSON with the fields the CLI filters on.
func payload(i int, tag string) []byte {
	return fmt.Appendf(nil, `{"action":"allow","n":%d,"server_id":"srv","tag":%q,"tool_name":"t%d"}`, i, tag, i%3)
}

var kinds = []string{ledger.KindAuditEvent, ledger.KindGatewayDecision, ledger.KindServerReceipt, ledger.KindSession}

func appendN(t *testing.T, l *ledger.Ledger, n int, tag string) []ledger.Entry {
	t.Helper()
	out := make([]ledger.Entry, n)
	for i := range n {
		e, err := l.Append(ctxT(t), kinds[i%len(kinds)], fmt.Sprintf("%s-%d", tag, i), payload(i, tag))
		if err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
		out[i] = e
	}
	return out
}

func readAll(t *testing.T, s ledger.Store, from, to int64) (seqs []int64, leaves [][]byte) {
	t.Helper()
	err := s.Leaves(ctxT(t), from, to, func(seq int64, leaf []byte) error {
		seqs = append(seqs, seq)
		leaves = append(leaves, bytes.Clone(leaf))
		return nil
	})
	if err != nil {
		t.Fatalf("Leaves(%d, %d): %v", from, to, err)
	}
	return seqs, leaves
}

func mustVerify(t *testing.T, s ledger.Store, k *keys, wantSize int64) *ledger.Report {
	t.Helper()
	var v note.Verifiers
	if k != nil {
		v = k.verifiers
	}
	rep, err := ledger.Verify(ctxT(t), s, ledger.VerifyOptions{Verifiers: v})
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if rep.Problem != nil {
		t.Fatalf("Verify: %v", rep.Problem)
	}
	if rep.Size != wantSize || rep.Verified != wantSize {
		t.Fatalf("Verify: size %d, verified %d, want %d", rep.Size, rep.Verified, wantSize)
	}
	return rep
}

func testInit(t *testing.T, open func() ledger.Store, _ *keys) {
	ctx := ctxT(t)
	s := handle(t, open)
	if id, err := s.Init(ctx, ""); err == nil {
		t.Fatalf("Init(\"\") on an empty store = %q, want an error", id)
	}
	id, err := s.Init(ctx, "ledger-a")
	if err != nil || id != "ledger-a" {
		t.Fatalf("Init = %q, %v; want ledger-a", id, err)
	}
	s2 := handle(t, open)
	if id, err := s2.Init(ctx, "ledger-b"); err != nil || id != "ledger-a" {
		t.Fatalf("second Init = %q, %v; want the recorded ledger-a", id, err)
	}
	if id, err := s2.Init(ctx, ""); err != nil || id != "ledger-a" {
		t.Fatalf("Init(\"\") = %q, %v; want ledger-a", id, err)
	}
	if n, err := s.Size(ctx); err != nil || n != 0 {
		t.Fatalf("Size = %d, %v; want 0", n, err)
	}
	if cps, err := s.Checkpoints(ctx); err != nil || len(cps) != 0 {
		t.Fatalf("Checkpoints = %v, %v; want none", cps, err)
	}
	if seqs, _ := readAll(t, s, 0, 10); len(seqs) != 0 {
		t.Fatalf("Leaves of an empty store: %v", seqs)
	}
	if _, err := s.ReadHashes(ctx, []int64{0}); err == nil {
		t.Fatal("ReadHashes of a missing hash succeeded")
	}
}

func testAppendRead(t *testing.T, open func() ledger.Store, _ *keys) {
	l := openLedger(t, open(), ledger.Options{LedgerID: "append-read"})
	entries := appendN(t, l, 40, "ar")
	prev := ledger.ZeroHash
	for i, e := range entries {
		if e.Seq != int64(i) || e.LedgerID != "append-read" || e.PreviousHash != prev {
			t.Fatalf("entry %d: seq %d ledger %q previous %s, want seq %d previous %s", i, e.Seq, e.LedgerID, e.PreviousHash, i, prev)
		}
		if i > 0 && e.Time.Before(entries[i-1].Time) {
			t.Fatalf("entry %d: time goes backwards", i)
		}
		prev = e.Hash()
	}
	// Acknowledged means committed: a new handle sees every entry.
	s := handle(t, open)
	if n, err := s.Size(ctxT(t)); err != nil || n != 40 {
		t.Fatalf("Size from another handle = %d, %v; want 40", n, err)
	}
	seqs, leaves := readAll(t, s, 0, 40)
	if len(seqs) != 40 {
		t.Fatalf("Leaves returned %d entries, want 40", len(seqs))
	}
	for i := range seqs {
		if seqs[i] != int64(i) {
			t.Fatalf("Leaves seq %d at position %d", seqs[i], i)
		}
		if !bytes.Equal(leaves[i], entries[i].Leaf()) {
			t.Fatalf("entry %d: stored leaf\n%s\nreturned entry's leaf\n%s", i, leaves[i], entries[i].Leaf())
		}
		e, err := ledger.ParseLeaf(leaves[i])
		if err != nil {
			t.Fatalf("ParseLeaf(%d): %v", i, err)
		}
		if !reflect.DeepEqual(normalize(e), normalize(entries[i])) {
			t.Fatalf("entry %d: parsed %+v, appended %+v", i, e, entries[i])
		}
	}
	mustVerify(t, s, nil, 40)
}

func normalize(e ledger.Entry) ledger.Entry {
	e.Payload = bytes.Clone(e.Payload)
	return e
}

func testRange(t *testing.T, open func() ledger.Store, _ *keys) {
	ctx := ctxT(t)
	l := openLedger(t, open(), ledger.Options{LedgerID: "range"})
	entries := appendN(t, l, 40, "rg")
	s := handle(t, open)
	for _, r := range []struct{ from, to, first, n int64 }{
		{10, 20, 10, 10}, {35, 100, 35, 5}, {50, 60, 0, 0}, {-5, 3, 0, 3}, {7, 7, 0, 0},
	} {
		seqs, leaves := readAll(t, s, r.from, r.to)
		if int64(len(seqs)) != r.n {
			t.Fatalf("Leaves(%d, %d): %d entries, want %d", r.from, r.to, len(seqs), r.n)
		}
		for i := range seqs {
			if seqs[i] != r.first+int64(i) || !bytes.Equal(leaves[i], entries[seqs[i]].Leaf()) {
				t.Fatalf("Leaves(%d, %d)[%d]: seq %d", r.from, r.to, i, seqs[i])
			}
		}
	}
	// The stored hashes are those tlog computes from the leaves.
	var want []tlog.Hash
	mem := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = want[x]
		}
		return out, nil
	})
	for i, e := range entries {
		hs, err := tlog.StoredHashes(int64(i), e.Leaf(), mem)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, hs...)
	}
	if int64(len(want)) != tlog.StoredHashCount(40) {
		t.Fatalf("computed %d hashes, want %d", len(want), tlog.StoredHashCount(40))
	}
	idx := make([]int64, len(want))
	for i := range idx {
		idx[i] = int64(i)
	}
	got, err := s.ReadHashes(ctx, idx)
	if err != nil {
		t.Fatalf("ReadHashes: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatal("stored hashes differ from tlog.StoredHashes over the leaves")
	}
	// Non-contiguous, unsorted indexes come back in the order asked.
	odd := []int64{idx[len(idx)-1], 3, 0, 17, 16}
	got, err = s.ReadHashes(ctx, odd)
	if err != nil {
		t.Fatalf("ReadHashes(%v): %v", odd, err)
	}
	for i, x := range odd {
		if got[i] != want[x] {
			t.Fatalf("ReadHashes(%v)[%d] = hash %d's? no", odd, i, x)
		}
	}
	if _, err := s.ReadHashes(ctx, []int64{3, int64(len(want))}); err == nil {
		t.Fatal("ReadHashes past the end succeeded")
	}
}

func testUpdateAtomic(t *testing.T, open func() ledger.Store, _ *keys) {
	ctx := ctxT(t)
	l := openLedger(t, open(), ledger.Options{LedgerID: "atomic"})
	entries := appendN(t, l, 3, "at")
	closeLedger(t, l)
	s := handle(t, open)
	if _, err := s.Init(ctx, "atomic"); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	leaf := append([]byte(nil), entries[2].Leaf()...)
	err := s.Update(ctx, func(ctx context.Context, tx ledger.Tx) error {
		n, err := tx.Size(ctx)
		if err != nil || n != 3 {
			t.Errorf("tx.Size = %d, %v; want 3", n, err)
		}
		if err := tx.Append(ctx, 3, [][]byte{leaf}, tlog.StoredHashCount(3), []tlog.Hash{{1}}); err != nil {
			t.Errorf("tx.Append: %v", err)
		}
		if n, _ := tx.Size(ctx); n != 4 {
			t.Errorf("tx.Size after Append = %d, want 4", n)
		}
		if got, err := tx.Leaf(ctx, 3); err != nil || !bytes.Equal(got, leaf) {
			t.Errorf("tx.Leaf(3) = %q, %v", got, err)
		}
		if err := tx.AddCheckpoint(ctx, ledger.StoredCheckpoint{Size: 4, Note: []byte("x"), Created: time.Now()}); err != nil {
			t.Errorf("tx.AddCheckpoint: %v", err)
		}
		if c, ok, err := tx.LatestCheckpoint(ctx); err != nil || !ok || c.Size != 4 {
			t.Errorf("tx.LatestCheckpoint = %v, %v, %v; want the one just added", c, ok, err)
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update = %v, want boom", err)
	}
	if n, err := s.Size(ctx); err != nil || n != 3 {
		t.Fatalf("Size after a failed Update = %d, %v; want 3", n, err)
	}
	if _, err := s.ReadHashes(ctx, []int64{tlog.StoredHashCount(3)}); err == nil {
		t.Fatal("a hash written by a failed Update is visible")
	}
	if cps, _ := s.Checkpoints(ctx); len(cps) != 0 {
		t.Fatalf("a checkpoint written by a failed Update is visible: %v", cps)
	}
	// A second writer that lost a race (appending at an existing seq)
	// fails instead of forking the chain.
	err = s.Update(ctx, func(ctx context.Context, tx ledger.Tx) error {
		return tx.Append(ctx, 2, [][]byte{leaf}, tlog.StoredHashIndex(0, 2), nil)
	})
	if err == nil {
		t.Fatal("Append at an existing seq succeeded")
	}
	mustVerify(t, s, nil, 3)
}

// testBlocks appends through Tx directly, several entries and hashes per
// Append in blocks of different sizes (two Appends in one transaction
// too), and reads them back across block boundaries: every range of
// Leaves, every Leaf and hash inside a transaction, runs and single
// indexes of ReadHashes. An Append that does not continue the ledger (an
// overlap or a gap, of entries or hashes) or a leaf with a line feed
// fails and leaves nothing. The leaves and hashes are arbitrary bytes: a
// Store does not look into them.
func testBlocks(t *testing.T, open func() ledger.Store, _ *keys) {
	ctx := ctxT(t)
	s := handle(t, open)
	if _, err := s.Init(ctx, "blocks"); err != nil {
		t.Fatal(err)
	}
	var leaves [][]byte
	var hashes []tlog.Hash
	appendBlock := func(tx ledger.Tx, nLeaves, nHashes int) error {
		start, hstart := int64(len(leaves)), int64(len(hashes))
		var ls [][]byte
		for i := range nLeaves {
			ls = append(ls, fmt.Appendf(nil, `{"leaf":%d,"pad":"%s"}`, start+int64(i), bytes.Repeat([]byte("x"), (int(start)+i)*7%23)))
		}
		var hs []tlog.Hash
		for i := range nHashes {
			hs = append(hs, tlog.RecordHash(fmt.Appendf(nil, "hash %d", hstart+int64(i))))
		}
		if err := tx.Append(ctx, start, ls, hstart, hs); err != nil {
			return err
		}
		leaves, hashes = append(leaves, ls...), append(hashes, hs...)
		return nil
	}
	for _, b := range [][][2]int{{{1, 2}}, {{3, 5}}, {{7, 13}, {1, 1}}, {{16, 30}}} {
		if err := s.Update(ctx, func(ctx context.Context, tx ledger.Tx) error {
			for _, n := range b {
				if err := appendBlock(tx, n[0], n[1]); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatalf("Update appending blocks %v: %v", b, err)
		}
	}
	n, nh := int64(len(leaves)), int64(len(hashes)) // 28 entries, 51 hashes
	s2 := handle(t, open)
	if size, err := s2.Size(ctx); err != nil || size != n {
		t.Fatalf("Size from another handle = %d, %v; want %d", size, err, n)
	}
	for from := int64(-1); from <= n+1; from++ {
		for _, to := range []int64{from, from + 1, from + 2, from + 5, n, n + 3} {
			seqs, got := readAll(t, s2, from, to)
			want := max(0, min(to, n)-max(from, 0))
			if int64(len(seqs)) != want {
				t.Fatalf("Leaves(%d, %d): %d entries, want %d", from, to, len(seqs), want)
			}
			for i, seq := range seqs {
				if seq != max(from, 0)+int64(i) || !bytes.Equal(got[i], leaves[seq]) {
					t.Fatalf("Leaves(%d, %d)[%d]: entry %d %q, want entry %d %q", from, to, i, seq, got[i], max(from, 0)+int64(i), leaves[max(from, 0)+int64(i)])
				}
			}
		}
	}
	all := make([]int64, nh)
	for i := range all {
		all[i] = int64(i)
	}
	reversed := slices.Clone(all)
	slices.Reverse(reversed)
	for _, idx := range [][]int64{all, reversed, all[4:25], {6, 5, 5, 7, 50, 0, 20, 21, 22, 23, 24, 9}, {50}, {0}, {17}, nil} {
		got, err := s2.ReadHashes(ctx, idx)
		if err != nil {
			t.Fatalf("ReadHashes(%v): %v", idx, err)
		}
		if len(got) != len(idx) {
			t.Fatalf("ReadHashes(%v): %d hashes", idx, len(got))
		}
		for i, x := range idx {
			if got[i] != hashes[x] {
				t.Fatalf("ReadHashes(%v)[%d] is not hash %d", idx, i, x)
			}
		}
	}
	for _, idx := range [][]int64{{nh}, {nh - 1, nh}, {-1}, append(slices.Clone(all), nh)} {
		if _, err := s2.ReadHashes(ctx, idx); err == nil {
			t.Fatalf("ReadHashes(%v) beyond the stored hashes succeeded", idx)
		}
	}
	// Inside a transaction, and what fails in one.
	wrong := []struct {
		name           string
		start, hstart  int64
		leaves         [][]byte
		nHashes        int
		wantSize, want int64
	}{
		{"entries overlapping the last block", n - 1, nh, [][]byte{[]byte("x")}, 1, n, nh},
		{"entries after a gap", n + 1, nh, [][]byte{[]byte("x")}, 1, n, nh},
		{"hashes overlapping the last block", n, nh - 1, [][]byte{[]byte("x")}, 2, n, nh},
		{"hashes after a gap", n, nh + 1, [][]byte{[]byte("x")}, 1, n, nh},
		{"a leaf with a line feed", n, nh, [][]byte{[]byte("x\ny")}, 1, n, nh},
	}
	err := s.Update(ctx, func(ctx context.Context, tx ledger.Tx) error {
		for seq := range n {
			if leaf, err := tx.Leaf(ctx, seq); err != nil || !bytes.Equal(leaf, leaves[seq]) {
				t.Errorf("tx.Leaf(%d) = %q, %v; want %q", seq, leaf, err, leaves[seq])
			}
		}
		if _, err := tx.Leaf(ctx, n); err == nil {
			t.Errorf("tx.Leaf(%d) beyond the end succeeded", n)
		}
		got, err := tx.ReadHashes(ctx, reversed)
		slices.Reverse(got)
		if err != nil || !slices.Equal(got, hashes) {
			t.Errorf("tx.ReadHashes(all, reversed): %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range wrong {
		err := s.Update(ctx, func(ctx context.Context, tx ledger.Tx) error {
			hs := make([]tlog.Hash, w.nHashes)
			return tx.Append(ctx, w.start, w.leaves, w.hstart, hs)
		})
		if err == nil {
			t.Fatalf("Append of %s succeeded", w.name)
		}
		t.Logf("Append of %s: %v", w.name, err)
		if size, err := s.Size(ctx); err != nil || size != w.wantSize {
			t.Fatalf("after Append of %s: Size = %d, %v; want %d", w.name, size, err, w.wantSize)
		}
		if _, err := s.ReadHashes(ctx, []int64{w.want}); err == nil {
			t.Fatalf("after Append of %s: hash %d is stored", w.name, w.want)
		}
	}
}

func testCheckpoints(t *testing.T, open func() ledger.Store, k *keys) {
	ctx := ctxT(t)
	opts := ledger.Options{LedgerID: "ckpt", Signer: k.signer, CheckpointEveryN: 10, CheckpointEvery: -1}
	l := openLedger(t, open(), opts)
	appendN(t, l, 25, "ck")
	c, err := l.Checkpoint(ctx)
	if err != nil || c.Size != 25 || c.Note == nil {
		t.Fatalf("Checkpoint = %+v, %v; want a signed checkpoint of size 25", c, err)
	}
	c2, err := l.Checkpoint(ctx)
	if err != nil || c2.Size != 25 || !bytes.Equal(c2.Note, c.Note) {
		t.Fatalf("second Checkpoint = %+v, %v; want the same one", c2, err)
	}
	closeLedger(t, l) // covered already: no new checkpoint
	s := handle(t, open)
	cps, err := s.Checkpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int64
	for _, sc := range cps {
		sizes = append(sizes, sc.Size)
		got, err := ledger.OpenCheckpoint(sc.Note, k.verifiers)
		if err != nil {
			t.Fatalf("stored checkpoint %d: %v", sc.ID, err)
		}
		if got.Size != sc.Size || got.Origin != ledger.Origin("ckpt") {
			t.Fatalf("stored checkpoint %d: %+v", sc.ID, got)
		}
	}
	if !reflect.DeepEqual(sizes, []int64{10, 20, 25}) {
		t.Fatalf("checkpoint sizes %v, want [10 20 25]", sizes)
	}
	rep := mustVerify(t, s, k, 25)
	if rep.Checkpoints != 3 || rep.Latest == nil || rep.Latest.Size != 25 {
		t.Fatalf("Verify: %d checkpoints, latest %+v", rep.Checkpoints, rep.Latest)
	}

	// Reopen: the chain continues and Close signs the new entries.
	l = openLedger(t, open(), opts)
	more := appendN(t, l, 5, "ck2")
	_, leaves := readAll(t, s, 24, 25)
	if more[0].Seq != 25 || more[0].PreviousHash != "sha256:"+sha256hex(leaves[0]) {
		t.Fatalf("after reopen: seq %d previous %s", more[0].Seq, more[0].PreviousHash)
	}
	closeLedger(t, l)
	rep = mustVerify(t, s, k, 30)
	if rep.Latest == nil || rep.Latest.Size != 30 {
		t.Fatalf("Close did not sign a final checkpoint: latest %+v", rep.Latest)
	}
	// A wrong key fails verification on the first checkpoint.
	_, vkey2, _ := note.GenerateKey(rand.Reader, "storetest")
	v2, _ := note.NewVerifier(vkey2)
	rep, err = ledger.Verify(ctx, s, ledger.VerifyOptions{Verifiers: note.VerifierList(v2)})
	if err != nil || rep.Problem == nil || rep.Problem.Seq != -1 || rep.Problem.Checkpoint != cps[0].ID {
		t.Fatalf("Verify with a wrong key: %+v, %v", rep, err)
	}
}

func testLedgerID(t *testing.T, open func() ledger.Store, _ *keys) {
	l := openLedger(t, open(), ledger.Options{LedgerID: "first"})
	appendN(t, l, 1, "id")
	closeLedger(t, l)
	s := open()
	if _, err := ledger.New(ctxT(t), s, ledger.Options{LedgerID: "second"}); !errors.Is(err, ledger.ErrLedgerID) {
		t.Fatalf("New with another ledger id: %v, want ErrLedgerID", err)
	}
	s.Close()
	l = openLedger(t, open(), ledger.Options{})
	if l.ID() != "first" {
		t.Fatalf("ID() = %q, want the recorded first", l.ID())
	}
}

// slowStore makes every Update take at least a little while, so that
// concurrent appends queue up behind it, and counts the Updates.
type slowStore struct {
	ledger.Store
	updates atomic.Int64
}

func (s *slowStore) Update(ctx context.Context, f func(context.Context, ledger.Tx) error) error {
	s.updates.Add(1)
	time.Sleep(2 * time.Millisecond)
	return s.Store.Update(ctx, f)
}

// appendConcurrently runs workers×each appends on l and returns them.
// With pause, each worker waits up to that long between its appends
// (bursty load rather than a saturated writer).
func appendConcurrently(t *testing.T, l *ledger.Ledger, workers, each int, tag string, pause time.Duration) []ledger.Entry {
	t.Helper()
	var mu sync.Mutex
	var out []ledger.Entry
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				e, err := l.Append(context.Background(), ledger.KindAuditEvent, fmt.Sprintf("%s-%d-%d", tag, w, i), payload(i, tag))
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				out = append(out, e)
				mu.Unlock()
				if pause > 0 {
					time.Sleep(time.Duration(mrand.Int64N(int64(pause))))
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent Append: %v", err)
	}
	return out
}

func checkDistinct(t *testing.T, entries []ledger.Entry, n int64) {
	t.Helper()
	seen := make([]bool, n)
	for _, e := range entries {
		if e.Seq < 0 || e.Seq >= n || seen[e.Seq] {
			t.Fatalf("seq %d returned twice or out of range 0..%d", e.Seq, n-1)
		}
		seen[e.Seq] = true
	}
	if int64(len(entries)) != n {
		t.Fatalf("%d entries, want %d", len(entries), n)
	}
}

func testGroupCommit(t *testing.T, open func() ledger.Store, _ *keys) {
	s := &slowStore{Store: open()}
	l := openLedger(t, s, ledger.Options{LedgerID: "group"})
	s.updates.Store(0) // Init's own transaction, if any, does not count
	entries := appendConcurrently(t, l, 16, 25, "gc", 0)
	checkDistinct(t, entries, 400)
	if u := s.updates.Load(); u > 200 {
		t.Fatalf("%d transactions for 400 concurrent appends: no group commit", u)
	} else {
		t.Logf("400 concurrent appends in %d transactions", u)
	}
	mustVerify(t, handle(t, open), nil, 400)
}

func testReplicas(t *testing.T, open func() ledger.Store, k *keys) {
	opts := ledger.Options{LedgerID: "replicas", Signer: k.signer, CheckpointEveryN: 50, CheckpointEvery: -1}
	a := openLedger(t, open(), opts)
	b := openLedger(t, open(), opts)
	var wg sync.WaitGroup
	var ea, eb []ledger.Entry
	wg.Add(2)
	// Bursty load: a backend's lock need not be fair (SQLite's is not), and
	// a saturated writer could starve the other replica until it is done.
	go func() { defer wg.Done(); ea = appendConcurrently(t, a, 8, 25, "ra", 2*time.Millisecond) }()
	go func() { defer wg.Done(); eb = appendConcurrently(t, b, 8, 25, "rb", 2*time.Millisecond) }()
	wg.Wait()
	if t.Failed() {
		return
	}
	checkDistinct(t, append(ea, eb...), 400)
	if len(ea) != 200 || len(eb) != 200 {
		t.Fatalf("replica a wrote %d, b %d", len(ea), len(eb))
	}
	// The replicas really interleaved: walking the chain in seq order,
	// the writer changes more than once.
	owner := make([]byte, 400)
	for _, e := range ea {
		owner[e.Seq] = 'a'
	}
	for _, e := range eb {
		owner[e.Seq] = 'b'
	}
	switches := 0
	for i := 1; i < len(owner); i++ {
		if owner[i] != owner[i-1] {
			switches++
		}
	}
	if switches < 2 {
		t.Fatalf("the replicas did not interleave (%d switches): the test proves nothing", switches)
	}
	t.Logf("replica switches along the chain: %d", switches)
	closeLedger(t, a)
	closeLedger(t, b)
	s := handle(t, open)
	rep := mustVerify(t, s, k, 400)
	if rep.Latest == nil || rep.Latest.Size != 400 {
		t.Fatalf("latest checkpoint %+v, want size 400", rep.Latest)
	}
	// Every acknowledged entry is stored exactly as returned.
	_, leaves := readAll(t, s, 0, 400)
	for _, e := range append(ea, eb...) {
		if !bytes.Equal(leaves[e.Seq], e.Leaf()) {
			t.Fatalf("entry %d stored differently from what Append returned", e.Seq)
		}
	}
}

func testProofs(t *testing.T, open func() ledger.Store, k *keys) {
	ctx := ctxT(t)
	l := openLedger(t, open(), ledger.Options{LedgerID: "proofs", Signer: k.signer, CheckpointEveryN: 7, CheckpointEvery: -1})
	entries := appendN(t, l, 23, "pf")
	closeLedger(t, l)
	s := handle(t, open)
	cps, err := s.Checkpoints(ctx)
	if err != nil || len(cps) < 3 {
		t.Fatalf("Checkpoints = %d, %v", len(cps), err)
	}
	for _, c := range cps {
		for seq := int64(0); seq < c.Size; seq++ {
			p, err := ledger.ProveEntry(ctx, s, seq, c.Size)
			if err != nil {
				t.Fatalf("ProveEntry(%d, %d): %v", seq, c.Size, err)
			}
			b, err := p.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			p2, err := ledger.ParseProof(b)
			if err != nil {
				t.Fatalf("ParseProof of a fresh bundle: %v\n%s", err, b)
			}
			got, err := ledger.VerifyProof(p2, k.verifiers)
			if err != nil {
				t.Fatalf("VerifyProof(entry %d, size %d): %v", seq, c.Size, err)
			}
			if !bytes.Equal(got.Entry.Leaf(), entries[seq].Leaf()) {
				t.Fatalf("proof of entry %d carries another entry", seq)
			}
		}
		// Beyond the checkpoint: an entry not covered yet waits for a
		// checkpoint; one that does not exist is invalid.
		want := ledger.ErrNoCheckpoint
		if c.Size >= int64(len(entries)) {
			want = ledger.ErrInvalid
		}
		if _, err := ledger.ProveEntry(ctx, s, c.Size, c.Size); !errors.Is(err, want) {
			t.Fatalf("ProveEntry(%d) beyond the checkpoint of size %d (ledger of %d): %v, want %v", c.Size, c.Size, len(entries), err, want)
		}
		for _, newer := range cps {
			if newer.Size < c.Size {
				continue
			}
			p, err := ledger.ProveConsistency(ctx, s, c.Note, newer.Size)
			if err != nil {
				t.Fatalf("ProveConsistency(%d -> %d): %v", c.Size, newer.Size, err)
			}
			if _, err := ledger.VerifyProof(p, k.verifiers); err != nil {
				t.Fatalf("VerifyProof(consistency %d -> %d): %v", c.Size, newer.Size, err)
			}
		}
	}
}

func testClosedStore(t *testing.T, open func() ledger.Store, _ *keys) {
	s := open()
	l := openLedger(t, s, ledger.Options{LedgerID: "closed"})
	appendN(t, l, 2, "cs")
	s.Close()
	_, err := l.Append(ctxT(t), ledger.KindAuditEvent, "after-close", payload(0, "x"))
	if !errors.Is(err, ledger.ErrWrite) {
		t.Fatalf("Append on a closed store: %v, want ErrWrite", err)
	}
	t.Logf("Append on a closed store: %v", err)
}

func sha256hex(b []byte) string {
	e, err := ledger.ParseLeaf(b)
	if err != nil {
		return ""
	}
	h := e.Hash()
	return h[len("sha256:"):]
}
