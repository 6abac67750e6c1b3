package jsonrpc

import (
	"errors"
	"strings"
	"testing"
)

func TestParseValid(t *testing.T) {
	tests := []struct {
		name   string
		frame  string
		kind   Kind
		id     string // raw id text, "" when absent
		method string
		params string
		result string
		errv   string
		raw    string // Raw, when it differs from the frame body
	}{
		{name: "request", frame: `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n", kind: KindRequest, id: "1", method: "ping"},
		{name: "request CRLF", frame: `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\r\n", kind: KindRequest, id: "1", method: "ping"},
		{name: "request without terminator", frame: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, kind: KindRequest, id: "1", method: "ping"},
		{name: "string id", frame: `{"jsonrpc":"2.0","id":"7","method":"ping"}` + "\n", kind: KindRequest, id: `"7"`, method: "ping"},
		{name: "escaped string id kept raw", frame: `{"jsonrpc":"2.0","id":"\u0037","method":"ping"}` + "\n", kind: KindRequest, id: `"\u0037"`, method: "ping"},
		{name: "id 1.0 kept raw", frame: `{"jsonrpc":"2.0","id":1.0,"method":"ping"}` + "\n", kind: KindRequest, id: "1.0", method: "ping"},
		{name: "id 1e2 kept raw", frame: `{"jsonrpc":"2.0","id":1e2,"method":"ping"}` + "\n", kind: KindRequest, id: "1e2", method: "ping"},
		{name: "id beyond 2^53 kept raw", frame: `{"jsonrpc":"2.0","id":12345678901234567891,"method":"ping"}` + "\n", kind: KindRequest, id: "12345678901234567891", method: "ping"},
		{name: "negative id", frame: `{"jsonrpc":"2.0","id":-3,"method":"ping"}` + "\n", kind: KindRequest, id: "-3", method: "ping"},
		{name: "null id request", frame: `{"jsonrpc":"2.0","id":null,"method":"ping"}` + "\n", kind: KindRequest, id: "null", method: "ping"},
		{name: "key order and whitespace", frame: ` { "method" : "tools/call" ,"params":{"name":"echo","arguments":{"b":1,"a":[1 , 2]}}, "id" : 9 , "jsonrpc" : "2.0" } ` + "\n", kind: KindRequest, id: "9", method: "tools/call", params: `{"name":"echo","arguments":{"b":1,"a":[1 , 2]}}`,
			raw: `{ "method" : "tools/call" ,"params":{"name":"echo","arguments":{"b":1,"a":[1 , 2]}}, "id" : 9 , "jsonrpc" : "2.0" }`},
		{name: "escaped method", frame: `{"jsonrpc":"2.0","id":1,"method":"tools\/list"}` + "\n", kind: KindRequest, id: "1", method: "tools/list"},
		{name: "array params", frame: `{"jsonrpc":"2.0","id":1,"method":"x","params":[1,"a"]}` + "\n", kind: KindRequest, id: "1", method: "x", params: `[1,"a"]`},
		{name: "U+2028 in a string", frame: "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"a\u2028b\u2029c\"}}\n", kind: KindNotification, method: "notifications/message", params: "{\"data\":\"a\u2028b\u2029c\"}"},
		{name: "notification", frame: `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n", kind: KindNotification, method: "notifications/initialized"},
		{name: "notification with params", frame: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"7","reason":"x"}}` + "\n", kind: KindNotification, method: "notifications/cancelled", params: `{"requestId":"7","reason":"x"}`},
		{name: "result response", frame: `{"jsonrpc":"2.0","id":"s1","result":{"roots":[]}}` + "\n", kind: KindResponse, id: `"s1"`, result: `{"roots":[]}`},
		{name: "result null", frame: `{"jsonrpc":"2.0","id":1,"result":null}` + "\n", kind: KindResponse, id: "1", result: "null"},
		{name: "error response", frame: `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}` + "\n", kind: KindResponse, id: "1", errv: `{"code":-32601,"message":"no"}`},
		{name: "error response with null id", frame: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"no"}}` + "\n", kind: KindResponse, id: "null", errv: `{"code":-32700,"message":"no"}`},
		{name: "unknown members ignored", frame: `{"jsonrpc":"2.0","id":1,"method":"x","extra":{"a":1}}` + "\n", kind: KindRequest, id: "1", method: "x"},
		{name: "batch", frame: `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"}]` + "\n", kind: KindBatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse([]byte(tt.frame))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if m.Kind != tt.kind {
				t.Errorf("Kind = %v, want %v", m.Kind, tt.kind)
			}
			if m.ID.String() != tt.id || m.ID.Present() != (tt.id != "") {
				t.Errorf("ID = %q (present %v), want %q", m.ID.Raw(), m.ID.Present(), tt.id)
			}
			if m.ID.IsNull() != (tt.id == "null") {
				t.Errorf("IsNull = %v", m.ID.IsNull())
			}
			if m.Method != tt.method {
				t.Errorf("Method = %q, want %q", m.Method, tt.method)
			}
			if tt.params != "" && string(m.Params) != tt.params {
				t.Errorf("Params = %q, want %q", m.Params, tt.params)
			}
			if string(m.Result) != tt.result {
				t.Errorf("Result = %q, want %q", m.Result, tt.result)
			}
			if string(m.Error) != tt.errv {
				t.Errorf("Error = %q, want %q", m.Error, tt.errv)
			}
			raw := tt.raw
			if raw == "" {
				raw = string(Body([]byte(tt.frame)))
			}
			if string(m.Raw) != raw {
				t.Errorf("Raw = %q, want %q", m.Raw, raw)
			}
		})
	}
}

