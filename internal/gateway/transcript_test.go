package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/gatehouse-mcp/gatehouse/internal/audit"
	"github.com/gatehouse-mcp/gatehouse/internal/decisionlog"
	"github.com/gatehouse-mcp/gatehouse/internal/gateway"
	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
	"github.com/gatehouse-mcp/gatehouse/internal/scan"
	"github.com/gatehouse-mcp/gatehouse/internal/transport"
)

var update = flag.Bool("update", false, "rewrite the out sections of testdata/transcripts/*.txtar from what the session does")

// TestTranscripts replays the protocol transcripts in
// testdata/transcripts/*.txtar through a Session over in-memory pipes and
// compares what each peer received, and the decision events written, with
// the archive's "out" section. With -update the out section is rewritten.
//
// An archive holds:
//
//   - "config" (optional): "key: value" lines. role, principal, server_id
//     set the principal and server; policy names a policy file relative to
//     the repository root (examples/policies/readonly-agent.yaml) unless the
//     archive has a "policy.yaml" section; decision_log: off runs without a
//     decision log; scanner: builtin runs with the built-in scanner
//     (scan.New; off, the default, without one); shadow: on runs in
//     shadow mode (gateway.Config.Shadow); fetch_timeout,
//     max_frame_bytes and max_held set those limits.
//   - "policy.yaml" (optional): the policy inline.
//   - "in": the script, one step a line; blank lines and lines starting
//     with "#" are skipped. "c LINE" sends LINE and LF from the client,
//     "s LINE" from the server; "cq GO-STRING" and "sq GO-STRING" send the
//     unquoted bytes exactly (no LF added: for CRLF, invalid UTF-8, a BOM);
//     "sr JSON" answers the last request the server received with result
//     JSON and that request's id (for the gateway's private ids); "se CODE"
//     answers it with an error; "cclose" and "sclose" end the client's and
//     the server's stream; "sleep DURATION" lets time pass (the session
//     runs in a testing/synctest bubble, so time is fake and exact).
//   - "out": for every step, the step itself, then what the server
//     received ("s< "), what the client received ("c< ") and the decision
//     events written ("ev "), each in the order it happened within its
//     kind. UUIDs (event ids, generated tool_call_ids) are numbered in order of appearance ($UUID1, ...);
//     times are the bubble's fake clock, so they are exact.
//
// After the script the client's stream is closed (unless the script did),
// then the server's; both relay loops must return, or the test fails: a
// session that hangs at the end is a defect the transcripts catch.
func TestTranscripts(t *testing.T) {
	forEachTranscript(t, false, func(t *testing.T, file string, ar *txtar.Archive, out string) {
		var want []byte
		outIdx := -1
		for i, f := range ar.Files {
			if f.Name == "out" {
				want, outIdx = f.Data, i
			}
		}
		if *update {
			if outIdx < 0 {
				ar.Files = append(ar.Files, txtar.File{Name: "out"})
				outIdx = len(ar.Files) - 1
			}
			ar.Files[outIdx].Data = []byte(out)
			if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		if outIdx < 0 {
			t.Fatalf("no out section; run with -update to write it:\n%s", out)
		}
		if string(want) != out {
			t.Errorf("transcript differs (run with -update to rewrite it after checking the change):\n%s", lineDiff(string(want), out))
		}
	})
}

// TestTranscriptsLedgerOn replays every transcript with the audit ledger
// on (package audit over an in-memory ledger store): what each peer
// receives and the decision events must be exactly those of the ledger-off
// run in the archive's out section. The two runs take different paths
// through the session (the sequencers that wait for evidence, against the
// decision log's burst writes), so this pins that evidence never changes
// the wire.
func TestTranscriptsLedgerOn(t *testing.T) {
	if *update {
		t.Skip("-update rewrites the ledger-off transcripts only")
	}
	forEachTranscript(t, true, func(t *testing.T, _ string, ar *txtar.Archive, out string) {
		for _, f := range ar.Files {
			if f.Name == "out" {
				if string(f.Data) != out {
					t.Errorf("with the ledger on the session differs from the ledger-off transcript:\n%s", lineDiff(string(f.Data), out))
				}
				return
			}
		}
		t.Fatal("no out section")
	})
}

// forEachTranscript runs every testdata/transcripts/*.txtar in a
// testing/synctest bubble and hands its out text to check.
func forEachTranscript(t *testing.T, ledgerOn bool, check func(t *testing.T, file string, ar *txtar.Archive, out string)) {
	files, err := filepath.Glob("testdata/transcripts/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var out string
			// synctest.Wait waits only for goroutines durably blocked: one
			// blocked on a sync.Mutex (or I/O outside the bubble) would
			// hang the test until the package timeout. Fail faster, with
			// every goroutine's stack.
			watchdog := time.AfterFunc(time.Minute, func() {
				panic("transcript " + file + " did not finish within a minute: a goroutine of the session is blocked on something testing/synctest does not see as durably blocked (a sync.Mutex, I/O)")
			})
			synctest.Test(t, func(t *testing.T) { out = runTranscript(t, ar, ledgerOn) })
			watchdog.Stop()
			if t.Failed() {
				return
			}
			check(t, file, ar, out)
		})
	}
}

