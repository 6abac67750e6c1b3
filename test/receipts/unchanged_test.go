package receiptse2e

import (
	"encoding/json"
	"github.com/gatehouse-mcp/gatehouse/test/harness"
	"os"
	"regexp"
	"slices"
	"testing"
)

// sessionResult is what one run of the main session produced.
type sessionResult struct {
	f        files
	code     int
	client   []byte // every byte the client received
	server   []byte // every byte the server received (--record)
	stderr   string
	events   []event
	dirFiles []string
}

func runMainSession(t *testing.T, withReceipts bool) sessionResult {
	t.Helper()
	f := newFiles(t)
	h, code := run(t, wrapRun{flags: f.flags(withReceipts), server: f.server()}, script(mainSession()))
	ents, err := os.ReadDir(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return sessionResult{f: f, code: code, client: h.Received(), server: harness.ReadFile(t, f.record),
		stderr: h.Stderr.String(), events: readEvents(t, f.log), dirFiles: names}
}

// Run-specific values normalised before comparing two runs. Everything
// else must be equal byte for byte.
var (
	// The gateway's private tools/list ids are "gatehouse-<nonce>-<n>"
	// with a per-run nonce (the time the session started, base 36). Only
	// the nonce is replaced; the counter must agree.
	privateNonce = regexp.MustCompile(`"gatehouse-[0-9a-z]+-([0-9]+)"`)
	// slog's time= attribute on stderr diagnostics.
	slogTime = regexp.MustCompile(`time=\S+ `)
)

// TestReceiptsChangeNothingElse runs the main session twice, without and
// with --request-receipts-out, and compares everything else the run
// produced: the bytes the server received and the bytes the client
// received (byte for byte; in the server's, only the per-run nonce of the
// gateway's private tools/list ids is normalised), the exit code, stderr
// (slog timestamps normalised), and the decision log event by event:
// same types in the same order, same envelope apart from `id` and `time`,
// same data apart from the session events' `pid` and `capture` and the
// random `gen_<uuid>` tool_call_id of calls without a usable JSON-RPC id
// (its strength and source must still agree). Policy decisions, JSON-RPC
// id projections, tool_call_ids and their strength are therefore
// unchanged.
func TestReceiptsChangeNothingElse(t *testing.T) {
	t.Parallel()
	off := runMainSession(t, false)
	on := runMainSession(t, true)
	if off.code != 0 || on.code != 0 {
		t.Fatalf("exit codes %d (off) and %d (on), want 0", off.code, on.code)
	}
	if string(off.client) != string(on.client) {
		t.Errorf("the client received different bytes:\noff: %q\non:  %q", off.client, on.client)
	}
	if !privateNonce.MatchString(string(on.server)) {
		t.Errorf("the session made no private tools/list request: the nonce normalisation is not exercised")
	}
	offServer := privateNonce.ReplaceAllString(string(off.server), `"gatehouse-NONCE-$1"`)
	onServer := privateNonce.ReplaceAllString(string(on.server), `"gatehouse-NONCE-$1"`)
	if offServer != onServer {
		t.Errorf("the server received different bytes:\noff: %q\non:  %q", offServer, onServer)
	}
	if a, b := slogTime.ReplaceAllString(off.stderr, ""), slogTime.ReplaceAllString(on.stderr, ""); a != b {
		t.Errorf("stderr differs:\noff:\n%s\non:\n%s", a, b)
	}
	if slices.Contains(off.dirFiles, "requests.jsonl") || !slices.Contains(on.dirFiles, "requests.jsonl") {
		t.Errorf("files: %v without receipts, %v with", off.dirFiles, on.dirFiles)
	}
	if !sameSet(off.dirFiles, slices.DeleteFunc(slices.Clone(on.dirFiles), func(s string) bool { return s == "requests.jsonl" })) {
		t.Errorf("the runs wrote different files: %v and %v", off.dirFiles, on.dirFiles)
	}

	if len(off.events) != len(on.events) {
		t.Fatalf("%d events without receipts, %d with", len(off.events), len(on.events))
	}
	for i := range off.events {
		a, b := off.events[i], on.events[i]
		if a.Type != b.Type || a.SpecVersion != b.SpecVersion || a.Source != b.Source || a.DataContentType != b.DataContentType {
			t.Errorf("event %d: envelope %s %s %s %s vs %s %s %s %s", i, a.Type, a.SpecVersion, a.Source, a.DataContentType, b.Type, b.SpecVersion, b.Source, b.DataContentType)
			continue
		}
		if _, has := a.Data["capture"]; has {
			t.Errorf("event %d (%s) has a capture member without receipts", i, a.Type)
		}
		if a.Type == typeStart || a.Type == typeStop {
			if _, has := b.Data["capture"]; !has {
				t.Errorf("event %d (%s) has no capture member with receipts", i, b.Type)
			}
		}
		da, db := normaliseData(a), normaliseData(b)
		if da != db {
			t.Errorf("event %d (%s) data differs:\noff: %s\non:  %s", i, a.Type, da, db)
		}
	}
}

// normaliseData returns the event's data as canonical JSON without the
// run-specific members.
func normaliseData(e event) string {
	d := map[string]json.RawMessage{}
	for k, v := range e.Data {
		d[k] = v
	}
	switch e.Type {
	case typeStart, typeStop:
		delete(d, "pid")
		delete(d, "capture")
	case typeDecision:
		if harness.Str(d["tool_call_id_source"]) == "generated" {
			d["tool_call_id"] = json.RawMessage(`"gen_RANDOM"`)
		}
	case "gatehouse.scan.v1":
		// The decision event it names has a random id in each run.
		if _, ok := d["decision_event_id"]; ok {
			d["decision_event_id"] = json.RawMessage(`"DECISION_EVENT_ID"`)
		}
	}
	b, _ := json.Marshal(d)
	return string(b)
}
