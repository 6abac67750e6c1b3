package receiptse2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/gatehouse-mcp/gatehouse/test/harness"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Paths of the binaries TestMain builds.
var (
	gatehouseBin string
	fakeBin      string
)

const (
	gatehousePkg = "github.com/gatehouse-mcp/gatehouse/cmd/gatehouse"
	fakePkg      = "github.com/gatehouse-mcp/gatehouse/test/fakeserver"
	eventSource  = "gatehouse://local/receipts-e2e"

	// Contract constants (request-receipts.md §3, §4).
	schemaV0       = "gatehouse.request_decision_receipt.v0"
	diagnosticLine = `{"schema":"gatehouse.request_decision_receipt.v0","diagnostic":"capture_incomplete"}` + "\n"
	stderrDiag     = "gatehouse: request receipts: capture incomplete"

	typeDecision = harness.TypeDecision
	typeStart    = harness.TypeSessionStart
	typeStop     = harness.TypeSessionStop
	typeRejected = harness.TypeRejected

	// Exit codes of gatehouse wrap (README "Exit status").
	exitGatewayFailure = 70
	exitConfig         = 78

	// ioWait bounds every single read, call and wait of a test.
	ioWait = 15 * time.Second
)

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	dir, cleanup, err := harness.Setup("gatehouse-receipts-bin-",
		harness.Build{Out: "gatehouse", Pkg: gatehousePkg}, harness.Build{Out: "fakeserver", Pkg: fakePkg})
	if err != nil {
		fmt.Fprintln(os.Stderr, "receipts e2e:", err)
		return 1
	}
	defer cleanup()
	gatehouseBin = filepath.Join(dir, "gatehouse")
	fakeBin = filepath.Join(dir, "fakeserver")
	return m.Run()
}

// knownBug skips a test that fails because of a reported deviation from the
// contract, unless GATEHOUSE_TEST_BUGS is set. desc starts with the
// expectation and the observation.
func knownBug(t testing.TB, desc string) {
	t.Helper()
	harness.SkipKnownBug(t, "BUG: "+desc)
}

// wrapRun describes one `gatehouse wrap` run in front of the fake server.
type wrapRun struct {
	// dir is gatehouse's working directory ("" for the test's), so that
	// relative paths can be tested without chdir in the test process.
	dir string
	// flags go between "wrap" and "--".
	flags []string
	// server are the fake server's flags.
	server []string
	// umask, when set (e.g. "000"), is applied with sh before exec.
	umask string
	// wrapper goes before the gatehouse command (e.g. prlimit ... --).
	wrapper []string
	// cred runs gatehouse as another user.
	cred *syscall.Credential
}

// gh is a running gatehouse with a scripted client on its stdio: the
// shared driver (harness.Driver) and the receipts tests' own script
// player.
type gh struct {
	*harness.Driver
	t testing.TB
}

// start starts gatehouse. Every send, read and wait the test makes is
// bounded by ioWait, and cleanup kills gatehouse's process group if it has
// not exited ioWait after its stdin closed (the fake server dies with it:
// it gets SIGKILL when gatehouse dies, and its stdin closes).
func start(t testing.TB, r wrapRun) *gh {
	t.Helper()
	argv := []string{gatehouseBin, "wrap"}
	argv = append(argv, r.flags...)
	argv = append(argv, "--", fakeBin)
	argv = append(argv, r.server...)
	argv = append(slices.Clone(r.wrapper), argv...)
	if r.umask != "" {
		argv = append([]string{"/bin/sh", "-c", `umask ` + r.umask + ` && exec "$@"`, "sh"}, argv...)
	}
	d := harness.Start(t, harness.Options{
		Argv: argv, Dir: r.dir, Setpgid: true, KillGroup: true, Cred: r.cred,
		LineBuffer: 1024, SendTimeout: ioWait, CleanupGrace: ioWait,
	})
	return &gh{Driver: d, t: t}
}

