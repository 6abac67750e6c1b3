package relay

import (
	"encoding/json"
	"fmt"
	"github.com/gatehouse-mcp/gatehouse/test/harness"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBatches checks that JSON-RPC batches are refused unless the negotiated
// revision is 2025-03-26, which the gateway learns from the server's
// initialize result (not from what the client asked for); under 2025-03-26
// each member is decided on its own.
func TestBatches(t *testing.T) {
	t.Parallel()
	twoPings := `[{"jsonrpc":"2.0","id":"b1","method":"ping"},{"jsonrpc":"2.0","id":"b2","method":"ping"}]` + "\n"
	t.Run("before initialize", func(t *testing.T) {
		t.Parallel()
		record := filepath.Join(t.TempDir(), "record")
		h := startGH(t, run{server: []string{"--record", record}})
		h.Send(twoPings)
		expectError(t, h.read(5*time.Second), "null", -32600)
		expectResult(t, h.call(ping("1"), "1"), "1")
		h.CloseStdin()
		h.Wait(10 * time.Second)
		if got := readFile(t, record); got != ping("1") {
			t.Errorf("server received %q", got)
		}
	})
	t.Run("server negotiates 2025-06-18", func(t *testing.T) {
		t.Parallel()
		record := filepath.Join(t.TempDir(), "record")
		h := startGH(t, run{server: []string{"--record", record, "--protocol-version", "2025-06-18"}})
		h.handshake("2025-03-26") // the client asks for 2025-03-26
		before := h.Sent()
		h.Send(twoPings)
		expectError(t, h.read(5*time.Second), "null", -32600)
		expectResult(t, h.call(ping("1"), "1"), "1")
		h.CloseStdin()
		h.Wait(10 * time.Second)
		if got := readFile(t, record); got != before+ping("1") {
			t.Errorf("server received a batch under 2025-06-18:\n%q", got)
		}
	})
	t.Run("server negotiates 2025-03-26", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		record := filepath.Join(dir, "record")
		log := filepath.Join(dir, "decisions.jsonl")
		h := startGH(t, run{
			flags:  []string{"--policy", harness.Testdata("deny-delete.yaml"), "--decision-log", log, "--event-source", eventSource},
			server: []string{"--record", record, "--protocol-version", "2025-03-26"},
		})
		h.handshake("2025-06-18") // the client asks for 2025-06-18
		allowed := `{"jsonrpc":"2.0","id":"b1","method":"tools/call","params":{"name":"echo","arguments":{"x":1.0}}}`
		denied := `{"jsonrpc":"2.0","id":"b2","method":"tools/call","params":{"name":"delete","arguments":{"path":"/"}}}`
		h.Send("[" + allowed + " , " + denied + "]\n")
		m := expectError(t, h.read(5*time.Second), `"b2"`, -32080)
		if !strings.Contains(m.Error.Message, "deny_delete") {
			t.Errorf("denial %q does not name the rule", m.Error.Message)
		}
		waitFile(t, record, allowed, 5*time.Second)
		// An all-allowed batch goes through byte for byte.
		all := `[{"jsonrpc":"2.0","id":"c1","method":"ping"}, {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}]` + "\r\n"
		h.Send(all)
		waitFile(t, record, all, 5*time.Second)
		// The fake server refuses both batches with an error whose id is
		// null (it cannot tell which request it answers): relayed to the
		// client unchanged, not dropped as a stray response.
		for range 2 {
			expectError(t, h.read(5*time.Second), "null", -32600)
		}
		expectResult(t, h.call(ping("2"), "2"), "2")
		h.CloseStdin()
		h.Wait(10 * time.Second)
		rec := readFile(t, record)
		if strings.Contains(rec, `"delete"`) {
			t.Errorf("the denied batch member reached the server:\n%s", rec)
		}
		ev := eventsOf(t, log, typeDecision)
		if len(ev) != 2 {
			t.Fatalf("%d decision events, want 2 (one per tools/call member)", len(ev))
		}
		if harness.Str(ev[0].Data["decision"]) != "allow" || harness.Str(ev[1].Data["decision"]) != "deny" {
			t.Errorf("decisions %s, %s; want allow, deny", ev[0].Data["decision"], ev[1].Data["decision"])
		}
	})
}

