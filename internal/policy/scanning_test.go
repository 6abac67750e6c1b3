package policy

import (
	"strings"
	"testing"
)

func TestScanningDefaults(t *testing.T) {
	for _, p := range []*Policy{Default(), mustParse(t, "name: p\nversion: '1'\n")} {
		s := p.Scanning()
		if !s.Arguments || !s.Responses || !s.Tools {
			t.Fatalf("%s: scanners off by default: %+v", p.Name(), s)
		}
		for _, c := range []struct {
			f    Finding
			want Action
		}{
			{Finding{Rule: "github-pat", Class: "secret", Confidence: "high"}, ActionRedact},
			{Finding{Rule: "generic-api-key", Class: "secret", Confidence: "low"}, ActionMonitor},
			{Finding{Rule: "pii-email", Class: "pii", Confidence: "high"}, ActionMonitor},
			{Finding{Rule: "injection-ignore-instructions", Class: "prompt_injection", Confidence: "high"}, ActionMonitor},
		} {
			for _, where := range []string{WhereArguments, WhereResponse} {
				if got := s.ActionFor(c.f, where); got != c.want {
					t.Errorf("%s: ActionFor(%+v, %s) = %s, want %s", p.Name(), c.f, where, got, c.want)
				}
			}
		}
	}
}

func TestScanningBlock(t *testing.T) {
	p := mustParse(t, `name: p
version: "1"
scanning:
  tools: false
  actions:
    - class: pii
      where: response
      action: deny
    - rule: "aws-*"
      action: redact
  suppress:
    - rule: pii-email
      tool: "contacts_*"
      reason: the contacts tool returns e-mail addresses by design
    - path: "/result/content/*/text"
      server: docs
      reason: documentation server
`)
	s := p.Scanning()
	if !s.Arguments || !s.Responses || s.Tools {
		t.Fatalf("switches: %+v", s)
	}
	pii := Finding{Rule: "pii-email", Class: "pii", Confidence: "high", Path: "/email"}
	if got := s.ActionFor(pii, WhereResponse); got != ActionDeny {
		t.Errorf("pii in response: %s, want deny", got)
	}
	if got := s.ActionFor(pii, WhereArguments); got != ActionAllow {
		t.Errorf("pii in arguments: %s, want allow (no entry matches)", got)
	}
	if got := s.ActionFor(Finding{Rule: "aws-access-token", Class: "secret", Confidence: "high"}, WhereArguments); got != ActionRedact {
		t.Errorf("aws: %s, want redact", got)
	}
	for _, c := range []struct {
		f            Finding
		tool, server string
		want         bool
	}{
		{pii, "contacts_find", "crm", true},
		{pii, "search", "crm", false},
		{Finding{Rule: "x", Path: "/result/content/0/text"}, "t", "docs", true},
		{Finding{Rule: "x", Path: "/result/content/0/text"}, "t", "crm", false},
		{Finding{Rule: "x", Path: "/result/structuredContent/a"}, "t", "docs", false},
	} {
		if got := s.Suppressed(c.f, c.tool, c.server); got != c.want {
			t.Errorf("Suppressed(%+v, %s, %s) = %v, want %v", c.f, c.tool, c.server, got, c.want)
		}
	}
	off := mustParse(t, "name: p\nversion: '1'\nscanning:\n  enabled: false\n").Scanning()
	if off.Arguments || off.Responses || off.Tools {
		t.Errorf("enabled: false left a scanner on: %+v", off)
	}
}

