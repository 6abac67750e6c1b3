package decisionlog

import (
	"encoding/json"
	"testing"
)

// FuzzPlainID checks the shortcuts of ToolCallID against encoding/json,
// which decodes every id they do not take: a string plainString accepts
// decodes to the same value, an integer plainInteger accepts is a JSON
// number.
func FuzzPlainID(f *testing.F) {
	for _, s := range []string{`"7"`, `"a-1"`, `"caf\u00e9"`, "\"caf\xc3\xa9\"", "\"\xff\"", `"a\"b"`, "\"\x01\"",
		`7`, `-0`, `01`, `-`, `1.0`, `1e2`, `12345678901234567890`, `""`, `"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if v, ok := plainString(raw); ok {
			var want string
			if err := json.Unmarshal([]byte(raw), &want); err != nil || want != v {
				t.Fatalf("plainString(%q) = %q; json.Unmarshal: %q, %v", raw, v, want, err)
			}
		}
		if plainInteger(raw) {
			var n json.Number
			if err := json.Unmarshal([]byte(raw), &n); err != nil || string(n) != raw {
				t.Fatalf("plainInteger(%q) is true; json.Unmarshal: %q, %v", raw, n, err)
			}
		}
	})
}
