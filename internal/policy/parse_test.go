package policy

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestLoadErrors checks the exact text of every class of load error, one
// fixture per class under testdata/errors.
func TestLoadErrors(t *testing.T) {
	tests := []struct {
		file string
		want string // without the "policy testdata/errors/FILE" prefix
	}{
		// The file as a whole.
		{"empty.yaml", ":1: empty policy file"},
		{"comments-only.yaml", ":1: empty policy file"},
		{"syntax.yaml", ":6: mapping values are not allowed in this context"},
		{"not-mapping.yaml", ":1: top level must be a mapping, got list"},
		{"multi-doc.yaml", ":3: more than one YAML document"},
		{"missing-name.yaml", ":2: missing name"},
		{"missing-version.yaml", ":1: missing version"},
		{"version-not-string.yaml", ":2: version must be a string, got timestamp (quote it)"},
		{"unknown-top-key.yaml", `:3: unknown key "default" (want one of name, version, defaults, receipts, scanning, drift, rules)`},
		{"rules-not-list.yaml", ":4: rules must be a list, got mapping"},

		// Defaults.
		{"unknown-defaults-key.yaml", `:5: defaults: unknown key "unknown_tools" (want one of action, unknown_tool, deny_response, on_log_failure, mode)`},
		{"bad-default-action.yaml", `:4: defaults: invalid action "permit" (want allow, deny, monitor, redact or quarantine)`},
		{"quarantine-default.yaml", `:4: defaults: action quarantine is for rules and drift.actions, not the default (want allow, deny or monitor)`},
		{"bad-setting.yaml", `:4: defaults: invalid unknown_tool "ask" (want fetch or deny)`},

		// Rules.
		{"rule-not-mapping.yaml", ":4: rule #1: must be a mapping, got string"},
		{"unknown-rule-key.yaml", `:6: rule no_delete: unknown key "condition" (want one of id, tools, when, action, reason, mode)`},
		{"duplicate-key.yaml", `:7: rule a: duplicate key "action" (first at line 5)`},
		{"missing-id.yaml", ":7: rule #2: missing id"},
		{"invalid-id.yaml", `:4: rule #1: invalid id "no deletes" (want letters, digits, '_', '.' and '-')`},
		{"reserved-id.yaml", `:4: rule #1: id "default" is reserved for decisions no rule matched`},
		{"duplicate-id.yaml", ":12: rule no_writes: duplicate id (first defined at line 4)"},
		{"bad-action.yaml", `:5: rule block_it: invalid action "block" (want allow, deny, monitor, redact or quarantine)`},
		{"missing-action.yaml", ":4: rule no_action: missing action"},
		{"missing-reason.yaml", ":4: rule silent: missing reason"},
		{"bad-mode.yaml", `:7: rule dry: invalid mode "dry_run" (want enforce or shadow)`},
		{"bad-glob.yaml", `:7: rule bad_class: invalid tool pattern "write_[a-": syntax error in pattern`},
		{"empty-tools.yaml", ":5: rule nothing: tools must not be empty (leave it out to match every tool)"},
		{"tools-not-list.yaml", ":5: rule one: tools must be a list of glob patterns, got string"},

		// Conditions: the line is the line of the `when` key.
		{"cel-syntax.yaml", ":7: rule unbalanced: condition: 1:27: Syntax error: missing ')' at '<EOF>'"},
		{"cel-undeclared.yaml", ":6: rule wrong_variable: condition: 1:1: undeclared reference to 'user' (in container '')"},
		{"cel-not-bool.yaml", ":7: rule int_condition: condition: type is int, want bool"},
		{"cel-dyn.yaml", ":5: rule dyn_condition: condition: type is dyn, want bool (compare explicitly, e.g. arguments.flag == true)"},
		{"cel-empty.yaml", ":5: rule blank: when must not be empty"},
		{"cel-bad-regex.yaml", ":5: rule bad_regex: condition: 1:24: invalid matches argument"},
		{"cel-unknown-field.yaml", `:5: rule readonly_typo: condition: 1:43: tool has no field "side_efect" (it has name, known, title, description, annotations, declared_side_effects, side_effect, data_classes, externality, required_scopes, metadata_confidence, sources, metadata_conflicts, findings)`},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		seen[tt.file] = true
		t.Run(tt.file, func(t *testing.T) {
			path := "testdata/errors/" + tt.file
			p, err := Load(path)
			if err == nil {
				t.Fatalf("Load(%s) = %v, want error", path, p)
			}
			if got, want := err.Error(), "policy "+path+tt.want; got != want {
				t.Errorf("Load(%s) error\n got: %s\nwant: %s", path, got, want)
			}
			var perr *Error
			if !errors.As(err, &perr) {
				t.Errorf("error %T is not a *policy.Error", err)
			} else if perr.File != path {
				t.Errorf("Error.File = %q, want %q", perr.File, path)
			}
		})
	}
	// Every fixture is in the table (several.yaml is TestLoadSeveralErrors').
	files, _ := filepath.Glob("testdata/errors/*.yaml")
	for _, f := range files {
		if name := filepath.Base(f); !seen[name] && name != "several.yaml" {
			t.Errorf("fixture %s has no test case", f)
		}
	}
}

