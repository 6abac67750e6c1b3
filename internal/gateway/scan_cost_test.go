package gateway

import (
	"bytes"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/evidence"
	"github.com/gatehouse-mcp/gatehouse/internal/jcs"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
	"github.com/gatehouse-mcp/gatehouse/internal/scan"
)

// TestScanJSONIdentical: scanJSON's encoding of a pass (encoded once) is
// byte for byte what jcs.Marshal gives, and every other result is still
// encoded as it is.
func TestScanJSONIdentical(t *testing.T) {
	for _, r := range []*evidence.ScanResult{
		{Status: evidence.ScanPass, Action: "allow"},
		{Status: evidence.ScanPass},
		{Status: evidence.ScanPass, Action: "deny"},
		{Status: evidence.ScanPass, Action: "allow", Reason: "why"},
		{Status: evidence.ScanPass, Action: "allow", ArgumentKeys: []string{}},
		{Status: evidence.ScanNotRun, Reason: "argument scanning is off (scanning.arguments)"},
		{Status: evidence.ScanFail, Action: "redact", Findings: []evidence.ScanFinding{{Rule: "r", Class: "secret", Confidence: "high", Path: "/arguments/a", Action: "redact"}},
			Redactions: []evidence.Redaction{{Field: "/arguments/a", Class: "secret", Method: "pattern", Replacement: "[REDACTED_SECRET]"}}},
	} {
		want, err := jcs.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := scanJSON(r); !bytes.Equal(got, want) {
			t.Errorf("scanJSON(%+v) = %s, want %s", r, got, want)
		}
	}
	if scanJSON(nil) != nil {
		t.Error("scanJSON(nil) is not nil")
	}
}

// TestScanCostNoFinding: scanning a document without findings costs the
// inspect.Report and one outcome (its result and view with it), and
// encoding its pass result for the decision event allocates nothing.
func TestScanCostNoFinding(t *testing.T) {
	sc, err := scan.New(scan.Options{NoSecrets: true, NoPII: true, NoInjection: true})
	if err != nil {
		t.Fatal(err)
	}
	s := &scanStage{scanner: sc}
	doc := []byte(`{"query":"quarterly report","limit":20,"tags":["a","b"],"text":"nothing to see here"}`)
	var o *scanOutcome
	allocs := testing.AllocsPerRun(200, func() {
		o = s.inspectDoc(doc, "/arguments", "search", "srv", policy.WhereArguments)
	})
	if o.action != policy.ActionAllow || o.result.Status != evidence.ScanPass || o.view.Status != evidence.ScanPass ||
		o.result.Action != "allow" || o.report == nil || o.prefix != "/arguments" {
		t.Fatalf("outcome %+v, result %+v, view %+v", o, o.result, o.view)
	}
	if allocs > 2 && !raceEnabled {
		t.Errorf("inspectDoc of a document without findings: %v allocations, want at most 2", allocs)
	}
	if a := testing.AllocsPerRun(200, func() { _ = scanJSON(o.result) }); a != 0 {
		t.Errorf("scanJSON of a pass result: %v allocations, want 0", a)
	}
}

func BenchmarkInspectDocNoFinding(b *testing.B) {
	sc, err := scan.New(scan.Options{})
	if err != nil {
		b.Fatal(err)
	}
	s := &scanStage{scanner: sc}
	doc := []byte(`{"data":"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ-_abcdefghijklmnopqrstuvwxyz"}`)
	b.ReportAllocs()
	for b.Loop() {
		o := s.inspectDoc(doc, "/arguments", "echo", "srv", policy.WhereArguments)
		_ = scanJSON(o.result)
	}
}
