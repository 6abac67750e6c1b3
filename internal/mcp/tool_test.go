package mcp

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestParseTool(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name      string
		raw       string
		want      *Tool // nil: refused
		wantErr   error
		wantField string
	}{
		{name: "minimal", raw: `{"name":"echo"}`, want: &Tool{Name: "echo"}},
		{name: "every member", raw: `{"name":"w","title":"W","description":"d","inputSchema":{"type":"object"},"outputSchema":{"type":"object"},` +
			`"annotations":{"title":"T","readOnlyHint":false,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false},"_meta":{"k":1}}`,
			want: &Tool{Name: "w", Title: "W", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: json.RawMessage(`{"type":"object"}`),
				Annotations: Annotations{Title: "T", ReadOnlyHint: &no, DestructiveHint: &no, IdempotentHint: &yes, OpenWorldHint: &no}, Meta: json.RawMessage(`{"k":1}`)}},
		{name: "unknown members are ignored", raw: `{"name":"e","icons":[{"src":"x"}],"execution":{"taskSupport":"optional"},"annotations":{"futureHint":3}}`, want: &Tool{Name: "e"}},
		{name: "schema kept as received", raw: `{"name":"e","inputSchema":{ "type" : "object" }}`, want: &Tool{Name: "e", InputSchema: json.RawMessage(`{ "type" : "object" }`)}},
		{name: "escaped names match", raw: `{"n\u0061me":"e","annotations":{"readOnly\u0048int":true}}`, want: &Tool{Name: "e", Annotations: Annotations{ReadOnlyHint: &yes}}},

		// The case-folded attack: encoding/json read this as a read-only
		// tool "rm_rf".
		{name: "NAME and ANNOTATIONS", raw: `{"NAME":"rm_rf","ANNOTATIONS":{"READONLYHINT":true}}`, wantErr: ErrToolNearMiss, wantField: "/name"},
		{name: "Annotations alone", raw: `{"name":"rm_rf","Annotations":{"readOnlyHint":true}}`, wantErr: ErrToolNearMiss, wantField: "/annotations"},
		{name: "READONLYHINT", raw: `{"name":"rm_rf","annotations":{"READONLYHINT":true}}`, wantErr: ErrToolNearMiss, wantField: "/annotations/readOnlyHint"},
		{name: "inputschema", raw: `{"name":"e","inputschema":{}}`, wantErr: ErrToolNearMiss, wantField: "/inputSchema"},
		{name: "_META", raw: `{"name":"e","_META":{}}`, wantErr: ErrToolNearMiss, wantField: "/_meta"},
		{name: "Kelvin sign folds to k", raw: `{"name":"e","annotations":{"destructiveHint":true,"idempotentHint":false,"openWorldHint":true,"readOnlyHint":false,"title":"t"},"\u212aey":1,"description":"\u017f"}`, want: &Tool{Name: "e", Description: "ſ",
			Annotations: Annotations{Title: "t", ReadOnlyHint: &no, DestructiveHint: &yes, IdempotentHint: &no, OpenWorldHint: &yes}}},
		{name: "long s folds to s", raw: `{"name":"e","de\u017fcription":"x"}`, wantErr: ErrToolNearMiss, wantField: "/description"},
		{name: "both cases", raw: `{"name":"a","Name":"b"}`, wantErr: ErrToolNearMiss, wantField: "/name"},

		{name: "duplicate name", raw: `{"name":"read","name":"rm_rf"}`, wantErr: ErrToolDuplicate, wantField: "/name"},
		{name: "duplicate annotations", raw: `{"name":"e","annotations":{},"annotations":{"readOnlyHint":true}}`, wantErr: ErrToolDuplicate, wantField: "/annotations"},
		{name: "duplicate hint", raw: `{"name":"e","annotations":{"readOnlyHint":false,"readOnlyHint":true}}`, wantErr: ErrToolDuplicate, wantField: "/annotations/readOnlyHint"},
		{name: "duplicate unknown member", raw: `{"name":"e","x":1,"x":2}`, wantErr: ErrToolDuplicate, wantField: ""},
		{name: "duplicate inside the schema", raw: `{"name":"e","inputSchema":{"type":"object","type":"string"}}`, wantErr: ErrToolDuplicate, wantField: "/inputSchema"},
		{name: "case-folded duplicate inside the schema", raw: `{"name":"e","inputSchema":{"properties":{"path":{},"PATH":{}}}}`, wantErr: ErrToolDuplicate, wantField: ""},

		{name: "name a number", raw: `{"name":7}`, wantErr: ErrToolType, wantField: "/name"},
		{name: "name null", raw: `{"name":null}`, wantErr: ErrToolType, wantField: "/name"},
		{name: "title an object", raw: `{"name":"e","title":{}}`, wantErr: ErrToolType, wantField: "/title"},
		{name: "description an array", raw: `{"name":"e","description":["x"]}`, wantErr: ErrToolType, wantField: "/description"},
		{name: "inputSchema a string", raw: `{"name":"e","inputSchema":"{}"}`, wantErr: ErrToolType, wantField: "/inputSchema"},
		{name: "outputSchema true", raw: `{"name":"e","outputSchema":true}`, wantErr: ErrToolType, wantField: "/outputSchema"},
		{name: "_meta an array", raw: `{"name":"e","_meta":[]}`, wantErr: ErrToolType, wantField: "/_meta"},
		{name: "annotations null", raw: `{"name":"e","annotations":null}`, wantErr: ErrToolType, wantField: "/annotations"},
		{name: "hint a string", raw: `{"name":"e","annotations":{"readOnlyHint":"true"}}`, wantErr: ErrToolType, wantField: "/annotations/readOnlyHint"},
		{name: "hint a number", raw: `{"name":"e","annotations":{"destructiveHint":0}}`, wantErr: ErrToolType, wantField: "/annotations/destructiveHint"},
		{name: "hint null", raw: `{"name":"e","annotations":{"openWorldHint":null}}`, wantErr: ErrToolType, wantField: "/annotations/openWorldHint"},
		{name: "annotations title a bool", raw: `{"name":"e","annotations":{"title":false}}`, wantErr: ErrToolType, wantField: "/annotations/title"},
		{name: "not an object", raw: `["name","e"]`, wantErr: ErrToolType},

		{name: "no name", raw: `{"title":"e"}`, wantErr: ErrToolNoName, wantField: "/name"},
		{name: "empty name", raw: `{"name":""}`, wantErr: ErrToolNoName, wantField: "/name"},
		{name: "invalid JSON", raw: `{"name":"e"`, wantErr: ErrToolMalformed},
		{name: "text after the object", raw: `{"name":"e"} {}`, wantErr: ErrToolMalformed},
		{name: "invalid UTF-8", raw: "{\"name\":\"e\xff\"}", wantErr: ErrToolMalformed, wantField: "/name"},
		{name: "invalid UTF-8 in the schema", raw: "{\"name\":\"e\",\"inputSchema\":{\"a\xff\":1}}", wantErr: ErrToolMalformed, wantField: "/inputSchema"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseTool([]byte(tc.raw))
			if tc.want != nil {
				if err != nil {
					t.Fatalf("ParseTool: %v", err)
				}
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(*tc.want)
				if string(g) != string(w) {
					t.Fatalf("got  %s\nwant %s", g, w)
				}
				return
			}
			var te *ToolError
			if !errors.As(err, &te) || !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want a *ToolError wrapping %v", err, tc.wantErr)
			}
			if te.Field != tc.wantField || te.Index != -1 {
				t.Errorf("Field %q Index %d, want %q and -1", te.Field, te.Index, tc.wantField)
			}
			checkNoValue(t, err, tc.raw)
		})
	}
}

