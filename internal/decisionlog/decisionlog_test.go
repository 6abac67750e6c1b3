package decisionlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/uuid"
)

const testSource = "gatehouse://local/test"

func TestOpenMode0600EvenWithUmask0(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	p := filepath.Join(t.TempDir(), "d.jsonl")
	l, err := Open(p, testSource)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m != 0o600 {
		t.Fatalf("mode %o, want 600", m)
	}
	if l.Path() != p {
		t.Fatalf("Path() = %q", l.Path())
	}
}

func TestOpenMode0600WithRestrictiveUmask(t *testing.T) {
	old := syscall.Umask(0o277)
	defer syscall.Umask(old)
	p := filepath.Join(t.TempDir(), "d.jsonl")
	l, err := Open(p, testSource)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fi, _ := os.Stat(p)
	if m := fi.Mode().Perm(); m != 0o600 {
		t.Fatalf("mode %o, want 600", m)
	}
}

func TestOpenAppendsNeverTruncates(t *testing.T) {
	p := filepath.Join(t.TempDir(), "d.jsonl")
	prefix := []byte(`{"existing":true}` + "\n")
	if err := os.WriteFile(p, prefix, 0o640); err != nil {
		t.Fatal(err)
	}
	l, err := Open(p, testSource)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := l.Emit(TypeSessionStart, SessionStart{GatehouseVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	want := append(append([]byte{}, prefix...), ev.Bytes...)
	if !bytes.Equal(got, want) {
		t.Fatalf("file:\n%s\nwant:\n%s", got, want)
	}
	fi, _ := os.Stat(p)
	if m := fi.Mode().Perm(); m != 0o640 {
		t.Fatalf("existing file's mode changed to %o", m)
	}
}

func TestOpenRejectsBadSource(t *testing.T) {
	p := filepath.Join(t.TempDir(), "d.jsonl")
	if _, err := Open(p, "not a uri"); !errors.Is(err, ErrInvalidSource) {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("file created despite invalid source: %v", err)
	}
}

func TestOpenErrorNamesPath(t *testing.T) {
	p := filepath.Join(t.TempDir(), "missing-dir", "d.jsonl")
	_, err := Open(p, testSource)
	if err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("err = %v, want it to name %s", err, p)
	}
}

func TestEmitBytesEqualFileAndShape(t *testing.T) {
	p := filepath.Join(t.TempDir(), "d.jsonl")
	l, err := Open(p, testSource)
	if err != nil {
		t.Fatal(err)
	}
	fixed := time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("X", 3600))
	l.now = func() time.Time { return fixed }
	rawID := json.RawMessage(`123456789012345678901234567890`)
	d := ToolDecision{
		Tool: "write_file", Decision: DecisionDeny, ReasonCode: "rule", Reason: "a<b & c>d",
		RPCIDPresent: true, RPCID: rawID, ToolCallID: "req_123456789012345678901234567890",
		ToolCallIDStrength: StrengthWeak, ToolCallIDSource: SourceJSONRPCID, SideEffect: "destructive",
	}
	ev1, err := l.Emit(TypeToolDecision, d)
	if err != nil {
		t.Fatal(err)
	}
	ev2, err := l.Emit(TypeToolDecision, ToolDecision{RPCID: json.RawMessage(`"a<\u0062>"`), RPCIDPresent: true})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	got, _ := os.ReadFile(p)
	if !bytes.Equal(got, append(append([]byte{}, ev1.Bytes...), ev2.Bytes...)) {
		t.Fatalf("file bytes differ from returned bytes:\n%s", got)
	}
	for _, ev := range []Event{ev1, ev2} {
		if ev.Type != TypeToolDecision {
			t.Fatalf("type %q", ev.Type)
		}
		if u, err := uuid.Parse(ev.ID); err != nil || u.Version() != 4 || u.String() != ev.ID {
			t.Fatalf("id %q not a canonical uuid v4", ev.ID)
		}
		b := ev.Bytes
		if b[len(b)-1] != '\n' || bytes.Count(b, []byte("\n")) != 1 {
			t.Fatalf("not one LF-terminated line: %q", b)
		}
		v := jsontext.Value(bytes.Clone(b[:len(b)-1]))
		if !v.IsValid() {
			t.Fatalf("invalid JSON: %s", b)
		}
		c := v.Clone()
		if err := c.Compact(); err != nil || !bytes.Equal(c, v) {
			t.Fatalf("not compact: %s", b)
		}
	}
	wantPrefix := `{"specversion":"1.0","id":"` + ev1.ID + `","source":"gatehouse://local/test","type":"gatehouse.tool.decision.v1","time":"2026-01-02T02:04:05.000000006Z","datacontenttype":"application/json","data":{"tool":"write_file","decision":"deny","reason_code":"rule","reason":"a<b & c>d",`
	if !strings.HasPrefix(string(ev1.Bytes), wantPrefix) {
		t.Fatalf("got  %s\nwant prefix %s", ev1.Bytes, wantPrefix)
	}
	if !bytes.Contains(ev1.Bytes, []byte(`"rpc_id_present":true,"rpc_id":123456789012345678901234567890,`)) {
		t.Fatalf("number id not verbatim: %s", ev1.Bytes)
	}
	if !bytes.Contains(ev2.Bytes, []byte(`"rpc_id":"a<\u0062>",`)) {
		t.Fatalf("string id not verbatim: %s", ev2.Bytes)
	}
	if bytes.Contains(ev1.Bytes, []byte(`"shadow"`)) || bytes.Contains(ev1.Bytes, []byte(`"principal_id"`)) {
		t.Fatalf("omitempty fields written: %s", ev1.Bytes)
	}
}

