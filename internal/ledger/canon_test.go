package ledger

import (
	"os"
	"testing"
)

// BenchmarkCheckCanonical checks a 2 KB outcome audit event, the largest of
// the five payloads of a forwarded call.
func BenchmarkCheckCanonical(b *testing.B) {
	p, err := os.ReadFile("../jcs/testdata/audit_event.canonical.json")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		if err := checkCanonical(p); err != nil {
			b.Fatal(err)
		}
	}
}
