// Package receipts writes the request–decision receipt sidecar of
// `gatehouse wrap --request-receipts-out` (shared/spec/request-receipts.md
// §2–§5): for each valid tools/call request line received from the client,
// one NDJSON record binding the exact bytes of that line to the decision
// event the decision log actually wrote for it.
//
// The sidecar is evidence only. The Recorder never returns an error the
// relay must act on after the file was created: a limit or a write failure
// disables it, keeps the prefix already written, appends [DiagnosticLine]
// and prints [StderrDiagnostic] once. Its contents (raw arguments, caller
// metadata) are never logged anywhere else.
package receipts

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"sync"

	"github.com/gatehouse-mcp/gatehouse/internal/decisionlog"
	"github.com/gatehouse-mcp/gatehouse/internal/linesafe"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/uuid"
)

// Schema is the `schema` of every receipt and of the diagnostic line.
const Schema = "gatehouse.request_decision_receipt.v0"

// AssertionBasis is the `assertion_basis` of every receipt: metadata comes
// from the caller; the proxy reports the association, it does not
// authenticate it.
const AssertionBasis = "caller_asserted"

// DiagnosticLine is appended to the sidecar (when it can still be written)
// when receipts are disabled by a limit or a failure (request-receipts.md
// §4). Its presence makes the capture unusable.
const DiagnosticLine = `{"schema":"gatehouse.request_decision_receipt.v0","diagnostic":"capture_incomplete"}` + "\n"

// StderrDiagnostic is written, followed by LF, to stderr once when receipts
// are disabled.
const StderrDiagnostic = "gatehouse: request receipts: capture incomplete"

// Capture states, as in the session stop event (request-receipts.md §5).
const (
	StateComplete   = decisionlog.CaptureComplete
	StateIncomplete = decisionlog.CaptureIncomplete
)

// Limits bound the sidecar's extra storage (request-receipts.md §4). All
// values are in bytes except MaxRecords. They are not the proxy's frame
// limit.
type Limits struct {
	// MaxRequestBytes is the largest request line (terminator included)
	// that gets a receipt; it is checked before any copy of the line.
	MaxRequestBytes int
	// MaxRecords is the number of receipts after which the next one is
	// refused.
	MaxRecords int
	// MaxFileBytes bounds the whole sidecar file. A record is written only
	// when the file, with that record and room for [DiagnosticLine], stays
	// within it, so the file never exceeds MaxFileBytes (choice,
	// docs/request-receipts.md).
	MaxFileBytes int
	// MaxDecisionBytes is the largest decision event serialization
	// (compact JSON plus LF) that is hashed.
	MaxDecisionBytes int
}

// DefaultLimits are the limits of request-receipts.md §4: 1 MiB per request
// line, 48 records, 4 MiB per file, 1 MiB per decision event.
var DefaultLimits = Limits{
	MaxRequestBytes:  1 << 20,
	MaxRecords:       48,
	MaxFileBytes:     4 << 20,
	MaxDecisionBytes: 1 << 20,
}

// withDefaults replaces zero or negative fields by their default.
func (l Limits) withDefaults() Limits {
	if l.MaxRequestBytes <= 0 {
		l.MaxRequestBytes = DefaultLimits.MaxRequestBytes
	}
	if l.MaxRecords <= 0 {
		l.MaxRecords = DefaultLimits.MaxRecords
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = DefaultLimits.MaxFileBytes
	}
	if l.MaxDecisionBytes <= 0 {
		l.MaxDecisionBytes = DefaultLimits.MaxDecisionBytes
	}
	return l
}

// ErrPathTaken is wrapped by [Recorder.Open] when the exclusive create
// fails: someone created the path after [CheckPath] (or the directory
// became unwritable). The run must end before the triggering frame is
// forwarded (request-receipts.md §2).
var ErrPathTaken = errors.New("request receipts: output path taken after check")

// Recorder writes the receipts of one proxy invocation. It is safe for
// concurrent use. Create it with [NewRecorder], call [Recorder.Open] at the
// first client frame that is not server/discover and [Recorder.Record]
// after each tool decision event was emitted, then [Recorder.Close].
type Recorder struct {
	path   string
	limits Limits
	stderr io.Writer
	scope  string

	mu       sync.Mutex
	f        *os.File
	opened   bool // Open succeeded (f may since have been closed)
	closed   bool
	disabled bool // a limit or failure stopped the capture
	records  int
	size     int  // bytes written to the file
	partial  bool // the last record write stopped part-way
}

