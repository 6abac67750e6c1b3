package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Relay tests: gatehouse wrap in front of test/fakeserver, driven line by
// line, checking the exact bytes that cross in each direction.

// recordedClientLines returns the lines the server received, without the
// gateway's own private tools/list requests (those whose id the client
// never used).
func recordedClientLines(t *testing.T, record string, clientIDs map[string]bool) []string {
	t.Helper()
	data, err := os.ReadFile(record)
	if err != nil {
		t.Fatalf("server record: %v", err)
	}
	var out []string
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if l == "" {
			continue
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal([]byte(l), &m) == nil && m.Method == "tools/list" && m.ID != nil && !clientIDs[string(m.ID)] {
			continue // the gateway's own catalog refresh
		}
		out = append(out, l)
	}
	return out
}

// runFakeDirect runs the fake server directly on input and returns its
// stdout: the bytes a client would see without gatehouse.
func runFakeDirect(t *testing.T, input string, args ...string) string {
	t.Helper()
	cmd := exec.Command(fakeServerBin, args...)
	cmd.Stdin = strings.NewReader(input)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("fake server directly: %v", err)
	}
	return string(out)
}

// TestRelayExactBytes checks that valid frames cross gatehouse byte for
// byte in both directions: odd spacing and member order, CRLF terminators,
// ids that do not survive a float64 round trip, escapes in strings.
//
// Lines are compared as multisets: the order of frames belonging to
// different requests may change, because gatehouse holds a tools/call for a
// tool it has not seen listed yet (here: sent before the tools/list answer
// arrived) while it fetches the catalog, and lets other traffic pass.
func TestRelayExactBytes(t *testing.T) {
	dir := t.TempDir()
	record := filepath.Join(dir, "record")
	client := []string{
		`{ "method" : "initialize", "id" : 1, "jsonrpc":"2.0", "params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"0"}} }` + "\n",
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\r\n",
		`{"jsonrpc":"2.0","id":12345678901234567890,"method":"ping"}` + "\n",
		`{"jsonrpc":"2.0","id":"tl","method":"tools/list","params":{}}` + "\n",
		`{"jsonrpc":"2.0","id":1.0e2,"method":"tools/call","params":{"name":"echo","arguments":{"s":"caf\u00e9 \ud83d\ude00 <&> \"q\"","n":1.50,"big":12345678901234567890}}}` + "\r\n",
		`{"jsonrpc":"2.0","id":"a\"b\\c","method":"tools/call","params":{"arguments":{},"name":"echo"}}` + "\n",
		`{"jsonrpc":"2.0","id":-0,"method":"ping"}` + "\n",
	}
	ids := map[string]bool{"1": true, "12345678901234567890": true, `"tl"`: true, "1.0e2": true, `"a\"b\\c"`: true, "-0": true}
	input := strings.Join(client, "")
	want := runFakeDirect(t, input)

	code, got, stderr := runGatehouse(t, input, "wrap", "--", fakeServerBin, "--record", record)
	if code != 0 {
		t.Fatalf("exit code %d\n%s", code, stderr)
	}
	if g, w := sortedLines(strings.SplitAfter(got, "\n")), sortedLines(strings.SplitAfter(want, "\n")); !slices.Equal(g, w) {
		t.Errorf("client received different bytes through gatehouse:\n got %q\nwant %q", g, w)
	}
	if g, w := sortedLines(recordedClientLines(t, record, ids)), sortedLines(client); !slices.Equal(g, w) {
		t.Errorf("server received different bytes through gatehouse:\n got %q\nwant %q", g, w)
	}
}

// sortedLines returns the non-empty lines sorted.
func sortedLines(lines []string) []string {
	out := slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return l == "" })
	slices.Sort(out)
	return out
}

// TestRelayServerToClient checks server-initiated traffic: a server request
// reaches the client unchanged and its answer reaches the server unchanged;
// a response to an id nobody sent, and a non-JSON banner, are not relayed.
func TestRelayServerToClient(t *testing.T) {
	dir := t.TempDir()
	record := filepath.Join(dir, "record")
	p := startGatehouse(t, "wrap", "--", fakeServerBin, "--record", record, "--banner", "fake server starting (not JSON)")
	resp := p.initialize("2025-06-18")
	if resp["result"] == nil {
		t.Fatalf("initialize: %v", resp)
	}

	serverReq := `{"jsonrpc":"2.0","id":"srv-1","method":"roots/list"}` + "\n"
	stray := `{"jsonrpc":"2.0","id":"nobody-asked","result":{}}` + "\n"
	args, _ := json.Marshal(map[string]any{"lines": []string{serverReq, stray}})
	_, before := p.call("2", "tools/call", `{"name":"emit","arguments":`+string(args)+`}`)
	if len(before) != 1 || before[0] != serverReq {
		t.Fatalf("before the emit reply the client got %q, want only the server request %q", before, serverReq)
	}
	answer := `{"jsonrpc":"2.0","id":"srv-1","result":{"roots":[{"uri":"file:///tmp","name":"tmp"}]}}` + "\n"
	p.Send(answer)
	p.call("3", "ping", "")
	p.CloseStdin()
	if code := p.wait(); code != 0 {
		t.Errorf("exit code %d", code)
	}
	rec, _ := os.ReadFile(record)
	if !strings.Contains(string(rec), answer) {
		t.Errorf("the client's answer to the server request did not reach the server exactly; record:\n%s", rec)
	}
}

