package policy

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse: Parse never panics; its errors are located in the named file;
// a policy it accepts evaluates any input to a well-formed decision.
func FuzzParse(f *testing.F) {
	var seeds []string
	for _, pattern := range []string{"testdata/errors/*.yaml", "../../examples/policies/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		seeds = append(seeds, files...)
	}
	for _, file := range seeds {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	goldens, _ := filepath.Glob("testdata/golden/*.txtar")
	for _, file := range goldens {
		data, _ := os.ReadFile(file)
		if src, ok := parseTxtar(data).get("policy.yaml"); ok {
			f.Add(src)
		}
	}
	f.Add([]byte("name: a\nversion: b\nrules:\n  - &r {id: x, action: deny, reason: r}\n  - *r\n"))
	f.Add([]byte("name: a\nversion: b\nrules: [{id: x, tools: ['[^a-]]'], action: allow, reason: r}]\n"))

	inputs := []*Input{
		nil,
		{},
		{Principal: Principal{Role: "readonly_agent"}, Tool: Tool{Name: "write_file", Known: true, SideEffect: "mutating"},
			Arguments: map[string]any{"path": "/tmp/allowed/x", "n": int64(3), "l": []any{1.5, "x", nil}}},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz.yaml", data)
		if err != nil {
			if p != nil {
				t.Fatalf("Parse returned both a policy and %v", err)
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "policy fuzz.yaml") {
					t.Fatalf("error line %q does not name the file", line)
				}
			}
			return
		}
		ids := map[string]bool{}
		for _, r := range p.rules {
			ids[r.id] = true
		}
		for _, in := range inputs {
			d := p.Evaluate(in)
			switch d.ReasonCode {
			case ReasonCodeDefault:
				if d.Rule != "default" || d.Action != p.defaultAction {
					t.Fatalf("default decision %+v", d)
				}
			case ReasonCodeRule, ReasonCodeConditionError:
				if !ids[d.Rule] {
					t.Fatalf("decision names unknown rule: %+v", d)
				}
			default:
				t.Fatalf("reason code %q", d.ReasonCode)
			}
			for _, sh := range d.Shadows {
				if !ids[sh.Rule] {
					t.Fatalf("shadow names unknown rule: %+v", sh)
				}
			}
			if d.PolicyName != p.Name() || d.PolicyVersion != p.Version() {
				t.Fatalf("decision policy %q %q", d.PolicyName, d.PolicyVersion)
			}
		}
	})
}

// FuzzGlob: the tool pattern matcher agrees with path.Match on names without
// '/', and never panics on a pattern path.Match accepts.
func FuzzGlob(f *testing.F) {
	for _, s := range [][2]string{
		{"*", "x"}, {"a*b", "axxb"}, {"a?c", "abc"}, {"[a-c]x", "bx"}, {"[^a-c]x", "dx"},
		{`\*`, "*"}, {"*x*y*", "axbyc"}, {"[]a]", "]"}, {"é?", "éé"}, {"a*", "a/b"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		g, err := compileGlob(pattern)
		if err != nil {
			return
		}
		got := g.match(name)
		if !strings.Contains(name, "/") {
			want, _ := path.Match(pattern, name)
			if got != want {
				t.Fatalf("match(%q, %q) = %v, path.Match = %v", pattern, name, got, want)
			}
		}
		// '/' is an ordinary character: replacing it by one that the
		// pattern treats the same way must not change the outcome when
		// the pattern itself has no '/' and no class.
		if !strings.ContainsAny(pattern, "/[\\") && !strings.ContainsRune(name, 0) {
			alt := strings.ReplaceAll(name, "/", "\x00")
			if want := g.match(alt); got != want {
				t.Fatalf("match(%q, %q) = %v but %v with '/' replaced", pattern, name, got, want)
			}
		}
	})
}