// TestDuplicatePendingID checks that a client request whose id is already in
// flight is refused, and that the first request is untouched: its answer
// still arrives. Ids are compared by value and type (1 and 1.0 are the same
// id; "1" is another).
func TestDuplicatePendingID(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	record := filepath.Join(dir, "record")
	log := filepath.Join(dir, "decisions.jsonl")
	h := startGH(t, run{flags: []string{"--decision-log", log, "--event-source", eventSource}, server: []string{"--record", record}})
	h.handshake("2025-06-18")
	first := toolCall("1", "sleep", `{"ms":800}`)
	h.Send(first)
	waitFile(t, record, first, 5*time.Second)
	start := time.Now()
	for _, dup := range []string{ping("1"), toolCall("1", "echo", `{}`), ping("1.0"), ping("1e0")} {
		h.Send(dup)
		m := decode(h.read(5 * time.Second))
		if m.Error == nil || m.Error.Code != -32600 {
			t.Errorf("duplicate %q: got %+v, want error -32600", dup, m)
		}
	}
	if d := time.Since(start); d > 700*time.Millisecond {
		t.Errorf("the refusals took %v: they waited for the first request", d)
	}
	// "1" is a different id: it is not refused.
	expectResult(t, h.call(ping(`"1"`), `"1"`), `"1"`)
	m := expectResult(t, h.read(5*time.Second), "1")
	if !strings.Contains(string(m.Result), "slept 800 ms") {
		t.Errorf("first request's answer %s", m.Result)
	}
	// Once answered, the id can be used again.
	expectResult(t, h.call(ping("1"), "1"), "1")
	h.CloseStdin()
	h.Wait(10 * time.Second)
	want := h.handshakeBytes() + first + ping(`"1"`) + ping("1")
	if got := readFile(t, record); got != want {
		t.Errorf("server received:\n%q\nwant\n%q", got, want)
	}
	if n := len(eventsOf(t, log, typeDecision)); n != 1 {
		t.Errorf("%d decision events, want 1 (the refused duplicate tools/call is not decided)", n)
	}
}

// handshakeBytes returns what handshake sends.
func (h *gh) handshakeBytes() string {
	return initialize(`"init"`, "2025-06-18") + initialized + toolsList(`"tl"`)
}

// TestServerResponseToNoPending checks that a server response to no pending
// request (never asked, or already answered) is dropped and recorded.
func TestServerResponseToNoPending(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "decisions.jsonl")
	h := startGH(t, run{flags: []string{"--decision-log", log, "--event-source", eventSource}})
	h.handshake("2025-06-18")
	stray := []string{
		`{"jsonrpc":"2.0","id":"never","result":{}}` + "\n",
		`{"jsonrpc":"2.0","id":"tl","result":{"tools":[]}}` + "\n", // already answered
		`{"jsonrpc":"2.0","id":"init","error":{"code":1,"message":"late"}}` + "\n",
	}
	sentinel := `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"s"}}` + "\n"
	h.Send(emitCall(`"e"`, append(stray, sentinel)...))
	if got := h.read(5 * time.Second); got != sentinel {
		t.Fatalf("client received %q, want only the sentinel", got)
	}
	expectResult(t, h.read(5*time.Second), `"e"`)
	h.CloseStdin()
	h.Wait(10 * time.Second)
	n := 0
	for _, e := range eventsOf(t, log, typeRejected) {
		if harness.Str(e.Data["direction"]) == "server" {
			n++
		}
	}
	if n != len(stray) {
		t.Errorf("%d server frame.rejected events, want %d", n, len(stray))
	}
}

