package drift

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
)

// fuzzTool reads a definition from fuzz bytes: with mcp.ParseTool when it
// is one, else as a tool whose inputSchema is the bytes as they are (the
// opaque path).
func fuzzTool(b []byte) mcp.Tool {
	if t, err := mcp.ParseTool(b); err == nil {
		return t
	}
	return mcp.Tool{Name: "fuzz", InputSchema: b}
}

// FuzzCompare: for two arbitrary definitions Compare never panics,
// Compare(a, a) is None with no change, Severity is the highest change
// severity and Action its action, heuristic changes are at most Moderate,
// different canonical forms give at least one change, and Render never
// fails.
func FuzzCompare(f *testing.F) {
	for _, name := range []string{"publish_artifact_baseline.json", "publish_artifact_current.json"} {
		raw, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw, raw)
	}
	base, _ := os.ReadFile(filepath.Join("testdata", "publish_artifact_baseline.json"))
	cur, _ := os.ReadFile(filepath.Join("testdata", "publish_artifact_current.json"))
	f.Add(base, cur)
	f.Add([]byte(schemaTool(objPath)), []byte(schemaTool(`{"type":"object","properties":{"file":{"type":"string","maxLength":3}},"required":["file"],"additionalProperties":false}`)))
	f.Add([]byte(`{"name":"a","inputSchema":true}`), []byte(`{"name":"a","inputSchema":{"items":[1],"enum":3}}`))
	f.Add([]byte(`{"name":"a","annotations":{"readOnlyHint":true}}`), []byte(`{"type":`))
	f.Fuzz(func(t *testing.T, x, y []byte) {
		a, b := fuzzTool(x), fuzzTool(y)
		if r := Compare(a, a, Options{}); r.Severity != None || len(r.Changes) != 0 || r.Action != ActionAllow {
			t.Fatalf("Compare(a, a) = %+v", r)
		}
		r := Compare(a, b, Options{})
		for _, c := range r.Changes {
			if !ValidKind(c.Kind) {
				t.Fatalf("Compare reported kind %q, which ValidKind (and so policy) refuses", c.Kind)
			}
		}
		checkResult(t, r)
		ca, errA := Canonical(a)
		cb, errB := Canonical(b)
		if errA == nil && errB == nil && string(ca) != string(cb) && len(r.Changes) == 0 {
			t.Fatalf("canonical forms differ, no change:\n%s\n%s", ca, cb)
		}
		if errA == nil && errB == nil && string(ca) == string(cb) && r.Severity != None {
			t.Fatalf("same canonical form, %+v", r)
		}
		if err := Render(discard{}, a, b, r, true); err != nil {
			t.Fatal(err)
		}
		_ = CompareListing(map[string]mcp.Tool{a.Name: a}, []mcp.Tool{b, a}, Options{})
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
