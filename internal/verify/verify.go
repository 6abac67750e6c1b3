// Package verify checks a request–decision receipt capture against the
// decision log it references (shared/spec/request-receipts.md §6;
// docs/request-receipts.md). It backs `gatehouse verify capture`.
//
// The verifier opens both inputs read-only and never modifies, moves or
// deletes them: rejected artifacts stay as evidence. It streams the
// decision log line by line with a per-line cap and keeps only what the
// receipts reference, so a decision log of any size verifies in bounded
// memory. Failure messages name line numbers and field names, never
// request arguments or other contents.
package verify

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"unicode/utf8"

	"github.com/gatehouse-mcp/gatehouse/internal/decisionlog"
	"github.com/gatehouse-mcp/gatehouse/internal/jcs"
	"github.com/gatehouse-mcp/gatehouse/internal/linesafe"
	"github.com/gatehouse-mcp/gatehouse/internal/receipts"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/uuid"
)

// Check names, in the order of request-receipts.md §6 (1–10).
const (
	CheckLinesComplete          = "lines_complete"           // 1: complete, UTF-8, strict JSON object lines
	CheckReceiptFields          = "receipt_fields"           // 2: every field, right type, schema
	CheckNoIncompleteDiagnostic = "no_incomplete_diagnostic" // 3: no capture_incomplete line
	CheckLifecycle              = "lifecycle"                // 4: one start and one stop event matching the capture
	CheckScopeSequence          = "scope_sequence"           // 5: one scope; sequence 0,1,2,… in file order
	CheckRequestDigest          = "request_digest"           // 6: request_bytes and request_sha256 match request_line
	CheckDecisionReference      = "decision_reference"       // 7: each referenced id occurs once; decision_sha256 matches
	CheckEventPopulation        = "event_population"         // 8: referenced ids = tool-decision ids, as multisets
	CheckRPCIDTool              = "rpc_id_tool"              // 9: id presence/type/text and tool name agree
	CheckProtocolVersion        = "protocol_version"         // 10: metadata and declared version fields recompute
)

// CheckNames lists every check in report order.
var CheckNames = []string{
	CheckLinesComplete, CheckReceiptFields, CheckNoIncompleteDiagnostic, CheckLifecycle,
	CheckScopeSequence, CheckRequestDigest, CheckDecisionReference, CheckEventPopulation,
	CheckRPCIDTool, CheckProtocolVersion,
}

// Input limits of the verifier.
const (
	// MaxReceiptsBytes is the largest receipts file read: the sidecar's
	// own 4 MiB limit. A larger file is rejected (lines_complete) and not
	// read further.
	MaxReceiptsBytes = 4 << 20
	// MaxEventLineBytes is the longest decision-log line parsed. A longer
	// line is rejected (lines_complete); its bytes are skipped, not held.
	MaxEventLineBytes = 8 << 20
	// MaxFailuresPerCheck bounds the messages kept per check; the rest are
	// counted in one final message.
	MaxFailuresPerCheck = 100
)

// Check is the outcome of one named check.
type Check struct {
	// Name is one of the Check* constants.
	Name string `json:"name"`
	// OK is true when the check holds.
	OK bool `json:"ok"`
	// Failures describe each violation by file and line number (1-based)
	// and field name; never by content. Empty when OK.
	Failures []string `json:"failures"`

	dropped int
}

// Report is the verdict on one capture.
type Report struct {
	// OK is true only when every check holds: the capture is accepted.
	OK bool `json:"ok"`
	// Verdict is "accepted" or "rejected".
	Verdict string `json:"verdict"`
	// Receipts and DecisionLog are the input paths as given.
	Receipts    string `json:"receipts"`
	DecisionLog string `json:"decision_log"`
	// Records is the number of receipt lines (diagnostic lines excluded).
	Records int `json:"records"`
	// Scope is the scope of the first receipt, "" when there is none.
	Scope string `json:"scope"`
	// Events is the number of decision-log lines; ToolDecisions the number
	// of gatehouse.tool.decision.v1 events among them.
	Events        int `json:"decision_log_lines"`
	ToolDecisions int `json:"tool_decisions"`
	// Checks holds one entry per check, in the order of CheckNames.
	Checks []Check `json:"checks"`
}

