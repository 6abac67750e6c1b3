package inspect

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/scan"
)

// toolsCallResult builds a tools/call response of about size bytes:
// text content items of prose with escapes (one in eight holding a
// secret), one text item that is JSON, and a structuredContent of rows.
func toolsCallResult(size int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":42,"result":{"content":[`)
	prose := `The deployment finished in 4.2 s.\nLogs: \"ok\" for 12 nodes; see https://example.org/runs/7 for details. `
	row := `{"id":%d,"name":"node-%d","status":"ready","note":"caf\u00e9 \u2014 fine"}`
	half := size / 2
	for i := 0; b.Len() < half; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":"text","text":"`)
		for j := 0; j < 8; j++ {
			b.WriteString(prose)
		}
		if i%8 == 0 {
			b.WriteString(`token SECRET-ABCD1234 and ops@example.com`)
		}
		b.WriteString(`"}`)
	}
	b.WriteString(`,{"type":"text","text":"[`)
	for i := 0; i < 8; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, strings.ReplaceAll(strings.ReplaceAll(row, `\`, `\\`), `"`, `\"`), i, i)
	}
	b.WriteString(`]"}],"structuredContent":{"rows":[`)
	for i := 0; b.Len() < size-64; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, row, i, i)
	}
	b.WriteString(`],"token":"SECRET-ABCD1234"},"isError":false}}`)
	return b.Bytes()
}

func TestToolsCallResult(t *testing.T) {
	for _, n := range []int{4 << 10, 1 << 20} {
		doc := toolsCallResult(n)
		checkRedacted(t, doc, doc)
		r, err := Inspect(testScanner(t), doc, Options{})
		if err != nil || len(r.Findings) == 0 {
			t.Fatalf("%d: %v, %d findings", n, err, len(r.Findings))
		}
		out, _, err := r.Redact(doc, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkRedacted(t, doc, out)
		if bytes.Contains(out, []byte("SECRET-")) {
			t.Errorf("%d: a secret left", n)
		}
	}
}

// peak reports the heap an operation needs beyond its input, as a
// multiple of the input's size: (input + bytes allocated per op) / input.
// It bounds the peak from above (nothing allocated is assumed freed).
func peak(b *testing.B, size int, before runtime.MemStats) {
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	perOp := float64(after.TotalAlloc-before.TotalAlloc) / float64(b.N)
	b.ReportMetric((float64(size)+perOp)/float64(size), "peak-x")
}

func benchInspect(b *testing.B, size int, redact bool) {
	benchWith(b, benchScanner(b), size, redact)
}

// benchWith measures Inspect (and Redact) of a tools/call result of size
// bytes with sc.
func benchWith(b *testing.B, sc *scan.Scanner, size int, redact bool) {
	doc := toolsCallResult(size)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for b.Loop() {
		r, err := Inspect(sc, doc, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if redact {
			if _, _, err := r.Redact(doc, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	peak(b, len(doc), before)
}

func BenchmarkInspect4KiB(b *testing.B)       { benchInspect(b, 4<<10, false) }
func BenchmarkInspect1MiB(b *testing.B)       { benchInspect(b, 1<<20, false) }
func BenchmarkInspectRedact4KiB(b *testing.B) { benchInspect(b, 4<<10, true) }
func BenchmarkInspectRedact1MiB(b *testing.B) { benchInspect(b, 1<<20, true) }

// builtinScanner is every built-in family (the real rules once they
// land; placeholders before).
func builtinScanner(b *testing.B) *scan.Scanner {
	sc, err := scan.New(scan.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return sc
}

func BenchmarkInspectBuiltin4KiB(b *testing.B)       { benchWith(b, builtinScanner(b), 4<<10, false) }
func BenchmarkInspectBuiltin1MiB(b *testing.B)       { benchWith(b, builtinScanner(b), 1<<20, false) }
func BenchmarkInspectRedactBuiltin1MiB(b *testing.B) { benchWith(b, builtinScanner(b), 1<<20, true) }
