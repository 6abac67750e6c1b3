package gateway

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/pipeline"
)

// wordFilter is a test response Filter: it denies a response holding deny
// and rewrites one holding redact (replacing it by [REDACTED]).
type wordFilter struct {
	deny, redact string
	ids          *[]string // the id of every call it sees
}

func (wordFilter) Name() string { return "word_filter" }

func (f wordFilter) Filter(_ context.Context, c *pipeline.Call, r *pipeline.Response) error {
	*f.ids = append(*f.ids, c.ID.String())
	switch {
	case bytes.Contains(r.Raw, []byte(f.deny)):
		r.Decide(pipeline.Verdict{Action: pipeline.Deny, Rule: "no_" + f.deny, Reason: "the result names a forbidden word"})
	case bytes.Contains(r.Raw, []byte(f.redact)):
		r.Rewrite(append(bytes.ReplaceAll(bytes.TrimRight(r.Raw, "\n"), []byte(f.redact), []byte("[REDACTED]")), '\n'))
	}
	return nil
}

// TestResponseFilters: a Filter given in Config.Stages sees every response
// to a forwarded tools/call; a deny withholds it (-32082, naming stage and
// rule), a rewrite is what the client gets, and a response neither
// touches is relayed byte for byte.
func TestResponseFilters(t *testing.T) {
	var ids []string
	r := newRig(t, Config{Policy: readonlyPolicy(t, ""), Stages: []pipeline.Stage{wordFilter{deny: "forbidden", redact: "sk-live-1", ids: &ids}}})
	tools, _ := parseToolsPage([]byte(testTools))
	r.sess.catalog.replace(tools)
	for _, tc := range []struct {
		id, result, want string
	}{
		{"1", `{"content":[{"type":"text","text":"fine"}]}`, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"fine"}]}}`},
		{"2", `{"content":[{"type":"text","text":"forbidden"}]}`, `"code":-32082`},
		{"3", `{"content":[{"type":"text","text":"key sk-live-1 here"}]}`, `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"key [REDACTED] here"}]}}`},
	} {
		r.send(`{"jsonrpc":"2.0","id":` + tc.id + `,"method":"tools/call","params":{"name":"read","arguments":{}}}`)
		if got := r.got(); !strings.Contains(got, `"tools/call"`) {
			t.Fatalf("call %s: server got %s", tc.id, got)
		}
		// Another client frame in between: the reader reuses the buffer
		// the call was read into, and the filter must still see its id.
		r.send(`{"jsonrpc":"2.0","id":"p` + tc.id + `-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx","method":"ping"}`)
		r.got()
		r.serve(`{"jsonrpc":"2.0","id":` + tc.id + `,"result":` + tc.result + `}`)
		got := r.recv()
		if !strings.Contains(got, tc.want) {
			t.Errorf("call %s: client got %s, want %s", tc.id, got, tc.want)
		}
		if len(ids) == 0 || ids[len(ids)-1] != tc.id {
			t.Errorf("call %s: the filter saw the call's id as %q", tc.id, ids)
		}
		if tc.id == "2" && (!strings.Contains(got, "word_filter") || !strings.Contains(got, "no_forbidden") || strings.Contains(got, `"text":"forbidden"`)) {
			t.Errorf("withheld answer %s: want the stage and rule named, the result not echoed", got)
		}
	}
}
