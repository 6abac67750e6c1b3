package relay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gatehouse-mcp/gatehouse/test/harness"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Paths of the binaries built by TestMain.
var (
	gatehouseBin string
	fakeBin      string
	binDir       string
)

const (
	gatehousePkg = "github.com/gatehouse-mcp/gatehouse/cmd/gatehouse"
	fakePkg      = "github.com/gatehouse-mcp/gatehouse/test/fakeserver"
	eventSource  = "gatehouse://localhost/relay-test"
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	gh := harness.Build{Out: "gatehouse", Pkg: gatehousePkg}
	// GATEHOUSE_RELAY_RACE=1 builds gatehouse with the race detector;
	// every test then fails on a race report in its stderr.
	if os.Getenv("GATEHOUSE_RELAY_RACE") != "" {
		gh.Flags = []string{"-race"}
	}
	dir, cleanup, err := harness.Setup("gatehouse-relay-bin-", gh, harness.Build{Out: "fakeserver", Pkg: fakePkg})
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay tests:", err)
		return 1
	}
	defer cleanup()
	binDir = dir
	gatehouseBin = filepath.Join(dir, "gatehouse")
	fakeBin = filepath.Join(dir, "fakeserver")
	return m.Run()
}

// relayBug skips a test that fails because of a known, reported relay bug,
// unless GATEHOUSE_TEST_BUGS is set.
func relayBug(t testing.TB, desc string) {
	t.Helper()
	if os.Getenv("GATEHOUSE_TEST_BUGS") == "" {
		t.Skip("relay bug: " + desc + " (set GATEHOUSE_TEST_BUGS=1 to run)")
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer = harness.SyncBuffer

// run describes one gatehouse run.
type run struct {
	// flags are gatehouse's arguments before "--" (after "wrap").
	flags []string
	// server are fakeserver's flags; ignored when command is set.
	server []string
	// command is the whole server command, instead of fakeserver.
	command []string
	// env is added to gatehouse's environment.
	env []string
	// wrapper goes before the gatehouse binary (e.g. prlimit ...).
	wrapper []string
	// noWrap leaves out the "wrap" subcommand and "--" (raw arguments).
	raw []string
	// cred runs gatehouse as another user.
	cred *syscall.Credential
	// dir is gatehouse's working directory; "" means the test's.
	dir string
}

// gh is a running gatehouse with a scripted client on its stdio.
type gh struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte
	stderr *syncBuffer
	done   chan struct{}
	start  time.Time

	mu   sync.Mutex
	sent bytes.Buffer // every byte the client wrote, in order

	cleanupPIDs []string // pid files of processes to kill at cleanup
}

// startGH starts gatehouse. Every read the test makes has a deadline, and
// cleanup kills whatever is left (gatehouse, and the server and grandchild
// named in pid files registered with killAtCleanup).
func startGH(t testing.TB, r run) *gh {
	t.Helper()
	var argv []string
	argv = append(argv, r.wrapper...)
	argv = append(argv, gatehouseBin)
	if r.raw != nil {
		argv = append(argv, r.raw...)
	} else {
		argv = append(argv, "wrap")
		argv = append(argv, r.flags...)
		argv = append(argv, "--")
		if r.command != nil {
			argv = append(argv, r.command...)
		} else {
			argv = append(argv, fakeBin)
			argv = append(argv, r.server...)
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = r.dir
	// Each run gets its own state directory (the default audit ledger and
	// its key live there), unless the test chooses one: tests neither touch
	// the real home directory nor share a ledger.
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+stateDir(t))
	cmd.Env = append(cmd.Env, r.env...)
	if os.Getenv("GATEHOUSE_RELAY_RACE") != "" {
		// The race runtime sleeps 1 s at exit by default.
		cmd.Env = append(cmd.Env, "GORACE=atexit_sleep_ms=0")
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: r.cred}
	p, err := harness.StartProc(cmd, 4096, nil)
	if err != nil {
		t.Fatalf("start gatehouse: %v", err)
	}
	h := &gh{t: t, cmd: cmd, stdin: p.Stdin, lines: p.Lines, stderr: p.Stderr, done: p.Done}
	h.start = time.Now()
	t.Cleanup(func() {
		_ = h.stdin.Close()
		select {
		case <-h.done:
		default:
			_ = cmd.Process.Kill()
			select {
			case <-h.done:
			case <-time.After(5 * time.Second):
			}
		}
		if strings.Contains(h.stderr.String(), "WARNING: DATA RACE") {
			t.Errorf("gatehouse reported a data race:\n%s", h.stderr.String())
		}
		for _, f := range h.cleanupPIDs {
			if pid := readPID(f); pid > 0 && alive(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return h
}

// stateDir returns a fresh directory for XDG_STATE_HOME.
func stateDir(t testing.TB) string {
	d := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

// killAtCleanup registers a pid file (--marker or --grandchild) whose
// process cleanup kills if it is still running.
func (h *gh) killAtCleanup(pidFiles ...string) { h.cleanupPIDs = append(h.cleanupPIDs, pidFiles...) }

// send writes s to gatehouse's stdin as it is (the caller adds the
// terminator).
func (h *gh) send(s string) {
	h.t.Helper()
	h.mu.Lock()
	h.sent.WriteString(s)
	h.mu.Unlock()
	if _, err := io.WriteString(h.stdin, s); err != nil {
		h.t.Fatalf("write to gatehouse: %v\nstderr:\n%s", err, h.tail())
	}
}

// sentBytes returns everything the client wrote so far.
func (h *gh) sentBytes() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sent.String()
}

// closeStdin ends the client's input (client EOF).
func (h *gh) closeStdin() { _ = h.stdin.Close() }

// read returns the next line gatehouse wrote to stdout, terminator
// included, failing the test after d.
func (h *gh) read(d time.Duration) string {
	h.t.Helper()
	select {
	case l, ok := <-h.lines:
		if !ok {
			h.t.Fatalf("gatehouse closed its stdout; stderr:\n%s", h.tail())
		}
		return string(l)
	case <-time.After(d):
		h.t.Fatalf("no line from gatehouse within %v; stderr:\n%s", d, h.tail())
	}
	return ""
}

// expectNoLine fails if gatehouse writes a line within d.
func (h *gh) expectNoLine(d time.Duration) {
	h.t.Helper()
	select {
	case l, ok := <-h.lines:
		if ok {
			h.t.Fatalf("unexpected line from gatehouse: %.300q", l)
		}
	case <-time.After(d):
	}
}

// readUntilID reads lines until a response whose raw id is id, and returns
// it and the lines before it.
func (h *gh) readUntilID(id string, d time.Duration) (string, []string) {
	h.t.Helper()
	deadline := time.Now().Add(d)
	var before []string
	for {
		l := h.read(time.Until(deadline))
		if m := decode(l); m.ID != nil && string(m.ID) == id && m.Method == "" {
			return l, before
		}
		before = append(before, l)
	}
}

// call sends a request line and returns the response with the given id,
// failing if any other line arrives first.
func (h *gh) call(line, id string) string {
	h.t.Helper()
	h.send(line)
	resp, before := h.readUntilID(id, 10*time.Second)
	if len(before) > 0 {
		h.t.Fatalf("lines before the response to %s: %q", id, before)
	}
	return resp
}

// wait waits for gatehouse to exit and returns its exit code (-1 when killed
// by a signal).
func (h *gh) wait(d time.Duration) int {
	h.t.Helper()
	select {
	case <-h.done:
		return h.cmd.ProcessState.ExitCode()
	case <-time.After(d):
		h.t.Fatalf("gatehouse did not exit within %v; stderr:\n%s", d, h.tail())
	}
	return 0
}

// exited reports whether gatehouse has exited.
func (h *gh) exited() bool {
	select {
	case <-h.done:
		return true
	default:
		return false
	}
}

// tail returns the end of gatehouse's stderr, for failure messages.
func (h *gh) tail() string {
	s := h.stderr.String()
	if len(s) > 4000 {
		s = "..." + s[len(s)-4000:]
	}
	return s
}

// signal sends sig to gatehouse itself (not its group).
func (h *gh) signal(sig syscall.Signal) {
	h.t.Helper()
	if err := h.cmd.Process.Signal(sig); err != nil {
		h.t.Fatalf("signal gatehouse: %v", err)
	}
}

// msg is the part of a JSON-RPC message the tests look at; ID keeps its
// raw text.
type msg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func decode(line string) msg {
	var m msg
	_ = json.Unmarshal([]byte(line), &m)
	return m
}

// expectError checks that line is a JSON-RPC error response to id with the
// given code, and returns it decoded.
func expectError(t testing.TB, line, id string, code int) msg {
	t.Helper()
	m := decode(line)
	if string(m.ID) != id || m.Error == nil || m.Error.Code != code {
		t.Fatalf("got %.400q; want an error %d for id %s", line, code, id)
	}
	return m
}

// expectResult checks that line is a result response to id.
func expectResult(t testing.TB, line, id string) msg {
	t.Helper()
	m := decode(line)
	if string(m.ID) != id || m.Result == nil || m.Error != nil {
		t.Fatalf("got %.400q; want a result for id %s", line, id)
	}
	return m
}

// Frames a test client sends.

func initialize(id, version string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"relay-test","version":"0"}}}` + "\n"
}

const initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"

func ping(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}` + "\n" }

func toolsList(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list"}` + "\n"
}

func toolCall(id, name, args string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `}}` + "\n"
}

// handshake runs initialize (id "init") and notifications/initialized and
// then tools/list (id "tl"), so the gateway knows the whole catalog.
func (h *gh) handshake(version string) {
	h.t.Helper()
	expectResult(h.t, h.call(initialize(`"init"`, version), `"init"`), `"init"`)
	h.send(initialized)
	expectResult(h.t, h.call(toolsList(`"tl"`), `"tl"`), `"tl"`)
}

// jstr returns s as a JSON string.
func jstr(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// emitCall is a tools/call of the fake server's emit tool writing lines.
func emitCall(id string, lines ...string) string {
	quoted := make([]string, len(lines))
	for i, l := range lines {
		quoted[i] = jstr(l)
	}
	return toolCall(id, "emit", `{"lines":[`+strings.Join(quoted, ",")+`]}`)
}

// Files.

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}

// waitFile waits until the file at path contains sub.
func waitFile(t testing.TB, path, sub string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if strings.Contains(readFile(t, path), sub) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s does not contain %.200q after %v; it holds:\n%.2000s", path, sub, d, readFile(t, path))
}

// waitStderr waits until gatehouse's stderr contains sub.
func (h *gh) waitStderr(sub string, d time.Duration) {
	h.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if strings.Contains(h.stderr.String(), sub) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.t.Fatalf("stderr does not contain %q after %v:\n%s", sub, d, h.tail())
}

// recordLines returns the lines the fake server recorded.
func recordLines(t testing.TB, path string) []string {
	t.Helper()
	s := readFile(t, path)
	if s == "" {
		return nil
	}
	return strings.SplitAfter(strings.TrimSuffix(s, "\n"), "\n")
}

// event is one decision log event; Raw is its line, Data its data members
// with raw values.
type event struct {
	Type string                     `json:"type"`
	Data map[string]json.RawMessage `json:"data"`
	Raw  string                     `json:"-"`
}

// events reads the decision log at path.
func events(t testing.TB, path string) []event {
	t.Helper()
	var out []event
	for _, l := range strings.SplitAfter(readFile(t, path), "\n") {
		if l == "" {
			continue
		}
		var e event
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("decision log line %q: %v", l, err)
		}
		e.Raw = l
		out = append(out, e)
	}
	return out
}

// eventsOf returns the events of one type.
func eventsOf(t testing.TB, path, typ string) []event {
	t.Helper()
	var out []event
	for _, e := range events(t, path) {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

const (
	typeDecision = "gatehouse.tool.decision.v1"
	typeRejected = "gatehouse.frame.rejected.v1"
)

// str decodes a JSON string member ("" when absent or not a string).
func str(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// Processes.

// readPID reads a pid file written by the fake server (--marker,
// --grandchild); 0 when absent.
func readPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// waitPID waits for a pid file to appear and returns the pid.
func waitPID(t testing.TB, path string, d time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if pid := readPID(path); pid > 0 {
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no pid in %s after %v", path, d)
	return 0
}

// alive reports whether pid is a live process (a zombie has exited: it is
// only waiting for its parent).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] != 'Z' && b[i+2] != 'X'
}

// expectGone fails unless the process pid has ended within d.
func expectGone(t testing.TB, what string, pid int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) is still running %v after gatehouse exited", what, pid, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// testdata returns the path of a file in testdata.
func testdata(name string) string {
	p, _ := filepath.Abs(filepath.Join("testdata", name))
	return p
}