// TestLoadSeveralErrors checks that every problem is reported, sorted by
// line, one per line.
func TestLoadSeveralErrors(t *testing.T) {
	const path = "testdata/errors/several.yaml"
	_, err := Load(path)
	want := strings.Join([]string{
		"policy " + path + ":1: missing name",
		"policy " + path + ":1: version must be a string, got integer (quote it)",
		"policy " + path + `:3: defaults: action redact is for rules and scanning.actions, not the default (want allow, deny or monitor)`,
		"policy " + path + ":8: rule a: duplicate id (first defined at line 5)",
		"policy " + path + `:11: rule a: invalid mode "later" (want enforce or shadow)`,
	}, "\n")
	if err == nil || err.Error() != want {
		t.Fatalf("Load error\n got: %v\nwant: %s", err, want)
	}
	var perr *Error
	if !errors.As(err, &perr) || perr.Line != 1 || perr.Msg != "missing name" {
		t.Errorf("errors.As found %+v, want the first error", perr)
	}
}

func TestErrorFields(t *testing.T) {
	_, err := Parse("p.yaml", []byte("name: n\nversion: v\nrules:\n  - id: r1\n    action: nope\n    reason: r\n"))
	var perr *Error
	if !errors.As(err, &perr) {
		t.Fatalf("error %v is not a *Error", err)
	}
	want := Error{File: "p.yaml", Line: 5, Rule: "r1", Msg: `invalid action "nope" (want allow, deny, monitor, redact or quarantine)`}
	if *perr != want {
		t.Errorf("got %+v, want %+v", *perr, want)
	}
	if got := (&Error{File: "f", Msg: "m"}).Error(); got != "policy f: m" {
		t.Errorf("Error without line = %q", got)
	}
}

func TestParseInline(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"null document", "~\n", "policy t.yaml:1: empty policy file"},
		{"scalar document", "just text\n", "policy t.yaml:1: top level must be a mapping, got string"},
		{"name not string", "name: [a]\nversion: v\n", "policy t.yaml:1: name must be a string, got list"},
		{"blank name", "name: ' '\nversion: v\n", "policy t.yaml:1: name must not be empty"},
		{"null version", "name: n\nversion:\n", "policy t.yaml:2: version must be a string, got null"},
		{"defaults not mapping", "name: n\nversion: v\ndefaults: deny\n", "policy t.yaml:3: defaults must be a mapping, got string"},
		{"bool action", "name: n\nversion: v\ndefaults:\n  action: true\n", "policy t.yaml:4: defaults: action must be a string, got boolean (quote it)"},
		{"bad deny_response", "name: n\nversion: v\ndefaults:\n  deny_response: silent\n", `policy t.yaml:4: defaults: invalid deny_response "silent" (want error or tool_result)`},
		{"bad on_log_failure", "name: n\nversion: v\ndefaults:\n  on_log_failure: ignore\n", `policy t.yaml:4: defaults: invalid on_log_failure "ignore" (want fail_closed or fail_open)`},
		{"non-string key", "name: n\nversion: v\n[a]: 1\n", "policy t.yaml:3: keys must be strings, got list"},
		{"id not string", "name: n\nversion: v\nrules:\n  - id: [x]\n    action: deny\n    reason: r\n", "policy t.yaml:4: rule #1: id must be a string, got list"},
		{"empty pattern", "name: n\nversion: v\nrules:\n  - id: x\n    tools: ['']\n    action: deny\n    reason: r\n", "policy t.yaml:5: rule x: empty tool pattern"},
		{"pattern not string", "name: n\nversion: v\nrules:\n  - id: x\n    tools:\n      - {a: b}\n    action: deny\n    reason: r\n", "policy t.yaml:6: rule x: tool pattern must be a string, got mapping"},
		{"when not string", "name: n\nversion: v\nrules:\n  - id: x\n    when: true\n    action: deny\n    reason: r\n", "policy t.yaml:5: rule x: when must be a string, got boolean (quote it)"},
		{"reason blank", "name: n\nversion: v\nrules:\n  - id: x\n    action: deny\n    reason: ''\n", "policy t.yaml:6: rule x: reason must not be empty"},
		{"newline in a CEL diagnostic", "name: n\nversion: v\nrules:\n  - id: x\n    action: deny\n    reason: r\n    when: |\n     \"\n",
			`policy t.yaml:7: rule x: condition: 1:1: Syntax error: token recognition error at: '"\n'; 2:1: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}`},
		{"cel multi-line position", "name: n\nversion: v\nrules:\n  - id: x\n    action: deny\n    reason: r\n    when: |\n      principal.role == 'a' &&\n        tool.nme == 1 && nope\n", "policy t.yaml:7: rule x: condition: 2:20: undeclared reference to 'nope' (in container '')"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tt.src))
			if err == nil || err.Error() != tt.want {
				t.Errorf("Parse error\n got: %v\nwant: %s", err, tt.want)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("testdata/does-not-exist.yaml")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load error = %v, want fs.ErrNotExist", err)
	}
	if !strings.HasPrefix(err.Error(), "policy testdata/does-not-exist.yaml: ") {
		t.Errorf("Load error = %q, want it prefixed with the file", err)
	}
}