func TestParseBatchMembers(t *testing.T) {
	frame := `[ {"jsonrpc":"2.0","id":"7","method":"tools/call","params":{"name":"echo"}} , {"jsonrpc":"2.0","id":7,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}},{"jsonrpc":"2.0","id":"s","result":{}} ]` + "\r\n"
	m, err := Parse([]byte(frame))
	if err != nil {
		t.Fatal(err)
	}
	if m.Kind != KindBatch || len(m.Members) != 4 {
		t.Fatalf("Kind %v with %d members", m.Kind, len(m.Members))
	}
	want := []struct {
		kind   Kind
		id     string
		method string
		raw    string
	}{
		{KindRequest, `"7"`, "tools/call", `{"jsonrpc":"2.0","id":"7","method":"tools/call","params":{"name":"echo"}}`},
		{KindRequest, `7`, "ping", `{"jsonrpc":"2.0","id":7,"method":"ping"}`},
		{KindNotification, "", "notifications/progress", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`},
		{KindResponse, `"s"`, "", `{"jsonrpc":"2.0","id":"s","result":{}}`},
	}
	for i, w := range want {
		mm := m.Members[i]
		if mm.Kind != w.kind || mm.ID.String() != w.id || mm.Method != w.method || string(mm.Raw) != w.raw {
			t.Errorf("member %d = {%v %q %q %q}, want %v", i, mm.Kind, mm.ID.Raw(), mm.Method, mm.Raw, w)
		}
	}
	if m.Members[0].ID.Key() == m.Members[1].ID.Key() {
		t.Errorf(`"7" and 7 have the same key`)
	}
}

func TestParseInvalid(t *testing.T) {
	tests := []struct {
		name  string
		frame string
		code  int
		id    string // id the error is addressed to, "" for none
	}{
		// Not strict JSON: -32700.
		{"empty line", "\n", CodeParseError, ""},
		{"empty CRLF line", "\r\n", CodeParseError, ""},
		{"whitespace only", "  \t \n", CodeParseError, ""},
		{"not JSON", "hello\n", CodeParseError, ""},
		{"truncated", `{"jsonrpc":"2.0","id":1,"method":"ping"` + "\n", CodeParseError, ""},
		{"trailing data", `{"jsonrpc":"2.0","id":1,"method":"ping"} {}` + "\n", CodeParseError, ""},
		{"trailing garbage", `{"jsonrpc":"2.0","id":1,"method":"ping"}x` + "\n", CodeParseError, ""},
		{"two values", `1 2` + "\n", CodeParseError, ""},
		{"single quotes", `{'jsonrpc':'2.0'}` + "\n", CodeParseError, ""},
		{"trailing comma", `{"jsonrpc":"2.0","id":1,"method":"ping",}` + "\n", CodeParseError, ""},
		{"leading zero id", `{"jsonrpc":"2.0","id":01,"method":"ping"}` + "\n", CodeParseError, ""},
		{"NaN", `{"jsonrpc":"2.0","id":NaN,"method":"ping"}` + "\n", CodeParseError, ""},
		{"BOM", "\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n", CodeParseError, ""},
		{"control character in string", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"pi\x01ng\"}\n", CodeParseError, ""},
		{"invalid UTF-8 in a string", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"a\":\"\xff\"}}}\n", CodeParseError, ""},
		{"invalid UTF-8 in a name", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"\xc3\x28\":1}\n", CodeParseError, ""},
		{"overlong UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"a\":\"\xc0\xaf\"}}\n", CodeParseError, ""},
		{"UTF-8 surrogate bytes", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"a\":\"\xed\xa0\x80\"}}\n", CodeParseError, ""},
		{"lone surrogate escape", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":"\ud800"}}` + "\n", CodeParseError, ""},
		// Refused for duplicate names, answered to the id when it is
		// unambiguous (one member named "id", no other spelling of it).
		{"duplicate top-level name", `{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call"}` + "\n", CodeParseError, "1"},
		{"duplicate id", `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}` + "\n", CodeParseError, ""},
		{"duplicate in params", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","name":"delete"}}` + "\n", CodeParseError, "1"},
		{"duplicate in arguments", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write","arguments":{"path":"/tmp/allowed/a","path":"/etc/passwd"}}}` + "\n", CodeParseError, "1"},
		{"duplicate deep in an array", `{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":[{"b":{"c":1,"c":1}}]}}` + "\n", CodeParseError, "1"},
		{"duplicate by escape", `{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":1,"\u0061":2}}` + "\n", CodeParseError, "1"},
		{"duplicate in _meta", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"claudecode/toolUseId":"a","claudecode/toolUseId":"b"}}}` + "\n", CodeParseError, "1"},
		{"duplicate in a batch member", `[{"jsonrpc":"2.0","id":1,"method":"ping","id":2}]` + "\n", CodeParseError, ""},
		{"duplicate jsonrpc", `{"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"method":"ping"}` + "\n", CodeParseError, "1"},
		{"duplicate in a response", `{"jsonrpc":"2.0","id":1,"result":{"a":1,"a":2}}` + "\n", CodeParseError, ""},
		{"id and a dotless-i spelling", `{"jsonrpc":"2.0","id":1,"ıd":2,"method":"ping"}` + "\n", CodeParseError, ""},
		{"id and an escaped dotless-i spelling", `{"jsonrpc":"2.0","id":1,"\u0131d":2,"method":"ping"}` + "\n", CodeParseError, ""},
		{"id and ID", `{"jsonrpc":"2.0","id":1,"ID":2,"method":"ping"}` + "\n", CodeParseError, ""},

		// JSON but not JSON-RPC 2.0: -32600.
		{"number", "42\n", CodeInvalidRequest, ""},
		{"string", "\"ping\"\n", CodeInvalidRequest, ""},
		{"null", "null\n", CodeInvalidRequest, ""},
		{"true", "true\n", CodeInvalidRequest, ""},
		{"empty object", "{}\n", CodeInvalidRequest, ""},
		{"no jsonrpc", `{"id":1,"method":"ping"}` + "\n", CodeInvalidRequest, "1"},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":1,"method":"ping"}` + "\n", CodeInvalidRequest, "1"},
		{"jsonrpc number", `{"jsonrpc":2.0,"id":"a","method":"ping"}` + "\n", CodeInvalidRequest, `"a"`},
		{"jsonrpc null", `{"jsonrpc":null,"id":1,"method":"ping"}` + "\n", CodeInvalidRequest, "1"},
		{"method not a string", `{"jsonrpc":"2.0","id":1,"method":1}` + "\n", CodeInvalidRequest, "1"},
		{"method null", `{"jsonrpc":"2.0","id":1,"method":null}` + "\n", CodeInvalidRequest, "1"},
		{"id object", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}` + "\n", CodeInvalidRequest, ""},
		{"id array", `{"jsonrpc":"2.0","id":[1],"method":"ping"}` + "\n", CodeInvalidRequest, ""},
		{"id bool", `{"jsonrpc":"2.0","id":true,"method":"ping"}` + "\n", CodeInvalidRequest, ""},
		{"params string", `{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}` + "\n", CodeInvalidRequest, "1"},
		{"params number", `{"jsonrpc":"2.0","id":1,"method":"ping","params":3}` + "\n", CodeInvalidRequest, "1"},
		{"params null", `{"jsonrpc":"2.0","id":1,"method":"ping","params":null}` + "\n", CodeInvalidRequest, "1"},
		{"request with result", `{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}` + "\n", CodeInvalidRequest, "1"},
		{"request with error", `{"jsonrpc":"2.0","id":1,"method":"ping","error":{"code":1,"message":"m"}}` + "\n", CodeInvalidRequest, "1"},
		{"neither method nor id", `{"jsonrpc":"2.0","result":{}}` + "\n", CodeInvalidRequest, ""},
		{"response without result or error", `{"jsonrpc":"2.0","id":1}` + "\n", CodeInvalidRequest, "1"},
		{"response with result and error", `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}` + "\n", CodeInvalidRequest, "1"},
		{"error not an object", `{"jsonrpc":"2.0","id":1,"error":"bad"}` + "\n", CodeInvalidRequest, "1"},
		{"empty batch", "[]\n", CodeInvalidRequest, ""},
		{"batch of a number", "[1]\n", CodeInvalidRequest, ""},
		{"nested batch", `[[{"jsonrpc":"2.0","id":1,"method":"ping"}]]` + "\n", CodeInvalidRequest, ""},
		{"batch with an invalid member", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"1.0","id":2,"method":"ping"}]` + "\n", CodeInvalidRequest, "2"},
		{"batch with a non-object member", `[{"jsonrpc":"2.0","id":1,"method":"ping"},"x"]` + "\n", CodeInvalidRequest, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse([]byte(tt.frame))
			if err == nil {
				t.Fatalf("Parse accepted it as %v", m.Kind)
			}
			if m.Kind != KindInvalid {
				t.Errorf("Kind = %v, want invalid", m.Kind)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("errors.Is(err, ErrInvalid) = false for %v", err)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err %T is not *Error", err)
			}
			if e.Code != tt.code {
				t.Errorf("Code = %d (%s), want %d", e.Code, e.Message, tt.code)
			}
			if e.Error() == "" {
				t.Errorf("empty message")
			}
			if e.ID.String() != tt.id {
				t.Errorf("error addressed to id %q, want %q", e.ID.Raw(), tt.id)
			}
		})
	}
}

