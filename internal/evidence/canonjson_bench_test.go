package evidence

import (
	"encoding/json"
	"testing"
	"time"
)

// benchEvent is an outcome record as gatehouse-bench's calls produce it,
// with a synthesized server receipt.
func benchEvent() *GatewayDecisionReceipt {
	d := &GatewayDecisionReceipt{
		GatewayDecisionID: NewGatewayDecisionID(), SchemaVersion: SchemaVersion, IssuedAt: "2026-11-30T11:47:50.989Z",
		GatewayID: "bench-gw", ServerID: "fakeserver", ToolName: "echo", ActorRefID: "bench", Role: "readonly_agent",
		Action: "allow", MatchedRule: "allow_read_only", Reason: "read-only tools are allowed", PolicyVersion: "sha256:0123",
		MetadataConfidence: 0.45, Warnings: []string{"server receipt status: empty"},
		ArgumentScanResult:  &ScanResult{Status: ScanNotRun, Reason: "no argument scanners configured", ArgumentKeys: []string{"data"}},
		ResponseScanResult:  &ScanResult{Status: ScanNotRun, Reason: "no response scanners configured"},
		InputHash:           "sha256:5e437102bc740d2a1542e0042292e9777d9eb2b93ef0b56899e4127a2dc10dac",
		OutputHash:          "sha256:420da8676baa34fc33239b429aac44e20c02dc821f17cb05a95047a215e18032",
		ToolSchemaHash:      "sha256:82ef96cebaf5fbe16269fd18b0240d78f5b9b90a4155a17eb797115b09148ecf",
		ToolDescriptionHash: "sha256:8d2c49beb1ba05791413f061c34713668ba7861b71b60d358fe268c2d80a5712",
		ServerReceiptStatus: StatusEmpty,
	}
	d.SynthesizedReceipt = Synthesize(CallFacts{ServerID: "fakeserver", ToolName: "echo", ToolCallID: "req_1",
		InputHash: d.InputHash, OutputHash: d.OutputHash, ArgumentKeys: []string{"data"}},
		ToolIntent{DeclaredSideEffects: []string{"read"}, SideEffect: "read_only", Externality: "external"}, time.Date(2026, 11, 30, 11, 47, 50, 989e6, time.UTC))
	d.Phase, d.AuditEventID, d.CompletesDecisionID = PhaseOutcome, NewAuditEventID(), NewGatewayDecisionID()
	d.ServerReceiptID = d.SynthesizedReceipt.ReceiptID
	return d
}

// BenchmarkCanonicalJSON compares the direct canonical encoding of an
// outcome record with what it replaced, Canonical(json.Marshal(v)).
func BenchmarkCanonicalJSON(b *testing.B) {
	e := benchEvent()
	b.Run("CanonicalJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := CanonicalJSON(e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Marshal+Canonical", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			j, err := json.Marshal(e)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := Canonical(j); err != nil {
				b.Fatal(err)
			}
		}
	})
}
