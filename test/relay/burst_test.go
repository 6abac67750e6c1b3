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

// burstCalls are n tools/call requests of the echo tool with ids "b1".."bn",
// sent in one write: the gateway reads them as one burst, and their
// decision events leave in one write(2) to the decision log.
func burstCalls(n int) (frames string, ids []string) {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		id := `"b` + strconv.Itoa(i) + `"`
		ids = append(ids, id)
		b.WriteString(toolCall(id, "echo", `{"i":`+strconv.Itoa(i)+`}`))
	}
	return b.String(), ids
}

// runBurst runs the gateway (ledger off, so the decision log is the only
// evidence) with the fail-closed policy, sends a burst of n calls and
// returns each id's response, the decision log's bytes and what the server
// received.
func runBurst(t *testing.T, n int, log string, wrapper []string) (map[string]msg, string, string) {
	t.Helper()
	record := filepath.Join(t.TempDir(), "record")
	h := startGH(t, run{
		wrapper: wrapper,
		flags:   []string{"--no-ledger", "--policy", harness.Testdata("fail-closed.yaml"), "--decision-log", log, "--event-source", eventSource},
		server:  []string{"--record", record},
	})
	h.handshake("2025-06-18")
	frames, ids := burstCalls(n)
	h.Send(frames)
	got := map[string]msg{}
	for len(got) < n {
		m := decode(h.read(10 * time.Second))
		got[string(m.ID)] = m
	}
	for _, id := range ids {
		if _, ok := got[id]; !ok {
			t.Fatalf("no response for %s: %v", id, got)
		}
	}
	h.CloseStdin()
	h.Wait(10 * time.Second)
	return got, readFile(t, log), readFile(t, record)
}

// TestDecisionLogBurstPartialWrite: the decision events of a burst of calls
// leave in one write, and when the log fills up part-way through that
// write, exactly the calls whose events were written whole go on; every
// other allowed call is refused with -32081, as a failed single write
// refuses its call (fail closed).
func TestDecisionLogBurstPartialWrite(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("prlimit (util-linux) is not installed")
	}
	const n = 8
	// A first run without a limit measures the events: what precedes the
	// first decision (session start) and the largest decision event.
	dir := t.TempDir()
	free := filepath.Join(dir, "free.jsonl")
	got, logText, record := runBurst(t, n, free, nil)
	for id, m := range got {
		if m.Result == nil {
			t.Fatalf("without a limit, %s was refused: %+v", id, m)
		}
	}
	if strings.Count(record, `"name":"echo"`) != n {
		t.Fatalf("without a limit the server got %d of %d calls", strings.Count(record, `"name":"echo"`), n)
	}
	head, event := 0, 0
	for _, l := range strings.SplitAfter(logText, "\n") {
		switch {
		case strings.Contains(l, `"type":"gatehouse.tool.decision.v1"`):
			event = max(event, len(l))
		case event == 0:
			head += len(l)
		}
	}
	if event == 0 {
		t.Fatalf("no decision event in %s", logText)
	}

	// The limit leaves room for two and a half events after the session
	// start: the burst's write stops inside the third.
	limit := head + 2*event + event/2
	capped := filepath.Join(dir, "capped.jsonl")
	got, logText, record = runBurst(t, n, capped, []string{"prlimit", "--fsize=" + strconv.Itoa(limit), "--"})
	if len(logText) != limit {
		t.Fatalf("the capped log has %d bytes, want the limit %d", len(logText), limit)
	}
	written := map[string]bool{}
	for _, l := range strings.SplitAfter(logText, "\n") {
		if !strings.HasSuffix(l, "\n") || !strings.Contains(l, `"type":"gatehouse.tool.decision.v1"`) {
			continue // the session start, or the event the write was cut in
		}
		var ev struct {
			Data struct {
				RPCID json.RawMessage `json:"rpc_id"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("event %q: %v", l, err)
		}
		written[string(ev.Data.RPCID)] = true
	}
	if len(written) != 2 {
		t.Fatalf("%d whole events were written, want 2 (log: %q)", len(written), logText)
	}
	_, ids := burstCalls(n)
	for _, id := range ids {
		m := got[id]
		forwarded := strings.Contains(record, `"id":`+id+`,`)
		if written[id] {
			if m.Result == nil || !forwarded {
				t.Errorf("%s: its event was written, but the call got %+v (forwarded %v)", id, m, forwarded)
			}
			continue
		}
		if m.Error == nil || m.Error.Code != -32081 || forwarded {
			t.Errorf("%s: its event was not written, but the call got %+v (forwarded %v)", id, m, forwarded)
		}
	}
	if _, err := os.Stat(capped); err != nil {
		t.Fatal(err)
	}
}
