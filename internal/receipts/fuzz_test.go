package receipts

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/decisionlog"
	"github.com/go-json-experiment/json/jsontext"
)

// FuzzInspectRequest checks that InspectRequest never panics and that
// every line it accepts yields a strict, compact JSON receipt whose
// request_line round-trips to the exact bytes and whose rpc_id is the
// line's id token.
func FuzzInspectRequest(f *testing.F) {
	for _, s := range []string{
		callLine(`"a"`, ""),
		callLine(`1e400`, `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18"}`),
		callLine(``, `,"_meta":null`),
		callLine(`null`, `,"_meta":{"io.modelcontextprotocol/protocolVersion":7}`),
		`{"jsonrpc":"2.0","id":"\u2028<>&","method":"tools/call","params":{"name":"\ud83d\ude00"}}` + "\r\n",
		"{}\n", "[]", "\xff",
	} {
		f.Add([]byte(s))
	}
	ev := decisionlog.Event{ID: "00000000-0000-4000-8000-000000000000", Type: decisionlog.TypeToolDecision, Bytes: []byte("{}\n")}
	f.Fuzz(func(t *testing.T, line []byte) {
		req, err := InspectRequest(line)
		if err != nil {
			return
		}
		rec, ok := appendRecord(nil, line, ev, req, "s", 0)
		if !ok {
			t.Fatal("accepted line did not serialize")
		}
		if rec[len(rec)-1] != '\n' || bytes.Count(rec, []byte("\n")) != 1 {
			t.Fatalf("record is not one line: %q", rec)
		}
		v := jsontext.Value(rec[:len(rec)-1])
		if !v.IsValid() {
			t.Fatalf("record is not strict JSON: %q", rec)
		}
		var r struct {
			RequestLine  string          `json:"request_line"`
			RequestBytes int             `json:"request_bytes"`
			RPCID        json.RawMessage `json:"rpc_id"`
			State        string          `json:"declared_protocol_version_state"`
		}
		if err := json.Unmarshal(rec, &r); err != nil {
			t.Fatal(err)
		}
		if r.RequestLine != string(line) || r.RequestBytes != len(line) {
			t.Fatal("request_line does not round-trip")
		}
		if !bytes.Equal(r.RPCID, req.RPCID) {
			t.Fatalf("rpc_id %s, want %s", r.RPCID, req.RPCID)
		}
		if r.State != VersionPresent && r.State != VersionAbsent && r.State != VersionMalformed {
			t.Fatalf("state %q", r.State)
		}
	})
}
