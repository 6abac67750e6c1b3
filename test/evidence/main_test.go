package evidencee2e

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/gatehouse-mcp/gatehouse/test/harness"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// Paths set by TestMain.
var (
	gatehouseBin string
	receiptBin   string
	fakeBin      string
	stateHome    string // XDG_STATE_HOME of every gatehouse the tests start
)

// The receipt server's Ed25519 seed (RFC 8032 §7.1, test 1) and the server
// id the keys file configures it for.
const (
	seedHex    = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
	keyedID    = "rs-e2e"
	hmacID     = "rs-hmac"
	hmacSecret = "gatehouse-e2e-hmac-secret-0001"
)

// Deadlines.
const (
	readTimeout = 15 * time.Second // one response
	exitTimeout = 15 * time.Second // gatehouse exiting after client EOF
	cliTimeout  = 30 * time.Second // one gatehouse ledger/keys command
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, cleanup, err := harness.Setup("gatehouse-evidence-e2e-",
		harness.Build{Out: "gatehouse", Pkg: "github.com/gatehouse-mcp/gatehouse/cmd/gatehouse"},
		harness.Build{Out: "receiptserver", Pkg: "github.com/gatehouse-mcp/gatehouse/test/receiptserver"},
		harness.Build{Out: "fakeserver", Pkg: "github.com/gatehouse-mcp/gatehouse/test/fakeserver"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "evidence e2e:", err)
		return 1
	}
	defer cleanup()
	stateHome = filepath.Join(dir, "state")
	gatehouseBin = filepath.Join(dir, "gatehouse")
	receiptBin = filepath.Join(dir, "receiptserver")
	fakeBin = filepath.Join(dir, "fakeserver")
	return m.Run()
}

// ---------------------------------------------------------------------------
// A running gatehouse with a scripted client on its stdio.

// gw is a running gatehouse with a scripted client on its stdio: the
// shared driver (harness.Driver) and the responses read while the test
// waited for another id.
type gw struct {
	*harness.Driver
	t    testing.TB
	held map[string]msg // responses read while waiting for another id
}

// startGW starts `gatehouse [wrapper...] wrap FLAGS -- SERVER...`. Cleanup
// kills gatehouse (not its server) if it has not exited exitTimeout after
// its stdin closed.
func startGW(t testing.TB, wrapper, flags, server []string) *gw {
	t.Helper()
	argv := append([]string(nil), wrapper...)
	argv = append(argv, gatehouseBin, "wrap")
	argv = append(argv, flags...)
	argv = append(argv, "--")
	argv = append(argv, server...)
	d := harness.Start(t, harness.Options{
		Argv: argv, Env: []string{"XDG_STATE_HOME=" + stateHome},
		// The server inherits gatehouse's stderr: after a SIGKILL of
		// gatehouse alone, Wait must not wait for the server to close it.
		WaitDelay:    5 * time.Second,
		CleanupGrace: exitTimeout,
	})
	return &gw{Driver: d, t: t, held: map[string]msg{}}
}

// receiptServer returns the command line of the receipt server with the
// Ed25519 seed and the given server id.
func receiptServer(serverID string, extra ...string) []string {
	return append([]string{receiptBin, "--server-id", serverID, "--ed25519-seed-hex", seedHex}, extra...)
}

// send writes line and a LF to gatehouse's stdin.
func (g *gw) send(line string) { g.t.Helper(); g.SendLine(line) }

// msg is a JSON-RPC message as the tests read it; Raw is the line it
// came in.
type msg = harness.Msg

// response returns the response whose raw id is id, waiting at most
// readTimeout; responses to other ids read meanwhile are kept.
func (g *gw) response(id string) msg {
	g.t.Helper()
	return g.responseWithin(id, readTimeout)
}

func (g *gw) responseWithin(id string, d time.Duration) msg {
	g.t.Helper()
	if m, ok := g.held[id]; ok {
		delete(g.held, id)
		return m
	}
	deadline := time.After(d)
	for {
		select {
		case l, ok := <-g.Lines:
			if !ok {
				g.t.Fatalf("gatehouse closed its stdout before the response to %s; stderr:\n%s", id, g.Tail())
			}
			for _, m := range decodeLine(g.t, l) {
				if m.Method != "" || m.ID == nil {
					continue // a server request or notification
				}
				g.held[string(m.ID)] = m
			}
			if m, ok := g.held[id]; ok {
				delete(g.held, id)
				return m
			}
		case <-deadline:
			g.t.Fatalf("no response to %s within %v; stderr:\n%s", id, d, g.Tail())
		}
	}
}