// errorText is what a ToolError or PageError may say: positions, lengths,
// a known member's pointer and a fixed reason; nothing from the input.
var errorText = regexp.MustCompile(`^(tools/list: \d+ tool definitions? refused(; first)?: |tools/list result: )?` +
	`(tool( \d+)?( \(name of \d+ bytes\))?: )?((/[A-Za-z_]+)+: )?(` + reasons() + `)$`)

// reasons is the sentinels' texts as a regexp alternation.
func reasons() string {
	var out []string
	for _, e := range []error{ErrToolMalformed, ErrToolDuplicate, ErrToolNearMiss, ErrToolType, ErrToolNoName} {
		out = append(out, regexp.QuoteMeta(e.Error()))
	}
	return strings.Join(out, "|")
}

// checkNoValue fails when err says anything but the fixed vocabulary.
func checkNoValue(t *testing.T, err error, raw string) {
	t.Helper()
	if !errorText.MatchString(err.Error()) {
		t.Fatalf("error %q says more than where and what (input %q)", err, raw)
	}
	for _, secret := range []string{"rm_rf", "hunter2"} {
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("error %q holds a value", err)
		}
	}
}

func TestParseToolsPage(t *testing.T) {
	tests := []struct {
		name      string
		result    string
		wantNames []string
		wantNext  string
		wantSkip  []int // indexes of the definitions refused
		pageErr   error
		pageField string
	}{
		{name: "one page", result: `{"tools":[{"name":"a"},{"name":"b"}],"nextCursor":"c2"}`, wantNames: []string{"a", "b"}, wantNext: `"c2"`},
		{name: "last page, _meta ignored", result: `{"tools":[{"name":"a"}],"_meta":{"x":1}}`, wantNames: []string{"a"}},
		{name: "no tools member", result: `{}`},
		{name: "empty tools", result: `{"tools":[]}`},
		{name: "attack skipped, others kept", result: `{"tools":[{"name":"read"},{"NAME":"rm_rf","ANNOTATIONS":{"READONLYHINT":true}},{"name":"write","annotations":{"readOnlyHint":"yes"}},{"name":"x"}]}`,
			wantNames: []string{"read", "x"}, wantSkip: []int{1, 2}},
		{name: "a definition that is not an object", result: `{"tools":[7,{"name":"a"}]}`, wantNames: []string{"a"}, wantSkip: []int{0}},
		{name: "tools not an array", result: `{"tools":{"name":"a"}}`, pageErr: ErrToolType, pageField: "/tools"},
		{name: "nextCursor a number", result: `{"tools":[],"nextCursor":2}`, pageErr: ErrToolType, pageField: "/nextCursor"},
		{name: "TOOLS", result: `{"TOOLS":[{"name":"a"}]}`, pageErr: ErrToolNearMiss, pageField: "/tools"},
		{name: "NextCursor", result: `{"tools":[],"NextCursor":"x"}`, pageErr: ErrToolNearMiss, pageField: "/nextCursor"},
		{name: "duplicate tools", result: `{"tools":[{"name":"a"}],"tools":[{"name":"rm_rf"}]}`, pageErr: ErrToolDuplicate, pageField: "/tools"},
		{name: "duplicate inside a definition", result: `{"tools":[{"name":"a","name":"b"},{"name":"c"}]}`, pageErr: ErrToolDuplicate, pageField: "/tools"},
		{name: "result not an object", result: `[]`, pageErr: ErrToolType},
		{name: "result not JSON", result: `{"tools":[`, pageErr: ErrToolMalformed, pageField: "/tools"},
		{name: "text after the result", result: `{"tools":[]}]`, pageErr: ErrToolMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tools, next, err := ParseToolsPage([]byte(tc.result))
			if tc.pageErr != nil {
				var pe *PageError
				if !errors.As(err, &pe) || !errors.Is(err, tc.pageErr) || pe.Field != tc.pageField {
					t.Fatalf("err = %#v, want a *PageError at %q wrapping %v", err, tc.pageField, tc.pageErr)
				}
				if tools != nil || next != nil {
					t.Fatalf("tools %v, next %q with a page error", tools, next)
				}
				checkNoValue(t, err, tc.result)
				return
			}
			var names []string
			for _, tl := range tools {
				names = append(names, tl.Name)
			}
			if strings.Join(names, ",") != strings.Join(tc.wantNames, ",") || string(next) != tc.wantNext {
				t.Fatalf("tools %v next %q, want %v %q", names, next, tc.wantNames, tc.wantNext)
			}
			if tc.wantSkip == nil {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			var skipped ToolErrors
			if !errors.As(err, &skipped) || len(skipped) != len(tc.wantSkip) {
				t.Fatalf("err = %v, want %d skipped definitions", err, len(tc.wantSkip))
			}
			for i, s := range skipped {
				if s.Index != tc.wantSkip[i] {
					t.Errorf("skipped[%d].Index = %d, want %d", i, s.Index, tc.wantSkip[i])
				}
			}
			checkNoValue(t, err, tc.result)
		})
	}
}

