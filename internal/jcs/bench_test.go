package jcs

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// benchInputs are a 2 KB outcome audit event as the gateway wrote it before
// events referenced the records they link instead of embedding them
// (already canonical) and the same value as encoding/json writes it from a
// map, indented (not canonical: the slow path).
func benchInputs(tb testing.TB) (canonical, other []byte) {
	tb.Helper()
	canonical, err := os.ReadFile("testdata/audit_event.canonical.json")
	if err != nil {
		tb.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(canonical, &v); err != nil {
		tb.Fatal(err)
	}
	if other, err = json.MarshalIndent(v, "", "  "); err != nil {
		tb.Fatal(err)
	}
	if bytes.Equal(canonical, other) {
		tb.Fatal("the non-canonical input is canonical")
	}
	return canonical, other
}

func BenchmarkCanonical(b *testing.B) {
	canonical, other := benchInputs(b)
	for _, in := range []struct {
		name string
		b    []byte
	}{{"canonical", canonical}, {"indented", other}} {
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(in.b)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Canonical(in.b); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
