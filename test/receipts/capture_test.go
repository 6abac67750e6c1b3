package receiptse2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/gatehouse-mcp/gatehouse/test/harness"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// frame is one client frame of the main session and what must follow from
// it.
type frame struct {
	name string
	line string
	// reply is the raw id of the response the client waits for; "" when
	// the frame gets none.
	reply string
	// errCode is the JSON-RPC error code of the response; 0 for a result
	// (or no response).
	errCode int
	// forwarded reports whether the server must receive the line.
	forwarded bool
	// rec is the expected receipt; nil when the frame must get none.
	rec *want
}

// want is what a receipt (and the decision event it references) must say.
type want struct {
	tool         string
	decision     string
	rpcIDPresent bool
	// rpcID is the expected rpc_id: the exact token text for numbers and
	// null; for strings the same decoded value.
	rpcID string
	// meta: metadata_pointer is "/params/_meta" (else null).
	meta    bool
	state   string // declared_protocol_version_state
	version string // declared_protocol_version; "" for null
	// strong is the expected strong tool_call_id; "" when it must be weak.
	strong string
}

// canary is an argument value that must appear nowhere but in the receipts,
// what the server received and the echo result.
const canary = "sk-CANARY-7d1f0c"

// withMeta inserts a params._meta member with the raw value meta into an
// LF-terminated tools/call line built by toolCall.
func withMeta(line, meta string) string {
	return strings.TrimSuffix(line, "}}\n") + `,"_meta":` + meta + "}}\n"
}

const pv = "io.modelcontextprotocol/protocolVersion"

func versionMeta(raw string) string { return `{"` + pv + `":` + raw + `}` }

