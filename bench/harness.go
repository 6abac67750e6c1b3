// Package bench measures what `gatehouse wrap` costs on top of a direct pipe
// to a stdio MCP server: added latency with one call in flight, throughput
// with many calls in flight, memory over a long run and for one huge frame,
// and how the decision log and the policy change those numbers.
//
// Every measurement runs the same fast echo server (test/fakeserver
// --echo-fast) as a real child process, side by side with the gateway in one
// run, and reports ratios and percentiles; nothing here is a timed pass/fail
// test. The driver is bench/cmd/gatehouse-bench (`make bench`); the package's
// Go benchmarks (`go test -bench . ./bench`) cover the same paths and the
// in-process gateway.Session hot path. See docs/benchmarks.md.
package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// PolicyFile is the example policy the gateway variants with Policy set use,
// relative to the module root; with --role readonly_agent it allows the
// read-only echo tool.
const PolicyFile = "examples/policies/readonly-agent.yaml"

// Role is the --role given with PolicyFile.
const Role = "readonly_agent"

// ArgBytes is the size of the arguments object of a standard call: the
// compact JSON {"data":"..."} is exactly this long.
const ArgBytes = 1024

// Binaries are the programs a run starts.
type Binaries struct {
	// Gatehouse is the gatehouse binary (env GATEHOUSE_BIN, else built).
	Gatehouse string
	// FakeServer is test/fakeserver (env GATEHOUSE_FAKESERVER_BIN, else
	// built).
	FakeServer string
	// Root is the module root (for the policy file).
	Root string
}

var (
	binOnce sync.Once
	binVal  Binaries
	binErr  error
	binDir  string // where FindBinaries built them, if it did
)

// CleanupBinaries removes the binaries FindBinaries built, if any.
func CleanupBinaries() {
	if binDir != "" {
		os.RemoveAll(binDir)
	}
}

// FindBinaries returns the binaries, building the missing ones once per
// process into a temporary directory with `go build`.
func FindBinaries() (Binaries, error) {
	binOnce.Do(func() { binVal, binErr = findBinaries() })
	return binVal, binErr
}

func findBinaries() (Binaries, error) {
	var b Binaries
	root, err := ModuleRoot()
	if err != nil {
		return b, err
	}
	b.Root = root
	b.Gatehouse = os.Getenv("GATEHOUSE_BIN")
	b.FakeServer = os.Getenv("GATEHOUSE_FAKESERVER_BIN")
	if b.Gatehouse != "" && b.FakeServer != "" {
		return b, nil
	}
	dir, err := os.MkdirTemp("", "gatehouse-bench-bin-")
	if err != nil {
		return b, err
	}
	binDir = dir
	build := func(out, pkg string) error {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Dir = root
		if msg, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", pkg, err, msg)
		}
		return nil
	}
	if b.Gatehouse == "" {
		b.Gatehouse = filepath.Join(dir, "gatehouse")
		if err := build(b.Gatehouse, "./cmd/gatehouse"); err != nil {
			return b, err
		}
	}
	if b.FakeServer == "" {
		b.FakeServer = filepath.Join(dir, "fakeserver")
		if err := build(b.FakeServer, "./test/fakeserver"); err != nil {
			return b, err
		}
	}
	return b, nil
}

// ModuleRoot returns $GATEHOUSE_ROOT when set, else finds the directory
// holding go.mod from the working directory upwards.
func ModuleRoot() (string, error) {
	if dir := os.Getenv("GATEHOUSE_ROOT"); dir != "" {
		return dir, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("bench: go.mod not found above the working directory")
		}
		dir = parent
	}
}