// Check returns the named check, or nil.
func (r *Report) Check(name string) *Check {
	for i := range r.Checks {
		if r.Checks[i].Name == name {
			return &r.Checks[i]
		}
	}
	return nil
}

// Failed returns the names of the failed checks, in order.
func (r *Report) Failed() []string {
	var out []string
	for _, c := range r.Checks {
		if !c.OK {
			out = append(out, c.Name)
		}
	}
	return out
}

// WriteText writes a short human summary: the verdict, the counts, one
// line per check and, under each failed check, its failures.
func (r *Report) WriteText(w io.Writer) error {
	var b bytes.Buffer
	if r.OK {
		fmt.Fprintf(&b, "capture accepted: all %d checks hold\n", len(r.Checks))
	} else {
		fmt.Fprintf(&b, "capture REJECTED: %d of %d checks failed\n", len(r.Failed()), len(r.Checks))
	}
	fmt.Fprintf(&b, "  receipts:     %s (%d records, scope %s)\n", r.Receipts, r.Records, orNone(r.Scope))
	fmt.Fprintf(&b, "  decision log: %s (%d lines, %d tool decisions)\n", r.DecisionLog, r.Events, r.ToolDecisions)
	for _, c := range r.Checks {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(&b, "  [%s] %s\n", mark, c.Name)
		for _, f := range c.Failures {
			fmt.Fprintf(&b, "         %s\n", f)
		}
	}
	if r.OK {
		b.WriteString("  supports: these retained proxy bytes associate each received tools/call line with its retained decision event;\n" +
			"  not: forwarding, delivery, execution, vendor identity, hook linkage, or the absence of unobserved calls.\n")
	}
	_, err := w.Write(b.Bytes())
	return err
}

// WriteJSON writes the report as indented JSON followed by LF: the
// machine-readable verdict of `gatehouse verify capture --json`, with one
// entry per check in the order of CheckNames.
func (r *Report) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// Capture verifies the receipts at receiptsPath against the decision log at
// decisionLogPath and returns the verdict. It returns an error (and no
// report) only when an input cannot be opened or read: a missing file, a
// directory, an I/O error. Everything about the contents is a check
// failure in the report. Both files are opened read-only.
func Capture(receiptsPath, decisionLogPath string) (*Report, error) {
	rf, err := openInput("receipts", receiptsPath)
	if err != nil {
		return nil, err
	}
	defer rf.Close()
	df, err := openInput("decision log", decisionLogPath)
	if err != nil {
		return nil, err
	}
	defer df.Close()
	rep, err := verify(rf, df)
	if err != nil {
		return nil, err
	}
	rep.Receipts, rep.DecisionLog = receiptsPath, decisionLogPath
	return rep, nil
}

func openInput(what, path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("verify capture: %s: %w", what, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("verify capture: %s: %w", what, err)
	}
	if st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("verify capture: %s: %s is a directory", what, path)
	}
	return f, nil
}

// Receipt fields in the order of request-receipts.md §3.
const (
	fSchema = iota
	fRequestLine
	fRequestBytes
	fRequestSHA
	fEventID
	fDecisionSHA
	fRPCIDPresent
	fRPCID
	fScope
	fSequence
	fMetaPointer
	fVersionState
	fVersion
	fAssertion
	numFields
)

var fieldNames = [numFields]string{
	"schema", "request_line", "request_bytes", "request_sha256", "decision_event_id",
	"decision_sha256", "rpc_id_present", "rpc_id", "scope", "sequence", "metadata_pointer",
	"declared_protocol_version_state", "declared_protocol_version", "assertion_basis",
}

func fieldIndex(name string) int {
	for i, n := range fieldNames {
		if n == name {
			return i
		}
	}
	return -1
}

// receipt is one record line of the receipts file, with a validity bit per
// field: checks use a field only when it is valid (receipt_fields reports
// the others).
type receipt struct {
	line  int // 1-based line number in the receipts file
	pos   int // 0-based index among record lines
	valid uint16

	requestLine  []byte
	requestBytes int64
	requestSHA   string
	eventID      string
	decisionSHA  string
	rpcIDPresent bool
	rpcID        []byte // raw token
	scope        string
	sequence     int64
	metaPointer  []byte // raw: "/params/_meta" or null
	versionState string
	version      []byte // raw: string or null
}

func (r *receipt) has(fields ...int) bool {
	for _, f := range fields {
		if r.valid&(1<<f) == 0 {
			return false
		}
	}
	return true
}

