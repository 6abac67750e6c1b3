package harness

import (
	"os"
	"path/filepath"
	"testing"
)

func TestEvents(t *testing.T) {
	start := `{"specversion":"1.0","id":"e1","source":"s","type":"gatehouse.session.start.v1","time":"t","datacontenttype":"application/json","data":{"a":1}}` + "\n"
	dec := `{"specversion":"1.0","id":"e2","type":"gatehouse.tool.decision.v1","data":{ "tool" : "echo" }}` + "\n"
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, []byte(start+"an operator's line\n"+dec+`{"partial`), 0o600); err != nil {
		t.Fatal(err)
	}
	evs := ReadEventsLenient(t, path)
	if len(evs) != 2 || evs[0].Raw != start || evs[1].Raw != dec {
		t.Fatalf("ReadEventsLenient: %+v", evs)
	}
	if e := evs[0]; e.SpecVersion != "1.0" || e.ID != "e1" || e.Source != "s" || e.Time != "t" || e.DataContentType != "application/json" || string(e.Data["a"]) != "1" {
		t.Errorf("attributes: %+v", e)
	}
	if string(evs[1].DataRaw) != `{ "tool" : "echo" }` || Str(evs[1].Data["tool"]) != "echo" {
		t.Errorf("data: %s", evs[1].DataRaw)
	}
	if got := EventsOf(evs, TypeDecision); len(got) != 1 || got[0].ID != "e2" {
		t.Errorf("EventsOf: %+v", got)
	}
	if got := ParseEvents(t, []byte(start+dec)); len(got) != 2 {
		t.Errorf("ParseEvents: %d events", len(got))
	}
	if got := ReadEvents(t, filepath.Join(t.TempDir(), "none")); got != nil {
		t.Errorf("ReadEvents of a missing file: %+v", got)
	}
}

func TestDecodeMsg(t *testing.T) {
	m := DecodeMsg([]byte(`{"jsonrpc":"2.0","id":1.0,"error":{"code":-32080,"message":"denied","data":{"x":1}}}`))
	if string(m.ID) != "1.0" || m.Error == nil || m.Error.Code != -32080 || m.Error.Message != "denied" || string(m.Error.Data) != `{"x":1}` {
		t.Fatalf("DecodeMsg: %+v", m)
	}
	if m := DecodeMsg([]byte("not json")); m.ID != nil || m.Method != "" {
		t.Fatalf("DecodeMsg of a non-message: %+v", m)
	}
}

func TestFrames(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Initialize(`"i"`, "2025-06-18", "c"), `{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"0"}}}` + "\n"},
		{Initialized, `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"},
		{Ping("7"), `{"jsonrpc":"2.0","id":7,"method":"ping"}` + "\n"},
		{ToolCall("1", "echo", `{"a":1}`), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":1}}}` + "\n"},
		{ToolCall("", "echo", `{}`), `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{}}}` + "\n"},
	} {
		if tc.got != tc.want {
			t.Errorf("got  %s\nwant %s", tc.got, tc.want)
		}
	}
}
