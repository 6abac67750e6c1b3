package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/decisionlog"
	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/transport"
)

// rig runs a Session between an in-memory client and a server the test
// scripts by hand: the test reads what the gateway sends the server and
// writes the server's frames itself.
type rig struct {
	t          *testing.T
	toGW       *io.PipeWriter // client -> gateway
	fromGW     *bufio.Reader  // gateway -> client
	serverIn   *bufio.Reader  // gateway -> server
	serverOut  *io.PipeWriter // server -> gateway
	sess       *Session
	clientDone chan error
	serverDone chan error
	lines      chan string // client lines, read by one goroutine
	srvLines   chan string // server lines, read by one goroutine
}

func newRig(t *testing.T, cfg Config) *rig {
	t.Helper()
	cr, cw := io.Pipe()
	gr, gw := io.Pipe()
	sr, sw := io.Pipe()
	or, ow := io.Pipe()
	r := &rig{t: t, toGW: cw, fromGW: bufio.NewReader(gr), serverIn: bufio.NewReader(sr), serverOut: ow,
		clientDone: make(chan error, 1), serverDone: make(chan error, 1),
		lines: make(chan string, 64), srvLines: make(chan string, 64)}
	r.sess = New(cfg, transport.NewStream(cr, gw, 0, nil), transport.NewStream(or, sw, 0, nil))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { r.clientDone <- r.sess.RunClient(ctx); sw.Close() }()
	go func() { r.serverDone <- r.sess.RunServer(ctx) }()
	go func() {
		for {
			l, err := r.fromGW.ReadString('\n')
			if err != nil {
				close(r.lines)
				return
			}
			r.lines <- l
		}
	}()
	go func() {
		for {
			l, err := r.serverIn.ReadString('\n')
			if err != nil {
				close(r.srvLines)
				return
			}
			r.srvLines <- l
		}
	}()
	t.Cleanup(func() { cancel(); cw.Close(); gr.Close(); or.Close(); sr.Close() })
	return r
}

// send writes a line from the client.
func (r *rig) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.toGW, line+"\n"); err != nil {
		r.t.Fatalf("client write: %v", err)
	}
}

// serve writes a line from the server.
func (r *rig) serve(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.serverOut, line+"\n"); err != nil {
		r.t.Fatalf("server write: %v", err)
	}
}

// recv returns the next line the client gets, failing after 5 s.
func (r *rig) recv() string {
	r.t.Helper()
	select {
	case l, ok := <-r.lines:
		if !ok {
			r.t.Fatal("the client's stream ended")
		}
		return l
	case <-time.After(5 * time.Second):
		r.t.Fatal("no frame to the client within 5s")
	}
	return ""
}

// noRecv fails when the client gets a line within d.
func (r *rig) noRecv(d time.Duration) {
	r.t.Helper()
	select {
	case l, ok := <-r.lines:
		if ok {
			r.t.Fatalf("unexpected frame to the client: %s", l)
		}
	case <-time.After(d):
	}
}

// got returns the next line the server gets, failing after 5 s.
func (r *rig) got() string {
	r.t.Helper()
	select {
	case l, ok := <-r.srvLines:
		if !ok {
			r.t.Fatal("the server's stream ended")
		}
		return l
	case <-time.After(5 * time.Second):
		r.t.Fatal("no frame to the server within 5s")
	}
	return ""
}

// noGot fails when the server gets a line within d.
func (r *rig) noGot(d time.Duration) {
	r.t.Helper()
	select {
	case l, ok := <-r.srvLines:
		if ok {
			r.t.Fatalf("unexpected frame to the server: %s", l)
		}
	case <-time.After(d):
	}
}

// rpcError is the error member of a JSON-RPC error response.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// errorOf decodes an error response, failing when line is not one for id.
func errorOf(t *testing.T, line, id string) rpcError {
	t.Helper()
	var resp struct {
		ID    json.RawMessage `json:"id"`
		Error *rpcError       `json:"error"`
	}
	if err := json.Unmarshal([]byte(line), &resp); err != nil || resp.Error == nil || string(resp.ID) != id {
		t.Fatalf("got %s, want an error response for id %s", line, id)
	}
	return *resp.Error
}

// openLog opens a decision log in a temporary directory.
func openLog(t *testing.T) (*decisionlog.Log, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "d.jsonl")
	l, err := decisionlog.Open(path, "gatehouse://test/faults")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, path
}

