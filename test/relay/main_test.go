package relay

import (
	"fmt"
	"github.com/gatehouse-mcp/gatehouse/test/harness"
	"os"
	"path/filepath"
	"strings"
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
	harness.SkipKnownBug(t, "relay bug: "+desc)
}

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

// gh is a running gatehouse with a scripted client on its stdio: the
// shared driver (harness.Driver) and the relay tests' own reads.
type gh struct {
	*harness.Driver
	t testing.TB
}

// startGH starts gatehouse. Every read the test makes has a deadline, and
// cleanup kills whatever is left (gatehouse, and the server and grandchild
// named in pid files registered with KillAtCleanup) and fails the test on
// a data race report in gatehouse's stderr.
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
	// Each run gets its own state directory (the default audit ledger and
	// its key live there), unless the test chooses one: tests neither touch
	// the real home directory nor share a ledger.
	env := append([]string{"XDG_STATE_HOME=" + stateDir(t)}, r.env...)
	if os.Getenv("GATEHOUSE_RELAY_RACE") != "" {
		// The race runtime sleeps 1 s at exit by default.
		env = append(env, "GORACE=atexit_sleep_ms=0")
	}
	d := harness.Start(t, harness.Options{Argv: argv, Dir: r.dir, Env: env, Setpgid: true, Cred: r.cred})
	d.OnCleanup(func() {
		if strings.Contains(d.Stderr.String(), "WARNING: DATA RACE") {
			t.Errorf("gatehouse reported a data race:\n%s", d.Stderr.String())
		}
	})
	return &gh{Driver: d, t: t}
}

// stateDir returns a fresh directory for XDG_STATE_HOME.
func stateDir(t testing.TB) string {
	d := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

// read returns the next line gatehouse wrote to stdout, terminator
// included, failing the test after d.
func (h *gh) read(d time.Duration) string { h.t.Helper(); return string(h.Read(d)) }

// readUntilID reads lines until a response whose raw id is id, and returns
// it and the lines before it.
func (h *gh) readUntilID(id string, d time.Duration) (string, []string) {
	h.t.Helper()
	l, before := h.ReadUntil(d, func(l []byte) bool {
		m := decode(string(l))
		return m.ID != nil && string(m.ID) == id && m.Method == ""
	})
	out := make([]string, 0, len(before))
	for _, b := range before {
		out = append(out, string(b))
	}
	if len(out) == 0 {
		out = nil
	}
	return string(l), out
}

// call sends a request line and returns the response with the given id,
// failing if any other line arrives first.
func (h *gh) call(line, id string) string {
	h.t.Helper()
	h.Send(line)
	resp, before := h.readUntilID(id, 10*time.Second)
	if len(before) > 0 {
		h.t.Fatalf("lines before the response to %s: %q", id, before)
	}
	return resp
}

// msg is the part of a JSON-RPC message the tests look at.
type msg = harness.Msg

func decode(line string) msg { return harness.DecodeMsg([]byte(line)) }

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

func initialize(id, version string) string { return harness.Initialize(id, version, "relay-test") }

const initialized = harness.Initialized

func ping(id string) string { return harness.Ping(id) }

func toolsList(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list"}` + "\n"
}

func toolCall(id, name, args string) string { return harness.ToolCall(id, name, args) }

// handshake runs initialize (id "init") and notifications/initialized and
// then tools/list (id "tl"), so the gateway knows the whole catalog.
func (h *gh) handshake(version string) {
	h.t.Helper()
	expectResult(h.t, h.call(initialize(`"init"`, version), `"init"`), `"init"`)
	h.Send(initialized)
	expectResult(h.t, h.call(toolsList(`"tl"`), `"tl"`), `"tl"`)
}

// emitCall is a tools/call of the fake server's emit tool writing lines.
func emitCall(id string, lines ...string) string {
	quoted := make([]string, len(lines))
	for i, l := range lines {
		quoted[i] = harness.JSONString(l)
	}
	return toolCall(id, "emit", `{"lines":[`+strings.Join(quoted, ",")+`]}`)
}

// Files.

// readFile returns the content of path, "" when it does not exist.
func readFile(t testing.TB, path string) string { t.Helper(); return string(harness.ReadFile(t, path)) }

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

// recordLines returns the lines the fake server recorded.
func recordLines(t testing.TB, path string) []string {
	t.Helper()
	s := readFile(t, path)
	if s == "" {
		return nil
	}
	return strings.SplitAfter(strings.TrimSuffix(s, "\n"), "\n")
}

// event is one decision log event.
type event = harness.Event

// events reads the decision log at path.
func events(t testing.TB, path string) []event { t.Helper(); return harness.ReadEvents(t, path) }

// eventsOf returns the events of one type.
func eventsOf(t testing.TB, path, typ string) []event {
	t.Helper()
	return harness.EventsOf(harness.ReadEvents(t, path), typ)
}

const (
	typeDecision = harness.TypeDecision
	typeRejected = harness.TypeRejected
)