func TestSettings(t *testing.T) {
	p, err := Parse("t.yaml", []byte(`
name: s
version: "7"
defaults:
  action: deny
  unknown_tool: deny
  deny_response: tool_result
  on_log_failure: fail_open
  mode: shadow
receipts:
  require: present
  servers:
    fs: verified
    other: none
`))
	if err != nil {
		t.Fatal(err)
	}
	want := Settings{UnknownTool: "deny", DenyResponse: "tool_result", OnLogFailure: "fail_open",
		ReceiptsRequire: "present", ReceiptsServers: map[string]string{"fs": "verified", "other": "none"}, Mode: ModeShadow}
	if p.Name() != "s" || p.Version() != "7" || !reflect.DeepEqual(p.Settings(), want) {
		t.Errorf("got %q %q %+v, want s 7 %+v", p.Name(), p.Version(), p.Settings(), want)
	}
	if d := p.Evaluate(&Input{}); d.Action != ActionDeny {
		t.Errorf("default action = %s, want deny", d.Action)
	}
	for server, want := range map[string]string{"fs": "verified", "other": "none", "unlisted": "present"} {
		if got := p.Settings().ReceiptRequirement(server); got != want {
			t.Errorf("ReceiptRequirement(%q) = %q, want %q", server, got, want)
		}
	}
	if got := Default().Settings().ReceiptRequirement("x"); got != ReceiptsNone {
		t.Errorf("default receipts.require = %q, want none", got)
	}
	for _, bad := range []string{"defaults: {mode: observe}", "receipts: {require: always}", "receipts: {servers: {fs: maybe}}", "receipts: {servers: [fs]}", "receipts: {other: 1}"} {
		if _, err := Parse("t.yaml", []byte("name: s\nversion: \"1\"\n"+bad+"\n")); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}

	// Absent defaults take the built-in values.
	p, err = Parse("t.yaml", []byte("name: s\nversion: '1'\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Settings(); !reflect.DeepEqual(got, Default().Settings()) {
		t.Errorf("settings without defaults = %+v, want %+v", got, Default().Settings())
	}
	if d := p.Evaluate(&Input{}); d.Action != ActionAllow {
		t.Errorf("default action = %s, want allow", d.Action)
	}
}

func TestDefault(t *testing.T) {
	p := Default()
	want := Settings{UnknownTool: "fetch", DenyResponse: "error", OnLogFailure: "fail_closed", ReceiptsRequire: "none", Mode: ModeEnforce}
	if p.Name() != "builtin-default" || p.Version() != "1" || !reflect.DeepEqual(p.Settings(), want) {
		t.Errorf("Default() = %q %q %+v", p.Name(), p.Version(), p.Settings())
	}
	got := p.Evaluate(&Input{Tool: Tool{Name: "rm_rf"}})
	wantD := Decision{Action: ActionAllow, Rule: "default", Reason: "no rule matched; default action",
		ReasonCode: "default", PolicyName: "builtin-default", PolicyVersion: "1"}
	if !reflect.DeepEqual(got, wantD) {
		t.Errorf("Default().Evaluate = %+v, want %+v", got, wantD)
	}
}

// TestYAMLFeatures checks that anchors, aliases, quoting styles and block
// scalars work as YAML says.
func TestYAMLFeatures(t *testing.T) {
	p, err := Parse("t.yaml", []byte(`
name: 'yaml-features'
version: "1"
rules:
  - id: a
    tools: &writers ["write_*", "edit_*"]
    when: >-
      principal.role ==
      "agent"
    action: deny
    reason: |
      multi-line
      reason
  - id: b
    tools: *writers
    action: &act monitor
    reason: second
    mode: shadow
`))
	if err != nil {
		t.Fatal(err)
	}
	d := p.Evaluate(&Input{Principal: Principal{Role: "agent"}, Tool: Tool{Name: "edit_file"}})
	if d.Rule != "a" || d.Reason != "multi-line\nreason\n" || len(d.Shadows) != 1 || d.Shadows[0].Rule != "b" || d.Shadows[0].Action != ActionMonitor {
		t.Errorf("got %+v", d)
	}
}

// TestExamplesLoad keeps the shipped examples valid.
func TestExamplesLoad(t *testing.T) {
	files, err := filepath.Glob("../../examples/policies/*.yaml")
	if err != nil || len(files) < 2 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		if _, err := Load(f); err != nil {
			t.Errorf("%v", err)
		}
	}
	if _, err := os.Stat("../../examples/policies/readonly-agent.yaml"); err != nil {
		t.Error(err)
	}
}

