package drift

import (
	"errors"
	"strings"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/jcs"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
)

// TestCanonical: the members kept, their order and form, and what is left
// out of _meta.
func TestCanonical(t *testing.T) {
	raw := `{"name":"t","title":"T","description":"d","inputSchema":{"type":"object","properties":{"b":{},"a":{"maximum":1.0E2}}},` +
		`"outputSchema":{"type":"object"},"annotations":{"readOnlyHint":true,"title":"A"},"icons":[],` +
		`"_meta":{"other":1,"interlock.side_effect":"read_only","security":{"x":1},"interlock":{"y":2},"interlockx":3,"interlock.":4,` +
		`"dev.gatehouse/security":{"side_effect":"read_only"},"dev.gatehouse/security-receipt":{"receipt_id":"r"}}}`
	got, err := Canonical(tool(t, raw))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"_meta":{"dev.gatehouse/security":{"side_effect":"read_only"},"dev.gatehouse/security-receipt":{"receipt_id":"r"},` +
		`"interlock":{"y":2},"interlock.side_effect":"read_only","security":{"x":1}},` +
		`"annotations":{"readOnlyHint":true,"title":"A"},"description":"d",` +
		`"inputSchema":{"properties":{"a":{"maximum":100},"b":{}},"type":"object"},"name":"t","outputSchema":{"type":"object"},"title":"T"}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if err := jcs.Check(got); err != nil {
		t.Errorf("not canonical: %v", err)
	}
	// Nothing but a name: nothing else; no security member: no _meta.
	got, err = Canonical(tool(t, `{"name":"t","annotations":{},"_meta":{"progressToken":1}}`))
	if err != nil || string(got) != `{"name":"t"}` {
		t.Errorf("minimal: %s, %v", got, err)
	}
}

// TestHashStable: key order, whitespace and number spelling in the
// listing do not change the hash; every member of the definition does.
func TestHashStable(t *testing.T) {
	a := `{"name":"t","description":"d","inputSchema":{"type":"object","properties":{"n":{"type":"integer","maximum":10}}},"_meta":{"dev.gatehouse/security":{"side_effect":"read_only","externality":"internal"}}}`
	b := "{ \"_meta\" : { \"dev.gatehouse/security\" : {\"externality\":\"internal\",\n\t\"side_effect\":\"read_only\"}, \"progressToken\": 7 },\n" +
		" \"inputSchema\": {\"properties\": {\"n\": {\"maximum\": 1e1, \"type\": \"integer\"}}, \"type\": \"object\"},\r\n \"description\": \"d\", \"name\": \"t\" }"
	ha, err := Hash(tool(t, a))
	if err != nil {
		t.Fatal(err)
	}
	hb, err := Hash(tool(t, b))
	if err != nil {
		t.Fatal(err)
	}
	if ha != hb || !jcs.ValidHash(ha) {
		t.Errorf("%s != %s", ha, hb)
	}
	if r := Compare(tool(t, a), tool(t, b), Options{}); r.Severity != None || len(r.Changes) != 0 {
		t.Errorf("Compare of equal definitions: %+v", r)
	}
	for _, edit := range []struct{ from, to string }{
		{`"d"`, `"e"`}, {`"t"`, `"u"`}, {`10`, `11`}, {`"internal"`, `"external"`}, {`"integer"`, `"number"`},
	} {
		h, err := Hash(tool(t, strings.Replace(a, edit.from, edit.to, 1)))
		if err != nil || h == ha {
			t.Errorf("%s -> %s: hash %s unchanged (%v)", edit.from, edit.to, h, err)
		}
	}
}

// TestParseRoundTrip: Parse reads Canonical's output back to a definition
// with the same canonical form.
func TestParseRoundTrip(t *testing.T) {
	for _, name := range []string{"publish_artifact_baseline.json", "publish_artifact_current.json"} {
		c, err := Canonical(load(t, name))
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(c)
		if err != nil {
			t.Fatal(err)
		}
		c2, err := Canonical(back)
		if err != nil || string(c2) != string(c) {
			t.Errorf("%s: round trip %s, %v", name, c2, err)
		}
	}
}

// TestCanonicalErrors: a member that is not strict JSON or holds an
// inexact number is an error naming the member, wrapping ErrDefinition,
// without the value; Parse refuses what ParseTool refuses.
func TestCanonicalErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		t      mcp.Tool
		member string
		is     error
	}{
		{"input not JSON", mcp.Tool{Name: "t", InputSchema: []byte(`{"secretvalue":`)}, "/inputSchema", ErrDefinition},
		{"output duplicate", mcp.Tool{Name: "t", OutputSchema: []byte(`{"secretvalue":1,"secretvalue":2}`)}, "/outputSchema", ErrDefinition},
		{"meta not object", mcp.Tool{Name: "t", Meta: []byte(`["secretvalue"]`)}, "/_meta", ErrDefinition},
		{"inexact number", mcp.Tool{Name: "t", InputSchema: []byte(`{"maximum":9007199254740993}`)}, "", jcs.ErrInexactNumber},
	} {
		_, err := Canonical(tc.t)
		if err == nil || !errors.Is(err, ErrDefinition) || !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.member) {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if strings.Contains(err.Error(), "secretvalue") {
			t.Errorf("%s: error quotes the input: %v", tc.name, err)
		}
		if _, herr := Hash(tc.t); herr == nil {
			t.Errorf("%s: Hash succeeded", tc.name)
		}
	}
	var te *mcp.ToolError
	if _, err := Parse([]byte(`{"name":"t","NAME":"u"}`)); !errors.Is(err, ErrDefinition) || !errors.As(err, &te) {
		t.Errorf("Parse: %v", err)
	}
}

// TestHashStableListing: two tools/list results that differ only in
// whitespace, member order and _meta members outside the definition give
// every tool the same hash.
func TestHashStableListing(t *testing.T) {
	a := `{"tools":[{"name":"a","inputSchema":{"type":"object","required":["x"],"properties":{"x":{"type":"string"}}}},` +
		`{"name":"b","description":"B","annotations":{"readOnlyHint":true,"openWorldHint":false},"_meta":{"interlock.externality":"internal"}}]}`
	b := "{\n  \"tools\": [\n    {\"inputSchema\": {\"properties\": {\"x\": {\"type\": \"string\"}}, \"required\": [\"x\"], \"type\": \"object\"}, \"name\": \"a\", \"_meta\": {\"vendor\": 1}},\n" +
		"    {\"_meta\": {\"interlock.externality\": \"internal\", \"trace\": \"t\"}, \"annotations\": {\"openWorldHint\": false, \"readOnlyHint\": true}, \"description\": \"B\", \"name\": \"b\"}\n  ],\n  \"nextCursor\": \"c\"\n}"
	ta, _, err := mcp.ParseToolsPage([]byte(a))
	if err != nil {
		t.Fatal(err)
	}
	tb, _, err := mcp.ParseToolsPage([]byte(b))
	if err != nil {
		t.Fatal(err)
	}
	for i := range ta {
		ha, errA := Hash(ta[i])
		hb, errB := Hash(tb[i])
		if errA != nil || errB != nil || ha != hb {
			t.Errorf("tool %d: %s %v, %s %v", i, ha, errA, hb, errB)
		}
	}
}
