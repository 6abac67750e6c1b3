package drift

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/jcs"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
)

// load reads a tool definition from testdata with mcp.ParseTool.
func load(t testing.TB, name string) mcp.Tool {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	tool, err := mcp.ParseTool(raw)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return tool
}

// TestDraftExampleFlow is the source document's "Example Flow": a tool
// that was read-only and internal gains export and share effects, becomes
// mutating and external and requires artifact.write and external.share;
// its drift is critical, the tool is quarantined, and the decision's
// drift_result.changes are the draft's three, in the draft's order.
func TestDraftExampleFlow(t *testing.T) {
	base := load(t, "publish_artifact_baseline.json")
	cur := load(t, "publish_artifact_current.json")
	r := Compare(base, cur, Options{})
	if r.Severity != Critical || r.Action != ActionQuarantine {
		t.Errorf("severity %v action %q, want critical quarantine", r.Severity, r.Action)
	}
	want := []string{"externality_changed_to_external", "effect_added_share", "scope_added_external_share"}
	if got := r.Decisive(); !slices.Equal(got, want) {
		t.Errorf("Decisive() = %q, want %q", got, want)
	}
	high := map[string]bool{"effect_added_export": true, "side_effect_escalated_to_mutating": true, "scope_added_artifact_write": true,
		"sensitive_field_added": true}
	for _, c := range r.Changes {
		if high[c.Kind] {
			if c.Severity != High {
				t.Errorf("%s: %v, want high", c.Kind, c.Severity)
			}
			delete(high, c.Kind)
		}
		if c.Heuristic {
			t.Errorf("%s rests on heuristics; the declaration says it", c.Kind)
		}
	}
	if len(high) > 0 {
		t.Errorf("missing changes %v in %+v", high, r.Changes)
	}
	for _, w := range []string{"tool capability drift detected", "external sharing added"} {
		if !slices.Contains(r.Warnings, w) {
			t.Errorf("warnings %q lack %q", r.Warnings, w)
		}
	}
}

// TestDraftDriftResult: the drift_result of the draft's gateway decision
// receipt (internal/evidence/testdata/gateway/draft_example.json), member
// for member.
func TestDraftDriftResult(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "evidence", "testdata", "gateway", "draft_example.json"))
	if err != nil {
		t.Fatal(err)
	}
	var receipt struct {
		DriftResult json.RawMessage `json:"drift_result"`
	}
	if err := json.Unmarshal(raw, &receipt); err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(Compare(load(t, "publish_artifact_baseline.json"), load(t, "publish_artifact_current.json"), Options{}).DriftResult())
	if err != nil {
		t.Fatal(err)
	}
	want, err := jcs.Canonical(receipt.DriftResult)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ = jcs.Canonical(got); string(got) != string(want) {
		t.Errorf("drift_result %s, want %s", got, want)
	}
	base := load(t, "publish_artifact_baseline.json")
	if d := Compare(base, base, Options{}).DriftResult(); d != nil {
		t.Errorf("no drift: %+v", d)
	}
}