// TestParseToolsPageRealServers: the tools/list results of real servers
// (the reference servers' npm packages, captured from their stdio, and
// test/fakeserver's tool set) are read whole, and as encoding/json reads
// them (their member names are all exact).
func TestParseToolsPageRealServers(t *testing.T) {
	files, _ := filepath.Glob("testdata/tools_list/*.json")
	if len(files) < 3 {
		t.Fatalf("want 3 fixtures, found %v", files)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			tools, _, err := ParseToolsPage(b)
			if err != nil {
				t.Fatalf("ParseToolsPage: %v", err)
			}
			var ref struct{ Tools []Tool }
			if err := json.Unmarshal(b, &ref); err != nil {
				t.Fatal(err)
			}
			if len(tools) == 0 || len(tools) != len(ref.Tools) {
				t.Fatalf("%d tools, encoding/json reads %d", len(tools), len(ref.Tools))
			}
			for i := range tools {
				sameTool(t, tools[i], ref.Tools[i])
			}
		})
	}
}

// sameTool fails unless a and b are the same definition (schemas compared
// as JSON values).
func sameTool(t *testing.T, a, b Tool) {
	t.Helper()
	norm := func(tl Tool) string {
		for _, p := range []*json.RawMessage{&tl.InputSchema, &tl.OutputSchema, &tl.Meta} {
			if len(*p) > 0 {
				var v any
				if json.Unmarshal(*p, &v) == nil {
					*p, _ = json.Marshal(v)
				}
			}
		}
		b, _ := json.Marshal(tl)
		return string(b)
	}
	if na, nb := norm(a), norm(b); na != nb {
		t.Fatalf("strict decoder read\n %s\nencoding/json read\n %s", na, nb)
	}
}