// transcriptConfig is the "config" section.
type transcriptConfig struct {
	role, principal, serverID, policyPath string
	decisionLog, scanner, shadow          bool
	fetchTimeout                          time.Duration
	maxFrame, maxHeld                     int
}

func parseConfig(t *testing.T, data []byte) transcriptConfig {
	cfg := transcriptConfig{decisionLog: true, serverID: "transcript"}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			t.Fatalf("config line %d: want key: value, got %q", i+1, line)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "role":
			cfg.role = v
		case "principal":
			cfg.principal = v
		case "server_id":
			cfg.serverID = v
		case "policy":
			cfg.policyPath = v
		case "decision_log":
			cfg.decisionLog = v != "off"
		case "scanner":
			if v != "builtin" && v != "off" {
				t.Fatalf("config line %d: scanner is builtin or off", i+1)
			}
			cfg.scanner = v == "builtin"
		case "shadow":
			if v != "on" && v != "off" {
				t.Fatalf("config line %d: shadow is on or off", i+1)
			}
			cfg.shadow = v == "on"
		case "fetch_timeout":
			d, err := time.ParseDuration(v)
			if err != nil {
				t.Fatalf("config line %d: %v", i+1, err)
			}
			cfg.fetchTimeout = d
		case "max_frame_bytes", "max_held":
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("config line %d: %v", i+1, err)
			}
			if k == "max_held" {
				cfg.maxHeld = n
			} else {
				cfg.maxFrame = n
			}
		default:
			t.Fatalf("config line %d: unknown key %q", i+1, k)
		}
	}
	return cfg
}

// peer collects what the gateway wrote to one side, line by line.
type peer struct {
	mu    sync.Mutex
	lines []string
	done  chan struct{}
}

func collect(r io.Reader) *peer {
	p := &peer{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		br := bufio.NewReader(r)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				p.mu.Lock()
				p.lines = append(p.lines, line)
				p.mu.Unlock()
			}
			if err != nil {
				return
			}
		}
	}()
	return p
}

// take returns the lines collected since the last take.
func (p *peer) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.lines
	p.lines = nil
	return l
}

// transcriptScanner is the built-in scanner, compiled once for every
// transcript that asks for it.
var transcriptScanner = sync.OnceValues(func() (*scan.Scanner, error) { return scan.New(scan.Options{}) })

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