// TestParseDuplicateMessage checks that the message of a duplicate-name
// error says so (it goes to the client and to the log).
func TestParseDuplicateMessage(t *testing.T) {
	_, err := Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"p":1,"p":2}}}` + "\n"))
	if err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Errorf("err = %v, want a message about a duplicate name", err)
	}
}

func TestBody(t *testing.T) {
	for in, want := range map[string]string{
		"":         "",
		"\n":       "",
		"\r\n":     "",
		"{}":       "{}",
		"{}\n":     "{}",
		"{}\r\n":   "{}",
		"{}\r":     "{}\r",
		"{}\n\n":   "{}\n",
		"{}\r\r\n": "{}\r",
	} {
		if got := string(Body([]byte(in))); got != want {
			t.Errorf("Body(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIDKey(t *testing.T) {
	same := [][]string{
		{`1`, `1.0`, `1e0`, `1E0`, `1.00`, `10e-1`, `0.1e1`},
		{`100`, `1e2`, `1.0e2`, `1E+2`},
		{`0`, `-0`, `0.0`, `-0.0`, `0e5`},
		{`-7`, `-7.0`, `-0.7e1`},
		{`"7"`, `"\u0037"`},
		{`"/"`, `"\/"`, `"\u002f"`, `"\u002F"`},
		{`"é"`, `"\u00e9"`},
		{`"a\"b"`, `"a\u0022b"`},
		{`12345678901234567890`, `1.2345678901234567890e19`},
		{`null`},
	}
	distinct := [][2]string{
		{`"7"`, `7`},
		{`"1"`, `1`},
		{`"1.0"`, `1.0`},
		{`"1"`, `"1.0"`},
		{`"null"`, `null`},
		{`0`, `null`},
		{`""`, `null`},
		{`1`, `2`},
		{`1`, `-1`},
		{`1.5`, `1.25`},
		{`12345678901234567890`, `12345678901234567891`}, // equal as float64
		{`9007199254740993`, `9007199254740992`},         // 2^53+1 vs 2^53
		{`"a"`, `"A"`},
		{`"7"`, `"7 "`},
		{`"n:7"`, `7`},
		{`"s:7"`, `"7"`},
	}
	for _, group := range same {
		k := NewID([]byte(group[0])).Key()
		if k == "" {
			t.Errorf("Key(%s) is empty", group[0])
		}
		for _, id := range group[1:] {
			if got := NewID([]byte(id)).Key(); got != k {
				t.Errorf("Key(%s) = %q, Key(%s) = %q; want equal", group[0], k, id, got)
			}
		}
	}
	for _, p := range distinct {
		a, b := NewID([]byte(p[0])).Key(), NewID([]byte(p[1])).Key()
		if a == b {
			t.Errorf("Key(%s) == Key(%s) == %q; want different", p[0], p[1], a)
		}
	}
	// Different groups differ from each other.
	for i := range same {
		for j := range same {
			if i != j && NewID([]byte(same[i][0])).Key() == NewID([]byte(same[j][0])).Key() {
				t.Errorf("Key(%s) == Key(%s)", same[i][0], same[j][0])
			}
		}
	}
	var absent ID
	if absent.Key() != "" || absent.Present() || absent.String() != "" || absent.Raw() != nil || absent.IsNull() {
		t.Errorf("the absent ID is not absent")
	}
	if NewID([]byte(`"7"`)).Key() == absent.Key() {
		t.Errorf("a present id has the absent key")
	}
}

// TestIDKeyHostileExponent checks that a huge exponent does not make Key
// slow (it must not expand 10^1000000000).
func TestIDKeyHostileExponent(t *testing.T) {
	for _, id := range []string{`1e1000000000`, `1e-1000000000`, `1.5e999999999`, `-1E+999999999`} {
		if NewID([]byte(id)).Key() == "" {
			t.Errorf("Key(%s) is empty", id)
		}
	}
}

// TestIDKeyFromParse checks keys of ids as Parse returns them.
func TestIDKeyFromParse(t *testing.T) {
	key := func(id string) string {
		m, err := Parse([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}` + "\n"))
		if err != nil {
			t.Fatalf("Parse with id %s: %v", id, err)
		}
		return m.ID.Key()
	}
	if key(`"7"`) == key(`7`) {
		t.Errorf(`"7" and 7 share a key`)
	}
	if key(`1`) != key(`1.0`) || key(`1`) != key(`1e0`) {
		t.Errorf("1, 1.0 and 1e0 have different keys")
	}
	if key(`"\u0037"`) != key(`"7"`) {
		t.Errorf(`"\u0037" and "7" have different keys`)
	}
}

