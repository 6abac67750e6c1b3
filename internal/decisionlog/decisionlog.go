// Package decisionlog writes Gatehouse's decision log: an append-only file of
// CloudEvents 1.0 events, one compact JSON object per line, each terminated
// by a single LF (shared/spec/request-receipts.md §7 and §5).
//
// Lines are line-safe (internal/linesafe): inside strings every C0 and C1
// control, DEL, NEL, U+2028 and U+2029 is written as a \u escape, so a
// reader that splits on any Unicode line break sees one event per line, and
// a tool name or reason holding terminal controls cannot drive a terminal
// that shows the log. Values are unchanged: the lines decode to the same
// strings.
//
// Every event is written with a single write(2) on a file opened with
// O_APPEND, and is never rewritten. The exact bytes written are returned to
// the caller in [Event.Bytes] so that request receipts
// (internal/receipts) can bind a request line to the decision event that was
// actually written for it.
package decisionlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/gatehouse-mcp/gatehouse/internal/linesafe"
)

// CloudEvents `type` values written by Gatehouse (request-receipts.md §5, §7).
const (
	// TypeToolDecision is the type of the event emitted for every policy
	// decision on a tools/call request; its data is a [ToolDecision].
	TypeToolDecision = "gatehouse.tool.decision.v1"
	// TypeSessionStart is the type of the event emitted once when a proxy
	// invocation starts; its data is a [SessionStart].
	TypeSessionStart = "gatehouse.session.start.v1"
	// TypeSessionStop is the type of the event emitted once at orderly
	// shutdown; its data is a [SessionStop]. A killed run has none.
	TypeSessionStop = "gatehouse.session.stop.v1"
	// TypeFrameRejected is the type of the event emitted when a frame is
	// refused before any policy decision (for example a malformed or
	// oversized line). It is not a tool decision and gets no receipt.
	TypeFrameRejected = "gatehouse.frame.rejected.v1"
	// TypeToolRefused is the type of the event emitted when a tools/call
	// whose decision event said forwarded is refused after all, before it
	// reached the server: its evidence could not be recorded in the audit
	// ledger and the gateway fails closed. Its data is a [ToolRefused]; the
	// decision event is never rewritten (the log is append-only), so this
	// event is what corrects it.
	TypeToolRefused = "gatehouse.tool.refused.v1"
	// TypeScanned is the type of the event emitted when a scanned message
	// had findings (a tools/call response, a server notification or
	// request, the client's answer to one); its data is a [Scanned].
	TypeScanned = "gatehouse.scan.v1"
	// TypeDrift is the type of the event emitted when a tools/list shows
	// a tool that drifted from its approved baseline (docs/drift.md); its
	// data is a [Drift].
	TypeDrift = "gatehouse.drift.v1"
)

// SpecVersion is the CloudEvents specification version of every event.
const SpecVersion = "1.0"

// DataContentType is the `datacontenttype` of every event.
const DataContentType = "application/json"

// ErrInvalidSource is wrapped by the error [ValidateSource] returns.
var ErrInvalidSource = errors.New("invalid event source")

// ValidateSource checks an event source URI (the `--event-source` flag,
// request-receipts.md §7): it must start with an RFC 3986 scheme (a letter
// followed by letters, digits, "+", "-" or "."), then "://", then a
// non-empty remainder; it must be valid UTF-8 and contain no whitespace or
// control characters anywhere. The error wraps [ErrInvalidSource] and says
// what is wrong.
func ValidateSource(uri string) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w %q: %s", ErrInvalidSource, uri, fmt.Sprintf(format, args...))
	}
	if uri == "" {
		return fail("empty; want an absolute URI such as gatehouse://local/probe")
	}
	if !utf8.ValidString(uri) {
		return fail("not valid UTF-8")
	}
	for i, r := range uri {
		if unicode.IsSpace(r) {
			return fail("contains whitespace at byte %d", i)
		}
		if unicode.IsControl(r) {
			return fail("contains a control character at byte %d", i)
		}
	}
	sep := bytes.Index([]byte(uri), []byte("://"))
	if sep < 0 {
		return fail(`no "://" after the scheme; want scheme://rest such as gatehouse://local/probe`)
	}
	scheme := uri[:sep]
	if scheme == "" {
		return fail("empty scheme before \"://\"")
	}
	for i := 0; i < len(scheme); i++ {
		c := scheme[i]
		isAlpha := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		isDigit := c >= '0' && c <= '9'
		switch {
		case i == 0 && !isAlpha:
			return fail("scheme must start with a letter (RFC 3986 §3.1)")
		case !isAlpha && !isDigit && c != '+' && c != '-' && c != '.':
			return fail("scheme contains %q at byte %d; only letters, digits, \"+\", \"-\" and \".\" are allowed (RFC 3986 §3.1)", c, i)
		}
	}
	if len(uri) == sep+3 {
		return fail("nothing after \"://\"")
	}
	return nil
}

