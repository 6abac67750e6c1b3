package inspect

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/gatehouse-mcp/gatehouse/internal/scan"
	"github.com/gatehouse-mcp/gatehouse/internal/strictjson"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/redact")

// TestRedactGolden holds Redact's wire bytes to testdata/redact/*.txtar:
// each has input.json, and the findings (every one selected, member
// names scanned), output.json and records it gives (-update rewrites
// them).
func TestRedactGolden(t *testing.T) {
	sc := testScanner(t)
	files, _ := filepath.Glob("testdata/redact/*.txtar")
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sections := map[string][]byte{}
			for _, f := range ar.Files {
				sections[f.Name] = f.Data
			}
			in := sections["input.json"]
			if err := strictjson.Validate(in); err != nil {
				t.Fatalf("input: %v", err)
			}
			r, err := Inspect(sc, in, Options{ScanNames: true})
			if err != nil {
				t.Fatal(err)
			}
			out, recs, err := r.Redact(in, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkRedacted(t, in, out)
			findings := []byte(strings.Join(got(r), "\n") + "\n")
			var rb bytes.Buffer
			for _, rec := range recs {
				line, _ := json.Marshal(rec)
				rb.Write(line)
				rb.WriteByte('\n')
			}
			want := map[string][]byte{"findings": findings, "output.json": out, "records": rb.Bytes()}
			if *update {
				ar.Files = []txtar.File{{Name: "input.json", Data: in}}
				for _, name := range []string{"findings", "output.json", "records"} {
					ar.Files = append(ar.Files, txtar.File{Name: name, Data: want[name]})
				}
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			for _, name := range []string{"findings", "output.json", "records"} {
				if !bytes.Equal(sections[name], want[name]) {
					t.Errorf("%s:\n got %s\nwant %s", name, want[name], sections[name])
				}
			}
		})
	}
}

// checkRedacted checks out is valid JSON and has in's tokens, every one
// but string values byte for byte.
func checkRedacted(t testing.TB, in, out []byte) {
	t.Helper()
	if err := strictjson.Validate(out); err != nil {
		t.Fatalf("output is not strict JSON: %v\n%s", err, out)
	}
	di := jsontext.NewDecoder(bytes.NewReader(in))
	do := jsontext.NewDecoder(bytes.NewReader(out))
	for {
		ti, erri := di.ReadToken()
		to, erro := do.ReadToken()
		if erri != nil || erro != nil {
			if (erri == nil) != (erro == nil) {
				t.Fatalf("token streams differ in length: %v, %v", erri, erro)
			}
			break
		}
		if ti.Kind() != to.Kind() {
			t.Fatalf("token kinds differ: %v, %v", ti.Kind(), to.Kind())
		}
		if ti.Kind() != '"' {
			if ti.String() != to.String() {
				t.Fatalf("token %v became %v", ti, to)
			}
			continue
		}
		// Member names are never rewritten.
		if kind, n := di.StackIndex(di.StackDepth()); kind == '{' && n%2 == 1 && ti.String() != to.String() {
			t.Fatalf("member name %q became %q", ti.String(), to.String())
		}
	}
}

func TestRedactNothingSelected(t *testing.T) {
	sc := testScanner(t)
	for _, doc := range []string{
		`{"a":"SECRET-ABCD1234","b":"bob@example.com"}`,
		`{"nothing":"here"}`,
	} {
		in := []byte(doc)
		r, err := Inspect(sc, in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		out, recs, err := r.Redact(in, func(Finding) bool { return false })
		if err != nil || recs != nil || &out[0] != &in[0] || len(out) != len(in) {
			t.Errorf("%s: Redact selecting nothing = %q, %v, %v; want doc itself", doc, out, recs, err)
		}
	}
}

func TestRedactSelection(t *testing.T) {
	sc := testScanner(t)
	in := []byte(`{"a":"SECRET-ABCD1234 bob@example.com","b":["bob@example.com"]}`)
	r, err := Inspect(sc, in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	highSecrets := func(f Finding) bool { return f.Class == scan.ClassSecret && f.Confidence == scan.High }
	out, recs, err := r.Redact(in, highSecrets)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":"[REDACTED_SECRET] bob@example.com","b":["bob@example.com"]}`; string(out) != want {
		t.Errorf("out %s\nwant %s", out, want)
	}
	if len(recs) != 1 || recs[0] != (Redaction{Field: "/a", Class: "secret", Method: "pattern", Replacement: ReplacementSecret}) {
		t.Errorf("records %+v", recs)
	}
	out, recs, err = r.Redact(in, func(f Finding) bool { return f.Class == scan.ClassPII })
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":"SECRET-ABCD1234 [REDACTED_PII]","b":["[REDACTED_PII]"]}`; string(out) != want {
		t.Errorf("out %s\nwant %s", out, want)
	}
	// The second occurrence is a finding too: selected, it is "pattern",
	// not "consistent".
	if len(recs) != 2 || recs[1].Method != "pattern" || recs[1].Field != "/b/0" {
		t.Errorf("records %+v", recs)
	}
}

