package e2e

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-mcp/gatehouse/test/harness"
)

// Timeouts of the scripted client. They are generous: the machines are
// small and shared, and a test that passes only on a quiet machine is a
// flaky test.
const (
	readTimeout = 20 * time.Second
	exitTimeout = 30 * time.Second
)

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer = harness.SyncBuffer

// proc is a running `gatehouse` process driven by a scripted client: the
// shared driver (harness.Driver), whose Send writes exact bytes to its
// stdin and whose Read returns exact lines from its stdout, and the e2e
// tests' own JSON-RPC helpers.
type proc struct {
	*harness.Driver
	t testing.TB
}

// startGatehouse starts gatehouse with args (for example "wrap", "--",
// fakeServerBin) in a process group of its own. The group is killed when
// the test ends, and gatehouse's stderr logged when the test failed.
func startGatehouse(t testing.TB, args ...string) *proc {
	t.Helper()
	d := harness.Start(t, harness.Options{
		Argv:    append([]string{gatehouseBin}, args...),
		Setpgid: true, KillGroup: true, LineBuffer: 1024,
	})
	d.OnCleanup(func() {
		if t.Failed() {
			t.Logf("gatehouse %s\nstderr:\n%s", strings.Join(args, " "), d.Stderr.String())
		}
	})
	return &proc{Driver: d, t: t}
}

// readLine returns the next stdout line, terminator included, failing the
// test after readTimeout or at EOF.
func (p *proc) readLine() string { p.t.Helper(); return string(p.Read(readTimeout)) }

// tryReadLine returns the next stdout line, or an error at EOF (io.EOF) or
// after d (harness.ErrNoLine).
func (p *proc) tryReadLine(d time.Duration) (string, error) {
	l, err := p.TryRead(d)
	return string(l), err
}

// call sends a request line and returns the response with the same raw id,
// skipping (and returning) whatever else arrives first.
func (p *proc) call(id, method, params string) (resp map[string]json.RawMessage, before []string) {
	p.t.Helper()
	req := `{"jsonrpc":"2.0","id":` + id + `,"method":` + jsonString(method)
	if params != "" {
		req += `,"params":` + params
	}
	p.SendLine(req + "}")
	for {
		l := p.readLine()
		m := map[string]json.RawMessage{}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			p.t.Fatalf("gatehouse wrote a line that is not a JSON object: %q", l)
		}
		if _, isReq := m["method"]; !isReq && string(m["id"]) == id {
			return m, before
		}
		before = append(before, l)
	}
}

// initialize performs the initialize handshake with the given revision.
func (p *proc) initialize(revision string) map[string]json.RawMessage {
	p.t.Helper()
	resp, _ := p.call("0", "initialize", `{"protocolVersion":"`+revision+`","capabilities":{},"clientInfo":{"name":"e2e","version":"0"}}`)
	if resp["result"] == nil {
		p.t.Fatalf("initialize failed: %s", resp["error"])
	}
	p.SendLine(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return resp
}

// wait waits for gatehouse to exit and returns its exit code (-1 when it
// was killed by a signal), failing the test after exitTimeout.
func (p *proc) wait() int { p.t.Helper(); return p.Wait(exitTimeout) }

// jsonString encodes s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// runGatehouse runs gatehouse to completion with the given stdin and
// returns its exit code, stdout and stderr.
func runGatehouse(t testing.TB, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	p := startGatehouse(t, args...)
	p.Send(stdin)
	p.CloseStdin()
	var out strings.Builder
	for {
		l, err := p.TryRead(exitTimeout)
		if err != nil {
			break
		}
		out.Write(l)
	}
	return p.wait(), out.String(), p.Stderr.String()
}

// cloudEvent is one decision-log line; its DataRaw is the data member as
// written.
type cloudEvent = harness.Event

// decisionData is the data of a gatehouse.tool.decision.v1 event.
type decisionData struct {
	Tool               string          `json:"tool"`
	Decision           string          `json:"decision"`
	MatchedRule        string          `json:"matched_rule"`
	Reason             string          `json:"reason"`
	RPCIDPresent       *bool           `json:"rpc_id_present"`
	RPCID              json.RawMessage `json:"rpc_id"`
	ToolCallID         string          `json:"tool_call_id"`
	ToolCallIDStrength string          `json:"tool_call_id_strength"`
}

// Decision-log event types.
const (
	typeDecision     = harness.TypeDecision
	typeSessionStart = harness.TypeSessionStart
	typeSessionStop  = harness.TypeSessionStop
)

// readDecisionLog parses the decision log strictly: every line complete
// (LF-terminated), a JSON object, with the CloudEvents attributes set, the
// given source, unique ids and RFC 3339 times.
func readDecisionLog(t testing.TB, path, source string) []cloudEvent {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("decision log: %v", err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Errorf("decision log: last line is not terminated")
	}
	var events []cloudEvent
	ids := map[string]bool{}
	for i, ev := range harness.ParseEvents(t, data) {
		if ev.SpecVersion != "1.0" || ev.ID == "" || ev.Type == "" || ev.DataRaw == nil {
			t.Errorf("decision log line %d: missing CloudEvents attributes: %q", i+1, ev.Raw)
		}
		if ev.Source != source {
			t.Errorf("decision log line %d: source %q, want %q", i+1, ev.Source, source)
		}
		if _, err := time.Parse(time.RFC3339Nano, ev.Time); err != nil {
			t.Errorf("decision log line %d: time %q: %v", i+1, ev.Time, err)
		}
		if ids[ev.ID] {
			t.Errorf("decision log line %d: duplicate event id %s", i+1, ev.ID)
		}
		ids[ev.ID] = true
		events = append(events, ev)
	}
	return events
}

// decisions returns the data of the tool decision events, in order, after
// checking that the log is framed by one session start and one stop event
// (when wantStop).
func decisions(t testing.TB, events []cloudEvent, wantStop bool) []decisionData {
	t.Helper()
	var out []decisionData
	starts, stops := 0, 0
	for i, ev := range events {
		switch ev.Type {
		case typeSessionStart:
			starts++
			if i != 0 {
				t.Errorf("session start event at position %d", i)
			}
		case typeSessionStop:
			stops++
			if i != len(events)-1 {
				t.Errorf("session stop event at position %d of %d", i, len(events))
			}
		case typeDecision:
			var d decisionData
			if err := json.Unmarshal(ev.DataRaw, &d); err != nil {
				t.Fatalf("decision data: %v", err)
			}
			if d.RPCIDPresent == nil || d.ToolCallID == "" || d.ToolCallIDStrength == "" || d.Decision == "" || d.MatchedRule == "" {
				t.Errorf("decision event lacks fields: %s", ev.DataRaw)
			}
			out = append(out, d)
		}
	}
	if starts != 1 {
		t.Errorf("%d session start events, want 1", starts)
	}
	if wantStop && stops != 1 {
		t.Errorf("%d session stop events, want 1", stops)
	}
	return out
}

// writeFile writes content to name in dir and returns its path.
func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// fileExists reports whether path exists (without following a final symlink).
func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return !errors.Is(err, os.ErrNotExist)
}

// waitFor polls cond every 20ms until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cond()
}