// refEvent is what the decision log holds for one referenced event id.
type refEvent struct {
	count     int   // lines with this id, any type
	lines     []int // their line numbers (first few)
	toolCount int   // of which gatehouse.tool.decision.v1
	// Of the first line with this id:
	line   int
	typ    string
	sum    [32]byte
	decode string // why data could not be read, "" when fine
	tool   *string
	rpcOK  bool // data.rpc_id_present is a bool and data.rpc_id a value
	rpcPre bool
	rpcID  []byte
}

// sessionEvent is a session start or stop event.
type sessionEvent struct {
	line    int
	problem string // why data.capture could not be read
	scope   *string
	state   *string
	records *int64
}

type state struct {
	p      objectParser
	checks map[string]*Check
}

func (s *state) fail(check, format string, args ...any) {
	c := s.checks[check]
	c.OK = false
	if len(c.Failures) >= MaxFailuresPerCheck {
		c.dropped++
		return
	}
	c.Failures = append(c.Failures, fmt.Sprintf(format, args...))
}

// verify is Capture on readers.
func verify(receiptsR, logR io.Reader) (*Report, error) {
	s := &state{checks: map[string]*Check{}}
	rep := &Report{}
	for _, n := range CheckNames {
		rep.Checks = append(rep.Checks, Check{Name: n, OK: true, Failures: []string{}})
	}
	for i := range rep.Checks {
		s.checks[rep.Checks[i].Name] = &rep.Checks[i]
	}

	recs, err := s.readReceipts(receiptsR, rep)
	if err != nil {
		return nil, err
	}
	refs := map[string]*refEvent{}
	for _, r := range recs {
		if r.has(fEventID) {
			refs[r.eventID] = &refEvent{}
		}
	}
	starts, stops, err := s.readLog(logR, rep, refs)
	if err != nil {
		return nil, err
	}
	s.checkLifecycle(recs, starts, stops, refs, rep)
	s.checkScopeSequence(recs)
	s.checkDigest(recs)
	s.checkReferences(recs, refs)
	s.checkRequests(recs, refs)

	rep.OK = true
	for i := range rep.Checks {
		c := &rep.Checks[i]
		if c.dropped > 0 {
			c.Failures = append(c.Failures, fmt.Sprintf("… and %d more failures of this check not listed", c.dropped))
		}
		if !c.OK {
			rep.OK = false
		}
	}
	rep.Verdict = "rejected"
	if rep.OK {
		rep.Verdict = "accepted"
	}
	return rep, nil
}

// readReceipts reads and checks (1, 2, 3) every receipts line.
func (s *state) readReceipts(rd io.Reader, rep *Report) ([]*receipt, error) {
	lr := newLineReader(rd, MaxReceiptsBytes)
	var recs []*receipt
	var total int64
	for {
		line, st, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("verify capture: read receipts: %w", err)
		}
		total += lr.size
		n := lr.num
		if total > MaxReceiptsBytes {
			s.fail(CheckLinesComplete, "receipts: file exceeds %d bytes (the sidecar limit) at line %d; not read further", MaxReceiptsBytes, n)
			break
		}
		switch st {
		case lineTooLong:
			s.fail(CheckLinesComplete, "receipts line %d: longer than %d bytes", n, MaxReceiptsBytes)
			recs = append(recs, &receipt{line: n, pos: len(recs)})
			continue
		case lineTruncated:
			s.fail(CheckLinesComplete, "receipts line %d: incomplete (no LF at end of file)", n)
		}
		if st == lineComplete && string(line) == receipts.DiagnosticLine {
			s.fail(CheckNoIncompleteDiagnostic, "receipts line %d: capture_incomplete diagnostic: receipts were disabled by a limit or a failure", n)
			continue
		}
		r, isDiag, parsed := s.parseReceipt(line, st, n, len(recs))
		if isDiag {
			s.fail(CheckNoIncompleteDiagnostic, "receipts line %d: diagnostic line: the capture is incomplete", n)
			continue
		}
		if !parsed && bytes.Contains(line, []byte(`"diagnostic"`)) {
			s.fail(CheckNoIncompleteDiagnostic, "receipts line %d: damaged line that looks like a diagnostic", n)
		}
		recs = append(recs, r)
	}
	rep.Records = len(recs)
	for _, r := range recs {
		if r.has(fScope) {
			rep.Scope = r.scope
			break
		}
	}
	return recs, nil
}

