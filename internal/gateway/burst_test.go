package gateway

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/decisionlog"
	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
	"github.com/gatehouse-mcp/gatehouse/internal/transport"
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

// TestBurstCancelledRequestNotForwarded: a request that waits in the
// Sequencer behind a call of its burst, and that the client cancels in the
// same burst, is not forwarded (the cancel itself goes at once).
func TestBurstCancelledRequestNotForwarded(t *testing.T) {
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

// TestBurstForwardsWhenTheClientIsGone: when an answer of a burst cannot
// be written to the client, the burst's allowed calls, whose events say
// they were forwarded, still reach the server.
func TestBurstForwardsWhenTheClientIsGone(t *testing.T) {
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

// gatedRig is a session whose server holds its answers to tools/list until
// gate is closed, whose catalog knows only "read", and whose client does
// not read what the gateway writes until the test does.
type gatedRig struct {
	t       *testing.T
	cw      *io.PipeWriter // client -> gateway
	gr      *io.PipeReader // gateway -> client, read by the test
	logPath string
	gate    chan struct{}
	sawList chan struct{}
	mu      sync.Mutex
	got     []string // what the server received: the requests' ids, or notification methods
}

func newGatedRig(t *testing.T) *gatedRig {
	t.Helper()
	cr, cw := io.Pipe()
	gr, gw := io.Pipe()
	sr, sw := io.Pipe()
	or, ow := io.Pipe()
	r := &gatedRig{t: t, cw: cw, gr: gr, logPath: filepath.Join(t.TempDir(), "d.jsonl"), gate: make(chan struct{}), sawList: make(chan struct{}, 4)}
	log, err := decisionlog.Open(r.logPath, "gatehouse://test/x")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	sess := New(Config{Policy: readonlyPolicy(t, ""), Log: log}, transport.NewStream(cr, gw, 0, nil), transport.NewStream(or, sw, 0, nil))
	only, _ := parseToolsPage([]byte(`{"tools":[{"name":"read","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`))
	sess.catalog.replace(only)
	sess.initialized.Store(true) // as after the handshake: fetches may go
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); cw.Close(); gr.Close(); or.Close() })
	go func() { _ = sess.RunClient(ctx); sw.Close() }()
	go func() { _ = sess.RunServer(ctx) }()
	var wmu sync.Mutex
	reply := func(id, result string) {
		wmu.Lock()
		defer wmu.Unlock()
		io.WriteString(ow, `{"jsonrpc":"2.0","id":`+id+`,"result":`+result+"}\n")
	}
	go func() {
		br := bufio.NewReader(sr)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			m, perr := jsonrpc.Parse([]byte(line))
			if perr != nil {
				continue
			}
			r.mu.Lock()
			if m.Kind == jsonrpc.KindRequest {
				r.got = append(r.got, m.ID.String())
			} else {
				r.got = append(r.got, m.Method)
			}
			r.mu.Unlock()
			if m.Kind != jsonrpc.KindRequest {
				continue
			}
			id := m.ID.String()
			if m.Method == "tools/list" {
				r.sawList <- struct{}{}
				go func() { <-r.gate; reply(id, testTools) }()
				continue
			}
			reply(id, `{}`)
		}
	}()
	return r
}

// received returns what the server got so far.
func (r *gatedRig) received() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// holdUnknown sends a call of the unknown tool "write" with id: it waits
// for a catalog fetch that waits for the gate.
func (r *gatedRig) holdUnknown(id string) {
	io.WriteString(r.cw, callFrame(id, "write"))
	<-r.sawList
}

// sendBlockedBurst sends one burst ending in a frame that is not JSON, and
// returns once the loop has reached that frame: its answer blocks, mid-burst,
// until the client reads (openClient).
func (r *gatedRig) sendBlockedBurst(frames, after string) {
	go io.WriteString(r.cw, frames+"not json\n"+after)
	var one [1]byte
	if _, err := io.ReadFull(r.gr, one[:]); err != nil {
		r.t.Fatal(err)
	}
}