// TestServerRequestsRelayed checks that server-to-client requests
// (sampling/createMessage, elicitation/create, roots/list) are relayed, that
// the client's answers are matched to them and forwarded, and that an answer
// to no pending server request (never asked, or answered twice) is dropped.
// The same id used in both directions does not mix the two tables up.
func TestServerRequestsRelayed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	record := filepath.Join(dir, "record")
	log := filepath.Join(dir, "decisions.jsonl")
	h := startGH(t, run{flags: []string{"--decision-log", log, "--event-source", eventSource}, server: []string{"--record", record}})
	h.handshake("2025-06-18")
	reqs := []string{
		`{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":10}}` + "\n",
		`{"jsonrpc":"2.0","id":2,"method":"elicitation/create","params":{"message":"name?","requestedSchema":{"type":"object","properties":{}}}}` + "\n",
		`{"jsonrpc":"2.0","id":"r","method":"roots/list"}` + "\n",
		`{"jsonrpc":"2.0","id":"e","method":"roots/list"}` + "\n", // same id as the emit call itself
	}
	h.Send(emitCall(`"e"`, reqs...))
	for i, want := range reqs {
		if got := h.read(5 * time.Second); got != want {
			t.Errorf("server request %d arrived as %q", i, got)
		}
	}
	expectResult(t, h.read(5*time.Second), `"e"`)
	base := h.Sent()
	answers := []string{
		`{"jsonrpc":"2.0","id":"s1","result":{"role":"assistant","content":{"type":"text","text":"hello"},"model":"m"}}` + "\n",
		`{"jsonrpc":"2.0","id":2,"result":{"action":"decline"}}` + "\n",
		`{"jsonrpc":"2.0","id":"r","error":{"code":-32601,"message":"no roots"}}` + "\n",
		`{"jsonrpc":"2.0","id":"e","result":{"roots":[]}}` + "\n",
	}
	stray := []string{
		`{"jsonrpc":"2.0","id":"zz","result":{}}` + "\n", // never asked
		`{"jsonrpc":"2.0","id":"s1","result":{}}` + "\n", // answered twice
		`{"jsonrpc":"2.0","id":"2","result":{}}` + "\n",  // "2" is not 2
		`{"jsonrpc":"2.0","id":"tl","result":{}}` + "\n", // a client request id, not a server one
	}
	for _, a := range answers {
		h.Send(a)
	}
	for _, a := range stray {
		h.Send(a)
	}
	expectResult(t, h.call(ping(`"end"`), `"end"`), `"end"`)
	h.CloseStdin()
	h.Wait(10 * time.Second)
	want := base + strings.Join(answers, "") + ping(`"end"`)
	if got := readFile(t, record); got != want {
		t.Errorf("server received:\n%q\nwant\n%q", got, want)
	}
	n := 0
	for _, e := range eventsOf(t, log, typeRejected) {
		if harness.Str(e.Data["direction"]) == "client" {
			n++
		}
	}
	if n != len(stray) {
		t.Errorf("%d client frame.rejected events, want %d", n, len(stray))
	}
}

// TestLifecycle checks the session-based lifecycle: a ping before
// initialization is relayed and answered; initialize and
// notifications/initialized pass unchanged.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	record := filepath.Join(t.TempDir(), "record")
	h := startGH(t, run{server: []string{"--record", record}})
	expectResult(t, h.call(ping(`"early"`), `"early"`), `"early"`)
	m := expectResult(t, h.call(initialize("1", "2025-11-25"), "1"), "1")
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(m.Result, &res)
	if res.ProtocolVersion != "2025-11-25" {
		t.Errorf("initialize result %s", m.Result)
	}
	h.Send(initialized)
	waitFile(t, record, initialized, 5*time.Second)
	expectResult(t, h.call(toolsList("2"), "2"), "2")
	expectResult(t, h.call(toolCall("3", "echo", `{"a":1}`), "3"), "3")
	h.CloseStdin()
	h.Wait(10 * time.Second)
	if got, want := readFile(t, record), h.Sent(); got != want {
		t.Errorf("server received:\n%q\nwant\n%q", got, want)
	}
}