// logEvents returns the decision log's events of the given type.
func logEvents(t *testing.T, path, typ string) []json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []json.RawMessage
	for _, l := range strings.Split(string(b), "\n") {
		if l == "" {
			continue
		}
		var ev struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("decision log line %q: %v", l, err)
		}
		if ev.Type == typ {
			out = append(out, ev.Data)
		}
	}
	return out
}

// TestRefusedServerResponseAnswersThePendingRequest: a server frame that
// fails the strict parse but whose id can be read and names a pending
// client request answers that request with -32603 (size and reason only),
// removes the pending entry, and is still dropped and recorded.
func TestRefusedServerResponseAnswersThePendingRequest(t *testing.T) {
	for _, tc := range []struct {
		name, frame string
		answered    bool
	}{
		{"duplicate member", `{"jsonrpc":"2.0","id":5,"result":{"k":"sk-secret"},"result":{}}`, true},
		{"no result or error", `{"jsonrpc":"2.0","id":5,"secret":"sk-secret"}`, true},
		{"trailing bytes", `{"jsonrpc":"2.0","id":5,"result":{"k":"sk-secret"}} sk-secret`, true},
		{"invalid UTF-8 after the id", "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"k\":\"sk-secret\xff\"}}", true},
		{"wrong jsonrpc version", `{"jsonrpc":"1.0","id":5,"result":{"k":"sk-secret"}}`, true},
		{"a server request is not a response", `{"jsonrpc":"2.0","id":5,"method":7}`, false},
		{"no id", `{"jsonrpc":"2.0","result":{"k":"sk-secret"},"result":{}}`, false},
		{"another id", `{"jsonrpc":"2.0","id":6,"result":{},"result":{}}`, false},
		{"the id as a string", `{"jsonrpc":"2.0","id":"5","result":{},"result":{}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log, path := openLog(t)
			r := newRig(t, Config{Policy: readonlyPolicy(t, ""), Log: log})
			r.send(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)
			r.got()
			r.serve(tc.frame)
			if !tc.answered {
				r.noRecv(200 * time.Millisecond)
				// Still pending: the server's real answer goes through.
				r.serve(`{"jsonrpc":"2.0","id":5,"result":{}}`)
				if got := r.recv(); got != `{"jsonrpc":"2.0","id":5,"result":{}}`+"\n" {
					t.Fatalf("client got %s, want the response", got)
				}
			} else {
				got := r.recv()
				e := errorOf(t, got, "5")
				if e.Code != -32603 || !strings.Contains(e.Message, "refused") || !strings.Contains(e.Message, "bytes") {
					t.Fatalf("error = %+v, want -32603 saying the response was refused and its size", e)
				}
				if strings.Contains(got, "sk-secret") {
					t.Fatalf("the answer shows the frame's content: %s", got)
				}
				// The entry is gone: a second answer is dropped.
				r.serve(`{"jsonrpc":"2.0","id":5,"result":{}}`)
				r.send(`{"jsonrpc":"2.0","id":6,"method":"ping"}`)
				r.got()
				r.serve(`{"jsonrpc":"2.0","id":6,"result":{}}`)
				if got := r.recv(); !strings.Contains(got, `"id":6`) {
					t.Fatalf("client got %s, want the response to 6 (the late answer to 5 dropped)", got)
				}
			}
			rejected := logEvents(t, path, decisionlog.TypeFrameRejected)
			if len(rejected) == 0 || !strings.Contains(string(rejected[0]), `"direction":"server"`) {
				t.Fatalf("no frame.rejected event for the server frame: %s", rejected)
			}
			for _, ev := range rejected {
				if strings.Contains(string(ev), "sk-secret") {
					t.Fatalf("the record shows the frame's content: %s", ev)
				}
			}
		})
	}
}

// TestRefusedPrivateResponseEndsTheFetch: a refused answer to the gateway's
// own tools/list ends the fetch at once (not at its timeout), and the call
// that waited for it is decided on the catalog as it was.
func TestRefusedPrivateResponseEndsTheFetch(t *testing.T) {
	r := newRig(t, Config{Policy: readonlyPolicy(t, ""), FetchTimeout: time.Minute})
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r.got()
	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":{}}}`)
	req := r.got()
	if !strings.Contains(req, `"id":"gatehouse-`) || !strings.Contains(req, "tools/list") {
		t.Fatalf("server got %s, want the private tools/list", req)
	}
	id := req[strings.Index(req, `"id":`)+5:]
	id = id[:strings.IndexByte(id, ',')]
	start := time.Now()
	r.serve(`{"jsonrpc":"2.0","id":` + id + `,"result":` + testTools + `,"result":{}}`)
	e := errorOf(t, r.recv(), "1")
	if e.Code != CodeDenied {
		t.Fatalf("error = %+v, want the unknown-tool denial", e)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("the fetch ended after %v, not at once", d)
	}
}

// TestNullIDErrorResponseIsRelayed: an error response with "id": null
// (JSON-RPC 2.0 §5: the server could not read the request's id) answers no
// pending request the gateway can name; it reaches the client unchanged and
// is recorded. A result with id null is still dropped.
func TestNullIDErrorResponseIsRelayed(t *testing.T) {
	log, path := openLog(t)
	r := newRig(t, Config{Policy: readonlyPolicy(t, ""), Log: log})
	r.send(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	r.got()
	const nullErr = `{"jsonrpc":"2.0", "id":null,"error":{"code":-32700,"message":"Parse error"}}`
	r.serve(nullErr)
	if got := r.recv(); got != nullErr+"\n" {
		t.Fatalf("client got %q, want the error response unchanged", got)
	}
	r.serve(`{"jsonrpc":"2.0","id":null,"result":{}}`)
	r.noRecv(200 * time.Millisecond)
	// The request it may have answered is still pending.
	r.serve(`{"jsonrpc":"2.0","id":5,"result":{}}`)
	if got := r.recv(); !strings.Contains(got, `"id":5`) {
		t.Fatalf("client got %s, want the response to 5", got)
	}
	// In a 2025-03-26 batch the member is relayed too.
	r.sess.mu.Lock()
	r.sess.revision = "2025-03-26"
	r.sess.mu.Unlock()
	batch := `[` + nullErr + `]`
	r.serve(batch)
	if got := r.recv(); got != batch+"\n" {
		t.Fatalf("client got %q, want the batch unchanged", got)
	}
	var relayed, dropped int
	for _, ev := range logEvents(t, path, decisionlog.TypeFrameRejected) {
		var d struct {
			Relayed bool            `json:"relayed"`
			RPCID   json.RawMessage `json:"rpc_id"`
		}
		if err := json.Unmarshal(ev, &d); err != nil {
			t.Fatal(err)
		}
		if d.Relayed {
			relayed++
			if string(d.RPCID) != "null" || strings.Contains(string(ev), "Parse error") {
				t.Fatalf("record = %s, want rpc_id null and no content", ev)
			}
		} else {
			dropped++
		}
	}
	if relayed != 2 || dropped != 1 {
		t.Fatalf("%d relayed and %d dropped records, want 2 and 1", relayed, dropped)
	}
}

// TestInitializeIsNeverBatchedNorCancelled: under 2025-03-26 an initialize
// request inside a batch is refused with -32600 for that member, the others
// going on as usual (MCP 2025-03-26 lifecycle: it MUST NOT be part of a
// batch); a notifications/cancelled naming the pending initialize request
// is not forwarded and is recorded, and the request stays pending
// (cancellation: the client MUST NOT cancel initialize).
func TestInitializeIsNeverBatchedNorCancelled(t *testing.T) {
	log, path := openLog(t)
	r := newRig(t, Config{Policy: readonlyPolicy(t, ""), Log: log})
	r.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	r.got()
	r.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0,"reason":"user"}}`)
	// A cancellation of another request id still goes through, and
	// shows the one before it was not merely delayed.
	r.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"0"}}`)
	if got := r.got(); !strings.Contains(got, `"requestId":"0"`) {
		t.Fatalf("server got %s, want only the cancellation of the string id \"0\"", got)
	}
	r.serve(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-03-26","capabilities":{},"serverInfo":{"name":"s","version":"0"}}}`)
	if got := r.recv(); !strings.Contains(got, `"id":0,"result"`) {
		t.Fatalf("client got %s, want the initialize result (still pending)", got)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r.got()
	r.send(`[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"0"}}},{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
	if e := errorOf(t, r.recv(), "1"); e.Code != -32600 || !strings.Contains(e.Message, "batch") {
		t.Fatalf("batched initialize answered %+v, want -32600", e)
	}
	if got := r.got(); got != `[{"jsonrpc":"2.0","id":2,"method":"ping"}]`+"\n" {
		t.Fatalf("server got %s, want the batch without initialize", got)
	}
	r.noGot(100 * time.Millisecond)
	var reasons []string
	for _, ev := range logEvents(t, path, decisionlog.TypeFrameRejected) {
		reasons = append(reasons, string(ev))
	}
	all := strings.Join(reasons, "\n")
	if !strings.Contains(all, "cancel") || !strings.Contains(all, "batch") {
		t.Fatalf("records = %s, want the cancellation and the batched initialize", all)
	}
}

// privateID returns the id token of a private tools/list line.
func privateID(t *testing.T, line string) string {
	t.Helper()
	i := strings.Index(line, `"id":"gatehouse-`)
	if i < 0 || !strings.Contains(line, `"tools/list"`) {
		t.Fatalf("server got %s, want a private tools/list", line)
	}
	id := line[i+5:]
	return id[:strings.IndexByte(id[1:], '"')+2]
}

// TestFetchFollowsOnlyNewCursors: the private tools/list fetch ends (the
// call then decided on the catalog as it was: unknown) when the server
// repeats a cursor or sends an empty one, and after at most maxFetchPages
// pages of new cursors.
func TestFetchFollowsOnlyNewCursors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cursors []string // nextCursor of each page, in order
		pages   int      // pages the gateway should ask for
	}{
		{"repeated cursor", []string{`"a"`, `"b"`, `"a"`, `"c"`}, 3},
		{"the same cursor in another spelling", []string{`"a"`, `"\u0061"`, `"c"`}, 2},
		{"empty cursor", []string{`"a"`, `""`, `"c"`}, 2},
		{"endless new cursors", nil, maxFetchPages},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, Config{Policy: readonlyPolicy(t, ""), FetchTimeout: time.Minute})
			r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			r.got()
			r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":{}}}`)
			for page := 0; page < tc.pages; page++ {
				id := privateID(t, r.got())
				next := `"p` + strconv.Itoa(page) + `"`
				if tc.cursors != nil {
					next = tc.cursors[page]
				}
				r.serve(`{"jsonrpc":"2.0","id":` + id + `,"result":{"tools":[{"name":"read","inputSchema":{"type":"object"}}],"nextCursor":` + next + `}}`)
			}
			if e := errorOf(t, r.recv(), "1"); e.Code != CodeDenied || !strings.Contains(e.Message, RuleUnknownTool) {
				t.Fatalf("call answered %+v, want the unknown_tool denial (catalog left as it was)", e)
			}
			r.noGot(100 * time.Millisecond)
		})
	}
}

