package receiptse2e

import (
	"bytes"
	"encoding/json"
	"github.com/gatehouse-mcp/gatehouse/test/harness"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// verifySession is the script of the captures the verifier tests tamper
// with: allowed and denied calls, LF and CRLF, a missing id, a declared
// version.
func verifySession() []step {
	return []step{
		{line: initialize(`"init"`, "2025-06-18") + initialized, reply: `"init"`},
		{line: toolCall("1", "echo", `{"n":1}`), reply: "1"},
		{line: crlf(withMeta(toolCall(`"two"`, "echo", `{"n":2}`), versionMeta(`"2025-11-25"`))), reply: `"two"`},
		{line: toolCall("3", "delete", `{"path":"/x"}`), reply: "3"},
		{line: toolCall("", "echo", `{"n":4}`)},
		{line: toolCall("5", "echo", `{"n":5}`), reply: "5"},
	}
}

// goodCapture runs verifySession with receipts on and returns the lines of
// the receipts file and of the decision log.
func goodCapture(t *testing.T) (recs, log []string) {
	t.Helper()
	f := newFiles(t)
	h, code := run(t, wrapRun{flags: f.flags(true), server: f.server()}, verifySession())
	if code != 0 {
		t.Fatalf("gatehouse exited %d; stderr:\n%s", code, h.Tail())
	}
	if code, v := verifyCapture(t, f.receipts, f.log); code != 0 {
		t.Fatalf("the untampered capture is rejected (exit %d, %v):\n%s", code, v.failed(), v.Out)
	}
	return harness.SplitLines(harness.ReadFile(t, f.receipts)), harness.SplitLines(harness.ReadFile(t, f.log))
}

// TestVerifierRejectsTampering runs the verifier on a good capture and on
// tampered copies of it (and of a second run's capture), and checks the
// verdict: exit 1 naming exactly the checks the change breaks (or at least
// the one that must catch it), and the inputs unchanged (verifyCapture
// checks hash, mode, size and mtime before and after every run).
func TestVerifierRejectsTampering(t *testing.T) {
	t.Parallel()
	recA, logA := goodCapture(t)
	recB, logB := goodCapture(t)
	if len(recA) != 5 || len(recB) != 5 {
		t.Fatalf("%d and %d receipts, want 5 each", len(recA), len(recB))
	}
	if a, b := harness.Str(member(t, recA[0], "scope")), harness.Str(member(t, recB[0], "scope")); a == b {
		t.Fatalf("two runs share the scope %s; it must be fresh per invocation", a)
	}
	// Indexes into logA: 0 start, 1..5 tool decisions, 6 stop.
	if len(logA) != 7 || !strings.Contains(logA[0], typeStart) || !strings.Contains(logA[6], typeStop) {
		t.Fatalf("unexpected decision log layout:\n%s", strings.Join(logA, ""))
	}
	eventID := func(line string) string {
		var e event
		_ = json.Unmarshal([]byte(line), &e)
		return e.ID
	}
	refID := func(i int) string { return harness.Str(member(t, recA[i], "decision_event_id")) }
	logLineOf := func(id string) int {
		for i, l := range logA {
			if eventID(l) == id {
				return i
			}
		}
		t.Fatalf("event %s not in the log", id)
		return -1
	}

	type variant struct {
		name     string
		rec, log []string
		// want are the checks that must fail; exact: and no others.
		want  []string
		exact bool
	}
	cp := slices.Clone[[]string]
	rep := func(lines []string, i int, s string) []string { out := cp(lines); out[i] = s; return out }
	del := func(lines []string, i int) []string { return slices.Delete(cp(lines), i, i+1) }
	ins := func(lines []string, i int, s string) []string { return slices.Insert(cp(lines), i, s) }
	swap := func(lines []string, i, j int) []string { out := cp(lines); out[i], out[j] = out[j], out[i]; return out }
	set := func(i int, key, raw string) []string { return rep(recA, i, setMember(t, recA[i], key, raw)) }
	dec1 := logLineOf(refID(1))

	variants := []variant{
		{name: "untampered", rec: recA, log: logA, exact: true},
		{name: "edit a byte of a request_line", rec: rep(recA, 0, strings.Replace(recA[0], `\"n\":1`, `\"n\":7`, 1)), log: logA,
			want: []string{"request_digest"}, exact: true},
		{name: "edit a byte of request_sha256", rec: rep(recA, 1, flipHex(t, recA[1], "request_sha256")), log: logA,
			want: []string{"request_digest"}, exact: true},
		{name: "request_bytes off by one", rec: set(1, "request_bytes", strconv.Itoa(len(harness.Str(member(t, recA[1], "request_line")))+1)), log: logA,
			want: []string{"request_digest"}, exact: true},
		{name: "edit a byte of a referenced decision event", rec: recA, log: rep(logA, dec1, strings.Replace(logA[dec1], `"time":"20`, `"time":"21`, 1)),
			want: []string{"decision_reference"}, exact: true},
		{name: "edit a byte of decision_sha256", rec: rep(recA, 2, flipHex(t, recA[2], "decision_sha256")), log: logA,
			want: []string{"decision_reference"}, exact: true},
		{name: "tool name and request digests rewritten together", rec: rep(recA, 0, rewriteRequest(t, recA[0], `"name":"echo"`, `"name":"write"`)), log: logA,
			want: []string{"rpc_id_tool"}, exact: true},
		{name: "rpc_id changed", rec: set(0, "rpc_id", "2"), log: logA,
			want: []string{"rpc_id_tool"}, exact: true},
		{name: "rpc_id number given as string", rec: set(0, "rpc_id", `"1"`), log: logA,
			want: []string{"rpc_id_tool"}, exact: true},
		{name: "rpc_id_present flipped on a missing id", rec: set(3, "rpc_id_present", "true"), log: logA,
			want: []string{"rpc_id_tool"}, exact: true},
		{name: "declared version state changed", rec: set(1, "declared_protocol_version_state", `"absent"`), log: logA,
			want: []string{"protocol_version"}},
		{name: "metadata_pointer dropped", rec: set(1, "metadata_pointer", "null"), log: logA,
			want: []string{"protocol_version"}, exact: true},
		{name: "drop a receipt line", rec: del(recA, 2), log: logA,
			want: []string{"lifecycle", "scope_sequence", "event_population"}, exact: true},
		{name: "drop the last receipt line", rec: del(recA, 4), log: logA,
			want: []string{"lifecycle", "event_population"}, exact: true},
		{name: "duplicate a receipt line", rec: ins(recA, 2, recA[1]), log: logA,
			want: []string{"lifecycle", "scope_sequence", "event_population"}, exact: true},
		{name: "reorder receipt lines", rec: swap(recA, 1, 3), log: logA,
			want: []string{"scope_sequence"}, exact: true},
		{name: "swap scopes: one receipt from another run", rec: rep(recA, 2, recB[2]), log: logA,
			want: []string{"scope_sequence", "decision_reference", "event_population"}},
		{name: "swap scopes: receipts of another run", rec: recB, log: logA,
			want: []string{"lifecycle", "decision_reference", "event_population"}},
		{name: "swap scopes: two runs concatenated", rec: append(cp(recA), recB...), log: append(cp(logA), logB...),
			want: []string{"lifecycle", "scope_sequence"}},
		{name: "duplicate a referenced decision event line", rec: recA, log: ins(logA, dec1+1, logA[dec1]),
			want: []string{"decision_reference", "event_population"}, exact: true},
		{name: "another event reuses a referenced event id", rec: recA, log: rep(logA, 0, strings.Replace(logA[0], eventID(logA[0]), refID(1), 1)),
			want: []string{"decision_reference"}},
		{name: "drop a referenced decision event", rec: recA, log: del(logA, dec1),
			want: []string{"decision_reference", "event_population"}},
		{name: "a tool decision no receipt references", rec: recA, log: ins(logA, 6, strings.Replace(logA[dec1], refID(1), "00000000-0000-4000-8000-000000000000", 1)),
			want: []string{"event_population"}, exact: true},
		{name: "truncate the last receipt line", rec: rep(recA, 4, recA[4][:len(recA[4])/2]), log: logA,
			want: []string{"lines_complete"}},
		{name: "remove only the final LF of the receipts", rec: rep(recA, 4, strings.TrimSuffix(recA[4], "\n")), log: logA,
			want: []string{"lines_complete"}},
		{name: "truncate the last decision-log line", rec: recA, log: rep(logA, 6, logA[6][:len(logA[6])/2]),
			want: []string{"lines_complete", "lifecycle"}},
		{name: "missing stop event", rec: recA, log: del(logA, 6),
			want: []string{"lifecycle"}, exact: true},
		{name: "missing start event", rec: recA, log: del(logA, 0),
			want: []string{"lifecycle"}, exact: true},
		{name: "stop event record count off by one", rec: recA, log: rep(logA, 6, strings.Replace(logA[6], `"records":5`, `"records":4`, 1)),
			want: []string{"lifecycle"}, exact: true},
		{name: "capture_incomplete diagnostic appended", rec: append(cp(recA), diagnosticLine), log: logA,
			want: []string{"no_incomplete_diagnostic"}},
		{name: "a receipt member missing", rec: rep(recA, 0, dropMember(t, recA[0], "assertion_basis")), log: logA,
			want: []string{"receipt_fields"}},
		{name: "a duplicate member name", rec: rep(recA, 0, strings.Replace(recA[0], `{"schema":`, `{"schema":"x","schema":`, 1)), log: logA,
			want: []string{"lines_complete"}},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			rp, lp := filepath.Join(dir, "requests.jsonl"), filepath.Join(dir, "decisions.jsonl")
			write(t, rp, strings.Join(v.rec, ""))
			write(t, lp, strings.Join(v.log, ""))
			code, verdict := verifyCapture(t, rp, lp)
			failed := verdict.failed()
			if len(v.want) == 0 {
				if code != 0 || !verdict.OK {
					t.Fatalf("exit %d, failed %v; want accepted\n%s", code, failed, verdict.Out)
				}
				return
			}
			if code != 1 || verdict.OK || verdict.Verdict != "rejected" {
				t.Fatalf("exit %d, verdict %q; want 1, rejected\n%s", code, verdict.Verdict, verdict.Out)
			}
			for _, w := range v.want {
				if !slices.Contains(failed, w) {
					t.Errorf("failed checks %v do not name %s", failed, w)
				}
			}
			if v.exact {
				if !sameSet(failed, v.want) {
					t.Errorf("failed checks %v, want exactly %v", failed, v.want)
				}
			} else {
				t.Logf("failed checks: %v", failed)
			}
		})
	}
}