// Variant is one way of reaching the echo server.
type Variant struct {
	// Name labels the variant in reports ("direct", "gateway", ...).
	Name string
	// Gateway puts `gatehouse wrap` between the client and the server;
	// false is the direct pipe.
	Gateway bool
	// Policy runs with --policy PolicyFile --role Role; false is the
	// built-in default policy.
	Policy bool
	// Log writes the decision log (--decision-log, --event-source) to a
	// temporary file.
	Log bool
	// NoLedger passes --no-ledger: no evidence in the audit ledger. Without
	// it the gateway keeps its default ledger (SQLite), which the harness
	// always puts in the process's own temporary XDG_STATE_HOME so that a
	// run never touches the user's ledger and processes do not share one.
	NoLedger bool
	// Div, when > 1, divides the number of calls the latency, throughput
	// and memory measurements make on this variant (each interleaved batch
	// and round shrinks by the same factor), for variants too slow to run
	// the full counts in a few minutes.
	Div int
	// MaxFrameBytes sets --max-frame-bytes when > 0.
	MaxFrameBytes int
	// NoScan passes --no-scan: no inspection of arguments, responses and
	// tool definitions (docs/scanning.md).
	NoScan bool
	// ResultBytes, when > 0, makes the server's result carry
	// ResultBytes of benign mixed text (BenignText: prose, code, log
	// lines, ids and digests) that the scanners have to read through
	// (fakeserver --result-text); the arguments stay small.
	ResultBytes int
	// Exe, when set, is run instead of the gatehouse binary (with the same
	// arguments), and Env is added to its environment: the profiling mode
	// of gatehouse-bench uses them.
	Exe string
	Env []string
	// NullRelay runs Exe (gatehouse-bench) as `Exe relay -- SERVER`: the
	// gateway's frame reader and writer with nothing in between (no
	// parsing, policy or log). Gateway must be true as well.
	NullRelay bool
	// RawRelay, with NullRelay, runs `Exe rawrelay -- SERVER` instead:
	// blocking read(2) and write(2) of 64 KiB on the raw pipe descriptors,
	// no framing and no netpoller, the floor of any Go stdio relay on this
	// machine (bench/testdata/crelay.c is the same program in C).
	RawRelay bool
}

// The standard variants. Gateway is the configuration the targets are about:
// the command line of the brief (readonly policy, decision log), with
// today's defaults, which include the audit ledger; GatewayNoLedger is the
// same without the ledger. The other gateway variants switch features off
// from GatewayNoLedger one at a time.
var (
	Direct          = Variant{Name: "direct"}
	Gateway         = Variant{Name: "gateway", Gateway: true, Policy: true, Log: true, Div: 50}
	GatewayNoLedger = Variant{Name: "gw-noledger", Gateway: true, Policy: true, Log: true, NoLedger: true}
	GatewayNoLog    = Variant{Name: "gw-nolog", Gateway: true, Policy: true, NoLedger: true}
	GatewayDefault  = Variant{Name: "gw-defpol", Gateway: true, Log: true, NoLedger: true}
	GatewayBare     = Variant{Name: "gw-bare", Gateway: true, NoLedger: true}
	GatewayNoScan   = Variant{Name: "gw-noscan", Gateway: true, Policy: true, Log: true, NoLedger: true, NoScan: true}
)

// ScanBytes is the size of the arguments and of the echoed result of the
// scanning comparison (the "4 KiB result").
const ScanBytes = 4096

// ScanVariants are the variants of the scanning on/off comparison (phase
// "scan"): the direct pipe and gw-noledger with and without --no-scan,
// each with ScanBytes of benign text in the arguments and the result.
var ScanVariants = []Variant{
	{Name: "direct-4k", ResultBytes: ScanBytes},
	{Name: "gw-scan-4k", Gateway: true, Policy: true, Log: true, NoLedger: true, ResultBytes: ScanBytes},
	{Name: "gw-noscan-4k", Gateway: true, Policy: true, Log: true, NoLedger: true, NoScan: true, ResultBytes: ScanBytes},
}

// scanArgs are the small arguments of the scanning comparison's calls.
var scanArgs = []byte(`{"query":"quarterly report"}`)

// Features are the variants of the features on/off comparison, direct first.
var Features = []Variant{Direct, Gateway, GatewayNoLedger, GatewayNoLog, GatewayDefault, GatewayBare, GatewayNoScan}

// scaled returns n divided by the variant's Div, at least 1.
func (v Variant) scaled(n int) int {
	if v.Div > 1 {
		n /= v.Div
	}
	return max(1, n)
}