func TestAbsentRPCIDIsNull(t *testing.T) {
	l, err := Open(filepath.Join(t.TempDir(), "d.jsonl"), testSource)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ev, err := l.Emit(TypeToolDecision, ToolDecision{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(ev.Bytes, []byte(`"rpc_id_present":false,"rpc_id":null,`)) {
		t.Fatalf("%s", ev.Bytes)
	}
}

func TestSessionEventShapes(t *testing.T) {
	l, err := Open(filepath.Join(t.TempDir(), "d.jsonl"), testSource)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	start, err := l.Emit(TypeSessionStart, SessionStart{
		GatehouseVersion: "v0", PID: 42, ServerCommand: ServerCommand([]string{"/bin/srv", "--token=secret"}),
		PolicyName: "p", PolicyVersion: "1", Capture: &Capture{Scope: "s"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := `"data":{"gatehouse_version":"v0","pid":42,"server_command":["/bin/srv"],"policy_name":"p","policy_version":"1","capture":{"scope":"s"}}}` + "\n"; !strings.HasSuffix(string(start.Bytes), want) {
		t.Fatalf("start: %s", start.Bytes)
	}
	if bytes.Contains(start.Bytes, []byte("secret")) {
		t.Fatal("server arguments leaked")
	}
	zero, code := 0, 3
	stop, err := l.Emit(TypeSessionStop, SessionStop{Reason: "client_eof", ExitCode: &code, Capture: &Capture{Scope: "s", State: CaptureComplete, Records: &zero}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `"data":{"reason":"client_eof","exit_code":3,"capture":{"scope":"s","state":"complete","records":0}}}` + "\n"; !strings.HasSuffix(string(stop.Bytes), want) {
		t.Fatalf("stop: %s", stop.Bytes)
	}
	off, err := l.Emit(TypeSessionStop, SessionStop{Reason: "signal"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `"data":{"reason":"signal"}}` + "\n"; !strings.HasSuffix(string(off.Bytes), want) {
		t.Fatalf("stop without capture: %s", off.Bytes)
	}
	if got := ServerCommand(nil); got == nil || len(got) != 0 {
		t.Fatalf("ServerCommand(nil) = %#v", got)
	}
}

func TestConcurrentEmitWholeLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "d.jsonl")
	l, err := Open(p, testSource)
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 16, 200
	big := strings.Repeat("x", 5000)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ids := map[string]bool{}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				ev, err := l.Emit(TypeToolDecision, ToolDecision{Tool: big, Reason: "r"})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				ids[ev.ID] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	l.Close()
	data, _ := os.ReadFile(p)
	lines := bytes.SplitAfter(data, []byte("\n"))
	if last := lines[len(lines)-1]; len(last) == 0 {
		lines = lines[:len(lines)-1]
	}
	if len(lines) != workers*each || len(ids) != workers*each {
		t.Fatalf("%d lines, %d ids, want %d", len(lines), len(ids), workers*each)
	}
	for i, ln := range lines {
		var ev struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(ln, &ev); err != nil || !ids[ev.ID] {
			t.Fatalf("line %d not a whole event (%v)", i+1, err)
		}
		delete(ids, ev.ID)
	}
}

func TestEmitAfterCloseWrappedError(t *testing.T) {
	l, err := Open(filepath.Join(t.TempDir(), "d.jsonl"), testSource)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ev, err := l.Emit(TypeToolDecision, ToolDecision{})
	if !errors.Is(err, os.ErrClosed) {
		t.Fatalf("err = %v, want wrapped os.ErrClosed", err)
	}
	if ev.ID != "" || ev.Bytes != nil {
		t.Fatalf("failed Emit returned non-zero event %+v", ev)
	}
}

// TestEmitLastIsLast: after EmitLast (the session stop event) nothing more
// reaches the file, from Emit or WriteEvents, however late; Close after it
// is a no-op.
func TestEmitLastIsLast(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.jsonl")
	l, err := Open(path, testSource)
	if err != nil {
		t.Fatal(err)
	}
	late, err := l.Encode(TypeToolDecision, ToolDecision{Tool: "late"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Emit(TypeToolDecision, ToolDecision{Tool: "early"}); err != nil {
		t.Fatal(err)
	}
	stop, err := l.EmitLast(TypeSessionStop, SessionStop{Reason: "server_exit"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.WriteEvents(late.Bytes); !errors.Is(err, os.ErrClosed) {
		t.Errorf("WriteEvents after EmitLast: %v, want os.ErrClosed", err)
	}
	if _, err := l.Emit(TypeToolDecision, ToolDecision{Tool: "later"}); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Emit after EmitLast: %v, want os.ErrClosed", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("Close after EmitLast: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(b, stop.Bytes) || bytes.Count(b, []byte("\n")) != 2 {
		t.Errorf("the log does not end with the stop event:\n%s", b)
	}
}

func TestEmitWriteFailureDevFull(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	l, err := Open("/dev/full", testSource)
	if err != nil {
		t.Skipf("cannot open /dev/full: %v", err)
	}
	defer l.Close()
	_, err = l.Emit(TypeToolDecision, ToolDecision{})
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("err = %v, want wrapped ENOSPC", err)
	}
	if !strings.Contains(err.Error(), "/dev/full") {
		t.Fatalf("error does not name the path: %v", err)
	}
}

func TestEmitMarshalError(t *testing.T) {
	l, err := Open(filepath.Join(t.TempDir(), "d.jsonl"), testSource)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Emit(TypeToolDecision, ToolDecision{RPCID: json.RawMessage(`{bad`)}); err == nil {
		t.Fatal("invalid RawMessage accepted")
	}
	if _, err := l.Emit("", nil); err == nil {
		t.Fatal("empty type accepted")
	}
	fi, _ := os.Stat(l.Path())
	if fi.Size() != 0 {
		t.Fatalf("failed emits wrote %d bytes", fi.Size())
	}
}

func TestValidateSource(t *testing.T) {
	for _, tc := range []struct {
		uri  string
		ok   bool
		want string // substring of the error
	}{
		{"gatehouse://local/probe", true, ""},
		{"https://example.com/x", true, ""},
		{"a+b-c.d://x", true, ""},
		{"urn-x://1", true, ""},
		{"", false, "empty"},
		{"gatehouse://", false, "nothing after"},
		{"gatehouse:local", false, `no "://"`},
		{"gatehouse:/local", false, `no "://"`},
		{"://local", false, "empty scheme"},
		{"1abc://local", false, "start with a letter"},
		{"ga_te://local", false, "scheme contains"},
		{"gate house://local", false, "whitespace"},
		{"gatehouse://local probe", false, "whitespace"},
		{"gatehouse://local\tprobe", false, "whitespace"},
		{"gatehouse://local/probe\n", false, "whitespace"},
		{"gatehouse://local\u00a0probe", false, "whitespace"},
		{"gatehouse://local\x00", false, "control"},
		{"gatehouse://\xff", false, "UTF-8"},
	} {
		err := ValidateSource(tc.uri)
		if tc.ok != (err == nil) {
			t.Errorf("ValidateSource(%q) = %v, want ok=%v", tc.uri, err, tc.ok)
			continue
		}
		if err != nil && (!strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalidSource)) {
			t.Errorf("ValidateSource(%q) = %v, want it to mention %q", tc.uri, err, tc.want)
		}
	}
}

func TestToolCallID(t *testing.T) {
	for _, tc := range []struct {
		name             string
		meta             map[string]any
		keys             []string
		present          bool
		raw              string
		id, str, src     string
		generatedPrefixd bool
	}{
		{"strong claudecode", map[string]any{"claudecode/toolUseId": "toolu_1"}, nil, true, `7`, "toolu_1", StrengthStrong, "claudecode/toolUseId", false},
		{"strong tool_call_id", map[string]any{"tool_call_id": "abc"}, nil, true, `7`, "abc", StrengthStrong, "tool_call_id", false},
		{"first key wins", map[string]any{"tool_call_id": "b", "claudecode/toolUseId": "a"}, nil, false, ``, "a", StrengthStrong, "claudecode/toolUseId", false},
		{"empty strong value", map[string]any{"claudecode/toolUseId": ""}, nil, true, `7`, "req_7", StrengthWeak, SourceJSONRPCID, false},
		{"non-string strong value", map[string]any{"claudecode/toolUseId": 5}, nil, true, `"x"`, "req_x", StrengthWeak, SourceJSONRPCID, false},
		{"req_ value ineligible", map[string]any{"claudecode/toolUseId": "req_7"}, nil, true, `8`, "req_8", StrengthWeak, SourceJSONRPCID, false},
		{"gen_ value ineligible", map[string]any{"tool_call_id": "gen_x"}, nil, false, ``, "", StrengthWeak, SourceGenerated, true},
		{"ineligible then next key", map[string]any{"claudecode/toolUseId": "gen_x", "tool_call_id": "t"}, nil, false, ``, "t", StrengthStrong, "tool_call_id", false},
		{"custom keys", map[string]any{"my/id": "m", "tool_call_id": "t"}, []string{"my/id"}, false, ``, "m", StrengthStrong, "my/id", false},
		{"custom keys exclude defaults", map[string]any{"tool_call_id": "t"}, []string{"my/id"}, true, `1`, "req_1", StrengthWeak, SourceJSONRPCID, false},
		{"empty keys admit none", map[string]any{"tool_call_id": "t"}, []string{}, true, `1`, "req_1", StrengthWeak, SourceJSONRPCID, false},
		{"string id", nil, nil, true, `"abc"`, "req_abc", StrengthWeak, SourceJSONRPCID, false},
		{"escaped string id decoded", nil, nil, true, `"a\u0062"`, "req_ab", StrengthWeak, SourceJSONRPCID, false},
		{"big number verbatim", nil, nil, true, `12345678901234567890`, "req_12345678901234567890", StrengthWeak, SourceJSONRPCID, false},
		{"number text kept", nil, nil, true, `1.50e3`, "req_1.50e3", StrengthWeak, SourceJSONRPCID, false},
		{"negative", nil, nil, true, `-3`, "req_-3", StrengthWeak, SourceJSONRPCID, false},
		{"null id", nil, nil, true, `null`, "", StrengthWeak, SourceGenerated, true},
		{"missing id", nil, nil, false, ``, "", StrengthWeak, SourceGenerated, true},
		{"object id", nil, nil, true, `{}`, "", StrengthWeak, SourceGenerated, true},
		{"bool id", nil, nil, true, `true`, "", StrengthWeak, SourceGenerated, true},
		{"bad number", nil, nil, true, `01`, "", StrengthWeak, SourceGenerated, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, str, src := ToolCallID(tc.meta, tc.keys, tc.present, []byte(tc.raw))
			if str != tc.str || src != tc.src {
				t.Fatalf("got (%q,%q,%q), want strength %q source %q", id, str, src, tc.str, tc.src)
			}
			if tc.generatedPrefixd {
				if !strings.HasPrefix(id, PrefixGenerated) {
					t.Fatalf("id %q, want gen_ prefix", id)
				}
				if _, err := uuid.Parse(strings.TrimPrefix(id, PrefixGenerated)); err != nil {
					t.Fatalf("id %q: %v", id, err)
				}
				id2, _, _ := ToolCallID(tc.meta, tc.keys, tc.present, []byte(tc.raw))
				if id2 == id {
					t.Fatal("generated ids repeat")
				}
			} else if id != tc.id {
				t.Fatalf("id %q, want %q", id, tc.id)
			}
		})
	}
}

// TestOpenErrorNamesPathOnce: the path appears once in the message.
func TestOpenErrorNamesPathOnce(t *testing.T) {
	p := filepath.Join(t.TempDir(), "missing-dir", "d.jsonl")
	_, err := Open(p, testSource)
	if err == nil || strings.Count(err.Error(), p) != 1 {
		t.Fatalf("err = %v, want it to name %s once", err, p)
	}
}