func TestScanningErrors(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{"scanning: [1]", "scanning must be a mapping"},
		{"scanning:\n  enabled: yes please", "enabled must be true or false"},
		{"scanning:\n  actions:\n    - class: secrets\n      action: redact", `invalid class "secrets" (want secret, pii, prompt_injection or tool_poisoning)`},
		{"scanning:\n  actions:\n    - confidence: sure\n      action: redact", `invalid confidence "sure"`},
		{"scanning:\n  actions:\n    - class: pii", "missing action"},
		{"scanning:\n  actions:\n    - action: quarantine", `action quarantine holds a tool; a finding in one message does not`},
		{"scanning:\n  actions:\n    - rule: '[x'\n      action: deny", `invalid rule pattern "[x"`},
		{"scanning:\n  suppress:\n    - reason: because", "needs at least one of rule, tool, server or path"},
		{"scanning:\n  suppress:\n    - rule: x", "missing reason"},
		{"scanning:\n  suppress:\n    - path: content/0/text\n      reason: r", `path "content/0/text" must start with "/"`},
		{"scanning:\n  colour: red", `unknown key "colour"`},
		{"scanning:\n  actions:\n    - rule: aws-acces-token\n      action: deny", `rule "aws-acces-token" matches no rule id of the scanner`},
		{"scanning:\n  suppress:\n    - rule: generic-api-kye\n      reason: r", `rule "generic-api-kye" matches no rule id`},
		{"scanning:\n  actions:\n    - rule: nosuch-*\n      action: deny", `rule "nosuch-*" matches no rule id`},
	} {
		_, err := Parse("p.yaml", []byte("name: p\nversion: '1'\n"+c.body+"\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want it to contain %q", c.body, err, c.want)
		}
	}
}

func TestScanVariables(t *testing.T) {
	p := mustParse(t, `name: p
version: "1"
rules:
  - id: no_pii_to_external
    when: tool.externality == "external" && argument_scan.findings.exists(f, f.class == "pii")
    action: deny
    reason: personal data to an external tool
  - id: poisoned
    when: tool.findings.exists(f, f.class == "tool_poisoning" && f.confidence == "high")
    action: deny
    reason: poisoned tool definition
  - id: injected_output
    when: '"prompt_injection" in response_scan.classes'
    action: deny
    reason: prompt injection in the result
`)
	pii := []Finding{{Rule: "pii-email", Class: "pii", Confidence: "high", Path: "/to"}}
	cases := []struct {
		name string
		in   Input
		want string
	}{
		{"pii to external", Input{Tool: Tool{Name: "send", Externality: "external"}, ArgumentScan: &ScanView{Status: "fail", Findings: pii}}, "no_pii_to_external"},
		{"pii to internal", Input{Tool: Tool{Name: "send", Externality: "internal"}, ArgumentScan: &ScanView{Status: "fail", Findings: pii}}, "default"},
		{"no scan", Input{Tool: Tool{Name: "send", Externality: "external"}}, "default"},
		{"poisoned", Input{Tool: Tool{Name: "t", Externality: "internal", Findings: []Finding{{Rule: "poisoning-hidden-directive", Class: "tool_poisoning", Confidence: "high", Path: "/description"}}}}, "poisoned"},
		{"response rule not on request", Input{Tool: Tool{Name: "t", Externality: "internal"}, ResponseScan: &ScanView{Status: "fail", Findings: []Finding{{Class: "prompt_injection"}}}}, "default"},
	}
	for _, c := range cases {
		if d := p.Evaluate(&c.in); d.Rule != c.want {
			t.Errorf("%s: rule %s (%s), want %s", c.name, d.Rule, d.Reason, c.want)
		}
	}
	if !p.HasResponseRules() || p.DependsOnlyOnTool() {
		t.Errorf("HasResponseRules %v DependsOnlyOnTool %v, want true false", p.HasResponseRules(), p.DependsOnlyOnTool())
	}
	in := Input{Tool: Tool{Name: "t"}, ResponseScan: &ScanView{Status: "fail", Findings: []Finding{{Rule: "injection-ignore-instructions", Class: "prompt_injection", Confidence: "high"}}}}
	if d, ok := p.EvaluateResponse(&in); !ok || d.Rule != "injected_output" || d.Action != ActionDeny {
		t.Errorf("EvaluateResponse = %+v %v, want injected_output deny", d, ok)
	}
	in.ResponseScan = &ScanView{Status: "pass"}
	if d, ok := p.EvaluateResponse(&in); ok {
		t.Errorf("EvaluateResponse of a clean response matched %s", d.Rule)
	}
	for _, c := range []struct{ when, want string }{
		{`response_scan.status == "fail" && arguments.x == 1`, "cannot read arguments, meta or argument_scan"},
		{`response_scan.status == "fail" || tool.name == "x"`, "does not read response_scan"},
		{`response_scan.status == "failed"`, `"failed"`},
		{`receipt.status == "ok" && response_scan.status == "fail"`, "either receipt or response_scan"},
		{`argument_scan.verdict == "x"`, `argument_scan has no field "verdict"`},
	} {
		_, err := Parse("p.yaml", []byte("name: p\nversion: '1'\nrules:\n  - id: r\n    when: '"+c.when+"'\n    action: deny\n    reason: r\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", c.when, err, c.want)
		}
	}
}