func runTranscript(t *testing.T, ar *txtar.Archive, ledgerOn bool) string {
	sections := map[string][]byte{}
	for _, f := range ar.Files {
		sections[f.Name] = f.Data
	}
	cfg := parseConfig(t, sections["config"])
	var pol *policy.Policy
	var err error
	switch {
	case sections["policy.yaml"] != nil:
		pol, err = policy.Parse("policy.yaml", sections["policy.yaml"])
	case cfg.policyPath != "":
		pol, err = policy.Load(filepath.Join("..", "..", cfg.policyPath))
	default:
		pol = policy.Default()
	}
	if err != nil {
		t.Fatalf("policy: %v", err)
	}
	gcfg := gateway.Config{
		Policy:       pol,
		Principal:    policy.Principal{ID: cfg.principal, Role: cfg.role},
		ServerID:     cfg.serverID,
		FetchTimeout: cfg.fetchTimeout,
		MaxHeld:      cfg.maxHeld,
		Shadow:       cfg.shadow,
	}
	if cfg.scanner {
		sc, err := transcriptScanner()
		if err != nil {
			t.Fatal(err)
		}
		gcfg.Scanner = sc
	}
	logPath := filepath.Join(t.TempDir(), "decisions.jsonl")
	var dlog *decisionlog.Log
	if cfg.decisionLog {
		dlog, err = decisionlog.Open(logPath, "gatehouse://transcript/test")
		if err != nil {
			t.Fatal(err)
		}
		defer dlog.Close()
		gcfg.Log = dlog
	}

	var out strings.Builder
	if ledgerOn {
		led, err := ledger.New(context.Background(), ledger.NewMemStore(), ledger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer led.Close(context.Background())
		counted := &countingAppender{Appender: led}
		defer func() {
			// The ledger-on run must have taken the evidence path: a run
			// that decided a tools/call enqueued records.
			if decided, n := strings.Contains(out.String(), decisionlog.TypeToolDecision), counted.n.Load(); decided != (n > 0) {
				t.Errorf("ledger on: %d records enqueued, tools/call decided: %v", n, decided)
			}
		}()
		rec, err := audit.New(audit.Config{Ledger: counted, GatewayID: "transcript", Policy: pol})
		if err != nil {
			t.Fatal(err)
		}
		gcfg.Evidence = rec
	}

	cr, cw := io.Pipe()   // client -> gateway
	gcr, gcw := io.Pipe() // gateway -> client
	gsr, gsw := io.Pipe() // gateway -> server
	sr, sw := io.Pipe()   // server -> gateway
	sess := gateway.New(gcfg, transport.NewStream(cr, gcw, cfg.maxFrame, nil), transport.NewStream(sr, gsw, cfg.maxFrame, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clientDone := make(chan error, 1)
	serverDone := make(chan error, 1)
	go func() {
		err := sess.RunClient(ctx)
		gsw.Close() // as the stdio front end closes the server's stdin
		clientDone <- err
	}()
	go func() {
		err := sess.RunServer(ctx)
		gcw.Close()
		serverDone <- err
	}()
	toClient, toServer := collect(gcr), collect(gsr)

	evIDs := map[string]string{}
	var evOff int64
	events := func() []string {
		if dlog == nil {
			return nil
		}
		b, err := os.ReadFile(logPath)
		if err != nil {
			t.Fatal(err)
		}
		b = b[evOff:]
		evOff += int64(len(b))
		var evs []string
		for _, line := range strings.SplitAfter(string(b), "\n") {
			if line == "" {
				continue
			}
			line = uuidRE.ReplaceAllStringFunc(line, func(u string) string {
				if n, ok := evIDs[u]; ok {
					return n
				}
				n := fmt.Sprintf("$UUID%d", len(evIDs)+1)
				evIDs[u] = n
				return n
			})
			evs = append(evs, line)
		}
		return evs
	}
	var lastReq jsonrpc.ID
	flush := func() {
		synctest.Wait()
		for _, l := range toServer.take() {
			if m, err := jsonrpc.Parse([]byte(l)); err == nil && m.Kind == jsonrpc.KindRequest {
				lastReq = jsonrpc.NewID(append([]byte(nil), m.ID.Raw()...))
			}
			writeLine(&out, "  s< ", l)
		}
		for _, l := range toClient.take() {
			writeLine(&out, "  c< ", l)
		}
		for _, l := range events() {
			writeLine(&out, "  ev ", l)
		}
	}
	clientClosed, serverClosed := false, false
	send := func(w io.Writer, b []byte) {
		// A write blocks until the gateway reads it; a gateway that
		// stopped reading must not hang the test.
		done := make(chan error, 1)
		go func() { _, err := w.Write(b); done <- err }()
		synctest.Wait()
		select {
		case err := <-done:
			if err != nil {
				fmt.Fprintf(&out, "  ! write failed: %v\n", err)
			}
		default:
			fmt.Fprintf(&out, "  ! write blocked: the gateway is not reading\n")
		}
	}
	for i, step := range strings.Split(string(sections["in"]), "\n") {
		if strings.TrimSpace(step) == "" || strings.HasPrefix(step, "#") {
			continue
		}
		verb, arg, _ := strings.Cut(step, " ")
		out.WriteString(step + "\n")
		switch verb {
		case "c":
			send(cw, []byte(arg+"\n"))
		case "s":
			send(sw, []byte(arg+"\n"))
		case "cq", "sq":
			b, err := strconv.Unquote(arg)
			if err != nil {
				t.Fatalf("in line %d: %s: %v", i+1, verb, err)
			}
			if verb == "cq" {
				send(cw, []byte(b))
			} else {
				send(sw, []byte(b))
			}
		case "sr", "se":
			if !lastReq.Present() {
				t.Fatalf("in line %d: %s: the server has received no request", i+1, verb)
			}
			var b []byte
			if verb == "sr" {
				b = []byte(`{"jsonrpc":"2.0","id":` + string(lastReq.Raw()) + `,"result":` + arg + "}\n")
			} else {
				b = []byte(`{"jsonrpc":"2.0","id":` + string(lastReq.Raw()) + `,"error":{"code":` + arg + `,"message":"scripted error"}}` + "\n")
			}
			send(sw, b)
		case "cclose":
			cw.Close()
			clientClosed = true
		case "sclose":
			sw.Close()
			serverClosed = true
		case "sleep":
			d, err := time.ParseDuration(arg)
			if err != nil {
				t.Fatalf("in line %d: sleep: %v", i+1, err)
			}
			time.Sleep(d)
		default:
			t.Fatalf("in line %d: unknown step %q", i+1, verb)
		}
		flush()
	}
	out.WriteString("end\n")
	if !clientClosed {
		cw.Close()
	}
	flush()
	if !serverClosed {
		sw.Close()
	}
	flush()
	for name, ch := range map[string]chan error{"client": clientDone, "server": serverDone} {
		select {
		case err := <-ch:
			if err != nil {
				fmt.Fprintf(&out, "  ! %s relay: %v\n", name, err)
			}
		default:
			t.Errorf("the %s relay loop did not return after both streams ended", name)
		}
	}
	<-toClient.done
	<-toServer.done
	return out.String()
}

// countingAppender counts the records enqueued in the ledger.
type countingAppender struct {
	audit.Appender
	n atomic.Int64
}

func (c *countingAppender) EnqueueAll(ctx context.Context, recs []ledger.Record) (func() ([]ledger.Entry, error), error) {
	c.n.Add(int64(len(recs)))
	return c.Appender.EnqueueAll(ctx, recs)
}

// writeLine appends one collected line with its prefix: as it is when it
// is valid UTF-8 ending in a lone LF, Go-quoted (prefix + "q") otherwise.
func writeLine(out *strings.Builder, prefix, line string) {
	body, ok := strings.CutSuffix(line, "\n")
	if ok && !strings.HasSuffix(body, "\r") && !strings.ContainsAny(body, "\n") && isPrintableUTF8(body) {
		out.WriteString(prefix + body + "\n")
		return
	}
	out.WriteString(strings.TrimRight(prefix, " ") + "q " + strconv.Quote(line) + "\n")
}

func isPrintableUTF8(s string) bool {
	for _, r := range s {
		if r == 0xFFFD || r < 0x20 || r == 0x7F || (r >= 0x80 && r < 0xA0) || r == 0x2028 || r == 0x2029 || r == 0xFEFF {
			return false
		}
	}
	return true
}

// lineDiff shows the first differing line of want and got with some
// context.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			var b bytes.Buffer
			from := max(0, i-3)
			for j := from; j < i && j < len(g); j++ {
				fmt.Fprintf(&b, "   %s\n", g[j])
			}
			fmt.Fprintf(&b, "-  %s\n+  %s\n", wl, gl)
			return fmt.Sprintf("first difference at out line %d:\n%s", i+1, b.String())
		}
	}
	return "(no difference)"
}