// Event identifies one event that [Log.Emit] wrote.
type Event struct {
	// ID is the event's CloudEvents `id`: a random UUID (version 4) in
	// canonical lowercase form.
	ID string
	// Type is the event's CloudEvents `type`.
	Type string
	// Bytes is exactly what was written to the log for this event: the
	// compact JSON object followed by one LF. Receipts hash these bytes
	// (request-receipts.md §3 decision_sha256).
	Bytes []byte
}

// envelope is the CloudEvents 1.0 structured-mode JSON object; the field
// order here is the order on disk.
type envelope struct {
	SpecVersion     string `json:"specversion"`
	ID              string `json:"id"`
	Source          string `json:"source"`
	Type            string `json:"type"`
	Time            string `json:"time"`
	DataContentType string `json:"datacontenttype"`
	Data            any    `json:"data"`
}

// Log is an open decision log. It is safe for concurrent use: events are
// serialized by a mutex and each is written with one write(2) of its compact
// JSON plus LF, so concurrent emitters never interleave partial lines.
type Log struct {
	mu     sync.Mutex
	f      *os.File
	w      io.Writer // where events go: f, or a test's writer
	path   string
	source string
	now    func() time.Time
	// torn is set when a write ended part-way through a line (a full
	// disk, say): the next write first ends that torn line with an LF, so
	// that its event starts a line of its own and a line reader loses only
	// the torn event, not the next one with it.
	torn bool
}

// Open opens the decision log at path for appending, creating it when
// absent with mode 0600 (set with fchmod after creation, so the umask
// cannot widen it). An existing file is appended to, never truncated, and
// its mode is left as it is. source is the CloudEvents `source` of every
// event and must pass [ValidateSource]. Errors name the path.
func Open(path, source string) (*Log, error) {
	if err := ValidateSource(source); err != nil {
		return nil, err
	}
	// Try an exclusive create first so that we know whether the file is
	// ours: only a file we created gets its mode forced to 0600 (with
	// fchmod, so the umask cannot widen or narrow it). An existing file is
	// the operator's: it is appended to, never truncated, and keeps its
	// mode.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		if err := f.Chmod(0o600); err != nil {
			f.Close()
			return nil, fmt.Errorf("decision log: chmod %s: %w", path, err)
		}
	case errors.Is(err, fs.ErrExist):
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("decision log: %w", err) // an *fs.PathError: "open PATH: why"
		}
	default:
		return nil, fmt.Errorf("decision log: %w", err)
	}
	return &Log{f: f, w: f, path: path, source: source, now: time.Now}, nil
}

// Path returns the path the log was opened with.
func (l *Log) Path() string { return l.path }

// Emit writes one event of the given type whose `data` is data marshalled
// with encoding/json (HTML escaping off; json.RawMessage values keep their
// token text, only whitespace between tokens is removed so that the line
// stays compact), with every control character and line break in strings
// escaped (linesafe.Append; the decoded values are the same). The envelope
// is
//
//	{"specversion":"1.0","id":<uuid v4>,"source":<source>,"type":<eventType>,
//	 "time":<RFC 3339 UTC, nanoseconds>,"datacontenttype":"application/json","data":<data>}
//
// written compactly, followed by LF, with one write(2). It returns the
// event, whose Bytes are exactly the bytes written. On failure (marshal
// error, closed log, write error) it returns the zero Event and an error
// wrapping the cause; a write that failed part-way may have left a partial
// line, which a verifier rejects.
func (l *Log) Emit(eventType string, data any) (Event, error) {
	return l.emit(eventType, data, false)
}