func TestSniffID(t *testing.T) {
	long := strings.Repeat("x", 5000)
	tests := []struct {
		name   string
		prefix string
		want   string // "" for absent
	}{
		{"number id first", `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"arguments":{"x":"` + long, "42"},
		{"string id first", `{"id":"abc","jsonrpc":"2.0","method":"tools/call","params":{"x":"` + long, `"abc"`},
		{"escaped string id", `{"id":"a\"b","params":{"x":"` + long, `"a\"b"`},
		{"id after jsonrpc and method", `{"jsonrpc":"2.0","method":"tools/call","id":"r-1","params":{"x":"` + long, `"r-1"`},
		{"id after a complete params", `{"jsonrpc":"2.0","params":{"id":5,"x":[1,2]},"id":6,"method":"tools/call","x":"` + long, "6"},
		{"id only inside cut params", `{"jsonrpc":"2.0","method":"tools/call","params":{"id":5,"x":"` + long, ""},
		{"id after the cut", (`{"jsonrpc":"2.0","method":"tools/call","params":{"x":"` + long + `"},"id":7}`)[:100], ""},
		{"whitespace", "{ \"id\" :\t12 ,\n\"method\":\"x\",\"params\":{\"a\":\"" + long, "12"},
		{"id 1.0", `{"id":1.0,"x":"` + long, "1.0"},
		{"big id", `{"id":12345678901234567890,"x":"` + long, "12345678901234567890"},
		{"null id", `{"id":null,"x":"` + long, ""},
		{"object id", `{"id":{"a":1},"x":"` + long, ""},
		{"bool id", `{"id":true,"x":"` + long, ""},
		{"string id cut", `{"id":"abc`, ""},
		{"number id cut at the end", `{"id":12`, ""}, // could be 123...
		{"decimal id cut at the end", `{"id":1.5`, ""},
		{"number id complete before a comma", `{"id":12,`, "12"},
		{"number id complete before a space", `{"id":12 `, "12"},
		{"number id complete before }", `{"id":12}`, "12"},
		{"not an object", `[{"id":1}]`, ""},
		{"not JSON", `hello "id":1`, ""},
		{"empty", ``, ""},
		{"no id", `{"jsonrpc":"2.0","method":"x"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SniffID([]byte(tt.prefix))
			if got.String() != tt.want || got.Present() != (tt.want != "") {
				t.Errorf("SniffID(%.60q) = %q (present %v), want %q", tt.prefix, got.Raw(), got.Present(), tt.want)
			}
		})
	}
}

// TestSniffIDCopies checks that the id does not alias the prefix buffer,
// which the reader reuses.
func TestSniffIDCopies(t *testing.T) {
	buf := []byte(`{"id":"abc","x":"yyyy`)
	id := SniffID(buf)
	copy(buf, "XXXXXXXXXXXXXXXXXXXX")
	if id.String() != `"abc"` {
		t.Errorf("id changed with the buffer: %q", id.Raw())
	}
}

func TestObjectMembers(t *testing.T) {
	var names, values []string
	err := ObjectMembers([]byte(`{"b": [1, 2] ,"a":{"x":"y"},"c":1.0e2}`), func(n string, v []byte) {
		names = append(names, n)
		values = append(values, string(v))
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(names, ",") != "b,a,c" || strings.Join(values, "|") != `[1, 2]|{"x":"y"}|1.0e2` {
		t.Errorf("members %q = %q", names, values)
	}
	if err := ObjectMembers([]byte(`[1]`), func(string, []byte) {}); err == nil {
		t.Errorf("no error for an array")
	}
}

func TestKindString(t *testing.T) {
	for k, s := range map[Kind]string{KindInvalid: "invalid", KindRequest: "request", KindNotification: "notification", KindResponse: "response", KindBatch: "batch"} {
		if k.String() != s {
			t.Errorf("%d.String() = %q, want %q", k, k.String(), s)
		}
	}
}

// TestCaseFoldedNames: member names that differ only in case are refused at
// any depth (a server decoding case-insensitively would read another
// message than the one decided), and so is a top-level member that is a
// JSON-RPC member name in another case. Regression for a policy bypass
// found in review: {"method":"ping","METHOD":"tools/call",...} reached a Go
// encoding/json server as tools/call with no decision.
func TestCaseFoldedNames(t *testing.T) {
	for _, tc := range []struct {
		frame string
		code  int
	}{
		{`{"jsonrpc":"2.0","id":4,"method":"ping","METHOD":"tools/call","params":{"name":"write","arguments":{}}}`, CodeParseError},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{}},"Params":{"name":"write","arguments":{}}}`, CodeParseError},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","NAME":"delete","arguments":{}}}`, CodeParseError},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{}},"paramſ":{"name":"write","arguments":{}}}`, CodeParseError},
		{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"path":"/tmp/a","PATH":"/etc/shadow"}}}`, CodeParseError},
		{`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo","arguments":{"k":1,"\u212a":2}}}`, CodeParseError},
		{`{"jsonrpc":"2.0","method":"notifications/initialized","METHOD":"tools/call","ID":7,"params":{}}`, CodeParseError},
		{`{"jsonrpc":"2.0","id":4,"result":{},"METHOD":"tools/call"}`, CodeInvalidRequest},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping","Method":"tools/call"}]`, CodeParseError},
	} {
		_, err := Parse([]byte(tc.frame + "\n"))
		var perr *Error
		if !errors.As(err, &perr) || perr.Code != tc.code {
			t.Errorf("Parse(%s) = %v, want code %d", tc.frame, err, tc.code)
		}
	}
	// Different names that merely contain capitals stay fine.
	for _, ok := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"A","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"Path":"a","other":{"Path":"b"}}}}`,
	} {
		if _, err := Parse([]byte(ok + "\n")); err != nil {
			t.Errorf("Parse(%s) = %v, want it accepted", ok, err)
		}
	}
}