// parseReceipt checks one receipts line (1 and 2). isDiag reports a
// diagnostic line (any object with a "diagnostic" member), which is not a
// record; parsed reports that the line is a strict JSON object.
func (s *state) parseReceipt(line []byte, st lineStatus, n, pos int) (r *receipt, isDiag, parsed bool) {
	r = &receipt{line: n, pos: pos}
	body := line
	if st == lineComplete {
		body = line[:len(line)-1]
	}
	if !utf8.Valid(body) {
		s.fail(CheckLinesComplete, "receipts line %d: invalid UTF-8", n)
		return r, false, false
	}
	raws := [numFields][]byte{}
	var unknown []string
	diag := false
	err := s.p.members(body, func(name string, raw []byte) {
		if i := fieldIndex(name); i >= 0 {
			raws[i] = raw
			return
		}
		if name == "diagnostic" {
			diag = true
			return
		}
		unknown = append(unknown, name)
	})
	if err != nil {
		s.fail(CheckLinesComplete, "receipts line %d: %s", n, syntaxReason(err))
		return r, false, false
	}
	if diag {
		// The exact diagnostic line never gets here.
		s.fail(CheckReceiptFields, "receipts line %d: diagnostic line that is not exactly the schema v0 capture_incomplete diagnostic", n)
		return r, true, true
	}
	for _, name := range unknown {
		s.fail(CheckReceiptFields, "receipts line %d: unknown member %s (schema v0 has exactly 14 fields)", n, safeName(name))
	}
	bad := func(f int, want string) {
		s.fail(CheckReceiptFields, "receipts line %d: field %s: want %s", n, fieldNames[f], want)
	}
	for f := 0; f < numFields; f++ {
		raw := raws[f]
		if raw == nil {
			s.fail(CheckReceiptFields, "receipts line %d: missing field %s", n, fieldNames[f])
			continue
		}
		ok := true
		switch f {
		case fSchema:
			ok = string(raw) == `"`+receipts.Schema+`"`
			if !ok {
				bad(f, `"`+receipts.Schema+`"`)
			}
		case fRequestLine:
			v, good := unquote(raw)
			if ok = good; ok {
				r.requestLine = v
			} else {
				bad(f, "a string")
			}
		case fRequestBytes, fSequence:
			v, good := nonNegInt(raw)
			if ok = good; ok {
				if f == fRequestBytes {
					r.requestBytes = v
				} else {
					r.sequence = v
				}
			} else {
				bad(f, "a non-negative integer")
			}
		case fRequestSHA, fDecisionSHA:
			v, good := unquote(raw)
			if ok = good && isHexSHA256(v); ok {
				if f == fRequestSHA {
					r.requestSHA = string(v)
				} else {
					r.decisionSHA = string(v)
				}
			} else {
				bad(f, "64 lowercase hex digits")
			}
		case fEventID:
			v, good := unquote(raw)
			if ok = good && len(v) > 0; ok {
				r.eventID = string(v)
			} else {
				bad(f, "a non-empty string")
			}
		case fRPCIDPresent:
			switch string(raw) {
			case "true":
				r.rpcIDPresent = true
			case "false":
			default:
				ok = false
				bad(f, "a boolean")
			}
		case fRPCID:
			switch raw[0] {
			case '"', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
				r.rpcID = bytes.Clone(raw)
			default:
				ok = false
				bad(f, "a string, a number or null")
			}
		case fScope:
			v, good := unquote(raw)
			if good {
				u, err := uuid.Parse(string(v))
				good = err == nil && u.String() == string(v)
			}
			if ok = good; ok {
				r.scope = string(v)
			} else {
				bad(f, "a UUID in canonical lowercase form")
			}
		case fMetaPointer:
			if ok = string(raw) == "null" || raw[0] == '"'; ok {
				r.metaPointer = bytes.Clone(raw)
			} else {
				bad(f, "a string or null")
			}
		case fVersionState:
			v, _ := unquote(raw)
			switch string(v) {
			case receipts.VersionPresent, receipts.VersionAbsent, receipts.VersionMalformed:
				r.versionState = string(v)
			default:
				ok = false
				bad(f, "present, absent or malformed")
			}
		case fVersion:
			if ok = string(raw) == "null" || raw[0] == '"'; ok {
				r.version = bytes.Clone(raw)
			} else {
				bad(f, "a string or null")
			}
		case fAssertion:
			ok = string(raw) == `"`+receipts.AssertionBasis+`"`
			if !ok {
				bad(f, `"`+receipts.AssertionBasis+`"`)
			}
		}
		if ok {
			r.valid |= 1 << f
		}
	}
	return r, false, true
}