// TestNoFetchBeforeInitialized: under a session-based revision the gateway
// sends no tools/list of its own before the client's
// notifications/initialized; a call to an unknown tool is decided as
// unknown meanwhile. Once initialized is forwarded it fetches, and under
// the stateless revision (no initialized) it fetches at once.
func TestNoFetchBeforeInitialized(t *testing.T) {
	r := newRig(t, Config{Policy: readonlyPolicy(t, "")})
	r.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	r.got()
	r.serve(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"0"}}}`)
	r.recv()
	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":{}}}`)
	if e := errorOf(t, r.recv(), "1"); e.Code != CodeDenied || !strings.Contains(e.Message, RuleUnknownTool) {
		t.Fatalf("call before initialized answered %+v, want the unknown_tool denial", e)
	}
	r.send(`[{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read","arguments":{}}}]`)
	r.recv() // refused: no batches under 2025-06-18
	r.noGot(100 * time.Millisecond)
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if got := r.got(); !strings.Contains(got, "notifications/initialized") {
		t.Fatalf("server got %s, want initialized first", got)
	}
	r.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read","arguments":{}}}`)
	id := privateID(t, r.got())
	r.serve(`{"jsonrpc":"2.0","id":` + id + `,"result":` + testTools + `}`)
	if got := r.got(); !strings.Contains(got, `"id":3`) {
		t.Fatalf("server got %s, want the allowed call", got)
	}

	// Stateless: the request itself states the revision; no handshake.
	s := newRig(t, Config{Policy: readonlyPolicy(t, "")})
	s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	privateID(t, s.got())
}