// NewRecorder returns a Recorder that will write to path. Zero fields of
// limits take their value from [DefaultLimits]. stderr receives
// [StderrDiagnostic] (nil discards it). Nothing is created until Open.
func NewRecorder(path string, limits Limits, stderr io.Writer) *Recorder {
	if stderr == nil {
		stderr = io.Discard
	}
	return &Recorder{path: path, limits: limits.withDefaults(), stderr: stderr, scope: uuid.NewString()}
}

// Path returns the sidecar path.
func (r *Recorder) Path() string { return r.path }

// Scope returns the capture scope: a random UUID (version 4, canonical
// lowercase) made once per Recorder, i.e. per proxy invocation. It is a
// capture coordinate, not a session, agent or vendor id. Put it in the
// session start and stop events (request-receipts.md §5).
func (r *Recorder) Scope() string { return r.scope }

// Open creates the sidecar with O_CREAT|O_EXCL|O_WRONLY and mode 0600 (set
// again with fchmod so the umask cannot change it). It is idempotent after
// success. When the create fails it returns an error wrapping both
// [ErrPathTaken] and the cause (e.g. fs.ErrExist), naming the path; the
// capture is then incomplete, nothing is written to the path (it is not
// ours), and the caller must end the run before forwarding the frame.
func (r *Recorder) Open() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.opened {
		return nil
	}
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		r.disabled = true
		return fmt.Errorf("%w: %s: %w", ErrPathTaken, r.path, err)
	}
	if err := f.Chmod(0o600); err != nil {
		// The file is ours; leave it (empty) and refuse the run.
		f.Close()
		r.disabled = true
		return fmt.Errorf("%w: %s: chmod 0600: %w", ErrPathTaken, r.path, err)
	}
	r.f, r.opened = f, true
	return nil
}

// Record writes the receipt of one tools/call request line. Call it after
// the decision event for that line was emitted, with:
//
//   - line: the exact bytes received from the client, terminator ("\n" or
//     "\r\n") included. It is not retained.
//   - decision: the Event returned by decisionlog.Log.Emit for this line.
//     Pass the zero Event when the emit failed: the capture then becomes
//     incomplete (a call happened that no decision event describes).
//   - rpcIDPresent, rpcIDRaw: the id projection given to the decision
//     event. Record recomputes both from line; a disagreement (the decision
//     event would not describe this line) makes the capture incomplete.
//
// Every receipt field is computed from line (request-receipts.md §3).
// Checks, in order: the line size (before any copy), the record count, the
// decision event's id and size (before hashing), that line is a strict
// tools/call, then the file size with the serialized record. Any failure,
// a write error, a call before a successful Open, after Close, or with a nil
// or empty line disables receipts for the rest of the run: the prefix
// stays, [DiagnosticLine] is appended when the file is open, and
// [StderrDiagnostic] goes to stderr once. Record never panics and reports
// nothing to the caller; see [Recorder.State].
func (r *Recorder) Record(line []byte, decision decisionlog.Event, rpcIDPresent bool, rpcIDRaw []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.disabled {
		return
	}
	if !r.opened || r.closed || r.f == nil || len(line) == 0 {
		r.disable()
		return
	}
	lim := r.limits
	if len(line) > lim.MaxRequestBytes || r.records >= lim.MaxRecords {
		r.disable()
		return
	}
	if decision.ID == "" || decision.Type != decisionlog.TypeToolDecision ||
		len(decision.Bytes) == 0 || len(decision.Bytes) > lim.MaxDecisionBytes {
		r.disable()
		return
	}
	req, err := InspectRequest(line)
	if err != nil || req.RPCIDPresent != rpcIDPresent || (rpcIDPresent && string(req.RPCID) != string(rpcIDRaw)) {
		r.disable()
		return
	}
	rec, ok := appendRecord(nil, line, decision, req, r.scope, r.records)
	if !ok || r.size+len(rec)+len(DiagnosticLine) > lim.MaxFileBytes {
		r.disable()
		return
	}
	n, err := r.f.Write(rec)
	r.size += n
	if err != nil || n != len(rec) {
		r.partial = n > 0
		r.disable()
		return
	}
	r.records++
}