// TestStateless checks the stateless revision 2026-07-28: server/discover
// and a tools/call carrying _meta["io.modelcontextprotocol/protocolVersion"]
// work without initialize; the gateway's private tools/list (the tool is not
// known yet) declares the same revision, and its answer never reaches the
// client.
func TestStateless(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	record := filepath.Join(dir, "record")
	log := filepath.Join(dir, "decisions.jsonl")
	h := startGH(t, run{
		flags:  []string{"--policy", harness.Testdata("deny-delete-tool-result.yaml"), "--decision-log", log, "--event-source", eventSource},
		server: []string{"--record", record},
	})
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"relay-test","version":"0"}}`
	disc := `{"jsonrpc":"2.0","id":"d","method":"server/discover","params":{` + meta + `}}` + "\n"
	m := expectResult(t, h.call(disc, `"d"`), `"d"`)
	if !strings.Contains(string(m.Result), `"2026-07-28"`) {
		t.Errorf("discover result %s", m.Result)
	}
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"x":"y"},` + meta + `}}` + "\n"
	m = expectResult(t, h.call(call, "1"), "1")
	if !strings.Contains(string(m.Result), `"resultType":"complete"`) || !strings.Contains(string(m.Result), `{\"x\":\"y\"}`) {
		t.Errorf("tools/call result %s", m.Result)
	}
	// A denied call under the stateless revision, answered as a tool
	// result, is a complete result too.
	del := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"delete","arguments":{},` + meta + `}}` + "\n"
	m = expectResult(t, h.call(del, "2"), "2")
	if !strings.Contains(string(m.Result), `"isError":true`) || !strings.Contains(string(m.Result), `"resultType":"complete"`) {
		t.Errorf("denied stateless call answered %s", m.Result)
	}
	h.CloseStdin()
	h.Wait(10 * time.Second)
	var private []string
	for _, l := range recordLines(t, record) {
		if strings.Contains(l, `"tools/list"`) {
			private = append(private, l)
		}
	}
	if len(private) == 0 {
		t.Fatalf("no private tools/list reached the server")
	}
	for _, l := range private {
		if !strings.Contains(l, `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`) {
			t.Errorf("private tools/list does not declare the revision: %q", l)
		}
	}
	if strings.Contains(readFile(t, record), `"initialize"`) {
		t.Errorf("something sent initialize")
	}
	if strings.Contains(readFile(t, record), `"delete"`) {
		t.Errorf("the denied call reached the server")
	}
}

// TestCancelForwardedAtOnce checks that notifications/cancelled reaches the
// server at once, not queued behind the request it cancels.
func TestCancelForwardedAtOnce(t *testing.T) {
	t.Parallel()
	record := filepath.Join(t.TempDir(), "record")
	h := startGH(t, run{server: []string{"--record", record}})
	h.handshake("2025-06-18")
	long := toolCall(`"long"`, "sleep", `{"ms":3000}`)
	h.Send(long)
	waitFile(t, record, long, 5*time.Second)
	start := time.Now()
	cancel := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"long","reason":"user"}}` + "\n"
	h.Send(cancel)
	waitFile(t, record, cancel, 2*time.Second)
	if d := time.Since(start); d > time.Second {
		t.Errorf("the cancellation took %v to reach the server", d)
	}
	// Other traffic is not held up either, and the cancelled request gets
	// no answer (the server stopped it).
	expectResult(t, h.call(ping(`"p"`), `"p"`), `"p"`)
	h.ExpectNoLine(300 * time.Millisecond)
}

// TestProgressForwardedAtOnce checks that notifications/progress flows at
// once in both directions while the request it concerns is in flight.
func TestProgressForwardedAtOnce(t *testing.T) {
	t.Parallel()
	record := filepath.Join(t.TempDir(), "record")
	h := startGH(t, run{server: []string{"--record", record}})
	h.handshake("2025-06-18")
	// server -> client: 3 progress notifications during a 4000 ms sleep,
	// at about 1000, 2000 and 3000 ms. Each must reach the client when it
	// is sent, not together with the result. (The margins are wide: on a
	// loaded 2-core machine a 500 ms gap was once measured as 28 ms.)
	h.Send(`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"sleep","arguments":{"ms":4000,"steps":3},"_meta":{"progressToken":"tok"}}}` + "\n")
	var at []time.Time
	for i := 1; i <= 3; i++ {
		l := h.read(5 * time.Second)
		if m := decode(l); m.Method != "notifications/progress" {
			t.Fatalf("line %d: %q, want progress", i, l)
		}
		at = append(at, time.Now())
	}
	expectResult(t, h.read(5*time.Second), `"s"`)
	end := time.Now()
	if d := end.Sub(at[0]); d < 1900*time.Millisecond {
		t.Errorf("the first progress arrived only %v before the result", d)
	}
	// The last one only has to come first: under the race detector on a
	// loaded 2-core CI machine the server's own 3 s and 4 s timers once
	// fired 66 us apart, the server process starved for a second; a
	// gateway holding progress back would hold the first one too.
	if !at[2].Before(end) {
		t.Errorf("the last progress arrived with the result, not before it")
	}
	// client -> server, while a request is in flight.
	h.Send(toolCall(`"s2"`, "sleep", `{"ms":1500}`))
	prog := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"client-token","progress":1}}` + "\n"
	sent := time.Now()
	h.Send(prog)
	waitFile(t, record, prog, 2*time.Second)
	if d := time.Since(sent); d > 700*time.Millisecond {
		t.Errorf("client progress took %v to reach the server", d)
	}
	expectResult(t, h.read(5*time.Second), `"s2"`)
}

// TestToolsListPagination checks that every page of tools/list is seen with
// its cursor untouched: the client's cursor bytes (here with a JSON escape)
// reach the server exactly, and a tool listed only on page 3 is known (no
// private tools/list; tool_known in its decision event).
func TestToolsListPagination(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	record := filepath.Join(dir, "record")
	log := filepath.Join(dir, "decisions.jsonl")
	h := startGH(t, run{flags: []string{"--decision-log", log, "--event-source", eventSource}, server: []string{"--record", record, "--page-size", "1"}})
	expectResult(t, h.call(initialize("0", "2025-06-18"), "0"), "0")
	h.Send(initialized)
	cursor := ""
	var names []string
	for page := 1; page <= 3; page++ {
		id := fmt.Sprintf(`"p%d"`, page)
		req := toolsList(id)
		if cursor != "" {
			// Escape the cursor's first character: the same string,
			// other bytes.
			esc := fmt.Sprintf(`\u%04x`, cursor[0]) + cursor[1:]
			req = `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list","params":{"cursor":"` + esc + `"}}` + "\n"
		}
		m := expectResult(t, h.call(req, id), id)
		var res struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		if err := json.Unmarshal(m.Result, &res); err != nil || len(res.Tools) != 1 || res.NextCursor == "" {
			t.Fatalf("page %d: %s", page, m.Result)
		}
		names = append(names, res.Tools[0].Name)
		cursor = res.NextCursor
	}
	if names[2] != "delete" {
		t.Fatalf("page 3 holds %q, want delete (fake server order changed?)", names[2])
	}
	m := expectResult(t, h.call(toolCall(`"d"`, "delete", `{}`), `"d"`), `"d"`)
	if !strings.Contains(string(m.Result), "delete done") {
		t.Errorf("delete result %s", m.Result)
	}
	h.CloseStdin()
	h.Wait(10 * time.Second)
	if got, want := readFile(t, record), h.Sent(); got != want {
		t.Errorf("server received (a private tools/list means page 3 was not learned):\n%q\nwant\n%q", got, want)
	}
	ev := eventsOf(t, log, typeDecision)
	if len(ev) != 1 || string(ev[0].Data["tool_known"]) != "true" {
		t.Errorf("decision events %v, want one with tool_known true", ev)
	}
}

