package gateway

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/decisionlog"
	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
)

func openTestLog(t *testing.T) *decisionlog.Log {
	t.Helper()
	log, err := decisionlog.Open(filepath.Join(t.TempDir(), "d.jsonl"), "gatehouse://test/x")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	return log
}

func callFrame(id, tool string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}` + "\n"
}

// mustServerGet fails the test unless the server gets a line containing
// each of subs within 5 seconds.
func (h *harness) mustServerGet(subs ...string) {
	h.t.Helper()
	for _, sub := range subs {
		if !h.waitServerGot(sub, 5*time.Second) {
			h.t.Fatalf("the server did not get %q within 5s; it got %q", sub, h.serverGot())
		}
	}
}

// TestOutboxCancelledRequestNotForwarded: a request that waits in the
// outbox behind a call of its burst, and that the client cancels in the
// same burst, is not forwarded (the cancel itself goes at once).
func TestOutboxCancelledRequestNotForwarded(t *testing.T) {
	h := newHarness(t, Config{Policy: readonlyPolicy(t, ""), Log: openTestLog(t)})
	h.send(`{"jsonrpc":"2.0","id":"L","method":"tools/list"}` + "\n")
	h.recv()
	h.send(callFrame("1", "read") +
		`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///x"}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}` + "\n")
	if got := h.recv(); !strings.Contains(got, `"id":1`) {
		t.Fatalf("answer %q, want the result of call 1", got)
	}
	// A later request: the server has everything of the burst before it.
	h.send(`{"jsonrpc":"2.0","id":9,"method":"ping"}` + "\n")
	if got := h.recv(); !strings.Contains(got, `"id":9`) {
		t.Fatalf("answer %q, want the ping's", got)
	}
	h.mustServerGet(`"method":"ping"`, `"method":"notifications/cancelled"`)
	for _, l := range h.serverGot() {
		if strings.Contains(l, "resources/read") {
			t.Fatalf("the cancelled request was forwarded: %q", h.serverGot())
		}
	}
}

// TestOutboxForwardsWhenTheClientIsGone: when an answer of a burst cannot
// be written to the client, the burst's allowed calls, whose events say
// they were forwarded, still reach the server.
func TestOutboxForwardsWhenTheClientIsGone(t *testing.T) {
	h := newHarness(t, Config{Policy: readonlyPolicy(t, ""), Log: openTestLog(t), Principal: policy.Principal{Role: "readonly_agent"}})
	h.send(`{"jsonrpc":"2.0","id":"L","method":"tools/list"}` + "\n")
	h.recv()
	h.clientR.Close() // every write to the client fails now
	h.send(callFrame(`"w"`, "write") + callFrame(`"r"`, "read"))
	h.mustServerGet(`"id":"r"`)
	for _, l := range h.serverGot() {
		if strings.Contains(l, `"id":"w"`) {
			t.Fatalf("the denied call reached the server: %q", l)
		}
	}
}

// TestOutboxHeldCallKeepsClientOrder: a call held for a catalog fetch (an
// unknown tool) that is decided while an earlier call of its burst still
// waits in the outbox goes to the server after it, as the client sent them
// (it once went straight to the server, ahead of the earlier call).
func TestOutboxHeldCallKeepsClientOrder(t *testing.T) {
	cr, cw := io.Pipe()
	gr, gw := io.Pipe()
	sr, sw := io.Pipe()
	or, ow := io.Pipe()
	dir := t.TempDir()
	logPath := filepath.Join(dir, "d.jsonl")
	log, err := decisionlog.Open(logPath, "gatehouse://test/x")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	sess := New(Config{Policy: readonlyPolicy(t, ""), Log: log}, sw, gw)
	only, _ := parseToolsPage([]byte(`{"tools":[{"name":"read","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`))
	sess.catalog.replace(only)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); cw.Close(); gr.Close(); or.Close() })
	go func() { _ = sess.RunClient(ctx, cr); sw.Close() }()
	go func() { _ = sess.RunServer(ctx, or) }()
	gate := make(chan struct{})
	sawList := make(chan struct{}, 4)
	var mu sync.Mutex
	var got []string
	var wmu sync.Mutex
	reply := func(id, result string) {
		wmu.Lock()
		defer wmu.Unlock()
		io.WriteString(ow, `{"jsonrpc":"2.0","id":`+id+`,"result":`+result+"}\n")
	}
	go func() { // the server: its tools/list answers wait for the gate
		br := bufio.NewReader(sr)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			m, perr := jsonrpc.Parse([]byte(line))
			if perr != nil || m.Kind != jsonrpc.KindRequest {
				continue
			}
			mu.Lock()
			got = append(got, m.ID.String())
			mu.Unlock()
			id := m.ID.String()
			if m.Method == "tools/list" {
				sawList <- struct{}{}
				go func() { <-gate; reply(id, testTools) }()
				continue
			}
			reply(id, `{}`)
		}
	}()
	// An unknown tool starts a catalog refresh that waits for the gate.
	io.WriteString(cw, callFrame(`"u1"`, "write"))
	<-sawList
	// One burst: "a" (known: staged), "b" (unknown: held behind the
	// refresh), and a frame that is not JSON: the loop's answer to it
	// blocks, mid-burst, until the client reads.
	go io.WriteString(cw, callFrame(`"a"`, "read")+callFrame(`"b"`, "write")+"not json\n")
	close(gate)
	// "b" is decided (its event written) while the loop still holds "a".
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(readLog(t, logPath), `"rpc_id":"b"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no decision for b within 5s")
		}
		time.Sleep(2 * time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // b is delivered right after its event
	go io.Copy(io.Discard, gr)        // the client reads: the burst goes on
	for {
		mu.Lock()
		ia, ib := -1, -1
		for i, id := range got {
			switch id {
			case `"a"`:
				ia = i
			case `"b"`:
				ib = i
			}
		}
		order := append([]string(nil), got...)
		mu.Unlock()
		if ia >= 0 && ib >= 0 {
			if ib < ia {
				t.Fatalf("the client sent a, then b; the server got %q", order)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not get both calls within 5s: %q", order)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func readLog(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
