package receiptse2e

import (
	"encoding/json"
	"fmt"
	"github.com/gatehouse-mcp/gatehouse/test/harness"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLimits checks each limit of request-receipts.md §4 through the CLI:
// the receipts before the limit stay as written (the prefix), the record
// that hits it and every later one are not written, the fixed diagnostic
// line ends the file, stderr says `gatehouse: request receipts: capture
// incomplete` once, the decision events are all written, the stop event
// says incomplete, and forwarding is unaffected: the server gets every
// allowed call and the client every response. The verifier rejects the
// capture for its diagnostic.
//
// The 1 MiB decision serialization limit is reachable through the CLI: a
// policy rule with a reason over 1 MiB makes the decision event larger than
// that while the request line stays small.
func TestLimits(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	small := func(i int) string { return toolCall(fmt.Sprint(i), "echo", fmt.Sprintf(`{"i":%d}`, i)) }
	smalls := func(n int) []string {
		var out []string
		for i := 1; i <= n; i++ {
			out = append(out, small(i))
		}
		return out
	}
	bigPolicy := func(t *testing.T) string {
		p := filepath.Join(t.TempDir(), "big-reason.yaml")
		write(t, p, "name: receipts-e2e-big-reason\nversion: \"1\"\ndefaults:\n  action: allow\nrules:\n"+
			"  - id: deny_write\n    tools: [\"write\"]\n    action: deny\n    reason: "+strings.Repeat("r", mib+1000)+"\n")
		return p
	}
	tests := []struct {
		name   string
		policy func(t *testing.T) string // nil: testdata/deny-delete.yaml
		calls  []string
		// denied are the indexes of calls the policy denies.
		denied []int
		// records is the number of receipts before the limit; complete
		// means no limit is hit (a control).
		records  int
		complete bool
	}{
		{
			name: "request line of exactly 1 MiB is kept, 1 MiB + 1 is not",
			calls: []string{
				small(1),
				padCall("2", mib, "\r\n"),
				padCall("3", mib+1, "\n"),
				small(4),
			},
			records: 2,
		},
		{name: "48 records is complete", calls: smalls(48), records: 48, complete: true},
		{name: "the 49th record is not written", calls: smalls(50), records: 48},
		{
			name: "the record that would cross 4 MiB is not written",
			// Each record is a little over 1,000,000 bytes: four fit
			// in 4 MiB (with or without room for the diagnostic line),
			// the fifth does not; the small last one would fit but
			// receipts are off by then.
			calls: []string{
				padCall("1", 1_000_000, "\n"), padCall("2", 1_000_000, "\n"), padCall("3", 1_000_000, "\n"),
				padCall("4", 1_000_000, "\n"), padCall("5", 1_000_000, "\n"), small(6),
			},
			records: 4,
		},
		{
			name:    "decision event serialization over 1 MiB",
			policy:  bigPolicy,
			calls:   []string{small(1), toolCall("2", "write", `{}`), small(3)},
			denied:  []int{1},
			records: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFiles(t)
			policy := harness.Testdata("deny-delete.yaml")
			if tt.policy != nil {
				policy = tt.policy(t)
			}
			flags := []string{"--policy", policy, "--decision-log", f.log, "--event-source", eventSource, "--request-receipts-out", f.receipts}
			init := initialize(`"init"`, "2025-06-18")
			// initialized: the gateway fetches the catalog only after it.
			steps := []step{{line: init + initialized, reply: `"init"`}}
			for i, c := range tt.calls {
				steps = append(steps, step{line: c, reply: idText(decodeMsg([]byte(c)), fmt.Sprint(i+1))})
			}
			h := start(t, wrapRun{flags: flags, server: f.server()})
			replies := h.play(steps)
			h.CloseStdin()
			if code := h.wait(); code != 0 {
				t.Fatalf("exit %d, want 0; stderr:\n%s", code, h.Tail())
			}

			// Forwarding is unaffected: every call answered, every
			// allowed call received by the server, byte for byte.
			want := init
			for i, c := range tt.calls {
				m := decodeMsg(replies[i+1])
				isDenied := slices.Contains(tt.denied, i)
				if isDenied != (m.Error != nil) || (!isDenied && m.Result == nil) {
					t.Errorf("call %d: response %.200q (denied: %v)", i+1, replies[i+1], isDenied)
				}
				if !isDenied {
					want += c
				}
			}
			var got strings.Builder
			for _, l := range harness.SplitLines(harness.ReadFile(t, f.record)) {
				if !privateID.MatchString(l) && l != initialized {
					got.WriteString(l)
				}
			}
			if got.String() != want {
				t.Errorf("the server did not receive exactly the allowed calls (%d bytes, want %d)", got.Len(), len(want))
			}

			// The decision emitter ran for every call.
			evs := readEvents(t, f.log)
			if n := len(eventsOf(evs, typeDecision)); n != len(tt.calls) {
				t.Errorf("%d tool decision events, want %d", n, len(tt.calls))
			}

			// The prefix, then the diagnostic.
			data := harness.ReadFile(t, f.receipts)
			recs, diags := readReceipts(t, f.receipts)
			if len(recs) != tt.records {
				t.Errorf("%d receipts, want %d", len(recs), tt.records)
			}
			for i, r := range recs {
				if i < len(tt.calls) && (r.RequestLine != tt.calls[i] || string(r.Sequence) != fmt.Sprint(i)) {
					t.Errorf("receipt %d is not the receipt of call %d", i, i+1)
				}
			}
			stop := sessionCapture(t, evs, typeStop)
			stderrCount := strings.Count(h.Stderr.String(), stderrDiag+"\n")
			if fi, err := os.Stat(f.receipts); err == nil && fi.Mode() != 0o600 {
				t.Errorf("receipts file mode %v, want 0600", fi.Mode())
			}
			if tt.complete {
				if diags != 0 || stderrCount != 0 || stop.State != "complete" {
					t.Errorf("no limit was hit, but: %d diagnostics, %d stderr lines, stop %v", diags, stderrCount, stop)
				}
				if code, v := verifyCapture(t, f.receipts, f.log); code != 0 {
					t.Errorf("verify exit %d (%v), want 0", code, v.failed())
				}
				return
			}
			if diags != 1 || !strings.HasSuffix(string(data), "\n"+diagnosticLine) {
				t.Errorf("%d diagnostic lines; the file must end with exactly %q", diags, diagnosticLine)
			}
			if stderrCount != 1 {
				t.Errorf("stderr has %q %d times, want once:\n%s", stderrDiag, stderrCount, h.Tail())
			}
			if stop.State != "incomplete" || stop.Records == nil || *stop.Records != tt.records {
				t.Errorf("stop capture %v, want incomplete with %d records", stop, tt.records)
			}
			if len(data) > 4<<20+len(diagnosticLine) {
				t.Errorf("receipts file is %d bytes, over 4 MiB", len(data))
			}
			code, v := verifyCapture(t, f.receipts, f.log)
			if code != 1 || !slices.Contains(v.failed(), "no_incomplete_diagnostic") {
				t.Errorf("verify exit %d, failed %v; want a rejection naming no_incomplete_diagnostic", code, v.failed())
			}
		})
	}
}