// Describe says in words what the variant runs.
func (v Variant) Describe() string {
	if !v.Gateway {
		return "client <-> fakeserver"
	}
	if v.RawRelay {
		return "client <-> raw relay (blocking read/write of pipe fds, no framing) <-> fakeserver"
	}
	if v.NullRelay {
		return "client <-> null relay (frame reader and writer only) <-> fakeserver"
	}
	exe := "gatehouse wrap"
	if v.Exe != "" {
		exe = filepath.Base(v.Exe) + " wrap"
	}
	pol := "default policy"
	if v.Policy {
		pol = "readonly-agent policy, role " + Role
	}
	log := "decision log off"
	if v.Log {
		log = "decision log on"
	}
	led := "ledger on"
	if v.NoLedger {
		led = "ledger off"
	}
	return "client <-> " + exe + " (" + pol + ", " + log + ", " + led + ") <-> fakeserver"
}

// Proc is one started variant: the process the client talks to, and a
// client for it.
type Proc struct {
	Variant Variant
	// Pid is the process the client talks to: gatehouse for gateway
	// variants, fakeserver for the direct pipe.
	Pid int
	// LogPath is the decision log file, or "".
	LogPath string
	*Client

	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *capBuffer
	dir    string   // the gateway's temporary state: decision log, ledger
	env    []string // added to the environment
}

// Start starts the variant and performs the MCP handshake (initialize,
// notifications/initialized, tools/list).
func Start(v Variant) (*Proc, error) {
	bins, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	server := []string{bins.FakeServer, "--echo-fast"}
	p := &Proc{Variant: v, stderr: &capBuffer{max: 64 << 10}}
	if v.ResultBytes > 0 {
		p.dir, err = os.MkdirTemp("", "gatehouse-bench-state-")
		if err != nil {
			return nil, err
		}
		text := filepath.Join(p.dir, "result.txt")
		if err := os.WriteFile(text, BenignText(v.ResultBytes), 0o600); err != nil {
			return nil, err
		}
		server = append(server, "--result-text", text)
	}
	argv := server
	if v.NullRelay {
		mode := "relay"
		if v.RawRelay {
			mode = "rawrelay"
		}
		argv = append([]string{v.Exe, mode, "--"}, server...)
	} else if v.Gateway {
		exe := bins.Gatehouse
		if v.Exe != "" {
			exe = v.Exe
		}
		argv = []string{exe, "wrap"}
		if v.NoLedger {
			argv = append(argv, "--no-ledger")
		}
		if v.Policy {
			argv = append(argv, "--policy", filepath.Join(bins.Root, PolicyFile), "--role", Role)
		}
		if p.dir == "" {
			p.dir, err = os.MkdirTemp("", "gatehouse-bench-state-")
			if err != nil {
				return nil, err
			}
		}
		p.env = append(p.env, "XDG_STATE_HOME="+p.dir)
		if v.Log {
			p.LogPath = filepath.Join(p.dir, "decisions.jsonl")
			argv = append(argv, "--decision-log", p.LogPath, "--event-source", "gatehouse://bench/"+v.Name)
		}
		if v.MaxFrameBytes > 0 {
			argv = append(argv, "--max-frame-bytes", strconv.Itoa(v.MaxFrameBytes))
		}
		if v.NoScan {
			argv = append(argv, "--no-scan")
		}
		argv = append(argv, "--")
		argv = append(argv, server...)
	}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Stderr = p.stderr
	p.env = append(p.env, v.Env...)
	if len(p.env) > 0 {
		p.cmd.Env = append(os.Environ(), p.env...)
	}
	p.stdin, err = p.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	p.Pid = p.cmd.Process.Pid
	p.Client = NewClient(p.stdin, stdout)
	if v.ResultBytes > 0 {
		p.Client.SetArgs(scanArgs)
	}
	if err := p.Client.Handshake(); err != nil {
		p.Close()
		return nil, fmt.Errorf("%s: handshake: %w (stderr: %s)", v.Name, err, p.Stderr())
	}
	return p, nil
}

// Stderr returns the start of what the process wrote on stderr.
func (p *Proc) Stderr() string { return p.stderr.String() }

// Close ends the session (stdin EOF), waits for the process, and removes the
// decision log.
func (p *Proc) Close() error {
	p.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		err = <-done
	}
	if p.dir != "" {
		os.RemoveAll(p.dir)
	}
	return err
}

