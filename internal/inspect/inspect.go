// Package inspect scans JSON documents with a scan.Scanner and redacts
// what it finds in their exact bytes (../../docs/scanning.md;
// shared/spec/evidence.md §8).
//
// Inspect walks a JSON value (a tools/call's params.arguments, a result,
// a notification's params, ...) and scans every string leaf after JSON
// decoding. JSON nested inside a string and base64, hex or
// percent-encoded values next to secret-like keys are decoded (bounded
// depth and size) and scanned too. Every finding carries the RFC 6901
// JSON pointer of the leaf it was found in.
//
// Redact rewrites the document's bytes: only the matched spans change,
// every other byte stays as it was, the same value is redacted everywhere
// it occurs in the document, and the result is still valid JSON.
//
// InspectTool scans a tools/list entry for poisoning, and CheckSchema
// validates a redacted structuredContent against the tool's outputSchema.
// Lookalike tool names across a listing are the gateway's
// (scanStage.nameFindings, in linear time over the listing).
package inspect

import (
	"errors"
	"hash/crc32"
	"strconv"
	"sync"

	"github.com/gatehouse-mcp/gatehouse/internal/scan"
)

// Finding is a scan.Finding in a document.
type Finding struct {
	scan.Finding
	// Path is the RFC 6901 JSON pointer of the string leaf (or, for an
	// object member's name, of the member) relative to the inspected
	// document's root: "/content/0/text".
	Path string
	// Encoding says how the value was reached inside the leaf: "" (the
	// string itself), "json" (JSON nested in the string, Path then ends at
	// the outer leaf), "base64", "hex" or "percent".
	Encoding string

	// at is where the scanned text is, for Redact; never serialized.
	at loc
}

// InName reports whether f was found in an object member's name
// (Options.ScanNames): Redact never rewrites a name (renaming a member
// changes the document's shape), so a caller that must not forward such a
// value refuses the document instead.
func (f Finding) InName() bool { return f.at.name }

// Redaction is one redaction record as the McpSecurityReceipt draft
// defines it (field, class, method, replacement).
type Redaction struct {
	// Field is the RFC 6901 JSON pointer of the leaf rewritten, prefixed by
	// the part of the message it belongs to by the caller.
	Field string `json:"field"`
	// Class is the finding's class ("secret", "pii", ...).
	Class string `json:"class"`
	// Method is how the value was found: "pattern" (a rule's pattern),
	// "entropy" (keyword plus entropy), "decoded" (inside an encoded or
	// nested value), "consistent" (the same value found elsewhere in the
	// document).
	Method string `json:"method"`
	// Replacement is the text that replaced the value: "[REDACTED_SECRET]",
	// "[REDACTED_PII]", ...
	Replacement string `json:"replacement"`
}

// Default bounds (Options' zero fields).
const (
	// DefaultMaxDepth is the deepest nesting of objects and arrays walked,
	// JSON nested in strings included.
	DefaultMaxDepth = 128
	// DefaultMaxBytes is the most text scanned in one document: every
	// decoded string, member name, nested and decoded value counted.
	DefaultMaxBytes = 64 << 20
	// DefaultMaxFindings is the most findings kept.
	DefaultMaxFindings = 1024
	// DefaultMaxDecodedBytes is the longest string parsed as nested JSON
	// or decoded from base64, hex or percent-encoding.
	DefaultMaxDecodedBytes = 4 << 20
)

// Options bound and shape a walk. The zero value is ModeData, member
// names not scanned, and the Default bounds.
type Options struct {
	// Mode is passed to the scanner in every Input.
	Mode scan.Mode
	// ScanNames scans object member names too (their findings point at the
	// member, and are never redacted: see Redact).
	ScanNames bool
	// MaxDepth bounds nesting (objects and arrays, JSON nested in strings
	// included); deeper input fails with a *LimitError. 0: DefaultMaxDepth.
	MaxDepth int
	// MaxBytes bounds the text scanned; more fails with a *LimitError.
	// 0: DefaultMaxBytes.
	MaxBytes int
	// MaxFindings bounds the findings kept: when it is reached the walk
	// stops and Report.Truncated is set. 0: DefaultMaxFindings.
	MaxFindings int
	// MaxDecodedBytes bounds a string parsed as nested JSON or decoded
	// from an encoding; a longer one is scanned as it is and counted in
	// Report.Undecoded. 0: DefaultMaxDecodedBytes.
	MaxDecodedBytes int
}