// mainSession is the scripted session of the capture tests: every §8 case
// of one run (allowed and denied calls, LF and CRLF, every kind of id, every
// _meta and declared-version state, a strong tool-use id) and frames that
// must not get receipts.
func mainSession() []frame {
	allow := func(rpcID string, present bool) *want {
		return &want{tool: "echo", decision: "allow", rpcIDPresent: present, rpcID: rpcID, state: "absent"}
	}
	with := func(w *want, f func(*want)) *want { f(w); return w }
	return []frame{
		{name: "initialize", line: initialize(`"init"`, "2025-06-18"), reply: `"init"`, forwarded: true},
		{name: "initialized notification", line: initialized, forwarded: true},
		{name: "ping CRLF", line: crlf(`{"jsonrpc":"2.0","id":"p1","method":"ping"}` + "\n"), reply: `"p1"`, forwarded: true},
		{name: "number id LF, no _meta", line: toolCall("1", "echo", `{"n":1}`), reply: "1", forwarded: true,
			rec: allow("1", true)},
		{name: "string id CRLF, version present", line: crlf(withMeta(toolCall(`"s-2"`, "echo", `{"n":2}`), versionMeta(`"2025-11-25"`))), reply: `"s-2"`, forwarded: true,
			rec: with(allow(`"s-2"`, true), func(w *want) { w.meta, w.state, w.version = true, "present", "2025-11-25" })},
		{name: "id above 2^64", line: toolCall("12345678901234567890", "echo", `{"n":3}`), reply: "12345678901234567890", forwarded: true,
			rec: allow("12345678901234567890", true)},
		{name: "id 2^53+1 CRLF", line: crlf(toolCall("9007199254740993", "echo", `{"n":4}`)), reply: "9007199254740993", forwarded: true,
			rec: allow("9007199254740993", true)},
		{name: "id 1.0", line: toolCall("1.0", "echo", `{"n":5}`), reply: "1.0", forwarded: true,
			rec: allow("1.0", true)},
		{name: "explicit null id", line: toolCall("null", "echo", `{"n":6}`), reply: "null", forwarded: true,
			rec: allow("null", true)},
		{name: "missing id LF", line: toolCall("", "echo", `{"n":7}`), forwarded: true,
			rec: allow("null", false)},
		{name: "missing id CRLF, version not a date", line: crlf(withMeta(toolCall("", "echo", `{"n":8}`), versionMeta(`"2026-13-45"`))), forwarded: true,
			rec: with(allow("null", false), func(w *want) { w.meta, w.state = true, "malformed" })},
		{name: "_meta an array", line: withMeta(toolCall("13", "echo", `{"n":9}`), `["not","an","object"]`), reply: "13", forwarded: true,
			rec: with(allow("13", true), func(w *want) { w.meta, w.state = true, "malformed" })},
		{name: "_meta a string", line: withMeta(toolCall("14", "echo", `{"n":10}`), `"2025-06-18"`), reply: "14", forwarded: true,
			rec: with(allow("14", true), func(w *want) { w.meta, w.state = true, "malformed" })},
		{name: "_meta null", line: withMeta(toolCall("15", "echo", `{"n":11}`), `null`), reply: "15", forwarded: true,
			rec: with(allow("15", true), func(w *want) { w.meta, w.state = true, "malformed" })},
		{name: "_meta empty object", line: withMeta(toolCall("16", "echo", `{"n":12}`), `{}`), reply: "16", forwarded: true,
			rec: with(allow("16", true), func(w *want) { w.meta = true })},
		{name: "version a number", line: withMeta(toolCall("17", "echo", `{"n":13}`), versionMeta(`20260728`)), reply: "17", forwarded: true,
			rec: with(allow("17", true), func(w *want) { w.meta, w.state = true, "malformed" })},
		{name: "version null", line: withMeta(toolCall("18", "echo", `{"n":14}`), versionMeta(`null`)), reply: "18", forwarded: true,
			rec: with(allow("18", true), func(w *want) { w.meta, w.state = true, "malformed" })},
		{name: "version not a real day", line: withMeta(toolCall("19", "echo", `{"n":15}`), versionMeta(`"2025-02-29"`)), reply: "19", forwarded: true,
			rec: with(allow("19", true), func(w *want) { w.meta, w.state = true, "malformed" })},
		{name: "version a leap day CRLF", line: crlf(withMeta(toolCall("20", "echo", `{"n":16}`), versionMeta(`"2024-02-29"`))), reply: "20", forwarded: true,
			rec: with(allow("20", true), func(w *want) { w.meta, w.state, w.version = true, "present", "2024-02-29" })},
		{name: "claudecode/toolUseId", line: withMeta(toolCall("21", "echo", `{"n":17}`), `{"claudecode/toolUseId":"toolu_01RECEIPTS"}`), reply: "21", forwarded: true,
			rec: with(allow("21", true), func(w *want) { w.meta, w.strong = true, "toolu_01RECEIPTS" })},
		{name: "denied LF", line: toolCall("22", "delete", `{"path":"/tmp/x"}`), reply: "22", errCode: -32080,
			rec: &want{tool: "delete", decision: "deny", rpcIDPresent: true, rpcID: "22", state: "absent"}},
		{name: "denied CRLF with _meta", line: crlf(withMeta(toolCall(`"d-23"`, "delete", `{"path":"/tmp/y"}`), `{"claudecode/toolUseId":"toolu_02DENIED","`+pv+`":"2025-06-18"}`)), reply: `"d-23"`, errCode: -32080,
			rec: &want{tool: "delete", decision: "deny", rpcIDPresent: true, rpcID: `"d-23"`, meta: true, state: "present", version: "2025-06-18", strong: "toolu_02DENIED"}},
		{name: "unknown tool denied", line: toolCall("24", "nosuch", `{}`), reply: "24", errCode: -32080,
			rec: &want{tool: "nosuch", decision: "deny", rpcIDPresent: true, rpcID: "24", state: "absent"}},
		{name: "tools/call without a name", line: `{"jsonrpc":"2.0","id":25,"method":"tools/call","params":{"arguments":{}}}` + "\n", reply: "25", errCode: -32602},
		{name: "tools/call with a duplicate member", line: `{"jsonrpc":"2.0","id":26,"method":"tools/call","params":{"name":"echo","name":"echo","arguments":{}}}` + "\n", reply: "*"},
		{name: "tools/list", line: `{"jsonrpc":"2.0","id":27,"method":"tools/list"}` + "\n", reply: "27", forwarded: true},
		{name: "whitespace and member order kept", line: `{ "params" : { "arguments" : { "x" : 1.50 } , "name" : "echo" } , "method" : "tools/call" , "id" : 28 , "jsonrpc" : "2.0" }` + "\r\n", reply: "28", forwarded: true,
			rec: allow("28", true)},
		{name: "escaped string id, non-ASCII and escapes in arguments", line: toolCall(`"\u00e9-29"`, "echo", `{"s":"h\u00e9llo ✓ \"q\" \\ \t","t":"é"}`), reply: `"\u00e9-29"`, forwarded: true,
			rec: allow(`"é-29"`, true)},
		{name: "version 2026-07-28 and tool_call_id", line: withMeta(toolCall("30", "echo", `{"secret":"`+canary+`"}`), `{"`+pv+`":"2026-07-28","tool_call_id":"call-abc"}`), reply: "30", forwarded: true,
			// The canary under "secret" is a keyword-plus-entropy secret of
			// medium confidence: scanned and monitored (docs/scanning.md),
			// still forwarded unchanged, and its value in no record.
			rec: with(allow("30", true), func(w *want) {
				w.meta, w.state, w.version, w.strong, w.decision = true, "present", "2026-07-28", "call-abc", "monitor"
			})},
		{name: "response to no pending request", line: `{"jsonrpc":"2.0","id":"orphan","result":{}}` + "\n"},
		{name: "cancelled notification", line: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":999}}` + "\n", forwarded: true},
		{name: "ping", line: `{"jsonrpc":"2.0","id":"p-end","method":"ping"}` + "\n", reply: `"p-end"`, forwarded: true},
	}
}

// script turns frames into the steps of a client script.
func script(frames []frame) []step {
	out := make([]step, len(frames))
	for i, f := range frames {
		out[i] = step{line: f.line, reply: f.reply}
	}
	return out
}

// TestCaptureSession runs the main session with receipts on and checks
// every receipt field against the frame it was made for, the decision
// events they reference, what the server received, the lifecycle events,
// the file mode, privacy, and that the verifier accepts the capture.
func TestCaptureSession(t *testing.T) {
	t.Parallel()
	f := newFiles(t)
	frames := mainSession()
	h := start(t, wrapRun{flags: f.flags(true), server: f.server()})
	replies := h.play(script(frames))
	h.CloseStdin()
	if code := h.wait(); code != 0 {
		t.Fatalf("gatehouse exited %d; stderr:\n%s", code, h.Tail())
	}
	for i, fr := range frames {
		if fr.reply == "" || fr.reply == "*" {
			continue
		}
		m := decodeMsg(replies[i])
		switch {
		case fr.errCode == 0 && (m.Result == nil || m.Error != nil):
			t.Errorf("%s: response %.300q, want a result", fr.name, replies[i])
		case fr.errCode != 0 && (m.Error == nil || m.Error.Code != fr.errCode):
			t.Errorf("%s: response %.300q, want error %d", fr.name, replies[i], fr.errCode)
		}
	}

	checkReceipts(t, f, frames)

	// What the server received: exactly the forwarded frames, in order,
	// byte for byte, besides the gateway's private tools/list requests
	// and the script's sync pings.
	var want, got strings.Builder
	for _, fr := range frames {
		if fr.forwarded {
			want.WriteString(fr.line)
		}
	}
	for _, l := range harness.SplitLines(harness.ReadFile(t, f.record)) {
		if privateID.MatchString(l) || strings.Contains(l, `"id":"sync-`) {
			continue
		}
		got.WriteString(l)
	}
	if got.String() != want.String() {
		t.Errorf("the server received\n%q\nwant\n%q", got.String(), want.String())
	}

	// Private: the receipts' contents are logged nowhere else.
	if strings.Contains(h.Stderr.String(), canary) {
		t.Errorf("stderr holds a request argument")
	}
	if bytes.Contains(harness.ReadFile(t, f.log), []byte(canary)) {
		t.Errorf("the decision log holds a request argument")
	}

	vcode, v := verifyCapture(t, f.receipts, f.log)
	if vcode != 0 || !v.OK {
		t.Fatalf("verifier exit %d, failed %v; want the capture accepted\n%s", vcode, v.failed(), v.Out)
	}
	if strings.Contains(v.Out, canary) {
		t.Errorf("the verifier's output holds a request argument")
	}
}

// privateID matches the gateway's private tools/list request ids.
var privateID = regexp.MustCompile(`"gatehouse-[0-9a-z]+-[0-9]+"`)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// checkReceipts checks the receipts file of a complete run of frames.
func checkReceipts(t *testing.T, f files, frames []frame) {
	t.Helper()
	fi, err := os.Stat(f.receipts)
	if err != nil {
		t.Fatalf("no receipts file: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("receipts file mode %v, want 0600", fi.Mode().Perm())
	}
	recs, diags := readReceipts(t, f.receipts)
	if diags != 0 {
		t.Errorf("%d capture_incomplete diagnostics in a complete capture", diags)
	}
	var wantFrames []frame
	for _, fr := range frames {
		if fr.rec != nil {
			wantFrames = append(wantFrames, fr)
		}
	}
	if len(recs) != len(wantFrames) {
		t.Fatalf("%d receipts, want %d (one per valid tools/call line)", len(recs), len(wantFrames))
	}
	evs := readEvents(t, f.log)
	byID := map[string][]event{}
	for _, e := range evs {
		byID[e.ID] = append(byID[e.ID], e)
	}
	start := sessionCapture(t, evs, typeStart)
	stop := sessionCapture(t, evs, typeStop)
	if !uuidRE.MatchString(start.Scope) {
		t.Errorf("scope %q is not a random UUID", start.Scope)
	}
	if stop.Scope != start.Scope || stop.State != "complete" || stop.Records == nil || *stop.Records != len(recs) {
		t.Errorf("stop capture %v, want scope %s, complete, %d records", stop, start.Scope, len(recs))
	}

	referenced := map[string]int{}
	for i, r := range recs {
		fr := wantFrames[i]
		w := fr.rec
		t.Run(fmt.Sprintf("%02d %s", i, fr.name), func(t *testing.T) {
			var keys []string
			for k := range r.Members {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			wantKeys := slices.Clone(receiptFields)
			slices.Sort(wantKeys)
			if !slices.Equal(keys, wantKeys) {
				t.Errorf("members %v, want %v", keys, wantKeys)
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, []byte(r.Raw)); err != nil || compact.String()+"\n" != r.Raw {
				t.Errorf("receipt line is not compact JSON plus LF: %.300q", r.Raw)
			}
			if r.Schema != schemaV0 || r.AssertionBasis != "caller_asserted" {
				t.Errorf("schema %q, assertion_basis %q", r.Schema, r.AssertionBasis)
			}
			if r.RequestLine != fr.line {
				t.Errorf("request_line %q, want exactly the received line %q", r.RequestLine, fr.line)
			}
			if string(r.RequestBytes) != strconv.Itoa(len(fr.line)) || r.RequestSHA256 != sha256hex([]byte(fr.line)) {
				t.Errorf("request_bytes %s, request_sha256 %s; want %d and %s", r.RequestBytes, r.RequestSHA256, len(fr.line), sha256hex([]byte(fr.line)))
			}
			if string(r.Sequence) != strconv.Itoa(i) {
				t.Errorf("sequence %s, want %d", r.Sequence, i)
			}
			if r.Scope != start.Scope {
				t.Errorf("scope %q, want the start event's %q", r.Scope, start.Scope)
			}
			if string(r.RPCIDPresent) != strconv.FormatBool(w.rpcIDPresent) || !sameID(r.RPCID, w.rpcID) {
				t.Errorf("rpc_id_present %s, rpc_id %s; want %v, %s", r.RPCIDPresent, r.RPCID, w.rpcIDPresent, w.rpcID)
			}
			wantPtr := "null"
			if w.meta {
				wantPtr = `"/params/_meta"`
			}
			if string(r.MetadataPointer) != wantPtr {
				t.Errorf("metadata_pointer %s, want %s", r.MetadataPointer, wantPtr)
			}
			if w.meta {
				if _, ok := pointer(t, r.RequestLine, harness.Str(r.MetadataPointer)); !ok {
					t.Errorf("metadata_pointer %s does not resolve in request_line", r.MetadataPointer)
				}
			}
			if w.strong != "" && w.meta && strings.Contains(fr.line, "claudecode/toolUseId") {
				// RFC 6901: "/" in a key is escaped as "~1".
				v, ok := pointer(t, r.RequestLine, harness.Str(r.MetadataPointer)+"/claudecode~1toolUseId")
				if !ok || v != w.strong {
					t.Errorf("%s/claudecode~1toolUseId resolves to %v (%v), want %q", harness.Str(r.MetadataPointer), v, ok, w.strong)
				}
			}
			wantVersion := "null"
			if w.version != "" {
				wantVersion = strconv.Quote(w.version)
			}
			if r.VersionState != w.state || string(r.Version) != wantVersion {
				t.Errorf("declared_protocol_version_state %q, declared_protocol_version %s; want %q, %s", r.VersionState, r.Version, w.state, wantVersion)
			}

			// The decision event it references.
			es := byID[r.DecisionEventID]
			if len(es) != 1 {
				t.Fatalf("decision_event_id %q occurs %d times in the decision log, want 1", r.DecisionEventID, len(es))
			}
			e := es[0]
			if r.DecisionSHA256 != sha256hex([]byte(e.Raw)) {
				t.Errorf("decision_sha256 %s is not the SHA-256 of the event line plus LF (%s)", r.DecisionSHA256, sha256hex([]byte(e.Raw)))
			}
			if e.Type != typeDecision || harness.Str(e.Data["tool"]) != w.tool || harness.Str(e.Data["decision"]) != w.decision {
				t.Errorf("references a %s event for tool %s, decision %s; want a tool decision for %s, %s", e.Type, e.Data["tool"], e.Data["decision"], w.tool, w.decision)
			}
			// The decision's projection collapses a missing and a null id.
			if string(e.Data["rpc_id_present"]) != strconv.FormatBool(w.rpcIDPresent) || !sameID(e.Data["rpc_id"], w.rpcID) {
				t.Errorf("decision rpc_id_present %s, rpc_id %s; want %v, %s", e.Data["rpc_id_present"], e.Data["rpc_id"], w.rpcIDPresent, w.rpcID)
			}
			strength, tcid := harness.Str(e.Data["tool_call_id_strength"]), harness.Str(e.Data["tool_call_id"])
			switch {
			case w.strong != "" && (strength != "strong" || tcid != w.strong):
				t.Errorf("tool_call_id %q (%s), want the strong %q", tcid, strength, w.strong)
			case w.strong == "" && strength != "weak":
				t.Errorf("tool_call_id %q is %s, want weak", tcid, strength)
			}
			if forwarded := string(e.Data["forwarded"]) == "true"; forwarded != fr.forwarded {
				t.Errorf("decision says forwarded %v, want %v", forwarded, fr.forwarded)
			}
		})
		referenced[r.DecisionEventID]++
	}
	// Every tool decision of the run is referenced exactly once.
	decisions := eventsOf(evs, typeDecision)
	if len(decisions) != len(recs) {
		t.Errorf("%d tool decisions in the log, %d receipts", len(decisions), len(recs))
	}
	for _, e := range decisions {
		if referenced[e.ID] != 1 {
			t.Errorf("tool decision %s (%s) is referenced by %d receipts, want 1", e.ID, e.Data["tool"], referenced[e.ID])
		}
	}
}

// sameID compares a raw rpc_id with the expected one: strings by decoded
// value, numbers and null by their exact token text.
func sameID(raw json.RawMessage, want string) bool {
	if strings.HasPrefix(want, `"`) && strings.HasPrefix(string(raw), `"`) {
		var a, b string
		return json.Unmarshal(raw, &a) == nil && json.Unmarshal([]byte(want), &b) == nil && a == b
	}
	return string(raw) == want
}

// pointer resolves an RFC 6901 JSON pointer in the JSON text doc and
// returns the value found.
func pointer(t *testing.T, doc, ptr string) (any, bool) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("request_line is not JSON: %v", err)
	}
	if ptr == "" {
		return v, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = obj[tok]; !ok {
			return nil, false
		}
	}
	return v, true
}

// TestReceiptsFileMode checks that the sidecar is created with mode 0600
// whatever the umask (it must not be widened by umask 0, nor narrowed).
func TestReceiptsFileMode(t *testing.T) {
	t.Parallel()
	for _, umask := range []string{"000", "022", "077", "777"} {
		t.Run("umask "+umask, func(t *testing.T) {
			t.Parallel()
			f := newFiles(t)
			h, code := run(t, wrapRun{flags: f.flags(true), server: f.server(), umask: umask}, []step{
				{line: initialize("1", "2025-06-18"), reply: "1"},
				{line: toolCall("2", "echo", `{}`), reply: "2"},
			})
			if code != 0 {
				t.Fatalf("gatehouse exited %d; stderr:\n%s", code, h.Tail())
			}
			fi, err := os.Stat(f.receipts)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode() != 0o600 {
				t.Errorf("receipts file mode %v under umask %s, want -rw-------", fi.Mode(), umask)
			}
			if recs, _ := readReceipts(t, f.receipts); len(recs) != 1 {
				t.Errorf("%d receipts, want 1", len(recs))
			}
		})
	}
}

// TestNoFileWithoutNonDiscoverFrame checks the lazy create: a run whose
// client sent only server/discover requests, or nothing, leaves no file;
// the first other frame creates it, even when no tools/call follows.
func TestNoFileWithoutNonDiscoverFrame(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		script   []step
		wantFile bool
	}{
		{name: "nothing sent"},
		{name: "one server/discover", script: []step{{line: discover("1"), reply: "1"}}},
		{name: "server/discover LF and CRLF", script: []step{
			{line: discover(`"a"`), reply: `"a"`},
			{line: crlf(discover(`"b"`)), reply: `"b"`},
		}},
		{name: "initialize only: created, empty", wantFile: true, script: []step{
			{line: discover("1"), reply: "1"},
			{line: initialize("2", "2025-06-18"), reply: "2"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFiles(t)
			h, code := run(t, wrapRun{flags: f.flags(true), server: f.server()}, tt.script)
			if code != 0 {
				t.Fatalf("gatehouse exited %d; stderr:\n%s", code, h.Tail())
			}
			stop := sessionCapture(t, readEvents(t, f.log), typeStop)
			if stop.State != "complete" || stop.Records == nil || *stop.Records != 0 {
				t.Errorf("stop capture %v, want complete with 0 records", stop)
			}
			if !tt.wantFile {
				if exists(f.receipts) {
					t.Fatalf("a run without a non-discover frame left %s", f.receipts)
				}
				// Nothing to verify: the verifier cannot read it (exit 2).
				if code, _ := verifyCapture(t, f.receipts, f.log); code != 2 {
					t.Errorf("verify of a missing receipts file exits %d, want 2", code)
				}
				return
			}
			fi, err := os.Stat(f.receipts)
			if err != nil {
				t.Fatalf("no receipts file after a non-discover frame: %v", err)
			}
			if fi.Size() != 0 || fi.Mode() != 0o600 {
				t.Errorf("receipts file: %d bytes, mode %v; want empty, 0600", fi.Size(), fi.Mode())
			}
			if code, v := verifyCapture(t, f.receipts, f.log); code != 0 {
				t.Errorf("an empty capture with its lifecycle is rejected (exit %d, %v)", code, v.failed())
			}
		})
	}
}