// TestKilledRunIsRejected kills gatehouse (SIGKILL) in the middle of a
// capture: the decision log has no stop event, so the capture is not
// usable and the verifier says so by the lifecycle check.
func TestKilledRunIsRejected(t *testing.T) {
	t.Parallel()
	f := newFiles(t)
	h := start(t, wrapRun{flags: f.flags(true), server: f.server()})
	h.play(verifySession()[:3])
	if err := syscall.Kill(h.Cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	h.wait()
	// The fake server gets SIGKILL when gatehouse dies (Pdeathsig).
	deadline := time.Now().Add(ioWait)
	for pid := harness.ReadPID(f.marker); pid > 0 && harness.Alive(pid) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := len(eventsOf(readEvents(t, f.log), typeStop)); n != 0 {
		t.Fatalf("a killed run has %d stop events", n)
	}
	code, v := verifyCapture(t, f.receipts, f.log)
	if code != 1 || !slices.Contains(v.failed(), "lifecycle") {
		t.Errorf("verify exit %d, failed %v; want a rejection naming lifecycle", code, v.failed())
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// member returns the raw value of a top-level member of a JSON line.
func member(t *testing.T, line, key string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatal(err)
	}
	return m[key]
}

// setMember returns line (a JSON object plus LF) with member key set to the
// raw JSON value raw. Members come out sorted by name, which the verifier
// must not care about.
func setMember(t *testing.T, line, key, raw string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatal(err)
	}
	m[key] = json.RawMessage(raw)
	return marshalLine(t, m)
}

func dropMember(t *testing.T, line, key string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatal(err)
	}
	delete(m, key)
	return marshalLine(t, m)
}

func marshalLine(t *testing.T, v any) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// flipHex changes the first hex digit of a digest member.
func flipHex(t *testing.T, line, key string) string {
	t.Helper()
	d := harness.Str(member(t, line, key))
	c := byte('0')
	if d[0] == '0' {
		c = '1'
	}
	return setMember(t, line, key, strconv.Quote(string(c)+d[1:]))
}

// rewriteRequest replaces old by new in a receipt's request_line and
// recomputes request_bytes and request_sha256 to match: a jointly rewritten
// request that only the recomputations can notice.
func rewriteRequest(t *testing.T, line, old, new string) string {
	t.Helper()
	req := strings.Replace(harness.Str(member(t, line, "request_line")), old, new, 1)
	line = setMember(t, line, "request_line", marshalLine(t, req)[:len(marshalLine(t, req))-1])
	line = setMember(t, line, "request_bytes", strconv.Itoa(len(req)))
	return setMember(t, line, "request_sha256", strconv.Quote(sha256hex([]byte(req))))
}