// FuzzParseToolsPage: the strict decoder never panics; its errors name no
// value; every definition it accepts is read exactly as encoding/json
// (which matches names case-insensitively and lets the last duplicate win)
// reads it, so nothing it accepts can be read differently by a lenient
// peer.
func FuzzParseToolsPage(f *testing.F) {
	files, _ := filepath.Glob("testdata/tools_list/*.json")
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"tools":[{"NAME":"rm_rf","ANNOTATIONS":{"READONLYHINT":true}}]}`))
	f.Add([]byte(`{"tools":[{"name":"a","name":"b"}],"nextCursor":"x"}`))
	f.Add([]byte(`{"tools":[{"name":"e","annotations":{"readOnlyHint":"true","\u212a":1}}]}`))
	f.Add([]byte(`{"tools":[{"name":"e","de\u017fcription":"x","inputSchema":{"properties":{"a":{},"A":{}}}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tools, next, err := ParseToolsPage(b)
		if err != nil && !errorText.MatchString(err.Error()) {
			t.Fatalf("error %q says more than where and what", err)
		}
		var pe *PageError
		if errors.As(err, &pe) && (tools != nil || next != nil) {
			t.Fatal("tools or cursor with a page error")
		}
		if next != nil && !json.Valid(next) {
			t.Fatalf("nextCursor %q is not a JSON string", next)
		}
		if len(tools) == 0 {
			return
		}
		var ref struct {
			Tools []json.RawMessage `json:"tools"`
		}
		if json.Unmarshal(b, &ref) != nil {
			t.Fatalf("accepted tools from a result encoding/json cannot read: %q", b)
		}
		j := 0
		for _, raw := range ref.Tools {
			var lenient Tool
			if _, err := ParseTool(raw); err != nil {
				continue
			}
			if err := json.Unmarshal(raw, &lenient); err != nil {
				t.Fatalf("accepted %q, encoding/json refuses it: %v", raw, err)
			}
			if j >= len(tools) {
				t.Fatalf("more definitions accepted one by one than in the page")
			}
			sameTool(t, tools[j], lenient)
			j++
		}
		if j != len(tools) {
			t.Fatalf("%d definitions in the page, %d accepted one by one", len(tools), j)
		}
	})
}
