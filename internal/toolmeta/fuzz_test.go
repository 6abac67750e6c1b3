package toolmeta

import (
	"encoding/json"
	"slices"
	"testing"
)

// FuzzSchemaProperties checks schemaProperties against encoding/json, an
// independent parser: whenever it returns names, the input is valid JSON
// whose top-level "properties" member is an object with exactly those
// names (each once). It never panics.
func FuzzSchemaProperties(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"b":{},"a":{"properties":{"deep":{}}}}}`, `{"properties":{}}`,
		`{"properties":{"a":{},"a":{}}}`, `{"x":[1,{"properties":{}}],"properties":{"\u0070":1}}`, `[]`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, schema []byte) {
		got := schemaProperties(schema)
		if got == nil {
			return
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(schema, &top); err != nil {
			t.Fatalf("names %q from invalid JSON %q: %v", got, schema, err)
		}
		var props map[string]json.RawMessage
		if err := json.Unmarshal(top["properties"], &props); err != nil || props == nil {
			t.Fatalf("names %q without a properties object in %q", got, schema)
		}
		if len(props) != len(got) {
			t.Fatalf("names %q, encoding/json has %d", got, len(props))
		}
		for i, n := range got {
			if _, ok := props[n]; !ok || slices.Contains(got[:i], n) {
				t.Fatalf("name %q of %q", n, got)
			}
		}
	})
}