// run starts gatehouse, sends every frame of script in order (waiting for
// the response of each request that has one), closes stdin and waits for
// the exit code. It is the common "one session" of most tests.
func run(t testing.TB, r wrapRun, script []step) (*gh, int) {
	t.Helper()
	h := start(t, r)
	h.play(script)
	h.CloseStdin()
	return h, h.wait()
}

// step is one client frame of a script and what the client expects back.
type step struct {
	line string // exact bytes sent, terminator included
	// reply is the raw id of the response to wait for; "*" for exactly one
	// line with any id; "" when the frame gets no response (a
	// notification): the script then syncs with a ping so that the gateway
	// has handled the frame before the next one.
	reply string
}

// play sends script and returns, per step, the response it got (nil for
// a step without one).
func (h *gh) play(script []step) [][]byte {
	h.t.Helper()
	replies := make([][]byte, len(script))
	for i, s := range script {
		h.Send(s.line)
		switch s.reply {
		case "*":
			replies[i] = h.read()
		case "":
			id := fmt.Sprintf(`"sync-%d"`, i)
			h.Send(harness.Ping(id))
			h.readReply(id)
		default:
			replies[i] = h.readReply(s.reply)
		}
	}
	return replies
}

// read returns the next line gatehouse wrote to its stdout, failing the
// test after ioWait.
func (h *gh) read() []byte { h.t.Helper(); return h.Read(ioWait) }

// readReply reads the response whose raw id is id, failing if another line
// arrives first.
func (h *gh) readReply(id string) []byte {
	h.t.Helper()
	l := h.read()
	if m := decodeMsg(l); string(m.ID) != id || m.Method != "" {
		h.t.Fatalf("got %.300q; want the response to id %s", l, id)
	}
	return l
}

// wait waits for gatehouse to exit and returns its exit code, failing the
// test after ioWait.
func (h *gh) wait() int { h.t.Helper(); return h.Wait(ioWait) }

// msg is the part of a JSON-RPC message the tests look at.
type msg = harness.Msg

func decodeMsg(line []byte) msg { return harness.DecodeMsg(line) }

// Frames of the scripted client.

func initialize(id, version string) string { return harness.Initialize(id, version, "receipts-e2e") }

const initialized = harness.Initialized

func discover(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"server/discover"}` + "\n"
}

// toolCall is a tools/call with the given raw id ("" for none), tool name
// and raw arguments, terminated by LF.
func toolCall(id, name, args string) string { return harness.ToolCall(id, name, args) }

// crlf replaces the LF terminator of line with CRLF.
func crlf(line string) string { return strings.TrimSuffix(line, "\n") + "\r\n" }

// padCall returns a tools/call of the fake server's write tool (its result
// is short) with the given raw id whose length, terminator term included,
// is exactly n bytes.
func padCall(id string, n int, term string) string {
	head := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"write","arguments":{"pad":"`
	tail := `"}}}` + term
	return head + strings.Repeat("a", n-len(head)-len(tail)) + tail
}

// Files.

// files of one run in a fresh directory.
type files struct {
	dir, receipts, log, record, marker string
}

func newFiles(t testing.TB) files {
	dir := t.TempDir()
	return files{
		dir:      dir,
		receipts: filepath.Join(dir, "requests.jsonl"),
		log:      filepath.Join(dir, "decisions.jsonl"),
		record:   filepath.Join(dir, "server-record"),
		marker:   filepath.Join(dir, "server-marker"),
	}
}

// flags returns the wrap flags of a run with receipts (when withReceipts)
// and the test policy.
func (f files) flags(withReceipts bool) []string {
	fl := []string{"--policy", harness.Testdata("deny-delete.yaml"), "--decision-log", f.log, "--event-source", eventSource}
	if withReceipts {
		fl = append(fl, "--request-receipts-out", f.receipts)
	}
	return fl
}