// readLog streams the decision log: check 1 for every line, and it keeps
// what the checks need: the referenced events (refs, filled in place),
// the session events, and the unreferenced tool decisions (reported by
// event_population).
func (s *state) readLog(rd io.Reader, rep *Report, refs map[string]*refEvent) (starts, stops []*sessionEvent, err error) {
	lr := newLineReader(rd, MaxEventLineBytes)
	omitted := 0
	for {
		line, st, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("verify capture: read decision log: %w", err)
		}
		n := lr.num
		rep.Events++
		switch st {
		case lineTooLong:
			s.fail(CheckLinesComplete, "decision log line %d: longer than %d bytes; not parsed", n, MaxEventLineBytes)
			continue
		case lineTruncated:
			s.fail(CheckLinesComplete, "decision log line %d: incomplete (no LF at end of file)", n)
		}
		body := line
		if st == lineComplete {
			body = line[:len(line)-1]
		}
		if !utf8.Valid(body) {
			s.fail(CheckLinesComplete, "decision log line %d: invalid UTF-8", n)
			continue
		}
		var id, typ, data []byte
		err = s.p.members(body, func(name string, raw []byte) {
			switch name {
			case "id":
				id = raw
			case "type":
				typ = raw
			case "data":
				data = raw
			}
		})
		if err != nil {
			s.fail(CheckLinesComplete, "decision log line %d: %s", n, syntaxReason(err))
			continue
		}
		idStr, okID := unquote(id)
		typStr, okTyp := unquote(typ)
		if !okID || !okTyp || len(idStr) == 0 {
			s.fail(CheckEventPopulation, "decision log line %d: not an event with a string id and type", n)
			continue
		}
		isTool := string(typStr) == decisionlog.TypeToolDecision
		if isTool {
			rep.ToolDecisions++
		}
		switch string(typStr) {
		case decisionlog.TypeSessionStart:
			starts = append(starts, s.sessionEvent(n, data))
		case decisionlog.TypeSessionStop:
			stops = append(stops, s.sessionEvent(n, data))
		}
		ref := refs[string(idStr)]
		if ref == nil {
			if isTool {
				omitted++
				if omitted <= MaxFailuresPerCheck {
					s.fail(CheckEventPopulation, "decision log line %d: tool decision event that no receipt references (omitted)", n)
				} else {
					s.checks[CheckEventPopulation].dropped++
				}
			}
			continue
		}
		ref.count++
		if len(ref.lines) < 8 {
			ref.lines = append(ref.lines, n)
		}
		if isTool {
			ref.toolCount++
		}
		if ref.count > 1 {
			continue
		}
		ref.line = n
		ref.typ = string(typStr)
		if st == lineComplete {
			ref.sum = sha256.Sum256(line)
		}
		if isTool {
			s.toolData(ref, data)
		}
	}
	return starts, stops, nil
}

// toolData reads data.tool, data.rpc_id_present and data.rpc_id of a
// referenced tool decision event.
func (s *state) toolData(ref *refEvent, data []byte) {
	if len(data) == 0 || data[0] != '{' {
		ref.decode = "data is not an object"
		return
	}
	var tool, pre, id []byte
	_ = s.p.members(data, func(name string, raw []byte) {
		switch name {
		case "tool":
			tool = raw
		case "rpc_id_present":
			pre = raw
		case "rpc_id":
			id = raw
		}
	})
	if v, ok := unquote(tool); ok {
		t := string(v)
		ref.tool = &t
	}
	if (string(pre) == "true" || string(pre) == "false") && id != nil {
		ref.rpcOK, ref.rpcPre, ref.rpcID = true, string(pre) == "true", bytes.Clone(id)
	}
}