// EmitLast is Emit of the log's last event (the session stop event): the
// log is closed under the same lock right after the write, so no event can
// follow it in the file, whatever other goroutines still try to write (they
// get errors wrapping os.ErrClosed). The close error, if any, is returned
// with the event.
func (l *Log) EmitLast(eventType string, data any) (Event, error) {
	return l.emit(eventType, data, true)
}

// emit is Emit, and with last EmitLast.
func (l *Log) emit(eventType string, data any, last bool) (Event, error) {
	ev, err := l.Encode(eventType, data)
	if err != nil {
		return Event{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.write(ev.Bytes); err != nil {
		return Event{}, fmt.Errorf("decision log: write %s event to %s: %w", eventType, l.path, err)
	}
	if last {
		err = l.f.Close()
		l.f = nil
		if err != nil {
			return ev, fmt.Errorf("decision log: close %s: %w", l.path, err)
		}
	}
	return ev, nil
}

// Encode builds the event Emit would write (a new id, the current time)
// without writing it: its Bytes are one compact line ending in LF, for
// WriteEvents. It returns an error when eventType is empty or data cannot
// be marshalled.
func (l *Log) Encode(eventType string, data any) (Event, error) {
	if eventType == "" {
		return Event{}, errors.New("decision log: empty event type")
	}
	id := uuid.NewString()
	t := l.now().UTC()
	var b []byte
	if d, ok := data.(appender); ok {
		// The event shapes of every tools/call, without reflection; the
		// bytes are those encoding/json writes (encode.go).
		b, ok = appendEnvelope(make([]byte, 0, 768), id, l.source, eventType, t, d)
		if !ok {
			b = nil
		}
	}
	if b == nil {
		env := envelope{
			SpecVersion:     SpecVersion,
			ID:              id,
			Source:          l.source,
			Type:            eventType,
			Time:            t.Format(time.RFC3339Nano),
			DataContentType: DataContentType,
			Data:            data,
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(env); err != nil { // Encode appends exactly one LF
			return Event{}, fmt.Errorf("decision log: marshal %s event: %w", eventType, err)
		}
		// Every control and line break that encoding/json leaves in
		// strings as it is (DEL, C1, NEL; U+2028 and U+2029 inside a
		// json.RawMessage) escaped: the line stays one line.
		b = linesafe.Append(make([]byte, 0, buf.Len()+16), buf.Bytes())
	}
	return Event{ID: id, Type: eventType, Bytes: b}, nil
}

// WriteEvents appends events, the concatenated Bytes of events from
// Encode, with one write(2): a group of decisions taken together costs one
// system call. It returns how many bytes were written: on error, the
// events wholly within the first n bytes are in the log and the rest are
// not (the one cut part-way leaves a partial line, which a verifier
// rejects). The error wraps os.ErrClosed after Close, else the write's.
func (l *Log) WriteEvents(events []byte) (n int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err = l.write(events)
	if err != nil {
		return n, fmt.Errorf("decision log: write %d bytes of events to %s: %w", len(events), l.path, err)
	}
	return n, nil
}

// write writes b to the file (l.mu held).
func (l *Log) write(b []byte) (int, error) {
	if l.f == nil {
		return 0, os.ErrClosed
	}
	if l.torn {
		if _, err := l.w.Write([]byte{'\n'}); err != nil {
			return 0, fmt.Errorf("ending a torn line: %w", err)
		}
		l.torn = false
	}
	n, err := l.w.Write(b)
	if err == nil && n != len(b) {
		err = fmt.Errorf("short write: %d of %d bytes", n, len(b))
	}
	if err != nil && n > 0 && b[n-1] != '\n' {
		l.torn = true
	}
	return n, err
}

// Close closes the log. Emit after Close returns an error wrapping
// os.ErrClosed. Close is idempotent: a second call returns nil.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	if err != nil {
		return fmt.Errorf("decision log: close %s: %w", l.path, err)
	}
	return nil
}
