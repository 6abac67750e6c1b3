package ledger

import (
	"os"
	"testing"
)

// BenchmarkCheckCanonical checks a 2 KB canonical record: an outcome audit
// event as the gateway wrote it before events referenced the records they
// link instead of embedding them (the largest payload of a call is now the
// outcome decision receipt, about 1.2 KB).
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