// sessionEvent reads data.capture of a session start or stop event.
func (s *state) sessionEvent(n int, data []byte) *sessionEvent {
	ev := &sessionEvent{line: n}
	if len(data) == 0 || data[0] != '{' {
		ev.problem = "data is not an object"
		return ev
	}
	var capture []byte
	_ = s.p.members(data, func(name string, raw []byte) {
		if name == "capture" {
			capture = raw
		}
	})
	if len(capture) == 0 || capture[0] != '{' {
		ev.problem = "no data.capture object (were receipts on for this run?)"
		return ev
	}
	_ = s.p.members(capture, func(name string, raw []byte) {
		switch name {
		case "scope":
			if v, ok := unquote(raw); ok {
				sc := string(v)
				ev.scope = &sc
			}
		case "state":
			if v, ok := unquote(raw); ok {
				st := string(v)
				ev.state = &st
			}
		case "records":
			if v, ok := nonNegInt(raw); ok {
				ev.records = &v
			}
		}
	})
	return ev
}

// checkLifecycle is check 4.
func (s *state) checkLifecycle(recs []*receipt, starts, stops []*sessionEvent, refs map[string]*refEvent, rep *Report) {
	const c = CheckLifecycle
	if len(starts) != 1 {
		s.fail(c, "decision log: %d session start events (lines %s), want exactly 1: use a fresh decision log for each capture", len(starts), sessionLines(starts))
	}
	if len(stops) != 1 {
		if len(stops) == 0 {
			s.fail(c, "decision log: no session stop event: the run did not shut down in order (killed?); the capture is not usable")
		} else {
			s.fail(c, "decision log: %d session stop events (lines %s), want exactly 1", len(stops), sessionLines(stops))
		}
	}
	if len(starts) != 1 || len(stops) != 1 {
		return
	}
	start, stop := starts[0], stops[0]
	if start.line > stop.line {
		s.fail(c, "decision log: session start (line %d) after session stop (line %d)", start.line, stop.line)
	}
	for _, ev := range []*sessionEvent{start, stop} {
		if ev.problem != "" {
			s.fail(c, "decision log line %d: session event: %s", ev.line, ev.problem)
		} else if ev.scope == nil {
			s.fail(c, "decision log line %d: session event has no string data.capture.scope", ev.line)
		}
	}
	if start.scope != nil && stop.scope != nil && *start.scope != *stop.scope {
		s.fail(c, "decision log: start (line %d) and stop (line %d) name different capture scopes", start.line, stop.line)
	}
	if rep.Scope != "" && start.scope != nil && *start.scope != rep.Scope {
		s.fail(c, "decision log line %d: start event's capture.scope differs from the receipts' scope", start.line)
	}
	if rep.Scope != "" && stop.scope != nil && *stop.scope != rep.Scope {
		s.fail(c, "decision log line %d: stop event's capture.scope differs from the receipts' scope", stop.line)
	}
	if stop.problem == "" {
		switch {
		case stop.state == nil:
			s.fail(c, "decision log line %d: stop event has no string data.capture.state", stop.line)
		case *stop.state != decisionlog.CaptureComplete:
			s.fail(c, "decision log line %d: stop event says the capture is not complete", stop.line)
		}
		switch {
		case stop.records == nil:
			s.fail(c, "decision log line %d: stop event has no integer data.capture.records", stop.line)
		case *stop.records != int64(len(recs)):
			s.fail(c, "decision log line %d: stop event counts %d records, the receipts file has %d", stop.line, *stop.records, len(recs))
		}
	}
	for _, r := range recs {
		if !r.has(fEventID) {
			continue
		}
		ref := refs[r.eventID]
		if ref.count > 0 && (ref.line < start.line || ref.line > stop.line) {
			s.fail(c, "receipts line %d: its decision event (decision log line %d) is outside the session (lines %d–%d)", r.line, ref.line, start.line, stop.line)
		}
	}
}

func sessionLines(evs []*sessionEvent) string {
	if len(evs) == 0 {
		return "none"
	}
	var b []byte
	for i, ev := range evs {
		if i == 8 {
			b = append(b, ", …"...)
			break
		}
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendInt(b, int64(ev.line), 10)
	}
	return string(b)
}

// checkScopeSequence is check 5.
func (s *state) checkScopeSequence(recs []*receipt) {
	first := ""
	firstLine := 0
	for _, r := range recs {
		if r.has(fScope) {
			if first == "" {
				first, firstLine = r.scope, r.line
			} else if r.scope != first {
				s.fail(CheckScopeSequence, "receipts line %d: scope differs from line %d's; a capture has exactly one scope", r.line, firstLine)
			}
		}
		if r.has(fSequence) && r.sequence != int64(r.pos) {
			s.fail(CheckScopeSequence, "receipts line %d: sequence %d, want %d (0, 1, 2, … in file order, no gap or repeat)", r.line, r.sequence, r.pos)
		}
	}
}