// idText returns the raw id of m, or def when it has none.
func idText(m msg, def string) string {
	if m.ID == nil {
		return def
	}
	return string(m.ID)
}

// TestSidecarWriteFailure makes a receipt write fail part-way: gatehouse
// runs under RLIMIT_FSIZE, so the receipts file cannot grow past the limit
// (the decision log stays far below it). The records before stay as
// written, receipts are off for the rest of the run, stderr says capture
// incomplete once, every call is still answered, the stop event says
// incomplete, and the verifier rejects the damaged capture. The fake
// server does not record its input here: its record file would hit the
// same limit, and neither could the audit ledger's database, so the ledger
// is off.
func TestSidecarWriteFailure(t *testing.T) {
	t.Parallel()
	const limit = 40 << 10
	f := newFiles(t)
	h := start(t, wrapRun{flags: append(f.flags(true), "--no-ledger"), server: []string{"--marker", f.marker},
		wrapper: []string{"prlimit", fmt.Sprintf("--fsize=%d", limit), "--"}})
	steps := []step{{line: initialize(`"init"`, "2025-06-18") + initialized, reply: `"init"`}}
	var calls []string
	for i := 1; i <= 8; i++ {
		c := padCall(fmt.Sprint(i), 9000, "\n")
		calls = append(calls, c)
		steps = append(steps, step{line: c, reply: fmt.Sprint(i)})
	}
	replies := h.play(steps)
	h.CloseStdin()
	if code := h.wait(); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, h.Tail())
	}
	for i, r := range replies[1:] {
		if m := decodeMsg(r); m.Result == nil {
			t.Errorf("call %d: response %.200q, want a result", i+1, r)
		}
	}
	data := harness.ReadFile(t, f.receipts)
	lines := harness.SplitLines(data)
	// Each record is a little over 9,000 bytes: four fit under the
	// limit, the fifth is cut off by it.
	const whole = 4
	if len(lines) < whole {
		t.Fatalf("%d receipt lines, want at least %d", len(lines), whole)
	}
	for i, l := range lines[:whole] {
		var r receipt
		if err := json.Unmarshal([]byte(l), &r); err != nil || r.RequestLine != calls[i] || string(r.Sequence) != fmt.Sprint(i) {
			t.Errorf("line %d is not the intact receipt of call %d", i+1, i+1)
		}
	}
	if len(data) > limit {
		t.Errorf("receipts file is %d bytes, over the %d byte limit", len(data), limit)
	}
	for _, l := range lines[whole:] {
		if l != diagnosticLine && l != "\n"+diagnosticLine && strings.HasSuffix(l, "\n") {
			t.Errorf("after the prefix, a complete line that is not the diagnostic: %.200q", l)
		}
	}
	if n := strings.Count(h.Stderr.String(), stderrDiag+"\n"); n != 1 {
		t.Errorf("stderr has %q %d times, want once:\n%s", stderrDiag, n, h.Tail())
	}
	evs := readEvents(t, f.log)
	if n := len(eventsOf(evs, typeDecision)); n != len(calls) {
		t.Errorf("%d decision events, want %d", n, len(calls))
	}
	if stop := sessionCapture(t, evs, typeStop); stop.State != "incomplete" || stop.Records == nil || *stop.Records != whole {
		t.Errorf("stop capture %v, want incomplete with %d records", stop, whole)
	}
	if code, v := verifyCapture(t, f.receipts, f.log); code != 1 || !slices.Contains(v.failed(), "lines_complete") || !slices.Contains(v.failed(), "lifecycle") {
		t.Errorf("verify exit %d, failed %v; want a rejection naming lines_complete and lifecycle", code, v.failed())
	}
}
