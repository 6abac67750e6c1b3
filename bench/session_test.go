package bench

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/decisionlog"
	"github.com/gatehouse-mcp/gatehouse/internal/gateway"
	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
	"github.com/gatehouse-mcp/gatehouse/internal/transport"
)

// sessionRig runs a gateway.Session in process between a Client and an
// in-process echo server, all joined by io.Pipe: no processes, no syscalls
// on the relay path (except the decision log's write), so a CPU profile of
// it is the gateway's own hot path.
//
//	Client -> c2g -> RunClient -> g2s -> echoServer -> s2g -> RunServer -> g2c -> Client
type sessionRig struct {
	*Client
	cancel  context.CancelFunc
	closers []io.Closer
	done    chan struct{}
}

func newSessionRig(tb testing.TB, v Variant) *sessionRig {
	tb.Helper()
	return newSessionRigEcho(tb, v, true)
}

// newSessionRigEcho is newSessionRig whose server answers a tools/call
// with its arguments as structuredContent when echoArgs, or with a short
// fixed result otherwise (so that a big request is measured alone).
func newSessionRigEcho(tb testing.TB, v Variant, echoArgs bool) *sessionRig {
	tb.Helper()
	root, err := ModuleRoot()
	if err != nil {
		tb.Fatal(err)
	}
	cfg := gateway.Config{ServerID: "fakeserver", Policy: policy.Default()}
	if v.Policy {
		p, err := policy.Load(filepath.Join(root, PolicyFile))
		if err != nil {
			tb.Fatal(err)
		}
		cfg.Policy = p
		cfg.Principal = policy.Principal{Role: Role}
	}
	if v.Log {
		l, err := decisionlog.Open(filepath.Join(tb.TempDir(), "decisions.jsonl"), "gatehouse://bench/"+v.Name)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { l.Close() })
		cfg.Log = l
	}
	c2gR, c2gW := io.Pipe()
	g2sR, g2sW := io.Pipe()
	s2gR, s2gW := io.Pipe()
	g2cR, g2cW := io.Pipe()
	sess := gateway.New(cfg, transport.NewStream(c2gR, g2cW, v.MaxFrameBytes, nil), transport.NewStream(s2gR, g2sW, v.MaxFrameBytes, nil))
	ctx, cancel := context.WithCancel(context.Background())
	r := &sessionRig{
		Client:  NewClient(c2gW, g2cR),
		cancel:  cancel,
		closers: []io.Closer{c2gW, g2sW, s2gW, g2cW},
		done:    make(chan struct{}, 3),
	}
	go func() { sess.RunClient(ctx); g2sW.Close(); r.done <- struct{}{} }()
	go func() { sess.RunServer(ctx); g2cW.Close(); r.done <- struct{}{} }()
	go func() { echoServer(g2sR, s2gW, echoArgs); s2gW.Close(); r.done <- struct{}{} }()
	if err := r.Handshake(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(r.close)
	return r
}

func (r *sessionRig) close() {
	r.closers[0].Close() // client EOF ends RunClient, then the server, then RunServer
	for range 3 {
		<-r.done
	}
	r.cancel()
}

const toolsList = `{"tools":[{"name":"echo","description":"Returns its arguments, as raw JSON text.","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`

// echoServer answers like test/fakeserver --echo-fast for the requests this
// package sends (the client's and the gateway's private tools/list), without
// allocating per call. Without echoArgs a tools/call gets a short fixed
// result instead of its arguments back.
func echoServer(r io.Reader, w io.Writer, echoArgs bool) {
	br := bufio.NewReaderSize(r, 64<<10)
	var out, big []byte
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			big = append(big[:0], line...)
			for err == bufio.ErrBufferFull {
				line, err = br.ReadSlice('\n')
				big = append(big, line...)
			}
			line = big
		}
		if err != nil {
			return
		}
		id := rawMember(line, `"id":`)
		if id == nil {
			continue // a notification
		}
		out = append(out[:0], `{"jsonrpc":"2.0","id":`...)
		out = append(out, id...)
		switch {
		case bytes.Contains(line, []byte(`"method":"tools/call"`)):
			out = append(out, `,"result":{"content":[{"type":"text","text":"ok"}],"structuredContent":`...)
			if !echoArgs {
				out = append(out, "{}"...)
			} else if args := rawMember(line, `"arguments":`); args != nil {
				out = append(out, args...)
			} else {
				out = append(out, "{}"...)
			}
			out = append(out, '}')
		case bytes.Contains(line, []byte(`"method":"tools/list"`)):
			out = append(out, `,"result":`+toolsList...)
		case bytes.Contains(line, []byte(`"method":"initialize"`)):
			out = append(out, `,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"echo","version":"1"}}`...)
		default:
			out = append(out, `,"result":{}`...)
		}
		out = append(out, "}\n"...)
		if _, err := w.Write(out); err != nil {
			return
		}
	}
}

