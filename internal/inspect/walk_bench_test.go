package inspect

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/bench"
	"github.com/gatehouse-mcp/gatehouse/internal/scan"
)

// The walk's own cost, measured on the documents the gateway scans for a
// tools/call: its arguments object and its result, with a scanner that
// finds nothing (no detector: only the walk and the visits are measured)
// and with every built-in rule on.

// noopScanner is a scanner with no detector at all.
func noopScanner(b *testing.B) *scan.Scanner {
	sc, err := scan.New(scan.Options{NoSecrets: true, NoPII: true, NoInjection: true})
	if err != nil {
		b.Fatal(err)
	}
	return sc
}

// argsDoc is a tools/call arguments object of about size bytes: a few
// short members and one long text member of benign text (bench.BenignText).
func argsDoc(size int) []byte {
	head := `{"query":"quarterly report","limit":20,"offset":0,"exact":false,"tags":["finance","2026"],"text":"`
	doc := append([]byte(head), bench.BenignText(max(size-len(head)-2, 0))...)
	return append(doc, `"}`...)
}

// resultDoc is a tools/call result of about size bytes: a text content
// item of benign text, and the same text again as structuredContent, as a
// tool that returns both does.
func resultDoc(size int) []byte {
	n := max((size-96)/2, 0)
	text := bench.BenignText(n)
	doc := []byte(`{"content":[{"type":"text","text":"`)
	doc = append(doc, text...)
	doc = append(doc, `"}],"structuredContent":{"text":"`...)
	doc = append(doc, text...)
	doc = append(doc, `","count":`+strconv.Itoa(n)+`,"ok":true}}`...)
	return doc
}

// linesDoc is a text result of about size bytes of lines of benign text,
// quoted as tool output is: a "\n" escape every line, a \" pair in some.
func linesDoc(size int) []byte {
	doc := []byte(`{"content":[{"type":"text","text":"`)
	text := bench.BenignText(size)
	for i := 0; len(doc) < size-4 && i < len(text); i += 60 {
		line := text[i:min(i+60, len(text))]
		if i%180 == 0 {
			doc = append(doc, `\"`...)
			doc = append(doc, bytes.ReplaceAll(line, []byte(`"`), nil)...)
			doc = append(doc, `\"`...)
		} else {
			doc = append(doc, line...)
		}
		doc = append(doc, `\n`...)
	}
	return append(doc, `"}]}`...)
}

func benchDoc(b *testing.B, sc *scan.Scanner, doc []byte) {
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Inspect(sc, doc, Options{Mode: scan.ModeData}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWalk(b *testing.B) {
	docs := []struct {
		name string
		doc  []byte
	}{
		{"args1KiB", argsDoc(1 << 10)},
		{"args4KiB", argsDoc(4 << 10)},
		{"result1KiB", resultDoc(1 << 10)},
		{"result4KiB", resultDoc(4 << 10)},
		{"data4KiB", append(append([]byte(`{"data":"`), bench.BenignText(4<<10)...), `"}`...)},
		{"lines4KiB", linesDoc(4 << 10)},
		{"toolsCall4KiB", toolsCallResult(4 << 10)},
	}
	for _, sc := range []struct {
		name string
		new  func(*testing.B) *scan.Scanner
	}{{"noop", noopScanner}, {"builtin", builtinScanner}} {
		s := sc.new(b)
		for _, d := range docs {
			b.Run(sc.name+"/"+d.name, func(b *testing.B) { benchDoc(b, s, d.doc) })
		}
	}
}