// TestPrivateRefreshWalksAllPages checks that the private tools/list the
// gateway sends for an unknown tool follows nextCursor over every page, and
// that the client sees none of it.
func TestPrivateRefreshWalksAllPages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	record := filepath.Join(dir, "record")
	log := filepath.Join(dir, "decisions.jsonl")
	h := startGH(t, run{flags: []string{"--decision-log", log, "--event-source", eventSource}, server: []string{"--record", record, "--page-size", "1"}})
	expectResult(t, h.call(initialize("0", "2025-06-18"), "0"), "0")
	h.Send(initialized)
	// sendlistchanged is the 7th and last tool: on page 7.
	m := expectResult(t, h.call(toolCall("1", "sleep", `{"ms":1}`), "1"), "1")
	if !strings.Contains(string(m.Result), "slept") {
		t.Errorf("result %s", m.Result)
	}
	h.CloseStdin()
	h.Wait(10 * time.Second)
	var lists []string
	for _, l := range recordLines(t, record) {
		if strings.Contains(l, `"tools/list"`) {
			lists = append(lists, l)
		}
	}
	if len(lists) < 5 {
		t.Errorf("%d private tools/list pages, want at least 5 (sleep is on page 5)", len(lists))
	}
	ev := eventsOf(t, log, typeDecision)
	if len(ev) != 1 || string(ev[0].Data["tool_known"]) != "true" || harness.Str(ev[0].Data["decision"]) != "allow" {
		t.Errorf("decision events %v, want one allow with tool_known true", ev)
	}
}

// TestListChangedRefreshes checks that notifications/tools/list_changed
// makes the gateway refresh what it knows: a tool that became destructive is
// then denied for readonly_agent.
func TestListChangedRefreshes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	record := filepath.Join(dir, "record")
	log := filepath.Join(dir, "decisions.jsonl")
	h := startGH(t, run{
		flags:  []string{"--policy", harness.Testdata("readonly-agent.yaml"), "--role", "readonly_agent", "--decision-log", log, "--event-source", eventSource},
		server: []string{"--record", record, "--tools", harness.Testdata("tools-readonly.json"), "--tools2", harness.Testdata("tools-destructive.json")},
	})
	h.handshake("2025-06-18")
	expectResult(t, h.call(toolCall("1", "mytool", `{}`), "1"), "1")
	h.Send(toolCall("2", "sendlistchanged", `{}`))
	if m := decode(h.read(5 * time.Second)); m.Method != "notifications/tools/list_changed" {
		t.Fatalf("got %+v, want the list_changed notification", m)
	}
	expectResult(t, h.read(5*time.Second), "2")
	m := expectError(t, h.call(toolCall("3", "mytool", `{}`), "3"), "3", -32080)
	if !strings.Contains(m.Error.Message, "readonly_agent_no_mutating_tools") {
		t.Errorf("denial %q does not name the rule", m.Error.Message)
	}
	h.CloseStdin()
	h.Wait(10 * time.Second)
	if strings.Contains(readFile(t, record), toolCall("3", "mytool", `{}`)) {
		t.Errorf("the denied call reached the server")
	}
	ev := eventsOf(t, log, typeDecision)
	if len(ev) != 3 {
		t.Fatalf("%d decision events, want 3", len(ev))
	}
	if got := harness.Str(ev[2].Data["decision"]) + "/" + harness.Str(ev[2].Data["matched_rule"]); got != "deny/readonly_agent_no_mutating_tools" {
		t.Errorf("third decision %s", got)
	}
}