// TestRelayProgressAndCancel checks that progress notifications reach the
// client unchanged and that a cancellation reaches the server, which then
// never answers the cancelled request.
func TestRelayProgressAndCancel(t *testing.T) {
	dir := t.TempDir()
	record := filepath.Join(dir, "record")
	p := startGatehouse(t, "wrap", "--", fakeServerBin, "--record", record)
	p.initialize("2025-06-18")
	p.call("1", "tools/list", "")

	_, before := p.call(`"p1"`, "tools/call", `{"name":"sleep","arguments":{"ms":300,"steps":3},"_meta":{"progressToken":"tok-1"}}`)
	if len(before) != 3 {
		t.Fatalf("%d lines before the result, want 3 progress notifications: %q", len(before), before)
	}
	for i, l := range before {
		want := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok-1","progress":` + string(rune('1'+i)) + `,"total":3}}` + "\n"
		if l != want {
			t.Errorf("progress %d: got %q, want %q", i+1, l, want)
		}
	}

	cancel := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c1","reason":"e2e"}}` + "\n"
	p.SendLine(`{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"sleep","arguments":{"ms":2000}}}`)
	time.Sleep(100 * time.Millisecond)
	p.Send(cancel)
	resp, before := p.call("2", "ping", "")
	if resp["result"] == nil || len(before) != 0 {
		t.Fatalf("ping after cancel: %v, preceded by %q", resp, before)
	}
	p.ExpectNoLine(2500 * time.Millisecond) // the sleep would have ended by now
	p.CloseStdin()
	p.wait()
	rec, _ := os.ReadFile(record)
	if !strings.Contains(string(rec), cancel) {
		t.Errorf("the cancellation did not reach the server exactly")
	}
}

// TestRelayRefusesInvalidClientFrames checks "parse strictly, fail closed":
// frames the gateway cannot understand are answered with a JSON-RPC error
// and never forwarded.
func TestRelayRefusesInvalidClientFrames(t *testing.T) {
	tests := []struct {
		name  string
		frame string
	}{
		{"truncated", `{"jsonrpc":"2.0","id":7,"method":"ping"` + "\n"},
		{"duplicate member", `{"jsonrpc":"2.0","id":7,"id":8,"method":"ping"}` + "\n"},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\",\"params\":{\"x\":\"\xff\"}}\n"},
		{"trailing garbage", `{"jsonrpc":"2.0","id":7,"method":"ping"} x` + "\n"},
		{"not an object", `"ping"` + "\n"},
		{"tools/call arguments not an object", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":[1]}}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			record := filepath.Join(dir, "record")
			p := startGatehouse(t, "wrap", "--", fakeServerBin, "--record", record)
			p.initialize("2025-06-18")
			p.Send(tt.frame)
			l := p.readLine()
			var m struct {
				Error *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(l), &m); err != nil || m.Error == nil {
				t.Fatalf("answer to an invalid frame is not a JSON-RPC error: %q", l)
			}
			resp, _ := p.call("9", "ping", "")
			if resp["result"] == nil {
				t.Fatalf("the session did not survive an invalid frame: %v", resp)
			}
			p.CloseStdin()
			p.wait()
			rec, _ := os.ReadFile(record)
			if strings.Contains(string(rec), tt.frame) {
				t.Errorf("the invalid frame was forwarded to the server")
			}
		})
	}
}

// TestRelayOversizedFrames checks --max-frame-bytes in both directions: an
// oversized client frame is refused and not forwarded, an oversized server
// frame is not relayed, and the session goes on.
func TestRelayOversizedFrames(t *testing.T) {
	dir := t.TempDir()
	record := filepath.Join(dir, "record")
	p := startGatehouse(t, "wrap", "--max-frame-bytes", "2048", "--", fakeServerBin, "--record", record)
	p.initialize("2025-06-18")
	p.call("1", "tools/list", "")

	big := strings.Repeat("x", 4096)
	p.SendLine(`{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"echo","arguments":{"s":"` + big + `"}}}`)
	l := p.readLine()
	if !strings.Contains(l, `"error"`) {
		t.Fatalf("oversized client frame: got %q, want a JSON-RPC error", l)
	}

	huge := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` + big + `"}}` + "\n"
	args, _ := json.Marshal(map[string]any{"lines": []string{huge}})
	_, before := p.call("2", "tools/call", `{"name":"emit","arguments":`+string(args)+`}`)
	if len(before) != 0 {
		t.Errorf("an oversized server frame reached the client: %d lines", len(before))
	}
	if resp, _ := p.call("3", "ping", ""); resp["result"] == nil {
		t.Fatalf("session did not survive oversized frames: %v", resp)
	}
	p.CloseStdin()
	p.wait()
	rec, _ := os.ReadFile(record)
	if strings.Contains(string(rec), big) {
		t.Errorf("the oversized client frame reached the server")
	}
}

