package policy

import (
	"strings"
	"testing"
)

func TestDriftBlock(t *testing.T) {
	d := mustParse(t, "name: p\nversion: '1'\n").Drift()
	if d.Baseline != BaselineFirstUse || d.Listing != ListingMark || d.HideDenied || d.Added != ActionMonitor || d.Renamed != ActionQuarantine {
		t.Errorf("defaults: %+v", d)
	}
	if d.Actions["critical"] != ActionQuarantine || d.Actions["high"] != ActionDeny || d.Actions["moderate"] != ActionMonitor || d.Actions["minor"] != ActionMonitor {
		t.Errorf("default actions: %v", d.Actions)
	}
	d = mustParse(t, "name: p\nversion: '1'\ndrift:\n  baseline: require\n  listing: hide\n  hide_denied: true\n  added: deny\n  renamed: monitor\n  actions:\n    high: quarantine\n    minor: allow\n").Drift()
	if d.Baseline != BaselineRequire || d.Listing != ListingHide || !d.HideDenied || d.Added != ActionDeny || d.Renamed != ActionMonitor {
		t.Errorf("set: %+v", d)
	}
	if d.Actions["high"] != ActionQuarantine || d.Actions["minor"] != ActionAllow || d.Actions["critical"] != ActionQuarantine {
		t.Errorf("set actions: %v", d.Actions)
	}
	if b := mustParse(t, "name: p\nversion: '1'\ndrift:\n  baseline: first-use\n").Drift().Baseline; b != BaselineFirstUse {
		t.Errorf("baseline: first-use (wrap --baseline's spelling) read as %q", b)
	}
	// Drift returns a copy: the policy is immutable.
	d.Actions["critical"] = ActionAllow
}

func TestDriftErrors(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{"drift: [1]", "drift must be a mapping"},
		{"drift:\n  baseline: tofu", `invalid baseline "tofu" (want first_use or require)`},
		{"drift:\n  listing: strike", `invalid listing "strike" (want mark or hide)`},
		{"drift:\n  hide_denied: maybe", "hide_denied must be true or false"},
		{"drift:\n  actions:\n    severe: deny", `unknown key "severe" (want one of minor, moderate, high, critical)`},
		{"drift:\n  actions:\n    high: redact", "action redact rewrites findings; drift has none"},
		{"drift:\n  added: block", `invalid action "block"`},
		{"drift:\n  actions: deny", "actions must be a mapping of severity to action"},
	} {
		_, err := Parse("p.yaml", []byte("name: p\nversion: '1'\n"+c.body+"\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want it to contain %q", c.body, err, c.want)
		}
	}
}

func TestDriftVariable(t *testing.T) {
	p := mustParse(t, `name: p
version: '1'
rules:
  - id: high_risk_externality_drift
    action: quarantine
    reason: Tool added external share/export capability compared with stored baseline
    when: drift.severity == "critical" && "externality_changed_to_external" in drift.changes
  - id: new_tools
    action: monitor
    reason: a tool added since the baseline
    when: drift.status == "added"
`)
	for _, c := range []struct {
		name  string
		drift *DriftView
		want  string
	}{
		{"draft", &DriftView{Status: "changed", Severity: "critical", Action: "quarantine",
			Changes: []string{"externality_changed_to_external", "effect_added_share", "scope_added_external_share"}}, "high_risk_externality_drift"},
		{"critical without externality", &DriftView{Status: "changed", Severity: "critical", Changes: []string{"side_effect_escalated_to_destructive"}}, "default"},
		{"added", &DriftView{Status: "added", Severity: "moderate", Changes: []string{"tool_added"}}, "new_tools"},
		{"nil is unknown", nil, "default"},
	} {
		d := p.Evaluate(&Input{Tool: Tool{Name: "publish_artifact", Known: true}, Drift: c.drift})
		if d.Rule != c.want {
			t.Errorf("%s: rule %q (%s), want %q", c.name, d.Rule, d.Reason, c.want)
		}
	}
	// The drift vocabulary is checked like the tool's.
	if _, err := Parse("p.yaml", []byte("name: p\nversion: '1'\nrules:\n  - id: r\n    action: deny\n    reason: r\n    when: drift.severity == \"severe\"\n")); err == nil || !strings.Contains(err.Error(), "severe") {
		t.Errorf("a severity outside the vocabulary: err = %v", err)
	}
	if _, err := Parse("p.yaml", []byte("name: p\nversion: '1'\nrules:\n  - id: r\n    action: deny\n    reason: r\n    when: '\"externality_changed_to_externl\" in drift.changes'\n")); err == nil || !strings.Contains(err.Error(), "holds change kinds") {
		t.Errorf("a misspelt change kind: err = %v", err)
	}
	if _, err := Parse("p.yaml", []byte("name: p\nversion: '1'\nrules:\n  - id: r\n    action: deny\n    reason: r\n    when: drift.sevrity == \"high\"\n")); err == nil {
		t.Error("a misspelt drift field compiled")
	}
}