func (o Options) withDefaults() Options {
	if o.MaxDepth <= 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxFindings <= 0 {
		o.MaxFindings = DefaultMaxFindings
	}
	if o.MaxDecodedBytes <= 0 {
		o.MaxDecodedBytes = DefaultMaxDecodedBytes
	}
	return o
}

// Report is what Inspect found in one document.
type Report struct {
	// Findings in document order (per scanned text, in the scanner's
	// order).
	Findings []Finding
	// Truncated says Options.MaxFindings was reached: the walk stopped
	// there, and the rest of the document was not scanned. A caller that
	// must not let an unscanned secret through denies rather than
	// redacts a truncated report.
	Truncated bool
	// Undecoded counts strings that were not parsed as nested JSON or
	// decoded because they exceed Options.MaxDecodedBytes (they were
	// scanned as they are).
	Undecoded int

	opts Options
	size int
	sum  uint32 // CRC-32C of the document, to tell another apart
	tool bool
}

// Sentinel errors; callers branch with errors.Is.
var (
	// ErrSyntax: the document is not one JSON value (a *SyntaxError).
	ErrSyntax = errors.New("inspect: malformed JSON")
	// ErrLimit: a bound of Options was exceeded (a *LimitError).
	ErrLimit = errors.New("inspect: limit exceeded")
	// ErrMismatch: Redact was given another document than the one
	// inspected, or a finding that does not fit it.
	ErrMismatch = errors.New("inspect: document does not match the report")
)

// SyntaxError is malformed JSON: what is wrong and at which byte offset of
// the document (for JSON nested in a string, the offset of that string).
// It never quotes the input.
type SyntaxError struct {
	Offset int
	What   string
}

// Error says what is wrong and where.
func (e *SyntaxError) Error() string {
	return "inspect: malformed JSON at byte " + strconv.Itoa(e.Offset) + ": " + e.What
}

// Unwrap returns ErrSyntax.
func (e *SyntaxError) Unwrap() error { return ErrSyntax }

// LimitError is a bound of Options exceeded: Limit is "depth" or "bytes",
// Max the bound.
type LimitError struct {
	Limit string
	Max   int
}

// Error names the bound.
func (e *LimitError) Error() string {
	return "inspect: " + e.Limit + " limit " + strconv.Itoa(e.Max) + " exceeded"
}

// Unwrap returns ErrLimit.
func (e *LimitError) Unwrap() error { return ErrLimit }

// errStop ends a walk when MaxFindings is reached.
var errStop = errors.New("inspect: stop")