func (f files) server() []string { return []string{"--record", f.record, "--marker", f.marker} }

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func sha256hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Receipts.

// receipt is one decoded receipt line; raw members keep their JSON text.
type receipt struct {
	Schema          string          `json:"schema"`
	RequestLine     string          `json:"request_line"`
	RequestBytes    json.RawMessage `json:"request_bytes"`
	RequestSHA256   string          `json:"request_sha256"`
	DecisionEventID string          `json:"decision_event_id"`
	DecisionSHA256  string          `json:"decision_sha256"`
	RPCIDPresent    json.RawMessage `json:"rpc_id_present"`
	RPCID           json.RawMessage `json:"rpc_id"`
	Scope           string          `json:"scope"`
	Sequence        json.RawMessage `json:"sequence"`
	MetadataPointer json.RawMessage `json:"metadata_pointer"`
	VersionState    string          `json:"declared_protocol_version_state"`
	Version         json.RawMessage `json:"declared_protocol_version"`
	AssertionBasis  string          `json:"assertion_basis"`

	Raw     string                     `json:"-"`
	Members map[string]json.RawMessage `json:"-"`
}

// receiptFields are the 14 members of a receipt (request-receipts.md §3).
var receiptFields = []string{
	"schema", "request_line", "request_bytes", "request_sha256", "decision_event_id",
	"decision_sha256", "rpc_id_present", "rpc_id", "scope", "sequence", "metadata_pointer",
	"declared_protocol_version_state", "declared_protocol_version", "assertion_basis",
}

// readReceipts decodes every line of a receipts file; the diagnostic line
// is returned separately (as its count).
func readReceipts(t testing.TB, path string) (recs []receipt, diagnostics int) {
	t.Helper()
	b := harness.ReadFile(t, path)
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Errorf("receipts file does not end in LF")
	}
	for i, l := range harness.SplitLines(b) {
		if l == diagnosticLine {
			diagnostics++
			continue
		}
		var r receipt
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("receipts line %d is not JSON: %v: %.300q", i+1, err, l)
		}
		if err := json.Unmarshal([]byte(l), &r.Members); err != nil {
			t.Fatal(err)
		}
		r.Raw = l
		recs = append(recs, r)
	}
	return recs, diagnostics
}

// Decision log.

// event is one decision-log event.
type event = harness.Event

func readEvents(t testing.TB, path string) []event { t.Helper(); return harness.ReadEvents(t, path) }

// readEventsLenient is readEvents skipping lines that are not events (an
// operator's line, a partial last line).
func readEventsLenient(t testing.TB, path string) []event {
	t.Helper()
	return harness.ReadEventsLenient(t, path)
}

func eventsOf(evs []event, typ string) []event { return harness.EventsOf(evs, typ) }

// capture is the capture member of a session event.
type capture struct {
	Scope   string `json:"scope"`
	State   string `json:"state"`
	Records *int   `json:"records"`
}

func (c capture) String() string {
	n := "none"
	if c.Records != nil {
		n = strconv.Itoa(*c.Records)
	}
	return fmt.Sprintf("{scope %s, state %q, records %s}", c.Scope, c.State, n)
}

// sessionCapture returns the capture of the only event of type typ.
func sessionCapture(t testing.TB, evs []event, typ string) capture {
	t.Helper()
	es := eventsOf(evs, typ)
	if len(es) != 1 {
		t.Fatalf("%d %s events, want 1", len(es), typ)
	}
	var c capture
	if raw, ok := es[0].Data["capture"]; !ok || json.Unmarshal(raw, &c) != nil {
		t.Fatalf("%s event has no capture object: %s", typ, es[0].Raw)
	}
	return c
}

// The verifier.

// verdict is the --json output of gatehouse verify capture.
type verdict struct {
	OK      bool   `json:"ok"`
	Verdict string `json:"verdict"`
	Records int    `json:"records"`
	Checks  []struct {
		Name     string   `json:"name"`
		OK       bool     `json:"ok"`
		Failures []string `json:"failures"`
	} `json:"checks"`
	Out string `json:"-"`
}

