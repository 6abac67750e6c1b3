package evidence_test

import (
	"crypto/ed25519"
	"encoding/hex"
	"fmt"

	"github.com/gatehouse-mcp/gatehouse/internal/evidence"
)

func ExampleCanonical() {
	out, err := evidence.Canonical([]byte(`{"b": 1.0, "a": [1e21, 0.000001, "\u00e9"]}`))
	fmt.Println(string(out), err)
	_, err = evidence.Canonical([]byte(`{"id": 9007199254740993}`))
	fmt.Println(err)
	// Output:
	// {"a":[1e+21,0.000001,"é"],"b":1} <nil>
	// jcs: JSON number not exactly representable as an IEEE 754 double (at /id)
}

func ExampleHash() {
	h, _ := evidence.Hash([]byte(`{ "b": 2, "a": 1 }`))
	fmt.Println(h)
	// Output: sha256:43258cff783fe7036d8a43033f830adfc60ec037382473548ac742b888292777
}

// A server signs a receipt with Ed25519; the gateway finds it in a result,
// parses it and verifies it with the server's public key.
func ExampleVerify() {
	seed, _ := hex.DecodeString("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60") // RFC 8032 test key
	priv := ed25519.NewKeyFromSeed(seed)
	receipt, _ := evidence.Sign([]byte(`{"receipt_id":"mcp_rcpt_1","schema_version":"0.1",
		"issued_at":"2026-05-19T08:15:30Z","server_id":"srv","tool_name":"read_file","tool_call_id":"req_1"}`),
		evidence.AlgEd25519, priv)
	result := []byte(`{"content":[],"_meta":{"dev.gatehouse/security-receipt":` + string(receipt) + `}}`)

	keys := evidence.Keys{Ed25519: map[string]ed25519.PublicKey{"srv": priv.Public().(ed25519.PublicKey)}}
	raw, key, found := evidence.Find(result, evidence.DefaultReceiptKeys)
	r, problems, err := evidence.Parse(raw)
	fmt.Println(key, found, len(problems), err)
	fmt.Println(evidence.Verify(raw, r, keys))
	fmt.Println(evidence.Verify(raw, r, evidence.Keys{}))
	// Output:
	// dev.gatehouse/security-receipt true 0 <nil>
	// ok
	// unknown
}

func ExampleFind_legacyDotted() {
	result := []byte(`{"_meta":{"interlock.receipt_id":"r1","interlock.ledger_seq":42,"other":true}}`)
	raw, key, found := evidence.Find(result, evidence.DefaultReceiptKeys)
	fmt.Println(string(raw), key, found)
	// Output: {"receipt_id":"r1","ledger_seq":42} interlock true
}

func ExampleRequirement_Check() {
	for _, s := range []evidence.Status{evidence.StatusOK, evidence.StatusUnsigned, evidence.StatusEmpty} {
		action, reason := evidence.RequirePresent.Check(s)
		fmt.Printf("%s: %s (%s)\n", s, action, reason)
	}
	// Output:
	// ok: allow (server receipt verified)
	// unsigned: monitor (server receipt present but not verified (unsigned))
	// empty: deny (no server receipt and receipts.require is present)
}

func ExampleConfidence() {
	intent := evidence.Normalize(evidence.IntentInput{
		Declaration: &evidence.ToolDeclaration{SideEffect: "read_only", Externality: "internal"},
	})
	fmt.Println(intent.SideEffect, intent.Sources["side_effect"], intent.Sources["data_classes"])
	fmt.Println(evidence.Confidence(intent, 0), evidence.Confidence(intent, 1))
	// Output:
	// read_only meta unknown
	// 0.34 0.24
}
