package policy

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the decision sections of testdata/golden/*.txtar")

// TestGolden runs the cases of testdata/golden/*.txtar. Each archive holds
// the policy, either inline as "policy.yaml" or as "policy.path" naming a
// file relative to this package, and any number of cases: "NAME.input.json"
// (an Input) and "NAME.decision.json" (the expected Decision). With -update
// the decision sections are rewritten from what Evaluate returns.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/golden/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			ar := parseTxtar(data)
			var p *Policy
			if src, ok := ar.get("policy.yaml"); ok {
				p, err = Parse(file+"#policy.yaml", src)
			} else if path, ok := ar.get("policy.path"); ok {
				p, err = Load(strings.TrimSpace(string(path)))
			} else {
				t.Fatal("no policy.yaml or policy.path section")
			}
			if err != nil {
				t.Fatal(err)
			}
			changed := false
			var inputs []txtarFile // ar.files grows under -update
			for _, f := range ar.files {
				if strings.HasSuffix(f.name, ".input.json") {
					inputs = append(inputs, f)
				}
			}
			for _, f := range inputs {
				name := strings.TrimSuffix(f.name, ".input.json")
				t.Run(name, func(t *testing.T) {
					in, err := decodeInput(f.data)
					if err != nil {
						t.Fatalf("%s: %v", f.name, err)
					}
					got, _ := json.MarshalIndent(p.Evaluate(in), "", "  ")
					got = append(got, '\n')
					want, ok := ar.get(name + ".decision.json")
					if *update {
						if !bytes.Equal(got, want) {
							ar.set(name+".decision.json", got)
							changed = true
						}
						return
					}
					if !ok {
						t.Fatalf("no %s.decision.json (run with -update)", name)
					}
					if !bytes.Equal(got, want) {
						t.Errorf("decision\n got: %s\nwant: %s", got, want)
					}
				})
			}
			if changed {
				if err := os.WriteFile(file, ar.format(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// decodeInput decodes an Input the way the gateway presents arguments and
// meta: integral numbers that fit are int64, other numbers float64.
func decodeInput(data []byte) (*Input, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	var in Input
	if err := dec.Decode(&in); err != nil {
		return nil, err
	}
	if in.Arguments != nil {
		in.Arguments = jsonNumbers(in.Arguments).(map[string]any)
	}
	if in.Meta != nil {
		in.Meta = jsonNumbers(in.Meta).(map[string]any)
	}
	if in.Tool.Annotations != nil {
		in.Tool.Annotations = jsonNumbers(in.Tool.Annotations).(map[string]any)
	}
	return &in, nil
}

func jsonNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, err := v.Float64()
		if err != nil {
			return math.NaN()
		}
		return f
	case map[string]any:
		for k, e := range v {
			v[k] = jsonNumbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = jsonNumbers(e)
		}
	}
	return v
}

// txtar is a minimal reader and writer of the txtar format
// (golang.org/x/tools/txtar), kept here to avoid a module dependency.
type txtar struct {
	comment []byte
	files   []txtarFile
}

type txtarFile struct {
	name string
	data []byte
}

func parseTxtar(data []byte) *txtar {
	ar := &txtar{}
	cur := &ar.comment
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		data = rest
		s := string(line)
		if strings.HasPrefix(s, "-- ") && strings.HasSuffix(s, " --") && len(s) > 6 {
			ar.files = append(ar.files, txtarFile{name: strings.TrimSpace(s[3 : len(s)-3])})
			cur = &ar.files[len(ar.files)-1].data
			continue
		}
		*cur = append(*cur, line...)
		*cur = append(*cur, '\n')
	}
	return ar
}

func (ar *txtar) get(name string) ([]byte, bool) {
	for _, f := range ar.files {
		if f.name == name {
			return f.data, true
		}
	}
	return nil, false
}

// set replaces a section or adds it after the matching input section.
func (ar *txtar) set(name string, data []byte) {
	for i := range ar.files {
		if ar.files[i].name == name {
			ar.files[i].data = data
			return
		}
	}
	at := len(ar.files)
	input := strings.TrimSuffix(name, ".decision.json") + ".input.json"
	for i := range ar.files {
		if ar.files[i].name == input {
			at = i + 1
		}
	}
	ar.files = append(ar.files[:at], append([]txtarFile{{name, data}}, ar.files[at:]...)...)
}

func (ar *txtar) format() []byte {
	var b bytes.Buffer
	b.Write(ar.comment)
	for _, f := range ar.files {
		fmt.Fprintf(&b, "-- %s --\n", f.name)
		b.Write(f.data)
	}
	return b.Bytes()
}

// TestGoldenFilesComplete: every input has a decision and vice versa.
func TestGoldenFilesComplete(t *testing.T) {
	files, _ := filepath.Glob("testdata/golden/*.txtar")
	for _, file := range files {
		data, _ := os.ReadFile(file)
		ar := parseTxtar(data)
		kinds := map[string][]string{}
		for _, f := range ar.files {
			for _, suffix := range []string{".input.json", ".decision.json"} {
				if name, ok := strings.CutSuffix(f.name, suffix); ok {
					kinds[name] = append(kinds[name], suffix)
				}
			}
		}
		names := make([]string, 0, len(kinds))
		for n := range kinds {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if len(kinds[n]) != 2 {
				t.Errorf("%s: case %s has only %v", file, n, kinds[n])
			}
		}
	}
}