func TestUsesArguments(t *testing.T) {
	for _, tc := range []struct {
		when string
		want bool
	}{
		{`tool.side_effect != "read_only"`, false},
		{`has(arguments.path) && arguments.path.startsWith("/tmp")`, true},
		{`"path" in arguments`, true},
		{`meta.x == "arguments_like"`, false},
	} {
		p, err := Parse("t.yaml", []byte("name: s\nversion: \"1\"\nrules:\n  - id: r\n    when: '"+tc.when+"'\n    action: deny\n    reason: r\n"))
		if err != nil {
			t.Fatalf("%s: %v", tc.when, err)
		}
		if got := p.UsesArguments(); got != tc.want {
			t.Errorf("UsesArguments for %s = %v, want %v", tc.when, got, tc.want)
		}
	}
	if Default().UsesArguments() {
		t.Error("the built-in policy reads no arguments")
	}
}

func TestDependsOnlyOnTool(t *testing.T) {
	for _, tc := range []struct {
		when string
		want bool
	}{
		{`tool.side_effect != "read_only"`, true},
		{`principal.role == "readonly_agent" && server.id == "fs" && tool.name.startsWith("read")`, true},
		{`has(arguments.path)`, false},
		{`meta.x == "y"`, false},
		{`"tool_call_id" in meta`, false},
		{`tool.annotations.exists(k, k == "readOnlyHint")`, false}, // a comprehension: evaluated under a deadline
		{`tool.name == "metadata"`, true},                          // a string, not the variable
	} {
		p, err := Parse("t.yaml", []byte("name: s\nversion: \"1\"\nrules:\n  - id: r\n    when: '"+tc.when+"'\n    action: deny\n    reason: r\n"))
		if err != nil {
			t.Fatalf("%s: %v", tc.when, err)
		}
		if got := p.DependsOnlyOnTool(); got != tc.want {
			t.Errorf("DependsOnlyOnTool for %s = %v, want %v", tc.when, got, tc.want)
		}
	}
	if !Default().DependsOnlyOnTool() {
		t.Error("the built-in policy depends only on the tool")
	}
}