func (v verdict) failed() []string {
	out := []string{}
	for _, c := range v.Checks {
		if !c.OK {
			out = append(out, c.Name)
		}
	}
	return out
}

// checkNames are the verifier's checks in the order of request-receipts.md
// §6 (names from docs/request-receipts.md and the README).
var checkNames = []string{
	"lines_complete", "receipt_fields", "no_incomplete_diagnostic", "lifecycle", "scope_sequence",
	"request_digest", "decision_reference", "event_population", "rpc_id_tool", "protocol_version",
}

// fileState is what the verifier must leave unchanged.
type fileState struct {
	exists bool
	sum    string
	mode   os.FileMode
	mtime  time.Time
	size   int64
}

func stateOf(t testing.TB, path string) fileState {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		return fileState{}
	}
	return fileState{exists: true, sum: sha256hex(harness.ReadFile(t, path)), mode: fi.Mode(), mtime: fi.ModTime(), size: fi.Size()}
}

// verifyCapture runs `gatehouse verify capture --json` and returns its exit
// code and verdict (zero when the output is not a verdict). It fails the
// test if the verifier changed either input in any way, and also runs the
// human form, which must exit with the same code.
func verifyCapture(t testing.TB, receiptsPath, logPath string) (int, verdict) {
	t.Helper()
	before := []fileState{stateOf(t, receiptsPath), stateOf(t, logPath)}
	code, out, errOut := runCLI(t, "verify", "capture", "--receipts", receiptsPath, "--decision-log", logPath, "--json")
	var v verdict
	if code == 0 || code == 1 {
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("verify --json output is not JSON (exit %d): %v\n%s\nstderr: %s", code, err, out, errOut)
		}
	}
	v.Out = string(out) + string(errOut)
	if code == 0 || code == 1 {
		var names []string
		for _, c := range v.Checks {
			names = append(names, c.Name)
		}
		if !slices.Equal(names, checkNames) {
			t.Errorf("verify --json checks %v, want one entry per check in order %v", names, checkNames)
		}
		if v.OK != (code == 0) || v.Verdict != map[bool]string{true: "accepted", false: "rejected"}[code == 0] {
			t.Errorf("verify exit %d with ok %v, verdict %q", code, v.OK, v.Verdict)
		}
	}
	code2, text, _ := runCLI(t, "verify", "capture", "--receipts", receiptsPath, "--decision-log", logPath)
	if code2 != code {
		t.Errorf("verify exits %d with --json and %d without", code, code2)
	}
	switch {
	case code == 0 && !strings.Contains(string(text), "capture accepted"):
		t.Errorf("accepted capture, summary says:\n%s", text)
	case code == 1 && !strings.Contains(string(text), "REJECTED"):
		t.Errorf("rejected capture, summary says:\n%s", text)
	}
	for _, name := range v.failed() {
		if !strings.Contains(string(text), "[FAIL] "+name) {
			t.Errorf("the human summary does not name the failed check %s:\n%s", name, text)
		}
	}
	v.Out += string(text)
	after := []fileState{stateOf(t, receiptsPath), stateOf(t, logPath)}
	for i, p := range []string{receiptsPath, logPath} {
		if before[i] != after[i] {
			t.Errorf("the verifier changed %s: %+v -> %+v", p, before[i], after[i])
		}
	}
	return code, v
}

// runCLI runs gatehouse with args (no stdin) under a deadline of ioWait.
func runCLI(t testing.TB, args ...string) (code int, stdout, stderr []byte) {
	t.Helper()
	r := harness.RunCLI(t, ioWait, "", nil, append([]string{gatehouseBin}, args...)...)
	return r.Code, []byte(r.Stdout), []byte(r.Stderr)
}
