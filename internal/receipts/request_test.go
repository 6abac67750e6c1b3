package receipts

import (
	"errors"
	"strings"
	"testing"
)

func TestInspectRequest(t *testing.T) {
	const pv = `"io.modelcontextprotocol/protocolVersion"`
	for _, tc := range []struct {
		name    string
		line    string
		tool    string
		present bool
		id      string
		hasMeta bool
		state   string
		version string
	}{
		{"string id LF", `{"jsonrpc":"2.0","id":"a1","method":"tools/call","params":{"name":"echo","arguments":{}}}` + "\n", "echo", true, `"a1"`, false, VersionAbsent, ""},
		{"CRLF", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}` + "\r\n", "echo", true, `1`, false, VersionAbsent, ""},
		{"no terminator", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`, "echo", true, `1`, false, VersionAbsent, ""},
		{"big number id", `{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"x"}}` + "\n", "x", true, `9007199254740993`, false, VersionAbsent, ""},
		{"number text kept", `{"jsonrpc":"2.0","id":1.0e0,"method":"tools/call","params":{"name":"x"}}` + "\n", "x", true, `1.0e0`, false, VersionAbsent, ""},
		{"escaped string id kept", `{"jsonrpc":"2.0","id":"\u0061","method":"tools/call","params":{"name":"x"}}` + "\n", "x", true, `"\u0061"`, false, VersionAbsent, ""},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"x"}}` + "\n", "x", true, `null`, false, VersionAbsent, ""},
		{"missing id", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}` + "\n", "x", false, `null`, false, VersionAbsent, ""},
		{"escaped tool name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a\/b\u00e9"}}` + "\n", "a/bé", true, `1`, false, VersionAbsent, ""},
		{"meta without version", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"claudecode/toolUseId":"t"}}}` + "\n", "x", true, `1`, true, VersionAbsent, ""},
		{"version present", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{` + pv + `:"2026-07-28"}}}` + "\n", "x", true, `1`, true, VersionPresent, "2026-07-28"},
		{"version escaped", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{` + pv + `:"\u0032026-07-28"}}}` + "\n", "x", true, `1`, true, VersionPresent, "2026-07-28"},
		{"leap day", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{` + pv + `:"2024-02-29"}}}` + "\n", "x", true, `1`, true, VersionPresent, "2024-02-29"},
		{"not a day", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{` + pv + `:"2025-02-29"}}}` + "\n", "x", true, `1`, true, VersionMalformed, ""},
		{"short month", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{` + pv + `:"2025-6-18"}}}` + "\n", "x", true, `1`, true, VersionMalformed, ""},
		{"padded", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{` + pv + `:" 2025-06-18"}}}` + "\n", "x", true, `1`, true, VersionMalformed, ""},
		{"plus sign", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{` + pv + `:"+025-06-18"}}}` + "\n", "x", true, `1`, true, VersionMalformed, ""},
		{"version number", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{` + pv + `:20250618}}}` + "\n", "x", true, `1`, true, VersionMalformed, ""},
		{"version null", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{` + pv + `:null}}}` + "\n", "x", true, `1`, true, VersionMalformed, ""},
		{"version empty", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{` + pv + `:""}}}` + "\n", "x", true, `1`, true, VersionMalformed, ""},
		{"meta array", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":[]}}` + "\n", "x", true, `1`, true, VersionMalformed, ""},
		{"meta string", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":"2025-06-18"}}` + "\n", "x", true, `1`, true, VersionMalformed, ""},
		{"meta null", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":null}}` + "\n", "x", true, `1`, true, VersionMalformed, ""},
		{"nested version ignored", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"_meta":{` + pv + `:"2025-06-18"}}}}` + "\n", "x", true, `1`, false, VersionAbsent, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := InspectRequest([]byte(tc.line))
			if err != nil {
				t.Fatal(err)
			}
			if r.Tool != tc.tool || r.RPCIDPresent != tc.present || string(r.RPCID) != tc.id ||
				r.HasMeta != tc.hasMeta || r.VersionState != tc.state || r.Version != tc.version {
				t.Fatalf("got %+v (id %s)", r, r.RPCID)
			}
		})
	}
}

func TestInspectRequestRejects(t *testing.T) {
	for _, tc := range []struct{ name, line string }{
		{"empty", ""},
		{"not json", "hello\n"},
		{"trailing data", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}} {}` + "\n"},
		{"duplicate top-level", `{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"x"}}` + "\n"},
		{"duplicate nested", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":1,"a":2}}}` + "\n"},
		{"duplicate name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","name":"y"}}` + "\n"},
		{"invalid utf8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"\xff\"}}\n"},
		{"other method", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n"},
		{"response", `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}]` + "\n"},
		{"no params", `{"jsonrpc":"2.0","id":1,"method":"tools/call"}` + "\n"},
		{"array params", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["x"]}` + "\n"},
		{"no name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}` + "\n"},
		{"number name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":1}}` + "\n"},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{"name":"x"}}` + "\n"},
		{"wrong version", `{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"x"}}` + "\n"},
		{"two lines", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}` + "\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := InspectRequest([]byte(tc.line))
			if !errors.Is(err, ErrNotToolCall) {
				t.Fatalf("err = %v, want ErrNotToolCall", err)
			}
			if strings.Contains(err.Error(), `"x"`) {
				t.Fatalf("error quotes the line: %v", err)
			}
		})
	}
}

func TestIsCalendarDate(t *testing.T) {
	for s, want := range map[string]bool{
		"2025-06-18": true, "2024-02-29": true, "0001-01-01": true, "9999-12-31": true,
		"2025-02-29": false, "2025-13-01": false, "2025-00-10": false, "2025-01-32": false,
		"2025-06-18T00:00:00Z": false, "25-06-18": false, "2025/06/18": false, "２０２５-06-18": false, "": false,
	} {
		if got := IsCalendarDate(s); got != want {
			t.Errorf("IsCalendarDate(%q) = %v", s, got)
		}
	}
}
