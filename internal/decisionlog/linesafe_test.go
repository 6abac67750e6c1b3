package decisionlog

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// hazards are the characters no decision-log line may hold as they are:
// every C0 and C1 control, DEL, NEL, U+2028 and U+2029 (linesafe.Escaped).
var hazards = func() []rune {
	var rs []rune
	for r := rune(0); r < 0x20; r++ {
		rs = append(rs, r)
	}
	for r := rune(0x7F); r <= 0x9F; r++ {
		rs = append(rs, r)
	}
	return append(rs, '\u2028', '\u2029')
}()

// unicodeLines splits b at every Unicode line break (LF, VT, FF, CR, NEL,
// U+2028, U+2029), as a line-oriented reader may.
func unicodeLines(b []byte) [][]byte {
	var out [][]byte
	start := 0
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		i += size
		switch r {
		case '\n', '\v', '\f', '\r', '\u0085', '\u2028', '\u2029':
			out = append(out, b[start:i-size])
			start = i
		}
	}
	if start < len(b) {
		out = append(out, b[start:])
	}
	return out
}

// TestEventsAreLineSafe: a tool name, a reason and argument-derived
// strings (the tool call id, an rpc_id string) holding each control and
// line break are written escaped, by the fast path (a tool decision) and
// by encoding/json (a refused event; a decision whose rpc_id has
// whitespace): each event is one line under any Unicode line splitting,
// and decodes to the same strings.
func TestEventsAreLineSafe(t *testing.T) {
	p := filepath.Join(t.TempDir(), "d.jsonl")
	l, err := Open(p, testSource)
	if err != nil {
		t.Fatal(err)
	}
	type emitted struct {
		ev   Event
		tool string
	}
	var all []emitted
	emit := func(typ string, data any, tool string) {
		t.Helper()
		ev, err := l.Emit(typ, data)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, emitted{ev, tool})
	}
	names := []string{"x\u001b]0;pwned\u0007", "a\u2028b", "c\u2029d", "n\u0085l", "del\u007f", "csi\u009b31m"}
	for _, r := range hazards {
		names = append(names, "t"+string(r)+"t")
	}
	for _, name := range names {
		emit(TypeToolDecision, ToolDecision{Tool: name, Decision: DecisionDeny, Reason: "reason " + name, MatchedRule: name, ToolCallID: name,
			RPCIDPresent: true, RPCID: json.RawMessage(`"` + name[:1] + "\u2028\u0085\u009b\x7f" + `"`), ShadowDecisions: []ShadowDecision{{Reason: name, Stage: name}}}, name)
		// An rpc_id that is a string holding the name as valid JSON
		// (C0 escaped, the rest as it is), with whitespace: encoding/json
		// writes this event.
		quoted, err := jsontext.AppendQuote([]byte(" "), name)
		if err != nil {
			t.Fatal(err)
		}
		emit(TypeToolDecision, ToolDecision{Tool: name, RPCIDPresent: true, RPCID: json.RawMessage(quoted)}, name)
		emit(TypeToolRefused, ToolRefused{Tool: name, Reason: name, RPCID: json.RawMessage(`"` + "\u2028\u0085\u009b" + `"`)}, name)
	}
	l.Close()
	file, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	for _, e := range all {
		want = append(want, e.ev.Bytes...)
	}
	if !bytes.Equal(file, want) {
		t.Fatal("the file differs from the events' Bytes (receipts hash Bytes)")
	}
	for i, e := range all {
		b := e.ev.Bytes
		for _, r := range hazards[:] {
			if r != '\n' && bytes.ContainsRune(b, r) || r == '\n' && bytes.IndexByte(b, '\n') != len(b)-1 {
				t.Errorf("event %d (tool %q) holds U+%04X as it is: %q", i, e.tool, r, b)
			}
		}
		if n := len(unicodeLines(b)); n != 1 {
			t.Errorf("event %d (tool %q) is %d lines to a Unicode line splitter: %q", i, e.tool, n, b)
		}
		var got struct {
			Data struct {
				Tool  string          `json:"tool"`
				Rsn   string          `json:"reason"`
				RPCID json.RawMessage `json:"rpc_id"`
			} `json:"data"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if got.Data.Tool != e.tool {
			t.Errorf("event %d: tool decodes to %q, want %q", i, got.Data.Tool, e.tool)
		}
	}
	if n := len(unicodeLines(file)); n != len(all) {
		t.Errorf("the log is %d lines to a Unicode line splitter, want %d", n, len(all))
	}
}
