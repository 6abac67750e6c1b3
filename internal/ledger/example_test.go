package ledger_test

import (
	"context"
	"fmt"

	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// A gateway appends its records; an auditor verifies the whole ledger and
// checks one entry offline with only the public key.
func Example() {
	ctx := context.Background()
	signer, _ := note.NewSigner(testSignerKey) // from `gatehouse keys generate`
	l, err := ledger.New(ctx, ledger.NewMemStore(), ledger.Options{LedgerID: "gw-example", Signer: signer})
	if err != nil {
		panic(err)
	}
	payload, _ := ledger.Canonicalize([]byte(`{"tool_name": "write_file", "action": "deny"}`))
	e, err := l.Append(ctx, ledger.KindGatewayDecision, "gw_dec_1", payload)
	if err != nil {
		panic(err)
	}
	fmt.Println(e.Seq, e.PreviousHash == ledger.ZeroHash, string(e.Payload))
	cp, _ := l.Checkpoint(ctx) // signed and stored

	verifier, _ := note.NewVerifier(testVerifierKey)
	rep, _ := ledger.Verify(ctx, l.Store(), ledger.VerifyOptions{Verifiers: note.VerifierList(verifier)})
	fmt.Println(rep.Size, rep.Checkpoints, rep.Problem == nil)

	proof, _ := ledger.ProveEntry(ctx, l.Store(), 0, cp.Size)
	got, err := ledger.VerifyProof(proof, note.VerifierList(verifier))
	fmt.Println(got.Entry.RecordID, err)
	// Output:
	// 0 true {"action":"deny","tool_name":"write_file"}
	// 1 1 true
	// gw_dec_1 <nil>
}

func ExampleFormatCheckpoint() {
	root := tlog.RecordHash([]byte("x"))
	fmt.Printf("%s", ledger.FormatCheckpoint(ledger.Origin("gw-prod"), 1000, root))
	// Output:
	// gatehouse-ledger/gw-prod
	// 1000
	// PH6byTDck/AfppmF7yQtn56GHzxTVaokzl70tLinDMs=
}