// checkDigest is check 6.
func (s *state) checkDigest(recs []*receipt) {
	for _, r := range recs {
		if r.has(fRequestLine, fRequestBytes) && r.requestBytes != int64(len(r.requestLine)) {
			s.fail(CheckRequestDigest, "receipts line %d: request_bytes is %d, request_line has %d bytes", r.line, r.requestBytes, len(r.requestLine))
		}
		if r.has(fRequestLine, fRequestSHA) {
			sum := sha256.Sum256(r.requestLine)
			if hex.EncodeToString(sum[:]) != r.requestSHA {
				s.fail(CheckRequestDigest, "receipts line %d: request_sha256 does not match request_line", r.line)
			}
		}
	}
}

// checkReferences is checks 7 and 8 (the unreferenced tool decisions of 8
// were reported while reading the log).
func (s *state) checkReferences(recs []*receipt, refs map[string]*refEvent) {
	byID := map[string][]int{}
	var order []string // ids in order of first reference
	for _, r := range recs {
		if r.has(fEventID) {
			if byID[r.eventID] == nil {
				order = append(order, r.eventID)
			}
			byID[r.eventID] = append(byID[r.eventID], r.line)
		}
	}
	for _, r := range recs {
		if !r.has(fEventID) {
			continue
		}
		ref := refs[r.eventID]
		switch {
		case ref.count == 0:
			s.fail(CheckDecisionReference, "receipts line %d: decision_event_id does not occur in the decision log (unresolved)", r.line)
			s.fail(CheckEventPopulation, "receipts line %d: references no event of the decision log (unresolved)", r.line)
			continue
		case ref.count > 1:
			s.fail(CheckDecisionReference, "receipts line %d: decision_event_id occurs %d times in the decision log (lines %s); an id must occur exactly once", r.line, ref.count, intList(ref.lines, ref.count))
		case r.has(fDecisionSHA) && hex.EncodeToString(ref.sum[:]) != r.decisionSHA:
			s.fail(CheckDecisionReference, "receipts line %d: decision_sha256 does not match decision log line %d (its bytes including LF)", r.line, ref.line)
		}
		if ref.toolCount == 0 {
			s.fail(CheckEventPopulation, "receipts line %d: references decision log line %d, which is not a tool decision event (surplus)", r.line, ref.line)
		}
	}
	for _, id := range order {
		lines, ref := byID[id], refs[id]
		if len(lines) > 1 {
			s.fail(CheckEventPopulation, "receipts lines %s: reference the same decision event (duplicated)", intList(lines, len(lines)))
		}
		if ref.toolCount > len(lines) {
			s.fail(CheckEventPopulation, "decision log lines %s: %d tool decision events share an id referenced by %d receipt(s)", intList(ref.lines, ref.count), ref.toolCount, len(lines))
		}
	}
}

