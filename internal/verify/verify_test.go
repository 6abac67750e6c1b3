package verify

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/decisionlog"
	"github.com/gatehouse-mcp/gatehouse/internal/receipts"
	"github.com/google/uuid"
)

const secret = "s3cr3t-argument-value"

// goodCalls cover the request shapes of request-receipts.md §8: LF and
// CRLF, string, big number, null and missing ids, _meta present, absent
// and not an object, the three version states.
var goodCalls = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + secret + `"}}}` + "\n",
	`{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"claudecode/toolUseId":"toolu_1","io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}` + "\r\n",
	`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/tmp/x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-7-28"}}}` + "\n",
	`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":"not-an-object"}}` + "\n",
	`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{}}}` + "\n",
}

type built struct {
	dir, receipts, dlog string
	scope               string
	events              []decisionlog.Event // tool decision events, in order
}

// build writes a capture the way the relay would: session start, the
// calls (each: decide, emit, record; the write_file call is denied), a
// frame rejection, session stop.
func build(t testing.TB, calls []string, limits receipts.Limits, between func(i int, logPath string)) *built {
	t.Helper()
	dir := t.TempDir()
	b := &built{dir: dir, receipts: filepath.Join(dir, "requests.jsonl"), dlog: filepath.Join(dir, "decisions.jsonl")}
	if err := receipts.CheckPath(b.receipts, []string{b.dlog}); err != nil {
		t.Fatal(err)
	}
	l, err := decisionlog.Open(b.dlog, "gatehouse://local/test")
	if err != nil {
		t.Fatal(err)
	}
	rec := receipts.NewRecorder(b.receipts, limits, nil)
	b.scope = rec.Scope()
	if _, err := l.Emit(decisionlog.TypeSessionStart, decisionlog.SessionStart{
		GatehouseVersion: "test", PID: 1, ServerCommand: []string{"srv"}, Capture: &decisionlog.Capture{Scope: rec.Scope()},
	}); err != nil {
		t.Fatal(err)
	}
	if err := rec.Open(); err != nil {
		t.Fatal(err)
	}
	for i, line := range calls {
		req, err := receipts.InspectRequest([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		var raw []byte
		if req.RPCIDPresent {
			raw = req.RPCID
		}
		decision := "allow"
		if req.Tool == "write_file" {
			decision = "deny"
		}
		id, strength, source := decisionlog.ToolCallID(nil, nil, req.RPCIDPresent, raw)
		ev, err := l.Emit(decisionlog.TypeToolDecision, decisionlog.ToolDecision{
			Tool: req.Tool, Decision: decision, RPCIDPresent: req.RPCIDPresent, RPCID: json.RawMessage(req.RPCID),
			ToolCallID: id, ToolCallIDStrength: strength, ToolCallIDSource: source, Forwarded: decision == "allow",
		})
		if err != nil {
			t.Fatal(err)
		}
		b.events = append(b.events, ev)
		rec.Record([]byte(line), ev, req.RPCIDPresent, raw)
		if between != nil {
			between(i, b.dlog)
		}
	}
	if _, err := l.Emit(decisionlog.TypeFrameRejected, map[string]any{"direction": "client", "reason": "parse error", "bytes": 3}); err != nil {
		t.Fatal(err)
	}
	st, n := rec.State()
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Emit(decisionlog.TypeSessionStop, decisionlog.SessionStop{Reason: "client_eof",
		Capture: &decisionlog.Capture{Scope: rec.Scope(), State: st, Records: &n}}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return b
}

func read(t testing.TB, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func write(t testing.TB, p string, b []byte) {
	t.Helper()
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func splitLines(b []byte) [][]byte {
	out := bytes.SplitAfter(b, []byte("\n"))
	if len(out) > 0 && len(out[len(out)-1]) == 0 {
		out = out[:len(out)-1]
	}
	return out
}

func joinLines(ls [][]byte) []byte { return bytes.Join(ls, nil) }

func digest(t testing.TB, p string) string {
	s := sha256.Sum256(read(t, p))
	st, _ := os.Stat(p)
	return hex.EncodeToString(s[:]) + st.Mode().String() + st.ModTime().String()
}

func capture(t *testing.T, b *built) *Report {
	t.Helper()
	before := digest(t, b.receipts) + digest(t, b.dlog)
	rep, err := Capture(b.receipts, b.dlog)
	if err != nil {
		t.Fatal(err)
	}
	if after := digest(t, b.receipts) + digest(t, b.dlog); after != before {
		t.Fatal("the verifier modified its inputs")
	}
	var text, js bytes.Buffer
	rep.WriteText(&text)
	rep.WriteJSON(&js)
	if strings.Contains(text.String(), secret) || strings.Contains(js.String(), secret) {
		t.Fatalf("report leaks an argument value:\n%s", text.String())
	}
	return rep
}

func TestGoodCaptureAccepted(t *testing.T) {
	b := build(t, goodCalls, receipts.Limits{}, nil)
	rep := capture(t, b)
	if !rep.OK || rep.Verdict != "accepted" {
		var text bytes.Buffer
		rep.WriteText(&text)
		t.Fatalf("good capture rejected:\n%s\nreceipts:\n%s\nlog:\n%s", text.String(), read(t, b.receipts), read(t, b.dlog))
	}
	if rep.Records != len(goodCalls) || rep.ToolDecisions != len(goodCalls) || rep.Scope != b.scope || rep.Events != len(goodCalls)+3 {
		t.Fatalf("counts: %+v", rep)
	}
	if len(rep.Checks) != 10 {
		t.Fatalf("%d checks", len(rep.Checks))
	}
	for i, c := range rep.Checks {
		if c.Name != CheckNames[i] || !c.OK || len(c.Failures) != 0 {
			t.Fatalf("check %d: %+v", i, c)
		}
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back struct {
		OK      bool   `json:"ok"`
		Verdict string `json:"verdict"`
		Checks  []struct {
			Name     string   `json:"name"`
			OK       bool     `json:"ok"`
			Failures []string `json:"failures"`
		} `json:"checks"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || !back.OK || len(back.Checks) != 10 || back.Checks[0].Failures == nil {
		t.Fatalf("JSON: %v %s", err, js.String())
	}
	var text bytes.Buffer
	rep.WriteText(&text)
	if !strings.HasPrefix(text.String(), "capture accepted: all 10 checks hold\n") || !strings.Contains(text.String(), "[ok  ] protocol_version") {
		t.Fatalf("text:\n%s", text.String())
	}
}

func TestEmptyCaptureAccepted(t *testing.T) {
	b := build(t, nil, receipts.Limits{}, nil)
	if got := read(t, b.receipts); len(got) != 0 {
		t.Fatalf("receipts: %q", got)
	}
	if rep := capture(t, b); !rep.OK {
		t.Fatalf("%+v", rep.Checks)
	}
}

// mutate edits one of the two files of a good capture.
type mutation func(t *testing.T, b *built)

func editReceipts(f func(ls [][]byte) [][]byte) mutation {
	return func(t *testing.T, b *built) { write(t, b.receipts, joinLines(f(splitLines(read(t, b.receipts))))) }
}

func editLog(f func(ls [][]byte) [][]byte) mutation {
	return func(t *testing.T, b *built) { write(t, b.dlog, joinLines(f(splitLines(read(t, b.dlog))))) }
}

func replaceIn(ls [][]byte, i int, old, new string) [][]byte {
	if !bytes.Contains(ls[i], []byte(old)) {
		panic("replaceIn: " + old + " not in line")
	}
	ls[i] = bytes.Replace(ls[i], []byte(old), []byte(new), 1)
	return ls
}

// setField rewrites one top-level field of receipt i, keeping order.
func setField(ls [][]byte, i int, field, raw string) [][]byte {
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(ls[i], &m); err != nil {
		panic(err)
	}
	old := `"` + field + `":` + string(m[field])
	return replaceIn(ls, i, old, `"`+field+`":`+raw)
}

// Decision log lines of a 5-call capture: 0 start, 1..5 tool decisions,
// 6 frame rejected, 7 stop.
const (
	logStart   = 0
	logFirst   = 1
	logFrame   = 6
	logStop    = 7
	otherScope = "00000000-0000-4000-8000-000000000001"
)

func TestTamperedCapturesRejected(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate mutation
		want   []string // checks that must fail
	}{
		{"edit a byte of a request line", editReceipts(func(ls [][]byte) [][]byte { return replaceIn(ls, 1, `\"hi\"`, `\"ho\"`) }), []string{CheckRequestDigest}},
		{"edit a byte of the request line's JSON structure", editReceipts(func(ls [][]byte) [][]byte { return replaceIn(ls, 0, `"request_line":"{`, `"request_line":"[`) }), []string{CheckRequestDigest, CheckRPCIDTool, CheckProtocolVersion}},
		{"edit a byte of a decision event", editLog(func(ls [][]byte) [][]byte { return replaceIn(ls, logFirst, `"decision":"allow"`, `"decision":"allOw"`) }), []string{CheckDecisionReference}},
		{"edit request_bytes", editReceipts(func(ls [][]byte) [][]byte { return setField(ls, 2, "request_bytes", "1") }), []string{CheckRequestDigest}},
		{"edit request_sha256", editReceipts(func(ls [][]byte) [][]byte {
			return setField(ls, 2, "request_sha256", `"`+strings.Repeat("0", 64)+`"`)
		}), []string{CheckRequestDigest}},
		{"drop a receipt", editReceipts(func(ls [][]byte) [][]byte { return slices.Delete(ls, 2, 3) }), []string{CheckScopeSequence, CheckEventPopulation, CheckLifecycle}},
		{"drop the last receipt", editReceipts(func(ls [][]byte) [][]byte { return ls[:len(ls)-1] }), []string{CheckEventPopulation, CheckLifecycle}},
		{"drop a decision event", editLog(func(ls [][]byte) [][]byte { return slices.Delete(ls, logFirst+2, logFirst+3) }), []string{CheckDecisionReference, CheckEventPopulation}},
		{"duplicate a receipt", editReceipts(func(ls [][]byte) [][]byte { return slices.Insert(ls, 2, bytes.Clone(ls[1])) }), []string{CheckScopeSequence, CheckEventPopulation, CheckLifecycle}},
		{"duplicate a receipt with its sequence fixed", editReceipts(func(ls [][]byte) [][]byte {
			ls = append(ls, bytes.Clone(ls[1]))
			return setField(ls, len(ls)-1, "sequence", "5")
		}), []string{CheckEventPopulation, CheckLifecycle}},
		{"reorder receipts", editReceipts(func(ls [][]byte) [][]byte { ls[1], ls[2] = ls[2], ls[1]; return ls }), []string{CheckScopeSequence}},
		{"swap scope of all receipts", editReceipts(func(ls [][]byte) [][]byte {
			for i := range ls {
				setField(ls, i, "scope", `"`+otherScope+`"`)
			}
			return ls
		}), []string{CheckLifecycle}},
		{"swap scope of one receipt", editReceipts(func(ls [][]byte) [][]byte { return setField(ls, 3, "scope", `"`+otherScope+`"`) }), []string{CheckScopeSequence}},
		{"swap scope in the stop event", editLog(func(ls [][]byte) [][]byte {
			return replaceIn(ls, logStop, `"capture":{"scope":"`, `"capture":{"scope":"`+otherScope+`","x":"`)
		}), []string{CheckLifecycle}},
		{"duplicate an event id in the decision log", editLog(func(ls [][]byte) [][]byte {
			var ev struct{ ID string }
			json.Unmarshal(ls[logFirst+1], &ev)
			var fr struct{ ID string }
			json.Unmarshal(ls[logFrame], &fr)
			return replaceIn(ls, logFrame, fr.ID, ev.ID)
		}), []string{CheckDecisionReference}},
		{"duplicate a decision event line", editLog(func(ls [][]byte) [][]byte { return slices.Insert(ls, logFrame, bytes.Clone(ls[logFirst])) }), []string{CheckDecisionReference, CheckEventPopulation}},
		{"truncate the last receipt", editReceipts(func(ls [][]byte) [][]byte {
			last := ls[len(ls)-1]
			ls[len(ls)-1] = last[:len(last)-20]
			return ls
		}), []string{CheckLinesComplete}},
		{"drop the final LF of the receipts", editReceipts(func(ls [][]byte) [][]byte {
			last := ls[len(ls)-1]
			ls[len(ls)-1] = last[:len(last)-1]
			return ls
		}), []string{CheckLinesComplete}},
		{"truncate the last decision log line", editLog(func(ls [][]byte) [][]byte {
			last := ls[len(ls)-1]
			ls[len(ls)-1] = last[:len(last)/2]
			return ls
		}), []string{CheckLinesComplete, CheckLifecycle}},
		{"missing stop event", editLog(func(ls [][]byte) [][]byte { return ls[:logStop] }), []string{CheckLifecycle}},
		{"missing start event", editLog(func(ls [][]byte) [][]byte { return ls[1:] }), []string{CheckLifecycle}},
		{"decision log reused by a second run", editLog(func(ls [][]byte) [][]byte { return append(ls, ls...) }), []string{CheckLifecycle, CheckDecisionReference, CheckEventPopulation}},
		{"stop says incomplete", editLog(func(ls [][]byte) [][]byte {
			return replaceIn(ls, logStop, `"state":"complete"`, `"state":"incomplete"`)
		}), []string{CheckLifecycle}},
		{"stop counts differently", editLog(func(ls [][]byte) [][]byte { return replaceIn(ls, logStop, `"records":5`, `"records":6`) }), []string{CheckLifecycle}},
		{"stop without capture", editLog(func(ls [][]byte) [][]byte { return replaceIn(ls, logStop, `"capture":`, `"capturx":`) }), []string{CheckLifecycle}},
		{"decision event outside the session", editLog(func(ls [][]byte) [][]byte {
			first := ls[logFirst]
			return append(slices.Delete(ls, logFirst, logFirst+1), first)
		}), []string{CheckLifecycle}},
		{"diagnostic appended", editReceipts(func(ls [][]byte) [][]byte { return append(ls, []byte(receipts.DiagnosticLine)) }), []string{CheckNoIncompleteDiagnostic}},
		{"other diagnostic", editReceipts(func(ls [][]byte) [][]byte {
			return append(ls, []byte(`{"schema":"gatehouse.request_decision_receipt.v0","diagnostic":"other"}`+"\n"))
		}), []string{CheckNoIncompleteDiagnostic, CheckReceiptFields}},
		{"unknown field", editReceipts(func(ls [][]byte) [][]byte { return replaceIn(ls, 0, `{"schema"`, `{"extra":1,"schema"`) }), []string{CheckReceiptFields}},
		{"missing field", editReceipts(func(ls [][]byte) [][]byte { return replaceIn(ls, 0, `,"assertion_basis":"caller_asserted"`, ``) }), []string{CheckReceiptFields}},
		{"wrong schema", editReceipts(func(ls [][]byte) [][]byte {
			return replaceIn(ls, 0, `request_decision_receipt.v0`, `request_decision_receipt.v1`)
		}), []string{CheckReceiptFields}},
		{"wrong assertion basis", editReceipts(func(ls [][]byte) [][]byte { return setField(ls, 0, "assertion_basis", `"proxy_verified"`) }), []string{CheckReceiptFields}},
		{"sequence as string", editReceipts(func(ls [][]byte) [][]byte { return setField(ls, 0, "sequence", `"0"`) }), []string{CheckReceiptFields}},
		{"sequence as float", editReceipts(func(ls [][]byte) [][]byte { return setField(ls, 0, "sequence", `0.0`) }), []string{CheckReceiptFields}},
		{"uppercase digest", editReceipts(func(ls [][]byte) [][]byte {
			m := map[string]string{}
			json.Unmarshal(ls[0], &m)
			return setField(ls, 0, "request_sha256", `"`+strings.ToUpper(m["request_sha256"])+`"`)
		}), []string{CheckReceiptFields}},
		{"scope not a uuid", editReceipts(func(ls [][]byte) [][]byte {
			for i := range ls {
				setField(ls, i, "scope", `"session-1"`)
			}
			return ls
		}), []string{CheckReceiptFields}},
		{"rpc_id_present as string", editReceipts(func(ls [][]byte) [][]byte { return setField(ls, 0, "rpc_id_present", `"true"`) }), []string{CheckReceiptFields}},
		{"rpc_id object", editReceipts(func(ls [][]byte) [][]byte { return setField(ls, 0, "rpc_id", `{}`) }), []string{CheckReceiptFields}},
		{"duplicate member name", editReceipts(func(ls [][]byte) [][]byte { return replaceIn(ls, 0, `{"schema"`, `{"sequence":0,"schema"`) }), []string{CheckLinesComplete}},
		{"trailing data", editReceipts(func(ls [][]byte) [][]byte { return replaceIn(ls, 0, "}\n", "} {}\n") }), []string{CheckLinesComplete}},
		{"empty line", editReceipts(func(ls [][]byte) [][]byte { return slices.Insert(ls, 1, []byte("\n")) }), []string{CheckLinesComplete}},
		{"not an object", editReceipts(func(ls [][]byte) [][]byte { return slices.Insert(ls, 1, []byte("[1]\n")) }), []string{CheckLinesComplete}},
		{"invalid UTF-8 in the decision log", editLog(func(ls [][]byte) [][]byte { return replaceIn(ls, logFrame, "parse error", "parse \xff") }), []string{CheckLinesComplete}},
		{"duplicate member in the decision log", editLog(func(ls [][]byte) [][]byte {
			return replaceIn(ls, logFrame, `"specversion":"1.0"`, `"specversion":"1.0","specversion":"1.0"`)
		}), []string{CheckLinesComplete}},
		{"string id turned number", editReceipts(func(ls [][]byte) [][]byte { return setField(ls, 1, "rpc_id", `1`) }), []string{CheckRPCIDTool}},
		{"number text changed", editReceipts(func(ls [][]byte) [][]byte { return setField(ls, 2, "rpc_id", `9007199254740992`) }), []string{CheckRPCIDTool}},
		{"explicit null turned absent", editReceipts(func(ls [][]byte) [][]byte { return setField(ls, 3, "rpc_id_present", `false`) }), []string{CheckRPCIDTool}},
		{"absent turned present", editReceipts(func(ls [][]byte) [][]byte { return setField(ls, 4, "rpc_id_present", `true`) }), []string{CheckRPCIDTool}},
		{"version state changed", editReceipts(func(ls [][]byte) [][]byte { return setField(ls, 2, "declared_protocol_version_state", `"present"`) }), []string{CheckProtocolVersion}},
		{"version value changed", editReceipts(func(ls [][]byte) [][]byte { return setField(ls, 1, "declared_protocol_version", `"2025-06-18"`) }), []string{CheckProtocolVersion}},
		{"version null while present", editReceipts(func(ls [][]byte) [][]byte { return setField(ls, 1, "declared_protocol_version", `null`) }), []string{CheckProtocolVersion}},
		{"metadata pointer dropped", editReceipts(func(ls [][]byte) [][]byte { return setField(ls, 1, "metadata_pointer", `null`) }), []string{CheckProtocolVersion}},
		{"metadata pointer invented", editReceipts(func(ls [][]byte) [][]byte { return setField(ls, 0, "metadata_pointer", `"/params/_meta"`) }), []string{CheckProtocolVersion}},
		{"surplus tool decision in the log", editLog(func(ls [][]byte) [][]byte {
			extra := bytes.Clone(ls[logFirst])
			var ev struct{ ID string }
			json.Unmarshal(extra, &ev)
			extra = bytes.Replace(extra, []byte(ev.ID), []byte(uuid.NewString()), 1)
			return slices.Insert(ls, logFrame, extra)
		}), []string{CheckEventPopulation}},
		{"receipt references a session event", func(t *testing.T, b *built) {
			ls := splitLines(read(t, b.dlog))
			var ev struct{ ID string }
			json.Unmarshal(ls[logStart], &ev)
			sum := sha256.Sum256(ls[logStart])
			rs := splitLines(read(t, b.receipts))
			setField(rs, 0, "decision_event_id", `"`+ev.ID+`"`)
			setField(rs, 0, "decision_sha256", `"`+hex.EncodeToString(sum[:])+`"`)
			write(t, b.receipts, joinLines(rs))
		}, []string{CheckEventPopulation}},
		{"jointly rewritten tool name", func(t *testing.T, b *built) {
			// Rewrite the decision event and its digest together: hashes
			// agree, but the tool no longer matches the request line.
			ls := splitLines(read(t, b.dlog))
			ls[logFirst] = bytes.Replace(ls[logFirst], []byte(`"tool":"echo"`), []byte(`"tool":"read_file"`), 1)
			write(t, b.dlog, joinLines(ls))
			sum := sha256.Sum256(ls[logFirst])
			rs := splitLines(read(t, b.receipts))
			setField(rs, 0, "decision_sha256", `"`+hex.EncodeToString(sum[:])+`"`)
			write(t, b.receipts, joinLines(rs))
		}, []string{CheckRPCIDTool}},
		{"jointly rewritten id projection", func(t *testing.T, b *built) {
			ls := splitLines(read(t, b.dlog))
			ls[logFirst+2] = bytes.Replace(ls[logFirst+2], []byte(`"rpc_id":9007199254740993`), []byte(`"rpc_id":9007199254740992`), 1)
			write(t, b.dlog, joinLines(ls))
			sum := sha256.Sum256(ls[logFirst+2])
			rs := splitLines(read(t, b.receipts))
			setField(rs, 2, "decision_sha256", `"`+hex.EncodeToString(sum[:])+`"`)
			write(t, b.receipts, joinLines(rs))
		}, []string{CheckRPCIDTool}},
		{"jointly rewritten pair is not detected by digests", func(t *testing.T, b *built) {
			// Rewrite a request line and its digests consistently: only
			// the recomputations can notice; here they cannot (same tool,
			// id and _meta), and the capture is accepted. This documents
			// the limit of hash agreement.
			rs := splitLines(read(t, b.receipts))
			m := map[string]json.RawMessage{}
			json.Unmarshal(rs[1], &m)
			var line string
			json.Unmarshal(m["request_line"], &line)
			line = strings.Replace(line, `"text":"hi"`, `"text":"HI"`, 1)
			q, _ := json.Marshal(line)
			sum := sha256.Sum256([]byte(line))
			setField(rs, 1, "request_line", string(q))
			setField(rs, 1, "request_sha256", `"`+hex.EncodeToString(sum[:])+`"`)
			write(t, b.receipts, joinLines(rs))
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := build(t, goodCalls, receipts.Limits{}, nil)
			tc.mutate(t, b)
			rep := capture(t, b)
			var text bytes.Buffer
			rep.WriteText(&text)
			if tc.want == nil {
				if !rep.OK {
					t.Fatalf("rejected:\n%s", text.String())
				}
				return
			}
			if rep.OK || rep.Verdict != "rejected" {
				t.Fatalf("tampered capture accepted")
			}
			for _, name := range tc.want {
				c := rep.Check(name)
				if c == nil || c.OK || len(c.Failures) == 0 {
					t.Errorf("check %s did not fail:\n%s", name, text.String())
				}
			}
			if !strings.HasPrefix(text.String(), "capture REJECTED:") {
				t.Fatalf("text:\n%s", text.String())
			}
		})
	}
}

// TestTamperFailuresAreSpecific pins the exact set of failed checks for
// the §8 tamper list, so that a change of attribution is noticed.
func TestTamperFailuresAreSpecific(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate mutation
		want   []string
	}{
		{"edit a byte", editReceipts(func(ls [][]byte) [][]byte { return replaceIn(ls, 1, `\"hi\"`, `\"ho\"`) }), []string{CheckRequestDigest}},
		{"reorder", editReceipts(func(ls [][]byte) [][]byte { ls[1], ls[2] = ls[2], ls[1]; return ls }), []string{CheckScopeSequence}},
		{"missing stop", editLog(func(ls [][]byte) [][]byte { return ls[:logStop] }), []string{CheckLifecycle}},
		{"truncate last receipt", editReceipts(func(ls [][]byte) [][]byte {
			last := ls[len(ls)-1]
			ls[len(ls)-1] = last[:len(last)-20]
			return ls
		}), []string{CheckLinesComplete, CheckEventPopulation}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := build(t, goodCalls, receipts.Limits{}, nil)
			tc.mutate(t, b)
			rep := capture(t, b)
			if got := rep.Failed(); !slices.Equal(got, tc.want) {
				var text bytes.Buffer
				rep.WriteText(&text)
				t.Fatalf("failed %v, want %v\n%s", got, tc.want, text.String())
			}
		})
	}
}

func TestLimitCaptureRejected(t *testing.T) {
	b := build(t, goodCalls, receipts.Limits{MaxRecords: 3}, nil)
	rep := capture(t, b)
	for _, name := range []string{CheckNoIncompleteDiagnostic, CheckLifecycle, CheckEventPopulation} {
		if rep.Check(name).OK {
			t.Errorf("%s did not fail", name)
		}
	}
	// The prefix itself is intact.
	for _, name := range []string{CheckLinesComplete, CheckReceiptFields, CheckScopeSequence, CheckRequestDigest, CheckDecisionReference, CheckRPCIDTool, CheckProtocolVersion} {
		if c := rep.Check(name); !c.OK {
			t.Errorf("%s failed: %v", name, c.Failures)
		}
	}
}

func TestUnreadableInputs(t *testing.T) {
	b := build(t, goodCalls[:1], receipts.Limits{}, nil)
	if _, err := Capture(filepath.Join(b.dir, "missing"), b.dlog); err == nil {
		t.Fatal("missing receipts accepted")
	}
	if _, err := Capture(b.receipts, filepath.Join(b.dir, "missing")); err == nil {
		t.Fatal("missing decision log accepted")
	}
	if _, err := Capture(b.dir, b.dlog); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Fatalf("directory: %v", err)
	}
	if os.Geteuid() != 0 {
		os.Chmod(b.dlog, 0)
		if _, err := Capture(b.receipts, b.dlog); err == nil {
			t.Fatal("unreadable decision log accepted")
		}
	}
}

func TestFailureCap(t *testing.T) {
	b := build(t, goodCalls[:1], receipts.Limits{}, nil)
	// 150 unreferenced tool decisions.
	ls := splitLines(read(t, b.dlog))
	var extra [][]byte
	for i := 0; i < 150; i++ {
		var ev struct{ ID string }
		json.Unmarshal(ls[logFirst], &ev)
		extra = append(extra, bytes.Replace(bytes.Clone(ls[logFirst]), []byte(ev.ID), []byte(uuid.NewString()), 1))
	}
	ls = slices.Insert(ls, 2, extra...)
	write(t, b.dlog, joinLines(ls))
	rep := capture(t, b)
	c := rep.Check(CheckEventPopulation)
	if c.OK || len(c.Failures) != MaxFailuresPerCheck+1 || !strings.Contains(c.Failures[MaxFailuresPerCheck], "50 more") {
		t.Fatalf("%d failures, last %q", len(c.Failures), c.Failures[len(c.Failures)-1])
	}
}
