package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/strictjson"
)

func TestRewriteListing(t *testing.T) {
	result := `{"tools":[{"name":"a","description":"A \u0041","inputSchema":{"type":"object"}},{"name":"b","inputSchema":{ "type" : "object" }},{"name":"c","description":"C"}],"nextCursor":"x y","_meta":{"k":1}}`
	for _, tc := range []struct {
		name       string
		hide, mark map[string]string
		want       string
	}{
		{"hide one", map[string]string{"b": ""}, nil,
			`{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"a","description":"A \u0041","inputSchema":{"type":"object"}},{"name":"c","description":"C"}],"nextCursor":"x y","_meta":{"k":1}}}` + "\n"},
		{"mark with and without a description", nil, map[string]string{"a": "", "b": ""},
			`{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"a","description":"` + quarantineNotice + `A A","inputSchema":{"type":"object"}},{"name":"b","inputSchema":{ "type" : "object" },"description":"` + strings.TrimSuffix(quarantineNotice, " ") + `"},{"name":"c","description":"C"}],"nextCursor":"x y","_meta":{"k":1}}}` + "\n"},
		{"hide every tool", map[string]string{"a": "", "b": "", "c": ""}, nil,
			`{"jsonrpc":"2.0","id":7,"result":{"tools":[],"nextCursor":"x y","_meta":{"k":1}}}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := rewriteListing([]byte("7"), []byte(result), tc.hide, tc.mark, []byte("\n"))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	if _, err := rewriteListing([]byte("1"), []byte(`{"tools":{}}`), map[string]string{"a": ""}, nil, []byte("\n")); err == nil {
		t.Error("a result whose tools is not an array: no error")
	}
}

// FuzzRewriteListing: for any tools/list result the strict decoder
// accepts, the rewritten response is strict JSON, lists every tool not
// hidden (in order, marked ones with the notice) and keeps the others'
// definitions as they were.
func FuzzRewriteListing(f *testing.F) {
	f.Add(`{"tools":[{"name":"a","inputSchema":{"type":"object"}},{"name":"b","description":"x"}]}`, "a", "b")
	f.Add(`{"tools":[{"name":"\u0061","description":"\ud83d\ude00"}],"nextCursor":"c"}`, "a", "")
	f.Fuzz(func(t *testing.T, result, hideName, markName string) {
		if strictjson.Validate([]byte(result)) != nil {
			return
		}
		tools, _, err := mcp.ParseToolsPage([]byte(result))
		if err != nil || len(tools) == 0 {
			return
		}
		out, err := rewriteListing([]byte("1"), []byte(result), map[string]string{hideName: ""}, map[string]string{markName: ""}, []byte("\n"))
		if err != nil {
			t.Fatalf("rewrite of an accepted page: %v", err)
		}
		var resp struct {
			Result struct {
				Tools []map[string]json.RawMessage `json:"tools"`
			} `json:"result"`
		}
		if err := strictjson.Validate(out[:len(out)-1]); err != nil {
			t.Fatalf("not strict JSON: %v\n%s", err, out)
		}
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatal(err)
		}
		i := 0
		for _, tl := range tools {
			if tl.Name == hideName {
				continue
			}
			if i >= len(resp.Result.Tools) {
				t.Fatalf("tool %q missing", tl.Name)
			}
			var name, desc string
			_ = json.Unmarshal(resp.Result.Tools[i]["name"], &name)
			_ = json.Unmarshal(resp.Result.Tools[i]["description"], &desc)
			if name != tl.Name {
				t.Fatalf("tool %d is %q, want %q", i, name, tl.Name)
			}
			if tl.Name == markName && !strings.HasPrefix(desc, strings.TrimSuffix(quarantineNotice, " ")) {
				t.Fatalf("marked tool %q: description %q", name, desc)
			}
			if tl.Name != markName && desc != tl.Description {
				t.Fatalf("tool %q: description %q, was %q", name, desc, tl.Description)
			}
			i++
		}
		if i != len(resp.Result.Tools) {
			t.Fatalf("%d tools out, want %d", len(resp.Result.Tools), i)
		}
	})
}