// TestRelayLargeFrameWithinLimit checks that a frame far larger than
// 64 KiB, but within the limit, crosses in both directions unchanged.
func TestRelayLargeFrameWithinLimit(t *testing.T) {
	dir := t.TempDir()
	record := filepath.Join(dir, "record")
	p := startGatehouse(t, "wrap", "--", fakeServerBin, "--record", record)
	p.initialize("2025-06-18")
	p.call("1", "tools/list", "")
	big := strings.Repeat("0123456789abcdef", 64<<10) // 1 MiB
	req := `{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"echo","arguments":{"s":"` + big + `"}}}` + "\n"
	p.Send(req)
	l := p.readLine()
	want := `{"jsonrpc":"2.0","id":"big","result":{"content":[{"type":"text","text":` + jsonString(`{"s":"`+big+`"}`) + `}]}}` + "\n"
	if l != want {
		t.Errorf("1 MiB echo came back changed (%d bytes, want %d)", len(l), len(want))
	}
	p.CloseStdin()
	p.wait()
	rec, _ := os.ReadFile(record)
	if !strings.Contains(string(rec), req) {
		t.Errorf("the 1 MiB request did not reach the server unchanged")
	}
}

// TestRelayHeldToolCall checks a tools/call for a tool gatehouse has not
// seen listed: it is held while gatehouse fetches the catalog (slowly, here),
// the client's other traffic is not queued behind it, and a call the client
// cancels meanwhile is decided and recorded but never reaches the server.
func TestRelayHeldToolCall(t *testing.T) {
	const delay = 1500 * time.Millisecond
	tests := []struct {
		name   string
		cancel bool
	}{
		{"answered after the fetch", false},
		{"cancelled while held", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			record := filepath.Join(dir, "record")
			dl := filepath.Join(dir, "decisions.jsonl")
			src := "gatehouse://e2e/held"
			p := startGatehouse(t, "wrap", "--decision-log", dl, "--event-source", src,
				"--", fakeServerBin, "--record", record, "--list-delay-ms", strconv.Itoa(int(delay.Milliseconds())))
			p.initialize("2025-06-18")

			start := time.Now()
			call := `{"jsonrpc":"2.0","id":"held","method":"tools/call","params":{"name":"echo","arguments":{"x":1}}}` + "\n"
			p.Send(call)
			resp, before := p.call("2", "ping", "")
			if resp["result"] == nil || len(before) != 0 {
				t.Fatalf("ping while a call is held: %v, preceded by %q", resp, before)
			}
			if d := time.Since(start); d >= delay {
				t.Errorf("ping answered after %v: queued behind the held call", d)
			}
			if tt.cancel {
				p.SendLine(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"held","reason":"e2e"}}`)
				p.ExpectNoLine(delay + time.Second)
			} else {
				l := p.readLine()
				if !strings.HasPrefix(l, `{"jsonrpc":"2.0","id":"held","result":`) {
					t.Fatalf("held call answered with %q", l)
				}
			}
			p.CloseStdin()
			if code := p.wait(); code != 0 {
				t.Errorf("exit code %d", code)
			}
			rec, _ := os.ReadFile(record)
			if reached := strings.Contains(string(rec), call); reached == tt.cancel {
				t.Errorf("call reached the server: %v, want %v", reached, !tt.cancel)
			}
			events := readDecisionLog(t, dl, src)
			ds := decisions(t, events, true)
			if len(ds) != 1 || ds[0].Tool != "echo" {
				t.Errorf("decision events %+v, want one for echo", ds)
			}
			// The decision event said forwarded; a cancelled call's
			// refused event names it.
			var decisionID string
			refused := map[string]string{} // decision event id -> reason_code
			for _, ev := range events {
				switch ev.Type {
				case "gatehouse.tool.decision.v1":
					decisionID = ev.ID
				case "gatehouse.tool.refused.v1":
					var d struct {
						DecisionEventID string `json:"decision_event_id"`
						ReasonCode      string `json:"reason_code"`
						Forwarded       bool   `json:"forwarded"`
					}
					if err := json.Unmarshal(ev.DataRaw, &d); err != nil || d.Forwarded {
						t.Errorf("refused event %s: %v", ev.DataRaw, err)
					}
					refused[d.DecisionEventID] = d.ReasonCode
				}
			}
			if tt.cancel && refused[decisionID] != "cancelled_before_forwarding" {
				t.Errorf("cancelled call: refused events %v, want one naming decision event %s with cancelled_before_forwarding", refused, decisionID)
			}
			if !tt.cancel && len(refused) != 0 {
				t.Errorf("a forwarded call has refused events %v", refused)
			}
		})
	}
}