// checkRequests is checks 9 and 10: recompute from request_line.
func (s *state) checkRequests(recs []*receipt, refs map[string]*refEvent) {
	for _, r := range recs {
		if !r.has(fRequestLine) {
			continue
		}
		req, err := receipts.InspectRequest(r.requestLine)
		if err != nil {
			s.fail(CheckRPCIDTool, "receipts line %d: request_line is not one strict tools/call request line", r.line)
			s.fail(CheckProtocolVersion, "receipts line %d: cannot recompute from request_line (not one strict tools/call request line)", r.line)
			continue
		}
		// 9: the receipt against request_line.
		if r.has(fRPCIDPresent) && r.rpcIDPresent != req.RPCIDPresent {
			s.fail(CheckRPCIDTool, "receipts line %d: rpc_id_present is %t, request_line %s an id", r.line, r.rpcIDPresent, map[bool]string{true: "has", false: "has no"}[req.RPCIDPresent])
		}
		// The receipt writes the id token line-safe, as the decision log
		// does.
		if r.has(fRPCID) && !sameIDToken(r.rpcID, req.RPCID) {
			s.fail(CheckRPCIDTool, "receipts line %d: rpc_id is not the id token of request_line (type and exact text)", r.line)
		}
		// 9: the receipt against the decision event's projection.
		if r.has(fEventID) {
			ref := refs[r.eventID]
			if ref.count == 1 && ref.toolCount == 1 {
				switch {
				case ref.decode != "":
					s.fail(CheckRPCIDTool, "receipts line %d: decision event (decision log line %d): %s", r.line, ref.line, ref.decode)
				default:
					if ref.tool == nil {
						s.fail(CheckRPCIDTool, "receipts line %d: decision event (decision log line %d) has no string data.tool", r.line, ref.line)
					} else if *ref.tool != req.Tool {
						s.fail(CheckRPCIDTool, "receipts line %d: tool name in request_line differs from the decision event's (decision log line %d)", r.line, ref.line)
					}
					if !ref.rpcOK {
						s.fail(CheckRPCIDTool, "receipts line %d: decision event (decision log line %d) has no data.rpc_id_present/rpc_id projection", r.line, ref.line)
					} else {
						if ref.rpcPre != req.RPCIDPresent {
							s.fail(CheckRPCIDTool, "receipts line %d: id presence differs from the decision event's projection (decision log line %d)", r.line, ref.line)
						}
						// The decision log writes the id token line-safe:
						// a string's raw controls and line breaks as \u
						// escapes, nothing else changed.
						if !sameIDToken(ref.rpcID, req.RPCID) {
							s.fail(CheckRPCIDTool, "receipts line %d: id differs from the decision event's projection (decision log line %d; type and exact text)", r.line, ref.line)
						}
					}
				}
			}
		}
		// 10: metadata pointer and declared version.
		wantPtr := "null"
		if req.HasMeta {
			wantPtr = `"` + receipts.MetadataPointer + `"`
		}
		if r.has(fMetaPointer) && string(r.metaPointer) != wantPtr {
			s.fail(CheckProtocolVersion, "receipts line %d: metadata_pointer does not recompute from request_line", r.line)
		}
		if r.has(fVersionState) && r.versionState != req.VersionState {
			s.fail(CheckProtocolVersion, "receipts line %d: declared_protocol_version_state is %s, request_line gives %s", r.line, r.versionState, req.VersionState)
		}
		if r.has(fVersion) {
			want := "null"
			if req.VersionState == receipts.VersionPresent {
				want = `"` + req.Version + `"`
			}
			if got, ok := unquote(r.version); (ok && `"`+string(got)+`"` != want) || (!ok && want != "null") {
				s.fail(CheckProtocolVersion, "receipts line %d: declared_protocol_version does not recompute from request_line", r.line)
			}
		}
	}
}

// sameIDToken reports whether got, an id as a receipt or decision event
// wrote it, is the request line's id token want: its exact text (as
// releases before line-safe JSON wrote it), or its line-safe form (raw
// controls and Unicode line breaks in a string written as \u escapes,
// nothing else changed).
func sameIDToken(got, want []byte) bool {
	return bytes.Equal(got, want) || bytes.Equal(got, linesafe.Append(nil, want))
}

// unquote decodes a raw JSON string value; ok is false for anything else.
func unquote(raw []byte) ([]byte, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return nil, false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1], true
	}
	v, err := jsontext.AppendUnquote(nil, raw)
	return v, err == nil
}

// nonNegInt parses a raw JSON number that is a non-negative integer written
// without fraction, exponent or sign.
func nonNegInt(raw []byte) (int64, bool) {
	if len(raw) == 0 || len(raw) > 18 {
		return 0, false
	}
	for _, c := range raw {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	if len(raw) > 1 && raw[0] == '0' {
		return 0, false
	}
	v, err := strconv.ParseInt(string(raw), 10, 64)
	return v, err == nil
}

func isHexSHA256(v []byte) bool { return jcs.IsHexDigest(v) }

// safeName returns name when it is a short plain identifier, else a
// placeholder: member names of a tampered file are not echoed.
func safeName(name string) string {
	if len(name) == 0 || len(name) > 64 {
		return "(unprintable name)"
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return "(unprintable name)"
		}
	}
	return strconv.Quote(name)
}

func intList(lines []int, total int) string {
	var b []byte
	for i, n := range lines {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendInt(b, int64(n), 10)
	}
	if total > len(lines) {
		b = append(b, ", …"...)
	}
	return string(b)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