func TestMentionsString(t *testing.T) {
	p, err := Load("../../examples/policies/readonly-agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !p.MentionsString("readonly_agent") || p.MentionsString("readonly-agent") {
		t.Errorf("MentionsString: readonly_agent %v, readonly-agent %v", p.MentionsString("readonly_agent"), p.MentionsString("readonly-agent"))
	}
	if p.RuleCount() != 1 {
		t.Errorf("RuleCount = %d", p.RuleCount())
	}
	if !p.ReadsRole() {
		t.Error("ReadsRole: readonly-agent.yaml tests principal.role")
	}
	for cond, want := range map[string]bool{
		`tool.side_effect != "read_only"`:               false,
		`principal.id == "ci"`:                          false,
		`principal["role"] == "dev"`:                    true,
		`principal.role in ["dev", "ops"]`:              true,
		`principal . role == "admin"`:                   true,
		`principal[ 'role' ] == 'admin'`:                true,
		`principal.?role.orValue("") == "admin"`:        true,
		`principal.id == "ci" && principal.role == "x"`: true,
		`principal . id == "ci"`:                        false,
	} {
		q, err := Parse("t.yaml", []byte("name: t\nversion: \"1\"\nrules:\n  - id: r\n    when: '"+strings.ReplaceAll(cond, "'", "''")+"'\n    action: deny\n    reason: r\n"))
		if err != nil {
			t.Fatalf("%s: %v", cond, err)
		}
		if q.ReadsRole() != want {
			t.Errorf("ReadsRole for %s = %v, want %v", cond, !want, want)
		}
	}
}

// TestImpossibleComparisons: a fixed field compared with a literal it can
// never equal (another type, or a value outside its vocabulary) is refused
// at load, naming the field and what it holds: in a deny rule such a typo
// would never match, failing open.
func TestImpossibleComparisons(t *testing.T) {
	for _, tc := range []struct {
		when string
		want string // "" accepted; otherwise in the error
	}{
		{`tool.known == true && tool.side_effect in ["read_only", "mutating"] && principal.role != "x"`, ""},
		{`tool.side_effect == "destructive" || "read_only" == tool.side_effect`, ""},
		{`tool.annotations.readOnlyHint == "true" && arguments.flag == "true"`, ""}, // free-form maps: anything goes
		{`[{"known": "x"}].exists(tool, tool.known == "x")`, ""},                    // a comprehension variable
		{`tool.known == "true"`, `condition: 1:12: tool.known is a bool: == "true" can never hold (compare it with a bool)`},
		{`"true" != tool.known`, `tool.known is a bool: != "true"`},
		{`principal.role == 1`, `principal.role is a string: == 1 can never hold`},
		{`tool["known"] == "yes"`, `tool.known is a bool`},
		{`tool.side_effect == "read-only"`, `tool.side_effect is one of read_only, mutating, destructive: == "read-only" can never hold`},
		{`tool.side_effect != "readonly"`, `!= "readonly"`},
		{`tool.side_effect in ["read_only", "write"]`, `in "write" can never hold`},
		{`server.id == true`, `server.id is a string`},
		{`principal.role == 1.5`, `principal.role is a string: == 1.5 can never hold`},
		// The normalized fields (evidence.md §4, §5).
		{`tool.externality in ["internal", "third_party"] && tool.externality != "external"`, ""},
		{`tool.externality == "thirdparty"`, `tool.externality is one of internal, external, third_party: == "thirdparty" can never hold`},
		{`"write" in tool.declared_side_effects && !("delete" in tool.declared_side_effects)`, ""},
		{`"writes" in tool.declared_side_effects`, `tool.declared_side_effects holds only read, write, delete, execute, share, export, message, network: "writes" in it can never hold`},
		{`1 in tool.data_classes`, `tool.data_classes is a list of strings: 1 in it can never hold`},
		{`"anything" in tool.data_classes && "repo:write" in tool.required_scopes`, ""}, // open vocabularies
		{`tool.declared_side_effects == "write"`, `tool.declared_side_effects is a list: == "write" can never hold`},
		{`"side_effect" in tool.metadata_conflicts`, ""},
		{`"side-effect" in tool.metadata_conflicts`, `tool.metadata_conflicts holds only declared_side_effects, side_effect`},
		{`tool.sources.side_effect == "meta" && tool.sources["externality"] in ["annotation", "heuristic"]`, ""},
		{`tool.sources.side_effect == "declaration"`, `tool.sources.side_effect is one of verified_receipt, unsigned_receipt, meta, annotation, heuristic, unknown: == "declaration" can never hold`},
		{`tool.metadata_confidence >= 0.5 && tool.metadata_confidence < 1 && tool.metadata_confidence != 0u`, ""},
		{`tool.metadata_confidence == "high"`, `tool.metadata_confidence is a double: == "high" can never hold (compare it with a double)`},
		{`tool.metadata_confidence < "0.5"`, `tool.metadata_confidence is a double: < "0.5" can never hold`},
		{`tool.side_effect < "x" || tool.name > "m"`, ""}, // ordering strings is not a vocabulary test
		// optMap binds its variable like a comprehension: not the tool.
		{`optional.of({"known": "x"}).optMap(tool, tool.known == "x").orValue(false)`, ""},
	} {
		_, err := Parse("t.yaml", []byte("name: s\nversion: \"1\"\nrules:\n  - id: r\n    when: >-\n      "+tc.when+"\n    action: deny\n    reason: r\n"))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.when, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: err = %v, want it to say %q", tc.when, err, tc.want)
		}
	}
}