// TestListChangedRefreshesInBatch checks the list_changed rule for a
// tools/call inside a batch (negotiated 2025-03-26): after
// notifications/tools/list_changed, a tool that became destructive must not
// be allowed on what the gateway knew before the change.
func TestListChangedRefreshesInBatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	record := filepath.Join(dir, "record")
	h := startGH(t, run{
		flags:  []string{"--policy", harness.Testdata("readonly-agent.yaml"), "--role", "readonly_agent"},
		server: []string{"--record", record, "--protocol-version", "2025-03-26", "--tools", harness.Testdata("tools-readonly.json"), "--tools2", harness.Testdata("tools-destructive.json")},
	})
	h.handshake("2025-03-26")
	h.Send(toolCall("1", "sendlistchanged", `{}`))
	if m := decode(h.read(5 * time.Second)); m.Method != "notifications/tools/list_changed" {
		t.Fatalf("got %+v, want the list_changed notification", m)
	}
	expectResult(t, h.read(5*time.Second), "1")
	member := `{"jsonrpc":"2.0","id":"b1","method":"tools/call","params":{"name":"mytool","arguments":{}}}`
	h.Send("[" + member + "]\n")
	// The batch waits for the gateway's own tools/list; the ping need not.
	h.Send(ping("2"))
	answer, before := h.readUntilID(`"b1"`, 10*time.Second)
	if m := decode(answer); m.Error == nil || m.Error.Code != -32080 {
		t.Errorf("the batched call to the now destructive tool was not denied; the client got %q", answer)
	}
	pinged := false
	for _, l := range before {
		if string(decode(l).ID) == "2" {
			pinged = true
		}
	}
	if !pinged {
		h.readUntilID("2", 10*time.Second)
	}
	if strings.Contains(readFile(t, record), member) {
		t.Errorf("the call to the now destructive tool reached the server")
	}
}

// TestListChangedRefreshFails checks that a refresh after list_changed that
// cannot complete (the server's new tools/list result is over the frame
// limit, so the gateway never gets it) does not let the call through on the
// tool's old definition.
func TestListChangedRefreshFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	record := filepath.Join(dir, "record")
	h := startGH(t, run{
		flags:  []string{"--max-frame-bytes", "2048", "--policy", harness.Testdata("readonly-agent.yaml"), "--role", "readonly_agent"},
		server: []string{"--record", record, "--tools", harness.Testdata("tools-readonly.json"), "--tools2", harness.Testdata("tools-destructive-big.json")},
	})
	h.handshake("2025-06-18")
	expectResult(t, h.call(toolCall("1", "mytool", `{}`), "1"), "1")
	h.Send(toolCall("2", "sendlistchanged", `{}`))
	if m := decode(h.read(5 * time.Second)); m.Method != "notifications/tools/list_changed" {
		t.Fatalf("got %+v, want the list_changed notification", m)
	}
	expectResult(t, h.read(5*time.Second), "2")
	call := toolCall("3", "mytool", `{}`)
	resp := h.call(call, "3")
	if m := decode(resp); m.Error == nil {
		t.Errorf("the call was allowed on the stale definition: %q", resp)
	}
	if strings.Contains(readFile(t, record), call) {
		t.Errorf("the call reached the server")
	}
}