// TestLookalikeToolNames: a rule that names a tool also decides its
// lookalikes (homoglyphs, invisible characters, case and white-space
// variants), so that a server cannot slip a tool past a deny rule by
// renaming it; other names are unaffected.
func TestLookalikeToolNames(t *testing.T) {
	p := mustParse(t, `name: p
version: "1"
rules:
  - id: no_delete
    tools: ["delete_repo", "Drop*"]
    action: deny
    reason: no deletes
`)
	for _, c := range []struct {
		name string
		want string
	}{
		{"delete_repo", "no_delete"},
		{"d\u0435lete_repo", "no_delete"},  // Cyrillic е
		{"delete\u200b_repo", "no_delete"}, // zero-width space
		{"Delete_Repo", "no_delete"},       // case
		{"delete_repo ", "no_delete"},      // trailing space
		{"delete_rep\u043e", "no_delete"},  // Cyrillic о
		{"dr\u043ep_table", "no_delete"},   // lookalike of a pattern with a wildcard
		{"delete_repos", "default"},        // another name
		{"de1ete_repo", "default"},         // digits are not letters
		{"list_repos", "default"},
	} {
		if d := p.Evaluate(&Input{Tool: Tool{Name: c.name}}); d.Rule != c.want {
			t.Errorf("%q: rule %s, want %s", c.name, d.Rule, c.want)
		}
	}
	if got := p.ToolNames(); len(got) != 1 || got[0] != "delete_repo" {
		t.Errorf("ToolNames = %q, want [delete_repo]", got)
	}
}

// TestWarnings: rules that read a scan the scanning block (or --no-scan)
// turns off, and scanning.actions entries no finding reaches, are
// warned about; a policy without either has no warning.
func TestWarnings(t *testing.T) {
	p := mustParse(t, `name: p
version: "1"
scanning:
  tools: false
  actions:
    - class: secret
      action: redact
    - action: monitor
    - class: pii
      action: deny
rules:
  - id: poisoned
    when: tool.findings.exists(f, f.class == "tool_poisoning")
    action: deny
    reason: r
  - id: pii_out
    when: '"pii" in argument_scan.classes'
    action: deny
    reason: r
`)
	got := strings.Join(p.Warnings(false), "\n")
	for _, w := range []string{"rule poisoned reads tool.findings, but scanning.tools is off", "matches every finding: the 1 after it are never reached"} {
		if !strings.Contains(got, w) {
			t.Errorf("warnings %q lack %q", got, w)
		}
	}
	if strings.Contains(got, "pii_out") {
		t.Errorf("warnings %q name pii_out, whose scan is on", got)
	}
	if off := strings.Join(p.Warnings(true), "\n"); !strings.Contains(off, "rule pii_out reads argument_scan, but --no-scan") {
		t.Errorf("--no-scan warnings %q", off)
	}
	if w := mustParse(t, "name: p\nversion: '1'\nscanning:\n  actions: []\n").Warnings(false); len(w) != 1 || !strings.Contains(w[0], "scanning.actions is empty") {
		t.Errorf("empty actions: warnings %q", w)
	}
	if w := Default().Warnings(false); len(w) != 0 {
		t.Errorf("built-in policy warnings %q", w)
	}
}

// TestLookalikeInvisibleLetters: a tag character or a braille blank
// inside a name does not make it another name (an adversarial review
// found both allowed past a deny rule).
func TestLookalikeInvisibleLetters(t *testing.T) {
	p := mustParse(t, "name: p\nversion: '1'\nrules:\n  - id: no_write\n    tools: [\"write_file\"]\n    action: deny\n    reason: r\n")
	for _, n := range []string{"write\U000E0041_file", "write\u2800_file", "write_file\U000E007F"} {
		if d := p.Evaluate(&Input{Tool: Tool{Name: n}}); d.Rule != "no_write" {
			t.Errorf("%q: rule %s, want no_write", n, d.Rule)
		}
	}
}
