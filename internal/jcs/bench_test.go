package jcs

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"io"
	"os"
	"strings"
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

// BenchmarkWriteCanonical hashes a tool result as servers send it (content
// members out of order, 1 KiB of canonical structuredContent) and the
// indented audit event, and a 120 KB array of small unsorted objects:
// WriteCanonical as it is, taking every value apart, and the encoder alone
// (why values under splitMinBytes, and containers without a part that big,
// are not taken apart).
func BenchmarkWriteCanonical(b *testing.B) {
	_, indented := benchInputs(b)
	result := []byte(`{"content":[{"type":"text","text":"ok"}],"structuredContent":{"data":"` + strings.Repeat("abcdefgh", 128) + `","n":[1,2,3]}}`)
	for _, in := range []struct {
		name string
		b    []byte
	}{{"tool-result", result}, {"indented", indented}, {"small-objects", []byte("[" + strings.Repeat(`{"type":"text","text":"line"},`, 4000) + `{}]`)}} {
		for _, path := range []struct {
			name  string
			write func(io.Writer, []byte) error
		}{{"WriteCanonical", WriteCanonical}, {"split-all", func(w io.Writer, b []byte) error { return writeCanonical(w, b, 0) }}, {"encoder", encodeCanonical}} {
			b.Run(in.name+"/"+path.name, func(b *testing.B) {
				h := sha256.New()
				b.SetBytes(int64(len(in.b)))
				b.ReportAllocs()
				for b.Loop() {
					h.Reset()
					if err := path.write(h, in.b); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
