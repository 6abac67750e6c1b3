package receipts

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/decisionlog"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/uuid"
)

// capture is a decision log and a recorder in a temp dir, as the relay
// would drive them.
type capture struct {
	t      *testing.T
	dir    string
	log    *decisionlog.Log
	rec    *Recorder
	stderr *bytes.Buffer
}

func newCapture(t *testing.T, limits Limits) *capture {
	t.Helper()
	dir := t.TempDir()
	l, err := decisionlog.Open(filepath.Join(dir, "decisions.jsonl"), "gatehouse://local/test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var stderr bytes.Buffer
	rec := NewRecorder(filepath.Join(dir, "requests.jsonl"), limits, &stderr)
	t.Cleanup(func() { rec.Close() })
	return &capture{t: t, dir: dir, log: l, rec: rec, stderr: &stderr}
}

// call emits the decision event for line and records the receipt.
func (c *capture) call(line string) decisionlog.Event {
	c.t.Helper()
	req, err := InspectRequest([]byte(line))
	if err != nil {
		c.t.Fatal(err)
	}
	ev, err := c.log.Emit(decisionlog.TypeToolDecision, decisionlog.ToolDecision{
		Tool: req.Tool, Decision: "allow", RPCIDPresent: req.RPCIDPresent, RPCID: json.RawMessage(req.RPCID),
	})
	if err != nil {
		c.t.Fatal(err)
	}
	var raw []byte
	if req.RPCIDPresent {
		raw = req.RPCID
	}
	c.rec.Record([]byte(line), ev, req.RPCIDPresent, raw)
	return ev
}

func (c *capture) file() []byte {
	c.t.Helper()
	b, err := os.ReadFile(c.rec.Path())
	if err != nil {
		c.t.Fatal(err)
	}
	return b
}

func lines(b []byte) [][]byte {
	out := bytes.SplitAfter(b, []byte("\n"))
	if len(out) > 0 && len(out[len(out)-1]) == 0 {
		out = out[:len(out)-1]
	}
	return out
}

func callLine(id string, extra string) string {
	idPart := ""
	if id != "" {
		idPart = `"id":` + id + `,`
	}
	return `{"jsonrpc":"2.0",` + idPart + `"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}` + extra + `}}` + "\n"
}

func TestRecordExactBytes(t *testing.T) {
	c := newCapture(t, Limits{})
	if err := c.rec.Open(); err != nil {
		t.Fatal(err)
	}
	line := `{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"echo","arguments":{"t":"<&>\"é"},"_meta":{"claudecode/toolUseId":"toolu_1","io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}` + "\r\n"
	ev := c.call(line)
	rs := sha256.Sum256([]byte(line))
	ds := sha256.Sum256(ev.Bytes)
	q, _ := jsontext.AppendQuote(nil, line)
	want := `{"schema":"gatehouse.request_decision_receipt.v0","request_line":` + string(q) +
		`,"request_bytes":` + itoa(len(line)) + `,"request_sha256":"` + hex.EncodeToString(rs[:]) +
		`","decision_event_id":"` + ev.ID + `","decision_sha256":"` + hex.EncodeToString(ds[:]) +
		`","rpc_id_present":true,"rpc_id":9007199254740993,"scope":"` + c.rec.Scope() + `","sequence":0` +
		`,"metadata_pointer":"/params/_meta","declared_protocol_version_state":"present","declared_protocol_version":"2026-07-28","assertion_basis":"caller_asserted"}` + "\n"
	if got := string(c.file()); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	// request_line round-trips to the exact bytes, CR included.
	var rec struct {
		RequestLine string `json:"request_line"`
	}
	if err := json.Unmarshal(c.file(), &rec); err != nil || rec.RequestLine != line {
		t.Fatalf("request_line does not round-trip: %v %q", err, rec.RequestLine)
	}
	if st, n := c.rec.State(); st != StateComplete || n != 1 {
		t.Fatalf("state %s %d", st, n)
	}
	if c.stderr.Len() != 0 {
		t.Fatalf("stderr: %q", c.stderr)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestRecordFieldVariants(t *testing.T) {
	c := newCapture(t, Limits{})
	if err := c.rec.Open(); err != nil {
		t.Fatal(err)
	}
	type want struct {
		present bool
		id      string
		ptr     string
		state   string
		version string
	}
	cases := []struct {
		line string
		want want
	}{
		{callLine(`"s-1"`, ""), want{true, `"s-1"`, "null", `"absent"`, "null"}},
		{callLine(`12345678901234567890123`, ""), want{true, `12345678901234567890123`, "null", `"absent"`, "null"}},
		{callLine(`null`, ""), want{true, `null`, "null", `"absent"`, "null"}},
		{callLine(``, ""), want{false, `null`, "null", `"absent"`, "null"}},
		{callLine(`1`, `,"_meta":{}`), want{true, `1`, `"/params/_meta"`, `"absent"`, "null"}},
		{callLine(`2`, `,"_meta":7`), want{true, `2`, `"/params/_meta"`, `"malformed"`, "null"}},
		{callLine(`3`, `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18"}`), want{true, `3`, `"/params/_meta"`, `"present"`, `"2025-06-18"`}},
		{callLine(`4`, `,"_meta":{"io.modelcontextprotocol/protocolVersion":"June"}`), want{true, `4`, `"/params/_meta"`, `"malformed"`, "null"}},
		{strings.TrimSuffix(callLine(`5`, ""), "\n") + "\r\n", want{true, `5`, "null", `"absent"`, "null"}},
	}
	for _, tc := range cases {
		c.call(tc.line)
	}
	got := lines(c.file())
	if len(got) != len(cases) {
		t.Fatalf("%d records, want %d", len(got), len(cases))
	}
	for i, tc := range cases {
		m := map[string]json.RawMessage{}
		if err := json.Unmarshal(got[i], &m); err != nil {
			t.Fatal(err)
		}
		if len(m) != 14 {
			t.Errorf("record %d has %d fields", i, len(m))
		}
		check := func(k, v string) {
			if string(m[k]) != v {
				t.Errorf("record %d: %s = %s, want %s", i, k, m[k], v)
			}
		}
		check("rpc_id_present", map[bool]string{true: "true", false: "false"}[tc.want.present])
		check("rpc_id", tc.want.id)
		check("metadata_pointer", tc.want.ptr)
		check("declared_protocol_version_state", tc.want.state)
		check("declared_protocol_version", tc.want.version)
		check("sequence", itoa(i))
		check("request_bytes", itoa(len(tc.line)))
		check("scope", `"`+c.rec.Scope()+`"`)
	}
}

func TestScopeIsFreshUUIDv4(t *testing.T) {
	a, b := NewRecorder("x", Limits{}, nil), NewRecorder("x", Limits{}, nil)
	u, err := uuid.Parse(a.Scope())
	if err != nil || u.Version() != 4 || u.String() != a.Scope() {
		t.Fatalf("scope %q", a.Scope())
	}
	if a.Scope() == b.Scope() {
		t.Fatal("scope repeats across recorders")
	}
}

func TestOpenMode0600(t *testing.T) {
	for _, mask := range []int{0, 0o077, 0o277} {
		old := syscall.Umask(mask)
		c := newCapture(t, Limits{})
		if _, err := os.Lstat(c.rec.Path()); !errors.Is(err, fs.ErrNotExist) {
			t.Fatal("file exists before Open")
		}
		err := c.rec.Open()
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.rec.Open(); err != nil {
			t.Fatalf("second Open: %v", err)
		}
		fi, _ := os.Stat(c.rec.Path())
		if fi.Mode().Perm() != 0o600 {
			t.Fatalf("umask %o: mode %o", mask, fi.Mode().Perm())
		}
	}
}

func TestOpenPathTaken(t *testing.T) {
	c := newCapture(t, Limits{})
	if err := CheckPath(c.rec.Path(), nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.rec.Path(), []byte("someone else's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := c.rec.Open()
	if !errors.Is(err, ErrPathTaken) || !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), c.rec.Path()) {
		t.Fatalf("err = %v", err)
	}
	c.call(callLine("1", ""))
	c.rec.Close()
	if got := string(c.file()); got != "someone else's\n" {
		t.Fatalf("foreign file modified: %q", got)
	}
	if st, _ := c.rec.State(); st != StateIncomplete {
		t.Fatalf("state %s", st)
	}
}

func TestOpenPathTakenBySymlink(t *testing.T) {
	c := newCapture(t, Limits{})
	target := filepath.Join(c.dir, "target")
	if err := os.Symlink(target, c.rec.Path()); err != nil {
		t.Fatal(err)
	}
	if err := c.rec.Open(); !errors.Is(err, ErrPathTaken) {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("Open followed a dangling symlink")
	}
}

// assertLimited checks the common outcome of a limit: the first n records
// are intact, the diagnostic line follows, stderr got the line once, the
// state is incomplete, and later calls add nothing.
func assertLimited(t *testing.T, c *capture, n int) {
	t.Helper()
	before := c.file()
	c.call(callLine("999", ""))
	got := c.file()
	if !bytes.Equal(before, got) {
		t.Fatal("a record was written after receipts were disabled")
	}
	ls := lines(got)
	if len(ls) != n+1 {
		t.Fatalf("%d lines, want %d records + diagnostic", len(ls), n)
	}
	for i := 0; i < n; i++ {
		var r struct {
			Sequence int `json:"sequence"`
		}
		if err := json.Unmarshal(ls[i], &r); err != nil || r.Sequence != i {
			t.Fatalf("record %d damaged: %v", i, err)
		}
	}
	if string(ls[n]) != DiagnosticLine {
		t.Fatalf("last line %q, want the diagnostic", ls[n])
	}
	if c.stderr.String() != StderrDiagnostic+"\n" {
		t.Fatalf("stderr %q", c.stderr)
	}
	if st, recs := c.rec.State(); st != StateIncomplete || recs != n {
		t.Fatalf("state %s %d", st, recs)
	}
}

func TestLimitRequestBytes(t *testing.T) {
	c := newCapture(t, Limits{})
	c.rec.Open()
	c.call(callLine("1", ""))
	// Exactly 1 MiB is allowed.
	pad := func(total int) string {
		base := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"p":""}}}` + "\n"
		return strings.Replace(base, `"p":""`, `"p":"`+strings.Repeat("a", total-len(base))+`"`, 1)
	}
	exact := pad(1 << 20)
	if len(exact) != 1<<20 {
		t.Fatal(len(exact))
	}
	c.call(exact)
	if _, n := c.rec.State(); n != 2 {
		t.Fatalf("1 MiB line refused")
	}
	c.call(pad(1<<20 + 1))
	assertLimited(t, c, 2)
}

func TestLimitRecords(t *testing.T) {
	c := newCapture(t, Limits{})
	c.rec.Open()
	for i := 0; i < 48; i++ {
		c.call(callLine(itoa(i), ""))
	}
	if st, n := c.rec.State(); st != StateComplete || n != 48 {
		t.Fatalf("state %s %d", st, n)
	}
	c.call(callLine("48", ""))
	assertLimited(t, c, 48)
}

func TestLimitFileBytes(t *testing.T) {
	c := newCapture(t, Limits{})
	c.rec.Open()
	big := callLine("1", "")
	big = strings.Replace(big, `"text":"hi"`, `"text":"`+strings.Repeat("b", 900<<10)+`"`, 1)
	n := 0
	for {
		before, _ := os.Stat(c.rec.Path())
		c.call(big)
		if st, _ := c.rec.State(); st == StateIncomplete {
			break
		}
		n++
		after, _ := os.Stat(c.rec.Path())
		if after.Size() <= before.Size() {
			t.Fatal("no progress")
		}
	}
	if n != 4 {
		t.Fatalf("%d records of ~900 KiB fit, want 4", n)
	}
	fi, _ := os.Stat(c.rec.Path())
	if fi.Size() > int64(DefaultLimits.MaxFileBytes) {
		t.Fatalf("file is %d bytes, over the limit", fi.Size())
	}
	assertLimited(t, c, 4)
}

func TestLimitDecisionBytes(t *testing.T) {
	c := newCapture(t, Limits{})
	c.rec.Open()
	c.call(callLine("1", ""))
	line := callLine("2", "")
	ev, err := c.log.Emit(decisionlog.TypeToolDecision, decisionlog.ToolDecision{Tool: "echo", Reason: strings.Repeat("r", 1<<20), RPCIDPresent: true, RPCID: json.RawMessage("2")})
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Bytes) <= 1<<20 {
		t.Fatal("event not big enough")
	}
	c.rec.Record([]byte(line), ev, true, []byte("2"))
	assertLimited(t, c, 1)
}

func TestDisabledByBadInput(t *testing.T) {
	line := callLine("1", "")
	for _, tc := range []struct {
		name string
		do   func(c *capture)
	}{
		{"zero event (emit failed)", func(c *capture) { c.rec.Record([]byte(line), decisionlog.Event{}, true, []byte("1")) }},
		{"nil line (batch member)", func(c *capture) {
			ev, _ := c.log.Emit(decisionlog.TypeToolDecision, nil)
			c.rec.Record(nil, ev, true, []byte("1"))
		}},
		{"not a tool decision", func(c *capture) {
			ev, _ := c.log.Emit(decisionlog.TypeFrameRejected, nil)
			c.rec.Record([]byte(line), ev, true, []byte("1"))
		}},
		{"not tools/call", func(c *capture) {
			ev, _ := c.log.Emit(decisionlog.TypeToolDecision, nil)
			c.rec.Record([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\n"), ev, true, []byte("1"))
		}},
		{"id projection differs", func(c *capture) {
			ev, _ := c.log.Emit(decisionlog.TypeToolDecision, nil)
			c.rec.Record([]byte(line), ev, true, []byte(`"1"`))
		}},
		{"presence differs", func(c *capture) {
			ev, _ := c.log.Emit(decisionlog.TypeToolDecision, nil)
			c.rec.Record([]byte(line), ev, false, nil)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCapture(t, Limits{})
			c.rec.Open()
			c.call(line)
			tc.do(c)
			assertLimited(t, c, 1)
		})
	}
}

func TestRecordBeforeOpenAndAfterClose(t *testing.T) {
	c := newCapture(t, Limits{})
	c.call(callLine("1", ""))
	if st, _ := c.rec.State(); st != StateIncomplete {
		t.Fatal("Record before Open left the capture complete")
	}
	if _, err := os.Lstat(c.rec.Path()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("Record created the file")
	}
	if c.stderr.String() != StderrDiagnostic+"\n" {
		t.Fatalf("stderr %q", c.stderr)
	}

	c2 := newCapture(t, Limits{})
	c2.rec.Open()
	c2.call(callLine("1", ""))
	if err := c2.rec.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c2.rec.Close(); err != nil {
		t.Fatal(err)
	}
	c2.call(callLine("2", ""))
	if st, n := c2.rec.State(); st != StateIncomplete || n != 1 {
		t.Fatalf("state %s %d", st, n)
	}
	if len(lines(c2.file())) != 1 {
		t.Fatal("wrote after Close")
	}
}

func TestWriteFailure(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full")
	}
	c := newCapture(t, Limits{})
	c.rec.Open()
	c.call(callLine("1", ""))
	c.rec.mu.Lock()
	real := c.rec.f
	c.rec.f = full
	c.rec.mu.Unlock()
	c.call(callLine("2", ""))
	c.call(callLine("3", ""))
	if st, n := c.rec.State(); st != StateIncomplete || n != 1 {
		t.Fatalf("state %s %d", st, n)
	}
	if c.stderr.String() != StderrDiagnostic+"\n" {
		t.Fatalf("stderr %q", c.stderr)
	}
	c.rec.mu.Lock()
	c.rec.f = real
	c.rec.mu.Unlock()
	full.Close()
	if len(lines(c.file())) != 1 {
		t.Fatal("prefix damaged")
	}
}

func TestPartialWriteDiagnosticOnOwnLine(t *testing.T) {
	c := newCapture(t, Limits{})
	c.rec.Open()
	c.call(callLine("1", ""))
	// Simulate a record write that stopped part-way.
	c.rec.mu.Lock()
	c.rec.f.Write([]byte(`{"schema":"gatehouse.req`))
	c.rec.partial = true
	c.rec.disable()
	c.rec.mu.Unlock()
	ls := lines(c.file())
	if len(ls) != 3 || string(ls[2]) != DiagnosticLine {
		t.Fatalf("lines %q", ls)
	}
}

func TestConcurrentRecord(t *testing.T) {
	c := newCapture(t, Limits{})
	c.rec.Open()
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.call(callLine(itoa(i), ""))
		}()
	}
	wg.Wait()
	ls := lines(c.file())
	if len(ls) != 40 {
		t.Fatalf("%d lines", len(ls))
	}
	for i, l := range ls {
		var r struct {
			Sequence int `json:"sequence"`
		}
		if err := json.Unmarshal(l, &r); err != nil || r.Sequence != i {
			t.Fatalf("line %d: %v seq %d", i, err, r.Sequence)
		}
	}
}

func TestLimitsDefaults(t *testing.T) {
	r := NewRecorder("x", Limits{MaxRecords: 2}, nil)
	want := DefaultLimits
	want.MaxRecords = 2
	if r.limits != want {
		t.Fatalf("%+v", r.limits)
	}
	if DefaultLimits != (Limits{1 << 20, 48, 4 << 20, 1 << 20}) {
		t.Fatalf("DefaultLimits %+v", DefaultLimits)
	}
}
