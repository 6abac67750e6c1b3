package relay

import (
	"encoding/json"
	"github.com/gatehouse-mcp/gatehouse/test/harness"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestOnlyToolsCallDecided checks that only tools/call produces a decision
// event: initialize, tools/list, ping and notifications never do.
func TestOnlyToolsCallDecided(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "decisions.jsonl")
	h := startGH(t, run{flags: []string{"--decision-log", log, "--event-source", eventSource}})
	h.handshake("2025-06-18")
	expectResult(t, h.call(ping(`"p"`), `"p"`), `"p"`)
	expectResult(t, h.call(toolsList(`"tl2"`), `"tl2"`), `"tl2"`)
	h.Send(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}` + "\n")
	if n := len(eventsOf(t, log, typeDecision)); n != 0 {
		t.Fatalf("%d decision events before any tools/call", n)
	}
	expectResult(t, h.call(toolCall("1", "echo", `{}`), "1"), "1")
	expectResult(t, h.call(toolCall("2", "write", `{}`), "2"), "2")
	h.CloseStdin()
	h.Wait(10 * time.Second)
	ev := eventsOf(t, log, typeDecision)
	if len(ev) != 2 || harness.Str(ev[0].Data["tool"]) != "echo" || harness.Str(ev[1].Data["tool"]) != "write" {
		t.Errorf("decision events %v, want echo and write", ev)
	}
}

// TestUnknownToolPrivateList checks that a call to a tool the gateway has
// not seen listed triggers a private tools/list whose id and answer the
// client never sees, and that a tool the server does not list is denied with
// rule unknown_tool without reaching the server.
func TestUnknownToolPrivateList(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	record := filepath.Join(dir, "record")
	log := filepath.Join(dir, "decisions.jsonl")
	h := startGH(t, run{flags: []string{"--decision-log", log, "--event-source", eventSource}, server: []string{"--record", record}})
	expectResult(t, h.call(initialize("0", "2025-06-18"), "0"), "0")
	h.Send(initialized)
	m := expectError(t, h.call(toolCall("5", "nosuchtool", `{}`), "5"), "5", -32080)
	if !strings.Contains(m.Error.Message, "unknown_tool") {
		t.Errorf("denial %q does not name rule unknown_tool", m.Error.Message)
	}
	// The next line the client sees is the answer to its next request:
	// nothing of the private tools/list leaked in between.
	expectResult(t, h.call(ping(`"after"`), `"after"`), `"after"`)
	// A listed tool the gateway has not seen yet is fetched and allowed.
	expectResult(t, h.call(toolCall("6", "echo", `{}`), "6"), "6")
	h.CloseStdin()
	h.Wait(10 * time.Second)
	var private []string
	for _, l := range recordLines(t, record) {
		if strings.Contains(l, "nosuchtool") {
			t.Errorf("the call to an unknown tool reached the server: %q", l)
		}
		if strings.Contains(l, `"tools/list"`) {
			private = append(private, l)
			if !strings.Contains(h.Sent(), l) {
				continue
			}
			t.Errorf("a tools/list in the record was sent by the client: %q", l)
		}
	}
	if len(private) == 0 {
		t.Errorf("no private tools/list reached the server")
	}
	for _, l := range private {
		id := string(decode(l).ID)
		if id == "" || strings.Contains(h.Sent(), `"id":`+id) {
			t.Errorf("private tools/list id %q is empty or one the client used", id)
		}
	}
	ev := eventsOf(t, log, typeDecision)
	if len(ev) != 2 {
		t.Fatalf("%d decision events, want 2", len(ev))
	}
	if harness.Str(ev[0].Data["decision"]) != "deny" || harness.Str(ev[0].Data["matched_rule"]) != "unknown_tool" || string(ev[0].Data["tool_known"]) != "false" {
		t.Errorf("unknown tool decision: %s", ev[0].Raw)
	}
	if harness.Str(ev[1].Data["decision"]) != "allow" || string(ev[1].Data["tool_known"]) != "true" {
		t.Errorf("fetched tool decision: %s", ev[1].Raw)
	}
}

// Secret-looking argument values that must never be echoed by a denial.
const (
	secretToken = "sk-live-TOPSECRET-4242424242"
	secretPath  = "/srv/SECRETPATH-do-not-echo"
)

// TestDeniedCallNeverReachesServer checks denials: the call never reaches
// the server, the client gets -32080 naming the rule, and argument values
// are never echoed, neither in the answer nor on stderr (even at debug
// level) nor in the decision log. A tool name written with a JSON escape is
// the same tool.
func TestDeniedCallNeverReachesServer(t *testing.T) {
	t.Parallel()
	for _, withLog := range []bool{true, false} {
		name := "with decision log"
		if !withLog {
			name = "without decision log"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			record := filepath.Join(dir, "record")
			log := filepath.Join(dir, "decisions.jsonl")
			flags := []string{"--policy", harness.Testdata("deny-delete.yaml"), "--log-level", "debug"}
			if withLog {
				flags = append(flags, "--decision-log", log, "--event-source", eventSource)
			}
			h := startGH(t, run{flags: flags, server: []string{"--record", record}})
			h.handshake("2025-06-18")
			args := `{"token":"` + secretToken + `","path":"` + secretPath + `"}`
			denied := []struct{ line, id, rule string }{
				{toolCall("1", "delete", args), "1", "deny_delete"},
				{toolCall("2", "write", args), "2", "deny_leaky_write"},
				{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"del\u0065te","arguments":` + args + `}}` + "\n", "3", "deny_delete"},
				{`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"arguments":` + args + `,"name":"delete","_meta":{"claudecode/toolUseId":"toolu_X"}}}` + "\n", "4", "deny_delete"},
				{`{"jsonrpc":"2.0","id":6,"method":"tools\/call","params":{"name":"delete","arguments":` + args + `}}` + "\n", "6", "deny_delete"},
				{`{"jsonrpc":"2.0","id":7,"method":"tools/\u0063all","params":{"name":"\u0064elete","arguments":` + args + `}}` + "\r\n", "7", "deny_delete"},
			}
			for _, d := range denied {
				resp := h.call(d.line, d.id)
				m := expectError(t, resp, d.id, -32080)
				if !strings.Contains(m.Error.Message, d.rule) && !strings.Contains(string(m.Error.Data), d.rule) {
					t.Errorf("denial %q does not name rule %s", resp, d.rule)
				}
				if strings.Contains(resp, "TOPSECRET") || strings.Contains(resp, "SECRETPATH") {
					t.Errorf("denial echoes an argument value: %q", resp)
				}
			}
			// An allowed call goes through.
			allowed := toolCall("5", "write", `{"token":"harmless"}`)
			expectResult(t, h.call(allowed, "5"), "5")
			h.CloseStdin()
			h.Wait(10 * time.Second)
			if got, want := readFile(t, record), h.handshakeBytes()+allowed; got != want {
				t.Errorf("server received:\n%q\nwant only the handshake and the allowed call", got)
			}
			if s := h.Stderr.String(); strings.Contains(s, "TOPSECRET") || strings.Contains(s, "SECRETPATH") {
				t.Errorf("stderr holds an argument value:\n%s", s)
			}
			if withLog {
				l := readFile(t, log)
				if strings.Contains(l, "TOPSECRET") || strings.Contains(l, "SECRETPATH") {
					t.Errorf("the decision log holds an argument value")
				}
				if n := len(eventsOf(t, log, typeDecision)); n != len(denied)+1 {
					t.Errorf("%d decision events, want %d", n, len(denied)+1)
				}
			}
		})
	}
}