// TestFixedFields: selecting a member principal, server or tool never has
// is refused at load; free-form maps (annotations, arguments, meta) are not
// checked.
func TestFixedFields(t *testing.T) {
	for _, tc := range []struct {
		when string
		ok   bool
	}{
		{`tool.side_effect == "read_only" && tool.known && tool.name != "" && tool.title == "" && tool.description == ""`, true},
		{`principal.id == "a" && principal.role == "b" && server.id == "c"`, true},
		{`has(tool.annotations.readOnlyHint) && tool.annotations.anything == true`, true},
		{`arguments.whatever == 1 || meta.anything == "x"`, true},
		{`principal.rol == "readonly_agent"`, false},
		{`server.name == "fs"`, false},
		{`has(tool.side_efect)`, false},
		{`tool.annotation.readOnlyHint == true`, false},
		{`[{"nme": "x"}].exists(tool, tool.nme == "x")`, true}, // a comprehension variable, not the tool
		{`tool["side_efect"] == "read_only"`, false},
		{`tool["side_effect"] == "read_only" && principal["role"] == "r"`, true},
		{`arguments["any key"] == 1`, true},
		{`tool.?side_efect.orValue("read_only") == "read_only"`, false},
		{`tool[?"side_efect"].orValue("x") == "read_only"`, false},
		{`"side_efect" in tool`, false},
		{`dyn(tool).side_efect == "x"`, false},
		{`tool.?title.orValue("") == "" && "side_effect" in tool && dyn(tool).name != ""`, true},
		{`tool.side_efect == "read_only" || [1].exists(tool, tool > 0)`, false}, // the shadowing is only inside the comprehension
		{`principal.rol == "r" && [1].all(principal, principal > 0)`, false},
		// The normalized fields (evidence.md §4) and the keys of tool.sources.
		{`"write" in tool.declared_side_effects && tool.externality == "internal" && size(tool.data_classes) == 0 && size(tool.required_scopes) > 0 && tool.metadata_confidence > 0.5 && size(tool.metadata_conflicts) == 0`, true},
		{`tool.sources.side_effect == "meta" && tool.sources["externality"] != "unknown" && has(tool.sources.data_classes) && "required_scopes" in tool.sources`, true},
		{`tool.side_effects == ["write"]`, false},
		{`tool.sources.sideeffect == "meta"`, false},
		{`tool["sources"].side_efect == "meta"`, false},
		{`has(tool.sources.externalty)`, false},
		{`"scopes" in tool.sources`, false},
		{`tool.sources.?side_efect.orValue("") == ""`, false},
		{`[{"rol": "r"}].all(principal, principal.rol == "r") && principal.role == "r"`, true},
	} {
		_, err := Parse("t.yaml", []byte("name: s\nversion: \"1\"\nrules:\n  - id: r\n    when: '"+tc.when+"'\n    action: deny\n    reason: r\n"))
		if (err == nil) != tc.ok {
			t.Errorf("%s: err = %v, want ok %v", tc.when, err, tc.ok)
		}
	}
}