// TestShadowWireMatchesAllowAll: in shadow mode the bytes on the wire are
// exactly those of a run with no policy (the built-in allow-all) and no
// scanner, while the decision log records what would have been denied,
// redacted and withheld. testdata/transcripts/shadow.txtar is run as it
// is and again with its config replaced by "scanner: off, shadow: off" and
// no policy section (the built-in allow-all); the lines the server and the
// client received must be equal. (Unknown tools and argument name case are
// left out of it: an allow-all policy still denies those, shadow mode does
// not; shadow-unknown-tool.txtar pins that.)
func TestShadowWireMatchesAllowAll(t *testing.T) {
	ar, err := txtar.ParseFile("testdata/transcripts/shadow.txtar")
	if err != nil {
		t.Fatal(err)
	}
	allowAll := &txtar.Archive{}
	for _, f := range ar.Files {
		switch f.Name {
		case "policy.yaml", "out":
		case "config":
			allowAll.Files = append(allowAll.Files, txtar.File{Name: "config", Data: []byte("scanner: off\nshadow: off\n")})
		default:
			allowAll.Files = append(allowAll.Files, f)
		}
	}
	var shadowOut, plainOut string
	synctest.Test(t, func(t *testing.T) { shadowOut = runTranscript(t, ar, false) })
	synctest.Test(t, func(t *testing.T) { plainOut = runTranscript(t, allowAll, false) })
	wire := func(out string) string {
		var b strings.Builder
		for _, l := range strings.SplitAfter(out, "\n") {
			if strings.HasPrefix(l, "  s< ") || strings.HasPrefix(l, "  c< ") {
				b.WriteString(l)
			}
		}
		return b.String()
	}
	if w := wire(shadowOut); w != wire(plainOut) || w == "" {
		t.Errorf("the wire in shadow mode differs from an allow-all run:\n%s", lineDiff(wire(plainOut), w))
	}
	for _, want := range []string{
		`"decision":"allow","reason_code":"shadow_mode"`,
		`"shadow_mode":true,"shadow_decisions":[{"action":"redact","matched_rule":"scanning"`,
		`{"action":"deny","matched_rule":"no_prod_deploys","reason":"deploys to prod are refused","stage":"policy"}`,
		`{"action":"deny","matched_rule":"no_injected_responses","reason":"responses with injected instructions are withheld","stage":"policy"}`,
	} {
		if !strings.Contains(shadowOut, want) {
			t.Errorf("the shadow run's decision log lacks %s", want)
		}
	}
	if strings.Contains(wire(shadowOut), "[REDACTED_SECRET]") {
		t.Error("shadow mode redacted bytes on the wire")
	}
}