// TestServerGoneAnswersEveryPendingRequest: when the server has exited,
// every client request still pending gets -32603 under its exact id token,
// a call held for a catalog fetch included, and that call is answered only
// once (its fetch ends; it is neither denied nor forwarded afterwards).
func TestServerGoneAnswersEveryPendingRequest(t *testing.T) {
	log, path := openLog(t)
	r := newRig(t, Config{Policy: readonlyPolicy(t, ""), Log: log, FetchTimeout: time.Minute})
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r.got()
	r.send(`{"jsonrpc":"2.0","id":1.0,"method":"ping"}`)
	r.got()
	r.send(`{"jsonrpc":"2.0","id":"h","method":"tools/call","params":{"name":"read","arguments":{}}}`)
	privateID(t, r.got()) // held: the fetch waits for an answer that never comes
	if err := r.sess.ServerGone("gatehouse: the server exited before answering"); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for range 2 {
		l := r.recv()
		var resp struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal([]byte(l), &resp)
		if e := errorOf(t, l, string(resp.ID)); e.Code != -32603 || !strings.Contains(e.Message, "exited") {
			t.Fatalf("answer %s, want -32603 saying the server exited", l)
		}
		got[string(resp.ID)] = true
	}
	if !got["1.0"] || !got[`"h"`] {
		t.Fatalf("answered %v, want 1.0 and \"h\"", got)
	}
	r.noRecv(300 * time.Millisecond)
	r.noGot(100 * time.Millisecond)
	// Its fetch ended, so the held call was decided (unknown, not
	// forwarded) and recorded, but not answered a second time.
	decided := logEvents(t, path, decisionlog.TypeToolDecision)
	if len(decided) != 1 || !strings.Contains(string(decided[0]), `"forwarded":false`) {
		t.Fatalf("decision events %s, want the held call's, not forwarded", decided)
	}
}