// Inspect walks doc, one JSON value (RFC 8259), and scans with sc every
// string value after JSON decoding (Input.Key: the member name holding it,
// "" in an array or at the top), and every member name when
// opts.ScanNames. A string that is itself a JSON object or array is walked
// instead (at most three levels of such nesting; Encoding "json"); a
// value next to a secret-like key (scan.SecretLikeKey) that is base64,
// base64url, hex or percent-encoded text is decoded and scanned too
// (Encoding "base64", "hex", "percent"). MCP content: the data of
// {"type":"image"|"audio"} content is not scanned; an embedded resource's
// blob is decoded from base64 and scanned when its mimeType is textual,
// or when the decoded bytes are text whatever other mimeType the server
// declared; image, audio and video blobs are not scanned.
//
// Every finding's Path is the RFC 6901 pointer of its leaf in doc. The
// errors: a *SyntaxError (ErrSyntax) for malformed JSON, a *LimitError
// (ErrLimit) when MaxDepth or MaxBytes is exceeded; reaching MaxFindings
// is not an error but Report.Truncated. The scanner's texts are views of
// doc or of reused buffers: doc must not change during the call.
func Inspect(sc *scan.Scanner, doc []byte, opts Options) (*Report, error) {
	opts = opts.withDefaults()
	r := &Report{opts: opts, size: len(doc), sum: checksum(doc)}
	w := getWalker(doc, opts)
	defer putWalker(w)
	r.attach(sc, w)
	if err := w.walk(); err != nil && err != errStop {
		return nil, err
	}
	r.Undecoded = w.undecoded
	return r, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func checksum(doc []byte) uint32 { return crc32.Checksum(doc, castagnoli) }

// walkers keeps walkers with their decoding buffers between calls, and
// the scanning callbacks bound to them once (no closure is made per
// call).
var walkers = sync.Pool{New: func() any {
	w := &walker{path: make([]seg, 0, 16)}
	w.sink.emitFn = w.emit
	w.sink.visitFn = w.scanVisit
	return w
}}

// maxPooledBuf is the largest decoding buffer kept in the pool.
const maxPooledBuf = 4 << 20

func getWalker(doc []byte, opts Options) *walker {
	w := walkers.Get().(*walker)
	w.opts, w.doc, w.budget = opts, doc, opts.MaxBytes
	return w
}

func putWalker(w *walker) {
	for i := range w.bufs {
		if cap(w.bufs[i]) > maxPooledBuf {
			w.bufs[i] = nil
		}
		w.bufs[i] = w.bufs[i][:0]
	}
	// Nothing that views the document is kept: names in the path, texts,
	// span maps, the scanned text and the last key.
	clear(w.path[:w.pathHigh])
	w.path, w.pathHigh = w.path[:0], 0
	w.texts = [maxLayers + 1][]byte{}
	for i := range w.maps {
		if w.maps[i].set {
			w.maps[i] = spanMapper{}
		}
	}
	w.opts, w.doc, w.visit = Options{}, nil, nil
	w.cur, w.level, w.budget, w.undecoded = loc{}, 0, 0, 0
	w.lastKey, w.lastSecret, w.keySet = "", false, false
	w.sink.r, w.sink.sc, w.sink.text, w.sink.pointer, w.sink.ptrOK = nil, nil, "", "", false
	walkers.Put(w)
}

// scanSink is the state of a walk that scans into a Report (attach).
type scanSink struct {
	r  *Report
	sc *scan.Scanner
	// text is the text being scanned; pointer its leaf's path once a
	// finding needed it (ptrOK).
	text    string
	pointer string
	ptrOK   bool
	// emitFn and visitFn are w.emit and w.scanVisit, bound once.
	emitFn  func(scan.Finding)
	visitFn func(text, key string) error
}

// attach makes w's visits scan with sc into r.
func (r *Report) attach(sc *scan.Scanner, w *walker) {
	w.sink.r, w.sink.sc = r, sc
	w.visit = w.sink.visitFn
}

// scanVisit scans one text into the attached report.
func (w *walker) scanVisit(t, key string) error {
	k := &w.sink
	k.text, k.ptrOK = t, false
	k.sc.Scan(scan.Input{Text: t, Key: key, Mode: k.r.opts.Mode}, k.emitFn)
	if k.r.Truncated {
		return errStop
	}
	return nil
}

// emit keeps one finding of the text being scanned: its path is built
// once per text, when the first finding needs it.
func (w *walker) emit(f scan.Finding) {
	k := &w.sink
	r := k.r
	if r.Truncated {
		return
	}
	if f.Start < 0 || f.End > len(k.text) || f.Start > f.End {
		return // a detector's defect: nothing to point at
	}
	if len(r.Findings) >= r.opts.MaxFindings {
		r.Truncated = true
		return
	}
	if !k.ptrOK {
		k.pointer, k.ptrOK = w.pointer(), true
	}
	enc := ""
	if w.cur.n > 0 {
		enc = w.cur.layers[w.cur.n-1].kind.String()
	}
	r.Findings = append(r.Findings, Finding{Finding: f, Path: k.pointer, Encoding: enc, at: w.cur})
}
