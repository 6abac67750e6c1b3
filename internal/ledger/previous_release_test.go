package ledger_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger/backends"
)

// The fixture testdata/previous-release.db is a SQLite ledger written by
// `gatehouse wrap` of the release before the second cut of per-call
// evidence (main at fac1618: five entries per forwarded call, kinds
// gateway_decision, audit_event and server_receipt), three calls to the
// test receipt server, signed with testdata/previous-release.vkey's key
// (checkpoints at the first batch and at close).
const (
	previousLedger  = "testdata/previous-release.db"
	previousVkey    = "testdata/previous-release.vkey"
	previousEntries = 15
)

func previousVerifiers(t *testing.T) note.Verifiers {
	t.Helper()
	v, err := ledger.LoadVerifier(previousVkey)
	if err != nil {
		t.Fatal(err)
	}
	return note.VerifierList(v)
}

// copyPrevious copies the fixture into a temporary directory, so that no
// test can change it.
func copyPrevious(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(previousLedger)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "ledger.db")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestVerifyLedgerOfPreviousRelease: a ledger written by the previous
// release verifies with this code as it is (read-only, unchanged), its
// entries prove offline, and a read-write open continues its chain with
// the new per-call records, after which the whole verifies again.
func TestVerifyLedgerOfPreviousRelease(t *testing.T) {
	ctx := context.Background()
	path := copyPrevious(t)
	known := previousVerifiers(t)

	s, err := backends.OpenStore(ctx, path, true)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ledger.Verify(ctx, s, ledger.VerifyOptions{Verifiers: known})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Problem != nil || rep.Verified != previousEntries || rep.Checkpoints != 2 || rep.Latest == nil || rep.Latest.Size != previousEntries {
		t.Fatalf("previous release's ledger: %+v (problem %v)", rep, rep.Problem)
	}
	kinds := map[string]int{}
	if err := s.Leaves(ctx, 0, previousEntries, func(_ int64, leaf []byte) error {
		e, err := ledger.ParseLeaf(leaf)
		if err != nil {
			return err
		}
		kinds[e.Kind]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if kinds[ledger.KindAuditEvent] != 6 || kinds[ledger.KindServerReceipt] != 3 || kinds[ledger.KindGatewayDecision] != 6 {
		t.Fatalf("fixture kinds %v: not the previous release's five entries per call", kinds)
	}
	p, err := ledger.ProveEntry(ctx, s, 7, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.VerifyProof(p, known); err != nil {
		t.Fatalf("proof of an old entry: %v", err)
	}
	s.Close()

	// The new release appends to it (the records of today's layout).
	signer, err := note.NewSigner(testSignerKey)
	if err != nil {
		t.Fatal(err)
	}
	newV, err := note.NewVerifier(testVerifierKey)
	if err != nil {
		t.Fatal(err)
	}
	l, err := backends.Open(ctx, path, ledger.Options{Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ kind, id, payload string }{
		{ledger.KindGatewayDecision, "audit_new_1", `{"action":"allow","audit_event_id":"audit_new_1","gateway_decision_id":"gw_dec_new_1","phase":"decision"}`},
		{ledger.KindGatewayOutcome, "audit_new_2", `{"action":"allow","audit_event_id":"audit_new_2","completes_decision_id":"gw_dec_new_1","gateway_decision_id":"gw_dec_new_2","phase":"outcome"}`},
	} {
		if _, err := l.Append(ctx, r.kind, r.id, []byte(r.payload)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	s, err = backends.OpenStore(ctx, path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	old, _ := ledger.LoadVerifier(previousVkey)
	rep, err = ledger.Verify(ctx, s, ledger.VerifyOptions{Verifiers: note.VerifierList(old, newV)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Problem != nil || rep.Verified != previousEntries+2 || rep.Latest == nil || rep.Latest.Size != previousEntries+2 {
		t.Fatalf("the previous release's ledger continued: %+v (problem %v)", rep, rep.Problem)
	}
}