// TestCancelNotQueuedBehindRefresh checks that client traffic (a
// cancellation, a ping) is not held up while a tools/call waits for the
// gateway's private tools/list. Here that tools/list result is over the
// frame limit and dropped, so the gateway never gets an answer to it.
func TestCancelNotQueuedBehindRefresh(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	record := filepath.Join(dir, "record")
	h := startGH(t, run{
		flags:  []string{"--max-frame-bytes", "2048"},
		server: []string{"--record", record, "--tools", harness.Testdata("tools-big.json")},
	})
	expectResult(t, h.call(initialize("0", "2025-06-18"), "0"), "0")
	h.Send(toolCall(`"u"`, "echo", `{}`))
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	cancel := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"u"}}` + "\n"
	h.Send(cancel)
	h.Send(ping(`"p"`))
	resp, _ := h.readUntilID(`"p"`, 10*time.Second)
	expectResult(t, resp, `"p"`)
	if d := time.Since(start); d > time.Second {
		t.Errorf("a ping sent while a tools/call waited for the private tools/list was answered after %v", d)
	}
	waitFile(t, record, cancel, 10*time.Second)
	if d := time.Since(start); d > time.Second {
		t.Errorf("the cancellation reached the server after %v", d)
	}
}

// TestManyInFlight checks the pending tables under load: hundreds of
// requests in flight at once, with string and number ids of the same digits,
// each answered exactly once with its own answer, while the server also
// sends requests the client answers.
func TestManyInFlight(t *testing.T) {
	t.Parallel()
	record := filepath.Join(t.TempDir(), "record")
	h := startGH(t, run{server: []string{"--record", record}})
	h.handshake("2025-06-18")
	const n = 150
	want := map[string]string{} // raw id -> expected text in the result
	var batch strings.Builder
	for i := range n {
		num, s := fmt.Sprint(i), fmt.Sprintf(`"%d"`, i)
		batch.WriteString(toolCall(num, "sleep", fmt.Sprintf(`{"ms":%d}`, (i*37)%60)))
		batch.WriteString(toolCall(s, "echo", fmt.Sprintf(`{"i":%d}`, i)))
		want[num] = fmt.Sprintf("slept %d ms", (i*37)%60)
		want[s] = fmt.Sprintf(`{\"i\":%d}`, i)
		if i%25 == 0 {
			batch.WriteString(emitCall(fmt.Sprintf(`"emit%d"`, i), fmt.Sprintf(`{"jsonrpc":"2.0","id":"srv%d","method":"roots/list"}`+"\n", i)))
			want[fmt.Sprintf(`"emit%d"`, i)] = "emitted 1 lines"
		}
	}
	h.Send(batch.String())
	got := map[string]int{}
	for len(got) < len(want) {
		l := h.read(10 * time.Second)
		m := decode(l)
		if m.Method == "roots/list" {
			h.Send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"roots":[]}}` + "\n")
			continue
		}
		id := string(m.ID)
		w, ok := want[id]
		if !ok || m.Result == nil {
			t.Fatalf("unexpected line %q", l)
		}
		if got[id]++; got[id] > 1 {
			t.Fatalf("id %s answered twice", id)
		}
		if !strings.Contains(string(m.Result), w) {
			t.Errorf("id %s answered %s, want %q", id, m.Result, w)
		}
	}
	expectResult(t, h.call(ping(`"end"`), `"end"`), `"end"`)
	h.CloseStdin()
	h.Wait(10 * time.Second)
	if got, want := readFile(t, record), h.Sent(); got != want {
		t.Errorf("server did not receive exactly what the client sent (%d vs %d bytes)", len(got), len(want))
	}
}

// TestPrivateListOversizedFailsFast checks that when the result of the
// gateway's own tools/list is over the frame limit, the waiting call is
// decided at once (the gateway is the sender and the id is readable), not
// after the whole fetch timeout.
func TestPrivateListOversizedFailsFast(t *testing.T) {
	t.Parallel()
	h := startGH(t, run{
		flags:  []string{"--max-frame-bytes", "2048"},
		server: []string{"--tools", harness.Testdata("tools-big.json")},
	})
	expectResult(t, h.call(initialize("0", "2025-06-18"), "0"), "0")
	start := time.Now()
	m := expectError(t, h.call(toolCall("1", "echo", `{}`), "1"), "1", -32080)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the call was decided after %v", d)
	}
	if !strings.Contains(m.Error.Message, "unknown_tool") {
		t.Errorf("denial %q", m.Error.Message)
	}
}

// TestListChangedDuringClientListing checks that a client's paginated
// tools/list that straddles notifications/tools/list_changed does not make
// the gateway trust the pages it read before the change: a tool that became
// destructive is denied for readonly_agent.
func TestListChangedDuringClientListing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	record := filepath.Join(dir, "record")
	h := startGH(t, run{
		flags:  []string{"--policy", harness.Testdata("readonly-agent.yaml"), "--role", "readonly_agent"},
		server: []string{"--record", record, "--page-size", "1", "--tools", harness.Testdata("tools-readonly.json"), "--tools2", harness.Testdata("tools-destructive.json")},
	})
	expectResult(t, h.call(initialize("0", "2025-06-18"), "0"), "0")
	h.Send(initialized)
	listPage := func(id, cursor string) (names []string, next string) {
		req := toolsList(id)
		if cursor != "" {
			req = `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list","params":{"cursor":` + harness.JSONString(cursor) + `}}` + "\n"
		}
		m := expectResult(t, h.call(req, id), id)
		var res struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		if err := json.Unmarshal(m.Result, &res); err != nil {
			t.Fatal(err)
		}
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		return names, res.NextCursor
	}
	names, c1 := listPage(`"l1"`, "") // page 1: mytool, read-only
	if len(names) != 1 || names[0] != "mytool" || c1 == "" {
		t.Fatalf("page 1: %v %q", names, c1)
	}
	// The server's tools change: mytool becomes destructive.
	h.Send(toolCall("1", "sendlistchanged", `{}`))
	if m := decode(h.read(5 * time.Second)); m.Method != "notifications/tools/list_changed" {
		t.Fatalf("got %+v, want the list_changed notification", m)
	}
	expectResult(t, h.read(5*time.Second), "1")
	// The client reads the rest of its listing.
	_, c2 := listPage(`"l2"`, c1)
	if _, c3 := listPage(`"l3"`, c2); c3 != "" {
		t.Fatalf("page 3 is not the last")
	}
	call := toolCall("2", "mytool", `{}`)
	expectError(t, h.call(call, "2"), "2", -32080)
	if strings.Contains(readFile(t, record), call) {
		t.Errorf("the call to the now destructive tool reached the server")
	}
}

