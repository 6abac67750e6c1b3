package receipts

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/gatehouse-mcp/gatehouse/internal/linesafe"
)

// TestRecordIsLineSafe: a request line holding raw line separators, C1
// controls and DEL in strings (valid JSON: only C0 must be escaped) gets a
// receipt that holds none of them as they are, so a reader splitting on
// any Unicode line break sees one receipt per line; request_line and
// rpc_id decode to the exact line and id.
func TestRecordIsLineSafe(t *testing.T) {
	c := newCapture(t, Limits{})
	if err := c.rec.Open(); err != nil {
		t.Fatal(err)
	}
	line := "{\"jsonrpc\":\"2.0\",\"id\":\"a\u2028b\",\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"t\":\"\u2029\u0085\u009b31m\x7f\\u001b]0;x\\u0007\"}}}\n"
	c.call(line)
	b := c.file()
	if len(lines(b)) != 1 {
		t.Fatalf("%d records, want 1", len(lines(b)))
	}
	rec := b[:len(b)-1]
	for len(rec) > 0 {
		r, size := utf8.DecodeRune(rec)
		if linesafe.Escaped(r) {
			t.Fatalf("receipt holds U+%04X as it is: %q", r, b)
		}
		rec = rec[size:]
	}
	var got struct {
		RequestLine string `json:"request_line"`
		RPCID       string `json:"rpc_id"`
	}
	if err := json.Unmarshal(b, &got); err != nil || got.RequestLine != line || got.RPCID != "a\u2028b" {
		t.Fatalf("receipt decodes to %q, %q (%v)", got.RequestLine, got.RPCID, err)
	}
}