// TestClientGoneIsReported: a failed write to the client closes ClientGone
// and ClientErr says why.
func TestClientGoneIsReported(t *testing.T) {
	h := newHarness(t, Config{Policy: readonlyPolicy(t, "")})
	if h.sess.ClientErr() != nil {
		t.Fatal("ClientErr before any failure")
	}
	h.clientR.Close()
	h.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
	select {
	case <-h.sess.ClientGone():
	case <-time.After(5 * time.Second):
		t.Fatal("ClientGone not closed after a failed write to the client")
	}
	if !errors.Is(h.sess.ClientErr(), ErrFatal) {
		t.Fatalf("ClientErr = %v, want ErrFatal", h.sess.ClientErr())
	}
}

// blockingEvidence is an Evidence whose decision evidence is recorded only
// when release is closed.
type blockingEvidence struct{ release chan struct{} }

func (e *blockingEvidence) Decided(*Call) func() error {
	return func() error { <-e.release; return nil }
}

func (e *blockingEvidence) Responded(*Call, *jsonrpc.Message) func() (bool, string) {
	return func() (bool, string) { return false, "" }
}

// TestServerGoneWhileACallWaitsForEvidence: an allowed call waiting in the
// ordered queue for its evidence when the server exits is answered once
// (-32603, by ServerGone), never forwarded once its evidence is recorded,
// and its decision event (forwarded: true) is corrected by a
// gatehouse.tool.refused.v1 event.
func TestServerGoneWhileACallWaitsForEvidence(t *testing.T) {
	log, path := openLog(t)
	ev := &blockingEvidence{release: make(chan struct{})}
	r := newRig(t, Config{Policy: readonlyPolicy(t, ""), Log: log, Evidence: ev})
	tools, _ := parseToolsPage([]byte(testTools))
	r.sess.catalog.replace(tools)
	r.send(`{"jsonrpc":"2.0","id":"q","method":"tools/call","params":{"name":"read","arguments":{}}}`)
	deadline := time.Now().Add(5 * time.Second)
	for len(logEvents(t, path, decisionlog.TypeToolDecision)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no decision event within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := r.sess.ServerGone("gatehouse: the server exited before answering"); err != nil {
		t.Fatal(err)
	}
	if e := errorOf(t, r.recv(), `"q"`); e.Code != -32603 {
		t.Fatalf("answer %+v, want -32603", e)
	}
	close(ev.release)
	r.noGot(200 * time.Millisecond)
	r.noRecv(100 * time.Millisecond)
	deadline = time.Now().Add(5 * time.Second)
	for {
		refused := logEvents(t, path, decisionlog.TypeToolRefused)
		if len(refused) == 1 && strings.Contains(string(refused[0]), ReasonServerGone) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("refused events %s, want one with %s", refused, ReasonServerGone)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