// TestDenyResponseToolResult checks deny_response: tool_result: the denial
// is a result with isError true that names the rule, not a JSON-RPC error.
func TestDenyResponseToolResult(t *testing.T) {
	t.Parallel()
	record := filepath.Join(t.TempDir(), "record")
	h := startGH(t, run{flags: []string{"--policy", harness.Testdata("deny-delete-tool-result.yaml")}, server: []string{"--record", record}})
	h.handshake("2025-06-18")
	resp := h.call(toolCall("1", "delete", `{"token":"`+secretToken+`"}`), "1")
	m := expectResult(t, resp, "1")
	var res struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil {
		t.Fatal(err)
	}
	if !res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].Text, "deny_delete") {
		t.Errorf("denial %q: want isError true and text naming deny_delete", resp)
	}
	if strings.Contains(resp, "TOPSECRET") {
		t.Errorf("denial echoes an argument value")
	}
	h.CloseStdin()
	h.Wait(10 * time.Second)
	if strings.Contains(readFile(t, record), `"delete"`) {
		t.Errorf("the denied call reached the server")
	}
}

// TestDecisionEventFields checks the one decision event per tools/call:
// tool, decision, matched_rule, rpc_id_present, rpc_id (the original token,
// verbatim) and tool_call_id (strong from _meta["claudecode/toolUseId"],
// else req_<id> weak, else gen_ for a call without id).
func TestDecisionEventFields(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "decisions.jsonl")
	h := startGH(t, run{flags: []string{"--policy", harness.Testdata("deny-delete.yaml"), "--decision-log", log, "--event-source", eventSource}})
	h.handshake("2025-06-18")
	type want struct {
		tool, decision, rule string
		idPresent            bool
		rpcID                string // raw
		tcID, strength       string // tcID "gen_" means a prefix
	}
	calls := []struct {
		line, id string
		want     want
	}{
		{`{"jsonrpc":"2.0","id":1.50,"method":"tools/call","params":{"name":"echo","arguments":{}}}` + "\n", "1.50",
			want{"echo", "allow", "default", true, "1.50", "req_1.50", "weak"}},
		{`{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"name":"echo","arguments":{}}}` + "\n", `"abc"`,
			want{"echo", "allow", "default", true, `"abc"`, "req_abc", "weak"}},
		{`{"jsonrpc":"2.0","id":12345678901234567891,"method":"tools/call","params":{"name":"echo"}}` + "\n", "12345678901234567891",
			want{"echo", "allow", "default", true, "12345678901234567891", "req_12345678901234567891", "weak"}},
		{`{"jsonrpc":"2.0","id":"\u0037","method":"tools/call","params":{"name":"echo","arguments":{}}}` + "\n", `"\u0037"`,
			want{"echo", "allow", "default", true, `"\u0037"`, "req_7", "weak"}},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"claudecode/toolUseId":"toolu_01XYZ"}}}` + "\n", "7",
			want{"echo", "allow", "default", true, "7", "toolu_01XYZ", "strong"}},
		{`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"claudecode/toolUseId":"req_spoofed"}}}` + "\n", "8",
			want{"echo", "allow", "default", true, "8", "req_8", "weak"}},
		{`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"delete","arguments":{},"_meta":{"claudecode/toolUseId":"toolu_DEL"}}}` + "\n", "9",
			want{"delete", "deny", "deny_delete", true, "9", "toolu_DEL", "strong"}},
		{`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{}}}` + "\n", "",
			want{"echo", "allow", "default", false, "null", "gen_", "weak"}},
	}
	for _, c := range calls {
		if c.id == "" {
			h.Send(c.line)
			continue
		}
		h.call(c.line, c.id)
	}
	expectResult(t, h.call(ping(`"sync"`), `"sync"`), `"sync"`)
	h.CloseStdin()
	h.Wait(10 * time.Second)
	ev := eventsOf(t, log, typeDecision)
	if len(ev) != len(calls) {
		t.Fatalf("%d decision events for %d tools/call", len(ev), len(calls))
	}
	for i, c := range calls {
		d, w := ev[i].Data, c.want
		got := want{harness.Str(d["tool"]), harness.Str(d["decision"]), harness.Str(d["matched_rule"]), string(d["rpc_id_present"]) == "true",
			string(d["rpc_id"]), harness.Str(d["tool_call_id"]), harness.Str(d["tool_call_id_strength"])}
		if w.tcID == "gen_" && strings.HasPrefix(got.tcID, "gen_") && len(got.tcID) > 10 {
			got.tcID = "gen_"
		}
		if got != w {
			t.Errorf("call %d: event\n got %+v\nwant %+v\n%s", i, got, w, ev[i].Raw)
		}
	}
}

// TestDecisionLogModeAndAppend checks that the decision log is created with
// mode 0600 and appended to, never truncated, across runs.
func TestDecisionLogModeAndAppend(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "decisions.jsonl")
	runOnce := func(id string) {
		// umask 000: the mode must not depend on the caller's umask.
		h := startGH(t, run{wrapper: []string{"/bin/sh", "-c", `umask 000; exec "$@"`, "sh"}, flags: []string{"--decision-log", log, "--event-source", eventSource}})
		h.handshake("2025-06-18")
		expectResult(t, h.call(toolCall(id, "echo", `{}`), id), id)
		h.CloseStdin()
		if code := h.Wait(10 * time.Second); code != 0 {
			t.Fatalf("exit code %d", code)
		}
	}
	runOnce("1")
	fi, err := os.Stat(log)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("decision log mode %v, want 0600", fi.Mode().Perm())
	}
	first := readFile(t, log)
	if n := len(eventsOf(t, log, typeDecision)); n != 1 {
		t.Fatalf("%d decision events after one run", n)
	}
	runOnce("2")
	second := readFile(t, log)
	if !strings.HasPrefix(second, first) || len(second) <= len(first) {
		t.Errorf("the second run did not append to the log")
	}
	if n := len(eventsOf(t, log, typeDecision)); n != 2 {
		t.Errorf("%d decision events after two runs, want 2", n)
	}
	// An existing file of the operator's is appended to as well.
	op := filepath.Join(dir, "operator.jsonl")
	if err := os.WriteFile(op, []byte("{\"operator\":\"line\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	log = op
	runOnce("3")
	if !strings.HasPrefix(readFile(t, op), "{\"operator\":\"line\"}\n") {
		t.Errorf("an existing decision log was truncated")
	}
}

// TestDecisionLogWriteFailure checks a decision log that cannot be written
// (its file is at the file size limit, so every write fails with EFBIG):
// the failure is visible on stderr, and a call is refused with -32081 (fail
// closed, also the built-in default) or allowed with on_log_failure:
// fail_open.
func TestDecisionLogWriteFailure(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("prlimit (util-linux) is not installed")
	}
	const limit = 1 << 20
	tests := []struct {
		name    string
		policy  string
		allowed bool
	}{
		{"fail closed", "fail-closed.yaml", false},
		{"built-in default fails closed", "", false},
		{"fail open", "fail-open.yaml", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			record := filepath.Join(dir, "record")
			log := filepath.Join(dir, "decisions.jsonl")
			if err := os.WriteFile(log, []byte(strings.Repeat("x", limit-1)+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			flags := []string{"--decision-log", log, "--event-source", eventSource}
			if tt.policy != "" {
				flags = append(flags, "--policy", harness.Testdata(tt.policy))
			}
			h := startGH(t, run{
				wrapper: []string{"prlimit", "--fsize=" + strconv.Itoa(limit), "--"},
				flags:   flags,
				server:  []string{"--record", record},
			})
			h.handshake("2025-06-18")
			call := toolCall("1", "echo", `{"a":1}`)
			resp := h.call(call, "1")
			if tt.allowed {
				expectResult(t, resp, "1")
			} else {
				m := expectError(t, resp, "1", -32081)
				if !strings.Contains(m.Error.Message, "decision_not_recorded") && !strings.Contains(string(m.Error.Data), "decision_not_recorded") {
					t.Errorf("refusal %q does not say why", resp)
				}
			}
			h.WaitStderr("file too large", 5*time.Second)
			h.CloseStdin()
			h.Wait(10 * time.Second)
			if got := strings.Contains(readFile(t, record), call); got != tt.allowed {
				t.Errorf("call reached the server: %v, want %v", got, tt.allowed)
			}
			if fi, _ := os.Stat(log); fi.Size() != limit {
				t.Errorf("decision log grew to %d bytes", fi.Size())
			}
		})
	}
}