// decodeLine decodes one line gatehouse wrote: a message, or a batch of
// them (each member's raw is the whole line).
func decodeLine(t testing.TB, l []byte) []msg {
	t.Helper()
	var ms []msg
	if bytes.HasPrefix(bytes.TrimSpace(l), []byte("[")) {
		if err := json.Unmarshal(l, &ms); err != nil {
			t.Fatalf("gatehouse wrote a batch that is not JSON: %q", l)
		}
	} else {
		var m msg
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("gatehouse wrote a line that is not JSON: %q", l)
		}
		ms = append(ms, m)
	}
	for i := range ms {
		ms[i].Raw = l
	}
	return ms
}

// handshake initializes the session (protocol revision 2025-06-18) and
// lists the tools.
func (g *gw) handshake() { g.handshakeRevision("2025-06-18") }

func (g *gw) handshakeRevision(rev string) {
	g.t.Helper()
	g.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"` + rev + `","capabilities":{},"clientInfo":{"name":"evidence-e2e","version":"1"}}}`)
	if m := g.response(`"init"`); m.Result == nil {
		g.t.Fatalf("initialize failed: %s", m.Raw)
	}
	g.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	g.send(`{"jsonrpc":"2.0","id":"list","method":"tools/list"}`)
	if m := g.response(`"list"`); m.Result == nil {
		g.t.Fatalf("tools/list failed: %s", m.Raw)
	}
}

// callLine is a tools/call request with a string id.
func callLine(id, tool, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
}

// call sends a tools/call with string id and waits for its response.
func (g *gw) call(id, tool, args string) msg {
	g.t.Helper()
	g.send(callLine(id, tool, args))
	return g.response(fmt.Sprintf("%q", id))
}

// finish closes the client's stdin and waits for gatehouse to exit; it
// returns the exit code.
func (g *gw) finish() int {
	g.t.Helper()
	g.CloseStdin()
	return g.Wait(exitTimeout)
}

// kill sends SIGKILL to gatehouse (not to its server) and waits for it.
func (g *gw) kill() { g.t.Helper(); g.Kill(exitTimeout) }

func expectResult(t testing.TB, m msg, what string) {
	t.Helper()
	if m.Result == nil || m.Error != nil {
		t.Fatalf("%s: got %s, want a result", what, m.Raw)
	}
}

func expectError(t testing.TB, m msg, code int, what string) {
	t.Helper()
	if m.Error == nil || m.Error.Code != code {
		t.Fatalf("%s: got %s, want error %d", what, m.Raw, code)
	}
}

// ---------------------------------------------------------------------------
// The gatehouse command line besides wrap.

type cliResult = harness.CLIResult

// gh runs `gatehouse ARGS...` in dir ("" for the test's directory) with
// env added to the environment.
func ghIn(t testing.TB, dir string, env []string, args ...string) cliResult {
	t.Helper()
	env = append([]string{"XDG_STATE_HOME=" + stateHome}, env...)
	return harness.RunCLI(t, cliTimeout, dir, env, append([]string{gatehouseBin}, args...)...)
}

func gh(t testing.TB, args ...string) cliResult {
	t.Helper()
	return ghIn(t, "", nil, args...)
}

// mustGH runs gatehouse and fails the test unless it exits 0.
func mustGH(t testing.TB, args ...string) string {
	t.Helper()
	r := gh(t, args...)
	if r.Code != 0 {
		t.Fatalf("gatehouse %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
	}
	return r.Stdout
}

// skeyPath and vkeyPath are the default checkpoint key pair, created by the
// first gatehouse wrap in stateHome.
func skeyPath() string { return filepath.Join(stateHome, "gatehouse", "ledger.skey") }
func vkeyPath() string { return filepath.Join(stateHome, "gatehouse", "ledger.vkey") }

// verifyLedger runs `gatehouse ledger verify` with the default verifier key
// and fails the test unless the ledger verifies.
func verifyLedger(t testing.TB, state string) {
	t.Helper()
	out := mustGH(t, "ledger", "verify", "--state", state, "--key", vkeyPath())
	if !strings.HasPrefix(out, "OK ") {
		t.Fatalf("ledger verify printed %q", out)
	}
}

// ---------------------------------------------------------------------------
// Ledger entries, read with `gatehouse ledger show --json`.

type entry struct {
	Kind         string          `json:"kind"`
	LedgerID     string          `json:"ledger_id"`
	Seq          int64           `json:"ledger_seq"`
	Payload      json.RawMessage `json:"payload"`
	PreviousHash string          `json:"previous_hash"`
	RecordID     string          `json:"record_id"`
	Time         string          `json:"time"`
	leaf         string
}

type scanResult struct {
	Status       string   `json:"status"`
	Reason       string   `json:"reason"`
	ArgumentKeys []string `json:"argument_keys"`
}

// decision is a gateway decision receipt: the payload of an entry of kind
// gateway_decision (a call's decision record) or gateway_outcome (its
// outcome record).
type decision struct {
	GatewayDecisionID   string          `json:"gateway_decision_id"`
	ServerReceiptID     string          `json:"server_receipt_id"`
	GatewayID           string          `json:"gateway_id"`
	ServerID            string          `json:"server_id"`
	ToolName            string          `json:"tool_name"`
	Action              string          `json:"action"`
	MatchedRule         string          `json:"matched_rule"`
	Reason              string          `json:"reason"`
	PolicyVersion       string          `json:"policy_version"`
	MetadataConfidence  *float64        `json:"metadata_confidence"`
	Warnings            []string        `json:"warnings"`
	ArgumentScanResult  *scanResult     `json:"argument_scan_result"`
	ResponseScanResult  *scanResult     `json:"response_scan_result"`
	AuditEventID        string          `json:"audit_event_id"`
	InputHash           *string         `json:"input_hash"`
	OutputHash          string          `json:"output_hash"`
	ServerReceiptStatus string          `json:"server_receipt_status"`
	Phase               string          `json:"phase"`
	CompletesDecisionID string          `json:"completes_decision_id"`
	ServerReceiptBase64 string          `json:"server_receipt_base64"`
	ServerReceiptHash   string          `json:"server_receipt_hash"`
	SynthesizedReceipt  json.RawMessage `json:"synthesized_receipt"`
}

// serverReceipt is the part of a stored server receipt the tests read.
type serverReceipt struct {
	ReceiptID          string `json:"receipt_id"`
	ServerID           string `json:"server_id"`
	ToolName           string `json:"tool_name"`
	ToolCallID         string `json:"tool_call_id"`
	IssuedBy           string `json:"issued_by"`
	VerificationStatus string `json:"verification_status"`
	InputHash          string `json:"input_hash"`
	ReceiptSignature   string `json:"receipt_signature"`
}

// showJSON returns the entries `gatehouse ledger show --json ARGS` prints.
func showJSON(t testing.TB, state string, args ...string) []entry {
	t.Helper()
	out := mustGH(t, append([]string{"ledger", "show", "--state", state, "--json"}, args...)...)
	return parseEntries(t, out)
}

// perCall returns the entries of es that are per-call records (a decision
// or an outcome), leaving out the gateway's tool-state records
// (tool_baseline, tool_quarantine; docs/drift.md).
func perCall(es []entry) []entry {
	var out []entry
	for _, e := range es {
		if e.Kind == "gateway_decision" || e.Kind == "gateway_outcome" {
			out = append(out, e)
		}
	}
	return out
}

func parseEntries(t testing.TB, out string) []entry {
	t.Helper()
	var es []entry
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if l == "" {
			continue
		}
		var e entry
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("ledger show printed a line that is not an entry: %q: %v", l, err)
		}
		e.leaf = l
		es = append(es, e)
	}
	return es
}

func (e entry) decision(t testing.TB) decision {
	t.Helper()
	var d decision
	if err := json.Unmarshal(e.Payload, &d); err != nil {
		t.Fatalf("entry %d: %v", e.Seq, err)
	}
	return d
}

func (e entry) receipt(t testing.TB) serverReceipt {
	t.Helper()
	var r serverReceipt
	if err := json.Unmarshal(e.Payload, &r); err != nil {
		t.Fatalf("entry %d: %v", e.Seq, err)
	}
	return r
}

// callRecord is everything the ledger holds about one tools/call: its
// decision record and, when forwarded, its outcome record (docs/ledger.md,
// "Per-call records").
type callRecord struct {
	tool                     string
	decision, outcome        *entry // kind gateway_decision, gateway_outcome
	decisionRcpt, outcomeRcp decision
	// receipt is the server receipt the outcome carries, as a view: its
	// Payload the receipt exactly as received (or as synthesized), its
	// RecordID the outcome's server_receipt_id, its Seq the outcome's.
	receipt *entry
}

// calls groups the entries into call records, keyed by tool name (each
// test calls a tool once per ledger, unless it reads the records itself),
// checking what docs/ledger.md promises: each entry's record_id is its
// record's audit_event_id, every gateway_decision_id names one record, and
// every outcome completes a decision stored before it.
func calls(t testing.TB, es []entry) map[string]*callRecord {
	t.Helper()
	out := map[string]*callRecord{}
	for _, c := range callsAll(t, es) {
		if _, dup := out[c.tool]; dup {
			t.Fatalf("tool %s was decided twice in this ledger", c.tool)
		}
		out[c.tool] = c
	}
	return out
}

// callsAll is calls as a list, in the order of the decisions.
func callsAll(t testing.TB, es []entry) []*callRecord {
	t.Helper()
	byDec := map[string]*callRecord{}
	var all []*callRecord
	seen := map[string]bool{}
	for i := range es {
		e := &es[i]
		if e.Kind != "gateway_decision" && e.Kind != "gateway_outcome" {
			continue
		}
		d := e.decision(t)
		if d.AuditEventID != e.RecordID {
			t.Fatalf("entry %d (record_id %s) holds the record of audit event %q", e.Seq, e.RecordID, d.AuditEventID)
		}
		if seen[d.GatewayDecisionID] {
			t.Fatalf("gateway_decision_id %s names two records (entry %d)", d.GatewayDecisionID, e.Seq)
		}
		seen[d.GatewayDecisionID] = true
		switch e.Kind {
		case "gateway_decision":
			if d.Phase != "decision" || d.CompletesDecisionID != "" {
				t.Fatalf("decision record at seq %d: phase %q, completes %q", e.Seq, d.Phase, d.CompletesDecisionID)
			}
			c := &callRecord{tool: d.ToolName, decision: e, decisionRcpt: d}
			byDec[d.GatewayDecisionID] = c
			all = append(all, c)
		case "gateway_outcome":
			c := byDec[d.CompletesDecisionID]
			if c == nil || d.Phase != "outcome" {
				t.Fatalf("outcome record at seq %d (phase %q) completes %q, which is not a decision stored before it", e.Seq, d.Phase, d.CompletesDecisionID)
			}
			if c.outcome != nil {
				t.Fatalf("decision %s has two outcomes", d.CompletesDecisionID)
			}
			c.outcome, c.outcomeRcp = e, d
			var payload []byte
			switch {
			case d.ServerReceiptBase64 != "":
				b, err := base64.StdEncoding.DecodeString(d.ServerReceiptBase64)
				if err != nil {
					t.Fatalf("outcome at seq %d: server_receipt_base64: %v", e.Seq, err)
				}
				payload = b
			case d.SynthesizedReceipt != nil:
				payload = d.SynthesizedReceipt
			}
			if payload != nil {
				c.receipt = &entry{Kind: "server_receipt", LedgerID: e.LedgerID, Seq: e.Seq, Payload: payload, RecordID: d.ServerReceiptID}
			}
		}
	}
	return all
}

// ---------------------------------------------------------------------------
// Keys, hashes, files.

// edPublicKey is the receipt server's Ed25519 public key.
func edPublicKey() ed25519.PublicKey {
	seed, _ := hex.DecodeString(seedHex)
	return ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
}

// writeKeysFile writes a receipt keys file configuring keyedID (Ed25519)
// and hmacID (HMAC) and returns its path.
func writeKeysFile(t testing.TB, dir string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "hmac.key"), []byte(hmacSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "receipt-keys.yaml")
	body := fmt.Sprintf("%s:\n  ed25519_public_key: %q\n%s:\n  hmac_secret_file: hmac.key\n",
		keyedID, base64.StdEncoding.EncodeToString(edPublicKey()), hmacID)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// jcsHash is "sha256:" + hex of the RFC 8785 canonical form of raw,
// computed with jsontext alone (independently of the gateway's code).
func jcsHash(t testing.TB, raw string) string {
	t.Helper()
	v := jsontext.Value(raw)
	if err := v.Canonicalize(); err != nil {
		t.Fatalf("canonicalize %s: %v", raw, err)
	}
	sum := sha256.Sum256(v)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func seqs(es []entry) []int64 {
	out := make([]int64, 0, len(es))
	for _, e := range es {
		out = append(out, e.Seq)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