// waitEvent waits until the decision log has the event of rpc id.
func (r *gatedRig) waitEvent(id string) {
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(readLog(r.t, r.logPath), `"rpc_id":`+id) {
		if time.Now().After(deadline) {
			r.t.Fatalf("no decision for %s within 5s", id)
		}
		time.Sleep(2 * time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // delivered right after its event
}

// openClient lets the client read again: the burst goes on.
func (r *gatedRig) openClient() { go io.Copy(io.Discard, r.gr) }

// waitReceived waits until the server got want.
func (r *gatedRig) waitReceived(want string) []string {
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := r.received()
		for _, g := range got {
			if g == want {
				return got
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the server did not get %s within 5s: %q", want, got)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestBurstHeldCallKeepsClientOrder: a call held for a catalog fetch (an
// unknown tool) that is decided while an earlier call of its burst still
// waits in the Sequencer for its burst's decision-log write goes to the server after it, as the client sent them
// (it once went straight to the server, ahead of the earlier call).
func TestBurstHeldCallKeepsClientOrder(t *testing.T) {
	r := newGatedRig(t)
	r.holdUnknown(`"u1"`)
	// "a" is known (staged), "b" unknown (held behind the fetch).
	r.sendBlockedBurst(callFrame(`"a"`, "read")+callFrame(`"b"`, "write"), "")
	close(r.gate)
	r.waitEvent(`"b"`) // decided while the loop still holds "a"
	r.openClient()
	r.waitReceived(`"a"`)
	got := r.waitReceived(`"b"`)
	if slices.Index(got, `"b"`) < slices.Index(got, `"a"`) {
		t.Fatalf("the client sent a, then b; the server got %q", got)
	}
}

// TestBurstHeldCallCancelledInItsBurst: a held call that waits in the
// Sequencer when the client cancels it (the cancel goes to the server at
// once) is not forwarded after its own cancel.
func TestBurstHeldCallCancelledInItsBurst(t *testing.T) {
	r := newGatedRig(t)
	r.holdUnknown(`"u1"`)
	r.sendBlockedBurst(callFrame(`"a"`, "read"), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"u1"}}`+"\n")
	close(r.gate)
	r.waitEvent(`"u1"`) // decided and staged behind "a"
	r.openClient()
	r.waitReceived("notifications/cancelled")
	io.WriteString(r.cw, `{"jsonrpc":"2.0","id":"p","method":"ping"}`+"\n")
	got := r.waitReceived(`"p"`)
	if slices.Contains(got, `"u1"`) {
		t.Fatalf("the cancelled call reached the server: %q", got)
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

// TestBurstDoesNotDeadlockOnAFullSequencer: a burst with more staged calls
// than the Sequencer holds, and a frame too big to be copied behind a
// staged call, do not stop the relay loop: a push that would block writes
// the burst's events first (the Sequencer waits for that write, which only
// the loop makes), and every call is answered.
func TestBurstDoesNotDeadlockOnAFullSequencer(t *testing.T) {
	defer func(d int) { sequencerDepth = d }(sequencerDepth)
	sequencerDepth = 4
	h := newHarness(t, Config{Policy: readonlyPolicy(t, ""), Log: openTestLog(t)})
	h.send(`{"jsonrpc":"2.0","id":"L","method":"tools/list"}` + "\n")
	h.recv()
	const n = 20
	var burst strings.Builder
	for i := 0; i < n; i++ {
		burst.WriteString(callFrame(strconv.Itoa(i), "read"))
	}
	// A big one behind the staged calls: not staged (too big), not copied
	// by the Sequencer (its Push waits until it is sent).
	burst.WriteString(`{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"read","arguments":{"path":"` +
		strings.Repeat("x", transport.BigFrame) + `"}}}` + "\n")
	go h.send(burst.String())
	seen := map[string]bool{}
	for len(seen) < n+1 {
		m, err := jsonrpc.Parse([]byte(h.recv()))
		if err != nil || m.Result == nil {
			t.Fatalf("answer %v, %v; want results for every call", m, err)
		}
		seen[m.ID.String()] = true
	}
	var order []string
	for _, l := range h.serverGot() {
		if m, err := jsonrpc.Parse([]byte(l)); err == nil && m.Method == "tools/call" {
			order = append(order, m.ID.String())
		}
	}
	want := []string{}
	for i := 0; i < n; i++ {
		want = append(want, strconv.Itoa(i))
	}
	want = append(want, `"big"`)
	if !slices.Equal(order, want) {
		t.Fatalf("the server got the calls in order %q, want %q", order, want)
	}
}
