package relay

import (
	"fmt"
	"github.com/gatehouse-mcp/gatehouse/test/harness"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// padTo returns a tools/call echo request with the given id whose length,
// terminator included, is exactly n bytes.
func padTo(id string, n int) string {
	head := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{"data":"`
	tail := `"}}}` + "\n"
	return head + strings.Repeat("a", n-len(head)-len(tail)) + tail
}

// notificationOf returns a notifications/message line of exactly n bytes.
func notificationOf(n int) string {
	head := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"`
	tail := `"}}` + "\n"
	return head + strings.Repeat("b", n-len(head)-len(tail)) + tail
}

// TestLargeFramesPass checks frames of 1 MiB and 15 MiB in both directions
// under the default 16 MiB limit, byte for byte.
func TestLargeFramesPass(t *testing.T) {
	t.Parallel()
	if testing.Short() || os.Getenv("GATEHOUSE_RELAY_RACE") != "" {
		t.Skip("moves ~70 MiB; too slow under the race detector")
	}
	dir := t.TempDir()
	record := filepath.Join(dir, "record")
	h := startGH(t, run{server: []string{"--record", record}})
	h.handshake("2025-06-18")
	for _, size := range []int{1 << 20, 15 << 20} {
		start := time.Now()
		// client -> server
		req := padTo(fmt.Sprint(size), size)
		resp := h.call(req, fmt.Sprint(size))
		expectResult(t, resp, fmt.Sprint(size))
		if args := req[strings.Index(req, `{"data"`) : len(req)-3]; !strings.Contains(resp, harness.JSONString(args)) {
			t.Errorf("%d byte echo: the response does not hold the arguments", size)
		}
		t.Logf("%d bytes: client->server and back in %v", size, time.Since(start))
		start = time.Now()
		// server -> client
		line := notificationOf(size)
		h.Send(emitCall(fmt.Sprintf(`"e%d"`, size), line))
		got := h.read(20 * time.Second)
		if got != line {
			t.Errorf("%d byte server frame arrived as %d bytes", size, len(got))
		}
		expectResult(t, h.read(10*time.Second), fmt.Sprintf(`"e%d"`, size))
		t.Logf("%d bytes: server->client in %v", size, time.Since(start))
	}
	h.CloseStdin()
	if code := h.Wait(10 * time.Second); code != 0 {
		t.Errorf("exit code %d", code)
	}
	if got, want := readFile(t, record), h.Sent(); got != want {
		t.Errorf("server received %d bytes, client sent %d; not identical", len(got), len(want))
	}
}

// TestOversizedClientFrame checks a client frame over --max-frame-bytes: it
// never reaches the server, the client gets an error addressed to the id
// read from the frame's start, the event is recorded as
// gatehouse.frame.rejected.v1, and relaying continues. A frame of exactly the
// limit passes.
func TestOversizedClientFrame(t *testing.T) {
	t.Parallel()
	const limit = 100000
	tests := []struct {
		name  string
		frame string
		id    string // id of the error; "null" when unreadable
	}{
		{"one byte over", padTo("41", limit+1), "41"},
		{"one byte over with CRLF", strings.TrimSuffix(padTo(`"crlf"`, limit+1), "\n") + "\r\n", `"crlf"`},
		{"far over", padTo(`"far"`, 3*limit), `"far"`},
		{"over by less than a read chunk", padTo("43", limit+5000), "43"},
		{"id after the params", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"data":"` + strings.Repeat("c", 2*limit) + `"}},"id":44}` + "\n", "null"},
		{"not JSON at all", strings.Repeat("x", 2*limit) + "\n", "null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			record := filepath.Join(dir, "record")
			log := filepath.Join(dir, "decisions.jsonl")
			h := startGH(t, run{
				flags:  []string{"--max-frame-bytes", fmt.Sprint(limit), "--decision-log", log, "--event-source", eventSource},
				server: []string{"--record", record},
			})
			h.handshake("2025-06-18")
			exact := padTo("40", limit)
			expectResult(t, h.call(exact, "40"), "40")

			h.Send(tt.frame)
			expectError(t, h.read(10*time.Second), tt.id, -32600)
			// The next frame works.
			expectResult(t, h.call(ping("45"), "45"), "45")
			h.CloseStdin()
			h.Wait(10 * time.Second)

			for _, l := range recordLines(t, record) {
				if len(l) > limit {
					t.Errorf("the server received a %d byte line", len(l))
				}
			}
			if !strings.Contains(readFile(t, record), exact) {
				t.Errorf("the frame of exactly the limit did not reach the server")
			}
			if !strings.HasSuffix(readFile(t, record), ping("45")) {
				t.Errorf("the frame after the oversized one did not reach the server last")
			}
			rej := eventsOf(t, log, typeRejected)
			if len(rej) != 1 {
				t.Fatalf("%d frame.rejected events, want 1", len(rej))
			}
			if d := harness.Str(rej[0].Data["direction"]); d != "client" {
				t.Errorf("rejected event direction %q", d)
			}
			if tt.id != "null" && string(rej[0].Data["rpc_id"]) != tt.id {
				t.Errorf("rejected event rpc_id %s, want %s", rej[0].Data["rpc_id"], tt.id)
			}
			if strings.Contains(rej[0].Raw, "aaaaaaaaaa") {
				t.Errorf("the rejected event holds frame content")
			}
		})
	}
}

// TestOversizedServerFrame checks server frames over the limit: dropped,
// recorded and shown on stderr; a response whose id is readable is answered
// to the client with an error; the session continues.
func TestOversizedServerFrame(t *testing.T) {
	t.Parallel()
	t.Run("banner", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		log := filepath.Join(dir, "decisions.jsonl")
		banner := strings.TrimSuffix(notificationOf(3000), "\n")
		h := startGH(t, run{
			flags:  []string{"--max-frame-bytes", "1024", "--decision-log", log, "--event-source", eventSource},
			server: []string{"--banner", banner},
		})
		// The first thing the client sees is the answer to its ping.
		expectResult(t, h.call(ping("1"), "1"), "1")
		expectResult(t, h.call(initialize("2", "2025-06-18"), "2"), "2")
		h.WaitStderr("3000 bytes", 5*time.Second)
		h.CloseStdin()
		h.Wait(10 * time.Second)
		rej := eventsOf(t, log, typeRejected)
		if len(rej) != 1 || harness.Str(rej[0].Data["direction"]) != "server" {
			t.Errorf("rejected events %v, want one from the server", rej)
		}
	})
	t.Run("response", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		log := filepath.Join(dir, "decisions.jsonl")
		h := startGH(t, run{
			flags:  []string{"--max-frame-bytes", "2048", "--decision-log", log, "--event-source", eventSource},
			server: []string{"--tools", harness.Testdata("tools-big.json")},
		})
		expectResult(t, h.call(initialize("1", "2025-06-18"), "1"), "1")
		// The tools/list result is over the limit: the client gets an
		// error for its request instead of waiting forever.
		m := expectError(t, h.call(toolsList(`"big"`), `"big"`), `"big"`, -32603)
		if !strings.Contains(m.Error.Message, "2048") {
			t.Errorf("error message %q does not give the limit", m.Error.Message)
		}
		expectResult(t, h.call(ping("3"), "3"), "3")
		h.CloseStdin()
		h.Wait(10 * time.Second)
		rej := eventsOf(t, log, typeRejected)
		if len(rej) != 1 || harness.Str(rej[0].Data["direction"]) != "server" || string(rej[0].Data["rpc_id"]) != `"big"` {
			t.Errorf("rejected events %v, want one from the server for id \"big\"", rej)
		}
	})
}

// TestOversizedServerRequest checks that a server-to-client request over
// the limit whose id is readable gets a JSON-RPC error addressed to it (the
// server is the sender), and is not forwarded.
func TestOversizedServerRequest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	record := filepath.Join(dir, "record")
	banner := `{"jsonrpc":"2.0","id":"big-req","method":"sampling/createMessage","params":{"maxTokens":1,"messages":[{"role":"user","content":{"type":"text","text":"` + strings.Repeat("z", 3000) + `"}}]}}`
	h := startGH(t, run{flags: []string{"--max-frame-bytes", "1024"}, server: []string{"--record", record, "--banner", banner}})
	expectResult(t, h.call(ping("1"), "1"), "1")
	waitFile(t, record, `"big-req"`, 5*time.Second)
	for _, l := range recordLines(t, record) {
		if strings.Contains(l, `"big-req"`) {
			expectError(t, l, `"big-req"`, decode(l).Error.Code)
		}
	}
}

// TestSplitFrames checks frames that arrive in pieces, with pauses, in both
// directions: each is relayed once, whole.
func TestSplitFrames(t *testing.T) {
	t.Parallel()
	record := filepath.Join(t.TempDir(), "record")
	h := startGH(t, run{server: []string{"--record", record}})
	h.handshake("2025-06-18")
	// server -> client: one notification written in three pieces.
	parts := []string{`{"jsonrpc":"2.0","me`, `thod":"notifications/message","params":{"data":"split"`, "}}\r\n"}
	h.Send(toolCall(`"e"`, "emit", `{"delay_ms":150,"lines":[`+harness.JSONString(parts[0])+`,`+harness.JSONString(parts[1])+`,`+harness.JSONString(parts[2])+`]}`))
	if got, want := h.read(5*time.Second), strings.Join(parts, ""); got != want {
		t.Errorf("split server frame arrived as %q, want %q", got, want)
	}
	expectResult(t, h.read(5*time.Second), `"e"`)
	// client -> server: one request written in pieces.
	p := ping(`"split"`)
	h.Send(p[:5])
	time.Sleep(100 * time.Millisecond)
	h.Send(p[5:20])
	time.Sleep(100 * time.Millisecond)
	h.Send(p[20:])
	expectResult(t, h.read(5*time.Second), `"split"`)
	h.CloseStdin()
	h.Wait(10 * time.Second)
	if got, want := readFile(t, record), h.Sent(); got != want {
		t.Errorf("server received:\n%q\nwant\n%q", got, want)
	}
}

// TestExactBytesClientToServer checks that the server receives exactly the
// bytes the client sent: CRLF terminators, 1.0, 1e2, integers beyond 2^53,
// member order, whitespace, U+2028 inside strings, escapes.
func TestExactBytesClientToServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	record := filepath.Join(dir, "record")
	h := startGH(t, run{server: []string{"--record", record}})
	frames := []struct{ line, id string }{
		{` { "params" : {"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"version":"0","name":"x"}}, "method":"initialize" ,"id":1.0,"jsonrpc":"2.0"}` + "\r\n", "1.0"},
		{`{"method":"notifications/initialized","jsonrpc":"2.0"}` + "\r\n", ""},
		{`{"jsonrpc":"2.0","id":1e2,"method":"tools/list","params":{}}` + "\n", "1e2"},
		{`{"jsonrpc":"2.0","id":12345678901234567891,"method":"ping"}` + "\r\n", "12345678901234567891"},
		{"{\"params\":{\"arguments\":{\"z\":1.0,\"a\":1e2,\"big\":123456789012345678901234567890,\"neg\":-0.0,\"exp\":1E-7,\"s\":\"a\u2028b\u2029c \\u2028 \\u00e9 caf\u00e9 \\\"q\\\" \\/ <&>\",\"nested\":{\"b\":[1 , 2,3],\"a\":{}}},\"name\":\"echo\"},\"method\":\"tools/call\",\"id\":\"x\\u0041\",\"jsonrpc\":\"2.0\"}\r\n", `"x\u0041"`},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1.50,"progress":2.0E0}}` + "\n", ""},
		{"{\"jsonrpc\":\"2.0\",\"id\":-7,\"method\":\"ping\"}\t \n", "-7"},
	}
	for _, f := range frames {
		if f.id == "" {
			h.Send(f.line)
			continue
		}
		resp := h.call(f.line, f.id)
		expectResult(t, resp, f.id)
		if !strings.Contains(resp, `"id":`+f.id+`,`) {
			t.Errorf("response id is not the exact token %s: %q", f.id, resp)
		}
	}
	h.CloseStdin()
	h.Wait(10 * time.Second)
	if got, want := readFile(t, record), h.Sent(); got != want {
		t.Errorf("server received other bytes than the client sent:\n got %q\nwant %q", got, want)
	}
}

// TestExactBytesServerToClient checks that the client receives exactly the
// bytes the server wrote, and that the client's answer to a server request
// reaches the server exactly.
func TestExactBytesServerToClient(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	record := filepath.Join(dir, "record")
	h := startGH(t, run{server: []string{"--record", record}})
	h.handshake("2025-06-18")
	lines := []string{
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":{\"z\":1.0,\"a\":1e2,\"big\":123456789012345678901234567890,\"s\":\"\u2028 \\u2028 \\ud83d\\ude00 \\/\"}}}\r\n",
		` { "method" : "notifications/progress" , "jsonrpc":"2.0","params":{"progressToken":"t","progress":1.50,"total":1E1}} ` + "\n",
		`{"id":1e2,"jsonrpc":"2.0","method":"roots/list"}` + "\r\n",
		`{"jsonrpc":"2.0","id":98765432109876543210,"method":"sampling/createMessage","params":{"messages":[],"maxTokens":1.0}}` + "\n",
	}
	h.Send(emitCall(`"emit"`, lines...))
	for i, want := range lines {
		if got := h.read(5 * time.Second); got != want {
			t.Errorf("server line %d arrived as %q, want %q", i, got, want)
		}
	}
	expectResult(t, h.read(5*time.Second), `"emit"`)
	answers := []string{
		`{"result":{"roots":[{"uri":"file:///tmp/a%20b","name":"\u2028"}]},"id":1e2,"jsonrpc":"2.0"}` + "\r\n",
		`{"jsonrpc":"2.0","id":98765432109876543210,"result":{"role":"assistant","content":{"type":"text","text":"x"},"model":"m","stopReason":"endTurn"}}` + "\n",
	}
	for _, a := range answers {
		h.Send(a)
	}
	for _, a := range answers {
		waitFile(t, record, a, 5*time.Second)
	}
	h.CloseStdin()
	h.Wait(10 * time.Second)
	if got, want := readFile(t, record), h.Sent(); got != want {
		t.Errorf("server received other bytes than the client sent:\n got %q\nwant %q", got, want)
	}
}

// TestStringAndNumberIDsDiffer checks that "7" and 7 are different
// requests: both in flight at once, each answered with its own id.
func TestStringAndNumberIDsDiffer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	record := filepath.Join(dir, "record")
	h := startGH(t, run{server: []string{"--record", record}})
	h.handshake("2025-06-18")
	h.Send(toolCall(`"7"`, "sleep", `{"ms":600}`))
	h.Send(toolCall(`7`, "sleep", `{"ms":200}`))
	first, second := h.read(5*time.Second), h.read(5*time.Second)
	m1 := expectResult(t, first, "7")
	m2 := expectResult(t, second, `"7"`)
	if !strings.Contains(string(m1.Result), "slept 200 ms") || !strings.Contains(string(m2.Result), "slept 600 ms") {
		t.Errorf("answers mixed up: %q then %q", first, second)
	}
	h.CloseStdin()
	h.Wait(10 * time.Second)
	if got, want := readFile(t, record), h.Sent(); got != want {
		t.Errorf("server did not receive both calls exactly:\n got %q\nwant %q", got, want)
	}
}

// TestInvalidClientFrames checks strict classification of client frames:
// nothing invalid is forwarded, the client gets -32700 or -32600 (addressed
// to its id when that is readable), the refusal is recorded, and the session
// continues.
func TestInvalidClientFrames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		frame string
		code  int
		id    string
	}{
		{"not JSON", "hello there\n", -32700, "null"},
		{"truncated JSON", `{"jsonrpc":"2.0","id":1,"method":"ping"` + "\n", -32700, "null"},
		{"two values", `{"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n", -32700, "null"},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"s\":\"\xc3\x28\"}}}\n", -32700, "null"},
		{"lone surrogate escape", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"s":"\udc00"}}}` + "\n", -32700, "null"},
		{"duplicate top-level names", `{"jsonrpc":"2.0","id":4,"method":"ping","method":"tools/call"}` + "\n", -32700, "4"},
		{"duplicate names in arguments", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"path":"/tmp/ok","path":"/etc/passwd"}}}` + "\n", -32700, "5"},
		{"duplicate tool name", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","name":"delete","arguments":{}}}` + "\n", -32700, "5"},
		{"duplicate names by escape", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","n\u0061me":"delete","arguments":{}}}` + "\n", -32700, "5"},
		// The id of a frame refused for duplicate names is answered only
		// when it is unambiguous.
		{"duplicate id", `{"jsonrpc":"2.0","id":5,"method":"ping","id":6}` + "\n", -32700, "null"},
		{"id and ID", `{"jsonrpc":"2.0","id":5,"ID":6,"method":"ping","method":"x"}` + "\n", -32700, "null"},
		{"only Id", `{"jsonrpc":"2.0","Id":5,"method":"ping","method":"x"}` + "\n", -32700, "null"},
		{"duplicates and invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\",\"method\":\"\xc3\x28\"}\n", -32700, "null"},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":6,"method":"ping"}` + "\n", -32600, "6"},
		{"no jsonrpc", `{"id":"seven","method":"ping"}` + "\n", -32600, `"seven"`},
		{"not an object", `"ping"` + "\n", -32600, "null"},
		{"method not a string", `{"jsonrpc":"2.0","id":8,"method":["ping"]}` + "\n", -32600, "8"},
		{"id an object", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}` + "\n", -32600, "null"},
	}
	dir := t.TempDir()
	record := filepath.Join(dir, "record")
	log := filepath.Join(dir, "decisions.jsonl")
	h := startGH(t, run{flags: []string{"--decision-log", log, "--event-source", eventSource}, server: []string{"--record", record}})
	h.handshake("2025-06-18")
	before := h.Sent()
	var valid strings.Builder
	valid.WriteString(before)
	for i, tt := range tests {
		h.Send(tt.frame)
		m := expectError(t, h.read(5*time.Second), tt.id, tt.code)
		if !strings.HasPrefix(m.Error.Message, "gatehouse") {
			t.Errorf("%s: error %q does not come from gatehouse", tt.name, m.Error.Message)
		}
		p := ping(fmt.Sprint(100 + i))
		expectResult(t, h.call(p, fmt.Sprint(100+i)), fmt.Sprint(100+i))
		valid.WriteString(p)
	}
	h.CloseStdin()
	h.Wait(10 * time.Second)
	if got := readFile(t, record); got != valid.String() {
		t.Errorf("the server received invalid frames:\n got %q\nwant %q", got, valid.String())
	}
	rej := eventsOf(t, log, typeRejected)
	if len(rej) != len(tests) {
		t.Errorf("%d frame.rejected events, want %d", len(rej), len(tests))
	}
	for _, e := range rej {
		if harness.Str(e.Data["direction"]) != "client" {
			t.Errorf("rejected event direction %s", e.Data["direction"])
		}
	}
}

// TestInvalidServerFrames checks strict classification of server frames:
// an invalid banner and invalid emitted lines never reach the client; each
// is recorded and shown on stderr; the session continues.
func TestInvalidServerFrames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "decisions.jsonl")
	h := startGH(t, run{
		flags:  []string{"--decision-log", log, "--event-source", eventSource},
		server: []string{"--banner", "Fake server ready on stdio"},
	})
	// The banner never reaches the client: the first line is the answer.
	h.handshake("2025-06-18")
	h.WaitStderr("direction=server", 5*time.Second)
	bad := []string{
		"this is not JSON\n",
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","level":"debug"}}` + "\n",
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":{"a":1,"a":2}}}` + "\n",
		`{"jsonrpc":"1.0","method":"notifications/message","params":{}}` + "\n",
		`{"method":"notifications/message"}` + "\n",
		`{"jsonrpc":"2.0","id":"nobody-asked","result":{}}` + "\n",
		`{"jsonrpc":"2.0","id":424242,"error":{"code":-1,"message":"stray"}}` + "\n",
		`[{"jsonrpc":"2.0","method":"notifications/message","params":{}}]` + "\n",
		"\n",
	}
	sentinel := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"sentinel"}}` + "\n"
	h.Send(emitCall(`"emit"`, append(bad, sentinel)...))
	if got := h.read(5 * time.Second); got != sentinel {
		t.Fatalf("the client received %q before the sentinel; invalid server frames were forwarded", got)
	}
	expectResult(t, h.read(5*time.Second), `"emit"`)
	expectResult(t, h.call(ping(`"after"`), `"after"`), `"after"`)
	h.CloseStdin()
	h.Wait(10 * time.Second)
	rej := eventsOf(t, log, typeRejected)
	n := 0
	for _, e := range rej {
		if harness.Str(e.Data["direction"]) == "server" {
			n++
		}
	}
	if n != 1+len(bad) {
		t.Errorf("%d server frame.rejected events, want %d (banner + %d emitted)", n, 1+len(bad), len(bad))
	}
	if c := strings.Count(h.Stderr.String(), "direction=server"); c < 1+len(bad) {
		t.Errorf("stderr shows %d server refusals, want %d:\n%s", c, 1+len(bad), h.Tail())
	}
}

// TestInvalidUTF8FromServer checks that a server frame that is not valid
// UTF-8 is dropped.
func TestInvalidUTF8FromServer(t *testing.T) {
	t.Parallel()
	banner := "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"\xff\xfe\"}}"
	h := startGH(t, run{server: []string{"--banner", banner}})
	expectResult(t, h.call(ping("1"), "1"), "1")
	h.WaitStderr("direction=server", 5*time.Second)
}

// toolsFileForResponse writes a tools file whose tools/list result, answered
// to request id 1, is a line of exactly size bytes.
func toolsFileForResponse(t *testing.T, size int) string {
	t.Helper()
	tool := func(n int) string {
		return `{"name":"echo","description":"` + strings.Repeat("d", n) + `","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}`
	}
	line := func(n int) int {
		return len(`{"jsonrpc":"2.0","id":1,"result":{"tools":[` + tool(n) + `]}}` + "\n")
	}
	n := size - line(0)
	if n < 0 || line(n) != size {
		t.Fatalf("cannot build a %d byte tools/list result", size)
	}
	path := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(path, []byte("["+tool(n)+"]"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestServerFrameLimitBoundary checks the limit on server frames: a result
// of exactly --max-frame-bytes passes byte for byte, one byte more (the same
// result for a one-digit-longer id) is dropped, the client gets an error for
// it, and the next server frame is relayed.
func TestServerFrameLimitBoundary(t *testing.T) {
	t.Parallel()
	for _, limit := range []int{2048, 100000} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			t.Parallel()
			tools := toolsFileForResponse(t, limit)
			h := startGH(t, run{flags: []string{"--max-frame-bytes", fmt.Sprint(limit)}, server: []string{"--tools", tools}})
			resp := h.call(toolsList("1"), "1")
			expectResult(t, resp, "1")
			if len(resp) != limit {
				t.Fatalf("test setup: result of %d bytes, want %d", len(resp), limit)
			}
			expectError(t, h.call(toolsList("12"), "12"), "12", -32603)
			expectResult(t, h.call(ping("3"), "3"), "3")
		})
	}
}
