package gateway

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// pipes runs a Session between pipes the test drives on both sides: it
// writes the client's and the server's streams and reads what the gateway
// passes on to each.
type pipes struct {
	client, server        *io.PipeWriter // what the client / the server sends
	toClient, toServer    *bufio.Reader  // what the gateway passes on
	closeClient, closeSrv func()
}

func newPipes(t *testing.T, cfg Config) *pipes {
	t.Helper()
	cr, cw := io.Pipe()
	gr, gw := io.Pipe()
	sr, sw := io.Pipe()
	or, ow := io.Pipe()
	s := New(cfg, sw, gw)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = s.RunClient(ctx, cr); sw.Close() }()
	go func() { _ = s.RunServer(ctx, or); gw.Close() }()
	t.Cleanup(func() { cancel(); cw.Close(); ow.Close(); gr.Close(); sr.Close() })
	return &pipes{client: cw, server: ow, toClient: bufio.NewReader(gr), toServer: bufio.NewReader(sr)}
}

// readLine reads one line from r within 5 s.
func readLine(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	ch := make(chan string, 1)
	go func() { s, _ := r.ReadString('\n'); ch <- s }()
	select {
	case s := <-ch:
		return s
	case <-time.After(5 * time.Second):
		t.Fatal("no line within 5s")
		return ""
	}
}

const bomBytes = "\xEF\xBB\xBF"

// TestBOMAtStreamStart: a UTF-8 byte order mark at the very start of the
// client's or the server's stream is skipped; the first frame is relayed
// without it (the official SDKs cannot read a line that starts with one),
// and the request is answered, not refused with a parse error addressed to
// null. A byte order mark at the start of a later line is refused (-32700)
// and not forwarded.
func TestBOMAtStreamStart(t *testing.T) {
	p := newPipes(t, Config{})
	const init = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}` + "\n"
	go io.WriteString(p.client, bomBytes+init)
	if got := readLine(t, p.toServer); got != init {
		t.Fatalf("server got %q, want the initialize request without the byte order mark %q", got, init)
	}
	const result = `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}` + "\n"
	go io.WriteString(p.server, bomBytes+result)
	if got := readLine(t, p.toClient); got != result {
		t.Fatalf("client got %q, want the initialize result without the byte order mark %q", got, result)
	}

	// Mid-stream, on either side: not a stream's encoding signature but
	// bytes of a frame, which the strict parse refuses.
	const ping = `{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n"
	go io.WriteString(p.client, bomBytes+ping)
	got := readLine(t, p.toClient)
	if !strings.Contains(got, `"code":-32700`) || !strings.Contains(got, `"id":null`) {
		t.Fatalf("client got %q for a frame starting with a byte order mark mid-stream, want a -32700 parse error", got)
	}
	go io.WriteString(p.client, ping)
	if got := readLine(t, p.toServer); got != ping {
		t.Fatalf("server got %q, want only the ping sent without a byte order mark %q", got, ping)
	}
	go io.WriteString(p.server, bomBytes+`{"jsonrpc":"2.0","id":2,"result":{}}`+"\n"+`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`+"\n")
	if got, want := readLine(t, p.toClient), `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`+"\n"; got != want {
		t.Fatalf("client got %q, want the server's response with a byte order mark mid-stream dropped and the next frame %q", got, want)
	}
}