// TestReceiptRules: rules that read `receipt` are decided on the response
// (EvaluateReceipt), never on the request (Evaluate), and cannot read
// arguments or meta.
func TestReceiptRules(t *testing.T) {
	const src = `name: r
version: "1"
defaults:
  action: allow
rules:
  - id: no_unsigned
    when: receipt.status in ["unsigned", "tampered"]
    action: deny
    reason: the server's receipt must be signed
  - id: watch_conflicts
    when: receipt.conflicts > 0
    action: monitor
    reason: the receipt disagrees with the call
  - id: try_strict
    when: receipt.status != "ok"
    action: deny
    reason: only verified receipts
    mode: shadow
  - id: no_delete
    tools: ["delete_*"]
    action: deny
    reason: no deletes
`
	p, err := Parse("r.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if !p.HasReceiptRules() {
		t.Fatal("HasReceiptRules = false")
	}
	// On the request only the request rules count.
	if d := p.Evaluate(&Input{Tool: Tool{Name: "read", Known: true}}); d.Action != ActionAllow || d.Rule != "default" || d.Shadows != nil {
		t.Errorf("Evaluate: %+v", d)
	}
	if d := p.Evaluate(&Input{Tool: Tool{Name: "delete_all", Known: true}}); d.Rule != "no_delete" {
		t.Errorf("Evaluate delete_all: %+v", d)
	}
	for _, tc := range []struct {
		receipt     *Receipt
		matched     bool
		action      Action
		rule        string
		shadowMatch bool
	}{
		{&Receipt{Status: "ok"}, false, "", "", false},
		{&Receipt{Status: "unsigned"}, true, ActionDeny, "no_unsigned", true},
		{&Receipt{Status: "empty", Conflicts: 2}, true, ActionMonitor, "watch_conflicts", true},
		{&Receipt{Status: "ok", Conflicts: 1}, true, ActionMonitor, "watch_conflicts", false},
		{nil, false, "", "", true}, // no receipt facts: an empty map, receipt.status errors → condition error
	} {
		d, matched := p.EvaluateReceipt(&Input{Tool: Tool{Name: "read", Known: true}, Receipt: tc.receipt})
		if tc.receipt == nil {
			// receipt.status on an empty map fails: the enforce rule
			// denies with a condition error, as any failing condition.
			if !matched || d.ReasonCode != ReasonCodeConditionError {
				t.Errorf("EvaluateReceipt(no receipt) = %+v, %v", d, matched)
			}
			continue
		}
		if matched != tc.matched || d.Action != tc.action || d.Rule != tc.rule || (d.Shadows != nil) != tc.shadowMatch {
			t.Errorf("EvaluateReceipt(%+v) = %+v, %v", *tc.receipt, d, matched)
		}
	}
	for when, want := range map[string]string{
		`receipt.status == "ok" && arguments.path == "x"`:                         "cannot read arguments, meta or argument_scan",
		`receipt.status == "ok" || meta.x == 1`:                                   "cannot read arguments, meta or argument_scan",
		`receipt.status == "verified"`:                                            `receipt.status is one of ok, unsigned, tampered, empty, unknown`,
		`receipt.conflicts == "1"`:                                                "receipt.conflicts is an int: == \"1\" can never hold (compare it with an int)",
		`receipt.signed == true`:                                                  `receipt has no field "signed"`,
		`tool.name == "delete" || receipt.status == "tampered"`:                   "one side of this || does not read receipt",
		`principal.role == "r" && (principal.id == "x" || receipt.conflicts > 0)`: "1:47: one side of this || does not read receipt",
	} {
		_, err := Parse("t.yaml", []byte("name: s\nversion: \"1\"\nrules:\n  - id: r\n    when: >-\n      "+when+"\n    action: deny\n    reason: r\n"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to say %q", when, err, want)
		}
	}
	if Default().HasReceiptRules() {
		t.Error("the built-in policy has receipt rules")
	}
	// Accepted: || between receipt facts, && with request facts, a
	// receipt rule with a comprehension (which does not make request
	// decisions per call), numbers of any kind against conflicts.
	for _, when := range []string{
		`receipt.status == "tampered" || receipt.conflicts > 2`,
		`principal.role == "guest" && (receipt.status == "unsigned" || receipt.status == "unknown")`,
		`receipt.conflicts == 1.0 || receipt.conflicts != 0u`,
		`["unsigned", "unknown"].exists(s, receipt.status == s)`,
	} {
		q, err := Parse("t.yaml", []byte("name: s\nversion: \"1\"\nrules:\n  - id: r\n    when: >-\n      "+when+"\n    action: deny\n    reason: r\n"))
		if err != nil {
			t.Errorf("%s: %v", when, err)
			continue
		}
		if !q.HasReceiptRules() || !q.DependsOnlyOnTool() {
			t.Errorf("%s: receipt rules %v, request decisions cacheable %v", when, q.HasReceiptRules(), q.DependsOnlyOnTool())
		}
	}
}