// rawMember returns the raw value after key (`"name":`) in a compact line:
// a string, or the text up to the next ',' or '}' otherwise, or a balanced
// object. It is only for the frames this package builds.
func rawMember(line []byte, key string) []byte {
	i := bytes.Index(line, []byte(key))
	if i < 0 {
		return nil
	}
	v := line[i+len(key):]
	switch {
	case len(v) == 0:
		return nil
	case v[0] == '"':
		for j := 1; j < len(v); j++ {
			switch v[j] {
			case '\\':
				j++
			case '"':
				return v[:j+1]
			}
		}
		return nil
	case v[0] == '{':
		depth, inStr := 0, false
		for j := 0; j < len(v); j++ {
			c := v[j]
			switch {
			case inStr && c == '\\':
				j++
			case c == '"':
				inStr = !inStr
			case inStr:
			case c == '{':
				depth++
			case c == '}':
				depth--
				if depth == 0 {
					return v[:j+1]
				}
			}
		}
		return nil
	default:
		j := bytes.IndexAny(v, ",}")
		if j < 0 {
			return nil
		}
		return v[:j]
	}
}

// selfCPU is this process's user plus system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the process CPU time per op since c0: unlike ns/op it
// does not count time spent waiting for a CPU on a busy machine.
func reportCPU(b *testing.B, c0 time.Duration) {
	b.ReportMetric(float64(selfCPU()-c0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkSession is one tools/call round trip with a 1 KiB arguments
// object through an in-process gateway.Session, one call in flight, for each
// feature combination. ns/op and allocs/op are the gateway's (the rig's
// client and echo server allocate nothing per call) plus io.Pipe hand-offs.
func BenchmarkSession(b *testing.B) {
	for _, v := range Features {
		if !v.Gateway || !v.NoLedger { // no ledger in process
			continue
		}
		b.Run(v.Name, func(b *testing.B) {
			r := newSessionRig(b, v)
			for range 100 {
				if _, err := r.Call(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.SetBytes(ArgBytes)
			b.ResetTimer()
			c0 := selfCPU()
			for range b.N {
				if _, err := r.Call(); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, c0)
		})
	}
}

// BenchmarkSessionInFlight64 is BenchmarkSession with 64 calls in flight.
func BenchmarkSessionInFlight64(b *testing.B) {
	for _, v := range []Variant{GatewayNoLedger, GatewayBare} {
		b.Run(v.Name, func(b *testing.B) {
			r := newSessionRig(b, v)
			if _, err := r.Pipelined(1000, 64); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetBytes(ArgBytes)
			b.ResetTimer()
			c0 := selfCPU()
			d, err := r.Pipelined(b.N, 64)
			if err != nil {
				b.Fatal(err)
			}
			reportCPU(b, c0)
			b.ReportMetric(float64(b.N)/d.Seconds(), "calls/s")
		})
	}
}

// BenchmarkSessionHugeFrame relays one tools/call with a 16 MiB arguments
// object (and its 16 MiB echo) through an in-process session.
func BenchmarkSessionHugeFrame(b *testing.B) {
	v := GatewayNoLedger
	v.MaxFrameBytes = 40 << 20
	r := newSessionRig(b, v)
	r.SetArgs(Args(16 << 20))
	b.ReportAllocs()
	b.SetBytes(16 << 20)
	b.ResetTimer()
	c0 := selfCPU()
	for range b.N {
		if _, _, err := r.CallLen(); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, c0)
}

func TestSessionRig(t *testing.T) {
	r := newSessionRig(t, GatewayNoLedger)
	for range 10 {
		if _, err := r.Call(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Pipelined(200, 64); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkRequestPath1MiB is one tools/call whose arguments object is 1
// MiB through the whole request path of an in-process session (strict
// parse, catalog, policy, decision event, forwarding; the server answers
// with a short result), beside one strict parse of the same frame
// (jsonrpc.Parse): the pipeline issue's target is at most 3x. The
// "x-parse" metric of the session rows is their time per call over the
// parse's, measured in the same benchmark.
func BenchmarkRequestPath1MiB(b *testing.B) {
	args := Args(1 << 20)
	c := &Client{args: args}
	frame := append([]byte(nil), c.request(1)...)
	parse := func(b *testing.B) {
		b.SetBytes(int64(len(frame)))
		b.ReportAllocs()
		for range b.N {
			if _, err := jsonrpc.Parse(frame); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("parse", parse)
	var parseNs float64
	for _, v := range []Variant{GatewayNoLedger, GatewayBare} {
		v.MaxFrameBytes = 4 << 20
		b.Run(v.Name, func(b *testing.B) {
			if parseNs == 0 {
				// The parse's time, measured here (testing.Benchmark
				// cannot run inside a benchmark): the best of 5 runs of
				// 20 parses.
				for range 5 {
					t0 := time.Now()
					for range 20 {
						if _, err := jsonrpc.Parse(frame); err != nil {
							b.Fatal(err)
						}
					}
					if ns := float64(time.Since(t0)) / 20; parseNs == 0 || ns < parseNs {
						parseNs = ns
					}
				}
			}
			r := newSessionRigEcho(b, v, false)
			r.SetArgs(args)
			for range 3 {
				if _, err := r.Call(); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			b.ResetTimer()
			c0 := selfCPU()
			t0 := time.Now()
			for range b.N {
				if _, err := r.Call(); err != nil {
					b.Fatal(err)
				}
			}
			el := time.Since(t0)
			reportCPU(b, c0)
			b.ReportMetric(float64(el)/float64(b.N)/parseNs, "x-parse")
		})
	}
}

// chanConn is a transport.Conn over channels that copies nothing: Read
// parses the next frame given to in (transport.NewFrame), Write hands the
// length of what it was given to out. It isolates the session's own cost
// from any pipe's.
type chanConn struct {
	in  chan []byte
	out chan int
}

func newChanConn() *chanConn { return &chanConn{in: make(chan []byte, 1), out: make(chan int, 16)} }

func (c *chanConn) Read(ctx context.Context) (*transport.Frame, error) {
	select {
	case b, ok := <-c.in:
		if !ok {
			return nil, io.EOF
		}
		return transport.NewFrame(b), nil
	case <-ctx.Done():
		return nil, io.EOF
	}
}

func (c *chanConn) Write(_ context.Context, raw []byte) error {
	c.out <- len(raw)
	return nil
}

func (c *chanConn) Close() error { return nil }

// BenchmarkRequestPathNoPipe1MiB is BenchmarkRequestPath1MiB with Conns
// that copy nothing: the time from handing the session a 1 MiB tools/call
// (parsed as the Conn reads it) to its forwarding, plus a short response
// back, over the time of one strict parse of the frame ("x-parse"; target
// <= 3). Without pipes this is the session's request path alone.
func BenchmarkRequestPathNoPipe1MiB(b *testing.B) {
	root, err := ModuleRoot()
	if err != nil {
		b.Fatal(err)
	}
	args := Args(1 << 20)
	req := append([]byte(nil), (&Client{args: args}).request(1)...)
	parseNs := 0.0
	for range 5 {
		t0 := time.Now()
		for range 20 {
			if _, err := jsonrpc.Parse(req); err != nil {
				b.Fatal(err)
			}
		}
		if ns := float64(time.Since(t0)) / 20; parseNs == 0 || ns < parseNs {
			parseNs = ns
		}
	}
	b.ReportMetric(parseNs, "parse-ns")
	for _, withPolicy := range []bool{true, false} {
		name := "default-policy"
		cfg := gateway.Config{ServerID: "fakeserver", Policy: policy.Default()}
		if withPolicy {
			name = "readonly-policy+log"
			p, err := policy.Load(filepath.Join(root, PolicyFile))
			if err != nil {
				b.Fatal(err)
			}
			cfg.Policy = p
			l, err := decisionlog.Open(filepath.Join(b.TempDir(), "decisions.jsonl"), "gatehouse://bench/nopipe")
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { l.Close() })
			cfg.Log = l
		}
		b.Run(name, func(b *testing.B) {
			client, server := newChanConn(), newChanConn()
			sess := gateway.New(cfg, client, server)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{}, 2)
			go func() { sess.RunClient(ctx); done <- struct{}{} }()
			go func() { sess.RunServer(ctx); done <- struct{}{} }()
			defer func() { cancel(); close(client.in); close(server.in); <-done; <-done }()
			roundTrip := func(line string, answer string) {
				client.in <- []byte(line)
				if answer != "" {
					<-server.out
					server.in <- []byte(answer)
				}
				<-client.out
			}
			roundTrip(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`+"\n",
				`{"jsonrpc":"2.0","id":"init","result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"echo","version":"1"}}}`+"\n")
			client.in <- []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
			<-server.out
			roundTrip(`{"jsonrpc":"2.0","id":"list","method":"tools/list"}`+"\n", `{"jsonrpc":"2.0","id":"list","result":`+toolsList+"}\n")
			resp := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}` + "\n")
			b.SetBytes(int64(len(req)))
			b.ReportAllocs()
			b.ResetTimer()
			c0 := selfCPU()
			t0 := time.Now()
			for range b.N {
				client.in <- req
				if n := <-server.out; n != len(req) {
					b.Fatalf("forwarded %d bytes, want %d", n, len(req))
				}
				server.in <- resp
				<-client.out
			}
			el := time.Since(t0)
			reportCPU(b, c0)
			b.ReportMetric(float64(el)/float64(b.N)/parseNs, "x-parse")
		})
	}
}