// LogBytes returns the decision log's current size, or 0.
func (p *Proc) LogBytes() int64 {
	if p.LogPath == "" {
		return 0
	}
	fi, err := os.Stat(p.LogPath)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// capBuffer keeps the first max bytes written to it.
type capBuffer struct {
	mu  sync.Mutex
	max int
	b   bytes.Buffer
}

func (c *capBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - c.b.Len(); room > 0 {
		c.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (c *capBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b.String()
}

// Client speaks newline-delimited JSON-RPC to one variant. The call path
// allocates nothing in the steady state, so that the client's own garbage
// collection does not show up in the latencies.
type Client struct {
	w    io.Writer
	r    *bufio.Reader
	big  []byte // accumulation buffer for lines longer than r's buffer
	req  []byte // request buffer
	args []byte // the arguments object of every call
	id   int64
	// Done counts responses received by the call methods.
	Done atomic.Int64
}

// NewClient returns a client writing requests to w and reading responses
// from r, with the standard ArgBytes arguments.
func NewClient(w io.Writer, r io.Reader) *Client {
	return &Client{w: w, r: bufio.NewReaderSize(r, 256<<10), args: Args(ArgBytes), req: make([]byte, 0, 4096)}
}

// SetArgs replaces the arguments object sent with every call.
func (c *Client) SetArgs(args []byte) { c.args = args }

// Args returns a compact JSON object {"data":"..."} of exactly n bytes
// (n >= 11).
func Args(n int) []byte {
	const head, tail = `{"data":"`, `"}`
	b := make([]byte, 0, n)
	b = append(b, head...)
	const pattern = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ-_"
	for i := 0; len(b) < n-len(tail); i++ {
		b = append(b, pattern[i%len(pattern)])
	}
	return append(b, tail...)
}

// textPieces are benign pieces of tool output, cycled by BenignText: prose
// (also about keys and tokens), code, a log line, ids and digests; none is
// a finding.
var textPieces = []string{
	"The quarterly report lists revenue by region; rotate your API keys in the settings page when a member leaves. ",
	"func (s *Server) handle(ctx context.Context, req *Request) error { token := req.Header.Get('X-Request-Id'); return s.next(ctx, token) } ",
	"2026-12-01T10:00:00Z INFO request completed path=/api/v1/items status=200 duration_ms=12 ",
	"id 3f2b8c1e-9a4d-4e6f-8b7a-1c2d3e4f5a6b commit 9fceb02d0ae598e95dc970b74767f19372d61af8 ",
	"integrity sha512-Fo0dIqBvhqU5nXAcvNyLzkKLeaLL6MtzXkHg6ABC7ajhz9/PHUYGkcrrKhkMHDmaZ8dmTrVA== ",
	"Use the search tool to find documents; results are ranked by relevance and freshness. ",
}

// BenignText returns n bytes of textPieces cycled.
func BenignText(n int) []byte {
	b := make([]byte, 0, n)
	for i := 0; len(b) < n; i++ {
		p := textPieces[i%len(textPieces)]
		b = append(b, p[:min(len(p), n-len(b))]...)
	}
	return b
}

const (
	callHead = `{"jsonrpc":"2.0","id":`
	callMid  = `,"method":"tools/call","params":{"name":"echo","arguments":`
	callTail = "}}\n"
	respHead = `{"jsonrpc":"2.0","id":`
	respOK   = `,"result":`
)

// Handshake runs initialize, notifications/initialized and tools/list, so
// that the gateway knows the echo tool is read-only.
func (c *Client) Handshake() error {
	msgs := []struct {
		line   string
		answer bool
	}{
		{`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"gatehouse-bench","version":"1"}}}`, true},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, false},
		{`{"jsonrpc":"2.0","id":"list","method":"tools/list"}`, true},
	}
	for _, m := range msgs {
		if _, err := io.WriteString(c.w, m.line+"\n"); err != nil {
			return err
		}
		if !m.answer {
			continue
		}
		line, err := c.readLine()
		if err != nil {
			return err
		}
		if !bytes.Contains(line, []byte(`"result"`)) {
			return fmt.Errorf("unexpected answer %.200q", line)
		}
	}
	return nil
}

// request builds the tools/call request with the given id in c.req.
func (c *Client) request(id int64) []byte {
	b := append(c.req[:0], callHead...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, callMid...)
	b = append(b, c.args...)
	b = append(b, callTail...)
	c.req = b
	return b
}

// readLine returns the next line, terminator included; valid until the next
// call.
func (c *Client) readLine() ([]byte, error) {
	line, err := c.r.ReadSlice('\n')
	if err == nil {
		return line, nil
	}
	if err != bufio.ErrBufferFull {
		return nil, err
	}
	c.big = append(c.big[:0], line...)
	for {
		line, err = c.r.ReadSlice('\n')
		c.big = append(c.big, line...)
		if err == nil {
			return c.big, nil
		}
		if err != bufio.ErrBufferFull {
			return nil, err
		}
	}
}

// responseID checks that line is a successful response with an integer id
// and returns the id.
func responseID(line []byte) (int64, error) {
	if !bytes.HasPrefix(line, []byte(respHead)) {
		return 0, fmt.Errorf("not a response: %.200q", line)
	}
	rest := line[len(respHead):]
	var id int64
	i := 0
	for ; i < len(rest) && rest[i] >= '0' && rest[i] <= '9'; i++ {
		id = id*10 + int64(rest[i]-'0')
	}
	if i == 0 || !bytes.HasPrefix(rest[i:], []byte(respOK)) {
		return 0, fmt.Errorf("not a successful response: %.300q", line)
	}
	return id, nil
}

// Call makes one tools/call and waits for its response; it returns the time
// from just before the request was written to just after the whole response
// was read.
func (c *Client) Call() (time.Duration, error) {
	c.id++
	req := c.request(c.id)
	t0 := time.Now()
	if _, err := c.w.Write(req); err != nil {
		return 0, err
	}
	line, err := c.readLine()
	d := time.Since(t0)
	if err != nil {
		return 0, err
	}
	id, err := responseID(line)
	if err != nil {
		return 0, err
	}
	if id != c.id {
		return 0, fmt.Errorf("response id %d, want %d", id, c.id)
	}
	c.Done.Add(1)
	return d, nil
}

// CallLen is Call that also returns the response's length in bytes.
func (c *Client) CallLen() (time.Duration, int, error) {
	c.id++
	req := c.request(c.id)
	t0 := time.Now()
	errc := make(chan error, 1)
	go func() { // a huge request must not block the read of its answer
		_, err := c.w.Write(req)
		errc <- err
	}()
	line, err := c.readLine()
	d := time.Since(t0)
	if werr := <-errc; werr != nil {
		return 0, 0, werr
	}
	if err != nil {
		return 0, 0, err
	}
	if _, err := responseID(line); err != nil {
		return 0, 0, err
	}
	c.Done.Add(1)
	return d, len(line), nil
}

// Pipelined makes n tools/calls keeping up to window of them in flight and
// returns the wall time from the first write to the last response.
// Responses may arrive in any order; each must answer an outstanding id.
func (c *Client) Pipelined(n, window int) (time.Duration, error) {
	if n <= 0 {
		return 0, nil
	}
	slots := make(chan struct{}, window)
	first := c.id + 1
	readErr := make(chan error, 1)
	stop := make(chan struct{})
	t0 := time.Now()
	go func() {
		defer close(stop)
		for i := 0; i < n; i++ {
			line, err := c.readLine()
			if err != nil {
				readErr <- err
				return
			}
			id, err := responseID(line)
			if err != nil {
				readErr <- err
				return
			}
			if id < first || id >= first+int64(n) {
				readErr <- fmt.Errorf("response id %d outside [%d, %d)", id, first, first+int64(n))
				return
			}
			c.Done.Add(1)
			<-slots
		}
		readErr <- nil
	}()
	var werr error
write:
	for i := 0; i < n; i++ {
		select {
		case slots <- struct{}{}:
		case <-stop:
			break write
		}
		c.id++
		if _, werr = c.w.Write(c.request(c.id)); werr != nil {
			break
		}
	}
	err := <-readErr
	d := time.Since(t0)
	if werr != nil {
		return d, werr
	}
	return d, err
}