// appendRecord appends one receipt (compact JSON plus LF, fields in the
// order of request-receipts.md §3, line-safe: internal/linesafe) to dst. ok is false only when line is
// not valid UTF-8 (impossible after InspectRequest).
func appendRecord(dst, line []byte, decision decisionlog.Event, req Request, scope string, seq int) ([]byte, bool) {
	reqSum := sha256.Sum256(line)
	decSum := sha256.Sum256(decision.Bytes)
	var err error
	b := dst
	b = append(b, `{"schema":"`+Schema+`","request_line":`...)
	if b, err = jsontext.AppendQuote(b, line); err != nil {
		return nil, false
	}
	b = append(b, `,"request_bytes":`...)
	b = strconv.AppendInt(b, int64(len(line)), 10)
	b = append(b, `,"request_sha256":"`...)
	b = hex.AppendEncode(b, reqSum[:])
	b = append(b, `","decision_event_id":`...)
	if b, err = jsontext.AppendQuote(b, decision.ID); err != nil {
		return nil, false
	}
	b = append(b, `,"decision_sha256":"`...)
	b = hex.AppendEncode(b, decSum[:])
	b = append(b, `","rpc_id_present":`...)
	b = strconv.AppendBool(b, req.RPCIDPresent)
	b = append(b, `,"rpc_id":`...)
	b = append(b, req.RPCID...)
	b = append(b, `,"scope":`...)
	if b, err = jsontext.AppendQuote(b, scope); err != nil {
		return nil, false
	}
	b = append(b, `,"sequence":`...)
	b = strconv.AppendInt(b, int64(seq), 10)
	b = append(b, `,"metadata_pointer":`...)
	if req.HasMeta {
		b = append(b, `"`+MetadataPointer+`"`...)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"declared_protocol_version_state":"`...)
	b = append(b, req.VersionState...)
	b = append(b, `","declared_protocol_version":`...)
	if req.VersionState == VersionPresent {
		b = append(b, '"')
		b = append(b, req.Version...) // a YYYY-MM-DD date: nothing to escape
		b = append(b, '"')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"assertion_basis":"`+AssertionBasis+`"}`+"\n"...)
	// Line-safe, like the decision log: a raw U+2028, C1 control or DEL in
	// the request line's strings (or in a string id) written as its \u
	// escape, so that the receipt stays one line to any line splitter. The
	// values, request_line's bytes among them, are unchanged.
	return linesafe.Append(dst[:len(dst):len(dst)], b[len(dst):]), true
}

// disable stops the capture: the prefix stays, the diagnostic line is
// appended when the file is open (after an LF when a write stopped part-way
// through a record, so that the diagnostic is a line of its own), and the
// stderr line is written once. r.mu is held.
func (r *Recorder) disable() {
	if r.disabled {
		return
	}
	r.disabled = true
	if r.f != nil && !r.closed {
		diag := []byte(DiagnosticLine)
		if r.partial {
			diag = append([]byte{'\n'}, diag...)
		}
		n, _ := r.f.Write(diag)
		r.size += n
	}
	io.WriteString(r.stderr, StderrDiagnostic+"\n")
}

// State reports the capture state for the session stop event
// (request-receipts.md §5): "complete" while no limit or failure disabled
// receipts (and Open did not fail), else "incomplete"; and the number of
// receipts written.
func (r *Recorder) State() (state string, records int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.disabled {
		return StateIncomplete, r.records
	}
	return StateComplete, r.records
}

// Close syncs and closes the sidecar, if it was created. Later Record calls
// make the capture incomplete. Close is idempotent.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	if r.f == nil {
		return nil
	}
	f := r.f
	r.f = nil
	serr := f.Sync()
	if errors.Is(serr, fs.ErrInvalid) {
		serr = nil
	}
	cerr := f.Close()
	if err := errors.Join(serr, cerr); err != nil {
		return fmt.Errorf("request receipts: close %s: %w", r.path, err)
	}
	return nil
}