// TestHeldCallKeepsItsID checks a tools/call held while the gateway fetches
// the catalog (the server is busy for 1.5 s, so its private tools/list waits):
// its id stays in flight (a second request with it is refused at once), and
// at client EOF the held call is still decided, forwarded and answered
// before gatehouse exits.
func TestHeldCallKeepsItsID(t *testing.T) {
	t.Parallel()
	record := filepath.Join(t.TempDir(), "record")
	h := startGH(t, run{server: []string{"--record", record}})
	expectResult(t, h.call(initialize("0", "2025-06-18"), "0"), "0")
	// Only after initialized does the gateway fetch the catalog itself.
	h.Send(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	note := `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"busy"}}` + "\n"
	h.Send(toolCall(`"e"`, "emit", `{"delay_ms":1500,"lines":[`+harness.JSONString(note)+`,`+harness.JSONString(note)+`]}`))
	if got := h.read(5 * time.Second); got != note {
		t.Fatalf("got %q", got)
	}
	h.Send(toolCall("5", "echo", `{"held":true}`)) // not listed yet: held
	start := time.Now()
	h.Send(ping("5"))
	expectError(t, h.read(time.Second), "5", -32600)
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("the refusal of the duplicate id took %v", d)
	}
	h.CloseStdin()
	resp, _ := h.readUntilID("5", 10*time.Second)
	m := expectResult(t, resp, "5")
	if !strings.Contains(string(m.Result), "held") {
		t.Errorf("held call answered %s", m.Result)
	}
	if code := h.Wait(10 * time.Second); code != 0 {
		t.Errorf("exit code %d", code)
	}
	if strings.Contains(readFile(t, record), ping("5")) {
		t.Errorf("the duplicate id reached the server")
	}
}

// TestBatchRefreshDoesNotBlockClient checks that a batch waiting for the
// gateway's private tools/list (2025-03-26; the server is busy for 1.5 s)
// does not stop the gateway from reading the client's other frames: an
// invalid frame sent meanwhile is answered by the gateway at once (and a
// notifications/cancelled would be forwarded at once).
func TestBatchRefreshDoesNotBlockClient(t *testing.T) {
	t.Parallel()
	h := startGH(t, run{server: []string{"--protocol-version", "2025-03-26"}})
	h.handshake("2025-03-26")
	note := `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"busy"}}` + "\n"
	h.Send(toolCall(`"e"`, "emit", `{"delay_ms":1500,"lines":[`+harness.JSONString(note)+`,`+harness.JSONString(note)+`]}`))
	if got := h.read(5 * time.Second); got != note {
		t.Fatalf("got %q", got)
	}
	h.Send(`[{"jsonrpc":"2.0","id":"b1","method":"tools/call","params":{"name":"nosuchtool","arguments":{}}}]` + "\n")
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	h.Send("not json\n")
	for {
		l := h.read(5 * time.Second)
		if m := decode(l); m.Error != nil && m.Error.Code == -32700 {
			break
		}
	}
	if d := time.Since(start); d > 700*time.Millisecond {
		t.Errorf("the gateway answered a frame sent after the batch only after %v", d)
	}
}
