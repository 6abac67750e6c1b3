package inspect

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/gatehouse-mcp/gatehouse/internal/scan"
	"github.com/gatehouse-mcp/gatehouse/internal/strictjson"
)

// spanDetector reports, in every text of 2 bytes or more, a span that
// depends only on the text's length: it cuts escapes and characters
// anywhere.
type spanDetector struct{}

func (spanDetector) Scan(in scan.Input, emit func(scan.Finding)) {
	n := len(in.Text)
	if n < 2 {
		return
	}
	s := n / 3
	e := min(n, s+1+n/5)
	classes := [...]scan.Class{scan.ClassSecret, scan.ClassPII, scan.ClassInjection}
	emit(scan.Finding{Rule: "fuzz-span", Class: classes[n%3], Confidence: scan.High, Start: s, End: e})
}

func fuzzScanner(t testing.TB) *scan.Scanner {
	sc, err := scan.New(scan.Options{NoSecrets: true, NoPII: true, NoInjection: true,
		Detectors: append(testDetectors(), spanDetector{})})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func fuzzSeeds(f *testing.F) {
	files, _ := filepath.Glob("testdata/redact/*.txtar")
	for _, file := range files {
		ar, err := txtar.ParseFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, s := range ar.Files {
			if s.Name == "input.json" {
				f.Add(s.Data, uint64(0xffffffffffffffff))
			}
		}
	}
	for _, s := range []string{
		`{"a":"b"}`, `[1,-2.5e3,true,false,null,"x"]`, `"\ud83d\ude00"`, `{"t":"{\"a\":\"\\u00e9x\"}"}`,
		`{"token":"U0VDUkVULUFCQ0QxMjM0"}`, `{"password":"a%2Fb%2Fcdefgh"}`, `{"type":"image","data":"abc"}`,
		`{"resource":{"blob":"aGVsbG8gd29ybGQ=","mimeType":"text/plain"}}`, `{"a":[{"b":"\"\\\/\b\f\n\r\t"}]}`,
	} {
		f.Add([]byte(s), uint64(0x5555))
	}
	if b, err := os.ReadFile("testdata/tool.json"); err == nil {
		f.Add(b, uint64(1))
	}
}

// FuzzInspect: Inspect never panics; it accepts every strict JSON value;
// redacting every finding gives valid JSON with the same tokens but
// string values.
func FuzzInspect(f *testing.F) {
	fuzzSeeds(f)
	sc := fuzzScanner(f)
	f.Fuzz(func(t *testing.T, doc []byte, _ uint64) {
		r, err := Inspect(sc, doc, Options{ScanNames: true})
		strict := strictjson.Validate(doc) == nil
		if err != nil {
			if strict && !errors.Is(err, ErrLimit) {
				t.Fatalf("strict JSON refused: %v", err)
			}
			if !errors.Is(err, ErrSyntax) && !errors.Is(err, ErrLimit) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		if _, err := InspectTool(sc, doc); err != nil && !errors.Is(err, ErrSyntax) && !errors.Is(err, ErrLimit) {
			t.Fatalf("InspectTool: untyped error: %v", err)
		}
		if !strict {
			return
		}
		out, _, err := r.Redact(doc, nil)
		if err != nil {
			t.Fatalf("Redact: %v", err)
		}
		checkRedacted(t, doc, out)
	})
}

// FuzzRedact: with any selection of the findings, Redact gives valid JSON
// whose bytes outside string values are unchanged; with none selected it
// gives doc itself.
func FuzzRedact(f *testing.F) {
	fuzzSeeds(f)
	sc := fuzzScanner(f)
	f.Fuzz(func(t *testing.T, doc []byte, mask uint64) {
		if strictjson.Validate(doc) != nil {
			return
		}
		r, err := Inspect(sc, doc, Options{ScanNames: mask&1 == 1})
		if err != nil {
			if errors.Is(err, ErrLimit) {
				return
			}
			t.Fatal(err)
		}
		i := 0
		out, recs, err := r.Redact(doc, func(Finding) bool { i++; return mask>>(i%64)&1 == 1 })
		if err != nil {
			t.Fatalf("Redact: %v", err)
		}
		checkRedacted(t, doc, out)
		if len(recs) == 0 && !bytes.Equal(out, doc) {
			t.Fatal("output changed without a record")
		}
		out, recs, err = r.Redact(doc, func(Finding) bool { return false })
		if err != nil || recs != nil || !bytes.Equal(out, doc) {
			t.Fatalf("nothing selected: %v, %v, changed %v", err, recs, !bytes.Equal(out, doc))
		}
		// Redacting the output again finds the replacements only.
		if r2, err := Inspect(sc, out, Options{}); err != nil {
			t.Fatalf("Inspect of the output: %v", err)
		} else if _, _, err := r2.Redact(out, nil); err != nil {
			t.Fatalf("Redact of the output: %v", err)
		}
	})
}