func TestRedactMismatch(t *testing.T) {
	sc := testScanner(t)
	in := []byte(`{"a":"SECRET-ABCD1234"}`)
	r, err := Inspect(sc, in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Redact([]byte(`{"a":"x"}`), nil); err == nil {
		t.Error("Redact of another document: no error")
	}
	if _, _, err := r.Redact([]byte(`{"b":"SECRET-ABCD1234"}`), nil); err == nil {
		t.Error("Redact of a same-length document: no error")
	}
}

func TestRedactSchema(t *testing.T) {
	// The redacted structuredContent still validates against the tool's
	// outputSchema.
	sc := testScanner(t)
	schema := []byte(`{"type":"object","properties":{"token":{"type":"string"},"n":{"type":"integer"}},"required":["token"],"additionalProperties":false}`)
	in := []byte(`{"token":"SECRET-ABCD1234","n":3}`)
	r, err := Inspect(sc, in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := r.Redact(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckSchema(schema, out); err != nil {
		t.Errorf("redacted value: %v", err)
	}
}

// TestRedactMemory: a 1 MiB string with escapes and a secret in every
// line (of 128 bytes; of 26 bytes in the dense case) is scanned and
// redacted with at most 4.5x (dense: 5x) its size allocated, the
// document included (the decoded copy and the output are 2x of it; the
// rest is findings and edits): each leaf is decoded once, spans are
// mapped with a cursor, edits are compact. Before, one leaf decoded per
// finding and spans mapped from the leaf's start made this 5000x and
// minutes.
func TestRedactMemory(t *testing.T) {
	sc := benchScanner(t)
	for _, tc := range []struct {
		pad   int
		limit float64
	}{{100, 4.5}, {0, 5}} {
		var b bytes.Buffer
		b.WriteString(`{"content":[{"type":"text","text":"`)
		for i := 0; b.Len() < 1<<20; i++ {
			fmt.Fprintf(&b, `line %d \"SECRET-%08d\"\n%s`, i%1000, i%1000, strings.Repeat("x", tc.pad))
		}
		b.WriteString(`"}]}`)
		doc := b.Bytes()
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r, err := Inspect(sc, doc, Options{MaxFindings: 1000})
		if err != nil {
			t.Fatal(err)
		}
		out, recs, err := r.Redact(doc, nil)
		if err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		ratio := float64(len(doc)+int(after.TotalAlloc-before.TotalAlloc)) / float64(len(doc))
		t.Logf("line padding %d: peak-x %.2f", tc.pad, ratio)
		limit := tc.limit
		if raceEnabled {
			// The race detector drops sync.Pool items at random: a
			// pooled buffer of the document's size may be allocated
			// again (seen: +1.0x in CI).
			limit++
		}
		if ratio > limit {
			t.Errorf("line padding %d: peak-x %.2f > %.1f", tc.pad, ratio, limit)
		}
		if bytes.Contains(out, []byte("SECRET-")) || len(recs) != 2 || recs[0].Method != "pattern" || recs[1].Method != "consistent" {
			t.Errorf("not every secret redacted, or records %v", recs)
		}
	}
}

func TestRedactFromNamesAndTruncated(t *testing.T) {
	sc := testScanner(t)
	// A secret member name is not rewritten; its value elsewhere is.
	in := []byte(`{"SECRET-ABCD1234":"x","b":"key SECRET-ABCD1234"}`)
	r, err := Inspect(sc, in, Options{ScanNames: true})
	if err != nil {
		t.Fatal(err)
	}
	out, recs, err := r.Redact(in, func(f Finding) bool { return f.Path == "/SECRET-ABCD1234" })
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"SECRET-ABCD1234":"x","b":"key [REDACTED_SECRET]"}`; string(out) != want {
		t.Errorf("out %s\nwant %s", out, want)
	}
	if len(recs) != 1 || recs[0].Method != "consistent" || recs[0].Field != "/b" {
		t.Errorf("records %+v", recs)
	}
	// A truncated report: later occurrences of what was found are
	// redacted too, the walk goes on to the end.
	in = []byte(`["SECRET-AAAAAAAA","SECRET-BBBBBBBB","x SECRET-AAAAAAAA"]`)
	r, err = Inspect(sc, in, Options{MaxFindings: 1})
	if err != nil || !r.Truncated {
		t.Fatalf("%v, truncated %v", err, r.Truncated)
	}
	out, _, err = r.Redact(in, nil)
	if want := `["[REDACTED_SECRET]","SECRET-BBBBBBBB","x [REDACTED_SECRET]"]`; err != nil || string(out) != want {
		t.Errorf("truncated: %s, %v; want %s", out, err, want)
	}
}
