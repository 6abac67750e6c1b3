// Package strictjson is the gateway's one strict JSON reader: it validates a
// JSON text, walks an object's members and an array's elements, and decodes
// a string value, with one meaning of "strict" for every package that reads
// JSON a peer sent (jsonrpc's reference parser, mcp's tool decoder,
// evidence's receipt parser, verify's line reader).
//
// Strict means (RFC 8259 syntax, RFC 7493 I-JSON §2.1 and §2.3, and one
// rule of this project):
//
//   - exactly one JSON value, with nothing but whitespace around it;
//   - valid UTF-8 throughout, escapes included (no lone surrogates);
//   - no duplicate member names in any object at any depth (names are
//     compared after their escapes are decoded);
//   - no two member names of one object equal under case folding ([Fold]:
//     lower(upper(name))), at any depth: a peer that matches names
//     case-insensitively would read another value than the gateway did;
//   - nesting at most [MaxDepth] deep.
//
// The case-folding rule is the last check made, over the whole value, and
// is reported as [ErrFoldedDuplicate]: a caller that must tolerate such
// names (a server's receipt is kept as received and its folded names are a
// problem to report, not a reason to drop it) can tell it apart, and the
// walkers have then already given it every member. Every other caller
// refuses the value.
//
// Values are returned as sub-slices of the input, never copied, and valid
// as long as the input is. Errors never quote the input: they say what is
// wrong and at which byte offset.
package strictjson

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// MaxDepth is the deepest nesting of objects and arrays accepted (the
// jsontext limit every strict reader of this project has used).
const MaxDepth = 10000

// Sentinel errors, wrapped by *Error; callers branch with errors.Is.
var (
	// ErrSyntax: the text is not JSON (RFC 8259 grammar), or is empty or
	// cut off.
	ErrSyntax = errors.New("invalid JSON")
	// ErrUTF8: a string or name holds invalid UTF-8 or an escaped lone
	// surrogate.
	ErrUTF8 = errors.New("invalid UTF-8")
	// ErrDuplicate: a member name occurs twice in one object.
	ErrDuplicate = errors.New("duplicate member name")
	// ErrFoldedDuplicate: two member names of one object are equal under
	// case folding ([Fold]) without being equal.
	ErrFoldedDuplicate = errors.New("member names equal under case folding")
	// ErrDepth: nesting deeper than MaxDepth.
	ErrDepth = errors.New("nesting too deep")
	// ErrTrailing: something other than whitespace follows the value.
	ErrTrailing = errors.New("data after the JSON value")
	// ErrKind: the value is valid but of the wrong kind (an object or an
	// array was required, or a string).
	ErrKind = errors.New("wrong JSON kind")
)

// Error is a strictness failure: Err is one of the sentinels, Offset the
// byte offset in the input where it was found (-1 when not known). Pointer
// is the RFC 6901 JSON Pointer of the value at fault when known (for
// ErrDuplicate, the duplicate member; "" for ErrFoldedDuplicate, ErrKind
// and ErrTrailing). For ErrDuplicate and ErrFoldedDuplicate, Name is the
// member name at fault (decoded), else "". Error() quotes neither: member
// names of arguments may carry anything.
type Error struct {
	Err     error
	Offset  int64
	Name    string
	Pointer string
}

// Error says what is wrong and where, without any input text.
func (e *Error) Error() string {
	if e.Offset >= 0 {
		return "strictjson: " + e.Err.Error() + " at byte " + strconv.FormatInt(e.Offset, 10)
	}
	return "strictjson: " + e.Err.Error()
}

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.Err }

// fail is the *Error for jsontext's err.
func fail(err error) *Error {
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) { // io.EOF, io.ErrUnexpectedEOF: empty or cut off
		return &Error{Err: ErrSyntax, Offset: -1}
	}
	e := &Error{Err: ErrSyntax, Offset: se.ByteOffset, Pointer: string(se.JSONPointer)}
	msg := se.Err.Error()
	switch {
	case errors.Is(err, jsontext.ErrDuplicateName):
		e.Err, e.Name = ErrDuplicate, se.JSONPointer.LastToken()
	case strings.Contains(msg, "UTF-8"), strings.Contains(msg, "surrogate"):
		e.Err = ErrUTF8
	case strings.Contains(msg, "max depth"):
		e.Err = ErrDepth
	}
	return e
}

// decoder reads one input in place (a bytes.Buffer is parsed without being
// copied into the decoder's own buffer).
type decoder struct {
	rd  bytes.Buffer
	dec jsontext.Decoder
}

var decoders = sync.Pool{New: func() any { return new(decoder) }}

func getDecoder(b []byte) *decoder {
	d := decoders.Get().(*decoder)
	d.rd = *bytes.NewBuffer(b)
	d.dec.Reset(&d.rd)
	return d
}

func putDecoder(d *decoder) {
	d.rd = bytes.Buffer{}
	d.dec.Reset(&d.rd)
	decoders.Put(d)
}

// Validate reports whether b is one strict JSON value (see the package
// comment): nil, or an *Error wrapping ErrSyntax, ErrUTF8, ErrDuplicate,
// ErrDepth, ErrTrailing or ErrFoldedDuplicate (the last checked).
func Validate(b []byte) error {
	d := getDecoder(b)
	defer putDecoder(d)
	if _, err := d.dec.ReadValue(); err != nil {
		return fail(err)
	}
	if err := end(&d.dec); err != nil {
		return err
	}
	return folded(b)
}

// end checks that nothing but whitespace follows the value just read.
func end(dec *jsontext.Decoder) error {
	off := dec.InputOffset()
	if _, err := dec.ReadToken(); err != io.EOF {
		return &Error{Err: ErrTrailing, Offset: off}
	}
	return nil
}

// folded is the case-folding check of an otherwise strict b.
func folded(b []byte) error {
	if name := foldedDuplicate(b); name != "" {
		return &Error{Err: ErrFoldedDuplicate, Offset: -1, Name: name}
	}
	return nil
}

// Members validates obj strictly as exactly one JSON object and calls fn,
// in order, for each of its members with the decoded name and the raw
// value (a sub-slice of obj, the value's exact text). fn is called for a
// member once its value has been read and found strict, before the next
// member is read; the walk stops at the first error, fn's (returned as it
// is) or the text's (an *Error). So fn may have seen some members when
// Members fails: callers discard what they saw, except that on
// ErrFoldedDuplicate, which is checked after the last member, fn has seen
// every member of an otherwise strict object.
//
// A value that is strict JSON but not an object gives an *Error wrapping
// ErrKind.
func Members(obj []byte, fn func(name string, value []byte) error) error {
	d := getDecoder(obj)
	defer putDecoder(d)
	dec := &d.dec
	tok, err := dec.ReadToken()
	if err != nil {
		return fail(err)
	}
	if tok.Kind() != '{' {
		// Validate the rest, so that bad JSON is ErrSyntax, not ErrKind.
		if err := Validate(obj); err != nil {
			return err
		}
		return &Error{Err: ErrKind, Offset: -1}
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return fail(err)
		}
		name := tok.String()
		v, err := dec.ReadValue()
		if err != nil {
			return fail(err)
		}
		end := int(dec.InputOffset())
		if err := fn(name, obj[end-len(v):end:end]); err != nil {
			return err
		}
	}
	if _, err := dec.ReadToken(); err != nil { // the closing brace
		return fail(err)
	}
	if err := end(dec); err != nil {
		return err
	}
	return folded(obj)
}

// Member is one member of an object: its decoded name and raw value.
type Member struct {
	Name  string
	Value []byte
}

// Object is Members collecting the members into a slice. On
// ErrFoldedDuplicate it returns the members as well as the error.
func Object(obj []byte) ([]Member, error) {
	var ms []Member
	err := Members(obj, func(name string, v []byte) error {
		ms = append(ms, Member{Name: name, Value: v})
		return nil
	})
	if err != nil && !errors.Is(err, ErrFoldedDuplicate) {
		return nil, err
	}
	return ms, err
}

// Elements validates arr strictly as exactly one JSON array and returns its
// elements' raw texts (sub-slices of arr) in order. Errors as for Members;
// on ErrFoldedDuplicate the elements are returned as well.
func Elements(arr []byte) ([][]byte, error) {
	d := getDecoder(arr)
	defer putDecoder(d)
	dec := &d.dec
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, fail(err)
	}
	if tok.Kind() != '[' {
		if err := Validate(arr); err != nil {
			return nil, err
		}
		return nil, &Error{Err: ErrKind, Offset: -1}
	}
	var out [][]byte
	for dec.PeekKind() != ']' {
		v, err := dec.ReadValue()
		if err != nil {
			return nil, fail(err)
		}
		end := int(dec.InputOffset())
		out = append(out, arr[end-len(v):end:end])
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, fail(err)
	}
	if err := end(dec); err != nil {
		return nil, err
	}
	return out, folded(arr)
}

// String decodes the JSON string value v (its raw text, quotes included).
// It returns an *Error wrapping ErrKind when v is not a string, ErrSyntax
// or ErrUTF8 when it is not a valid one.
func String(v []byte) (string, error) {
	if len(v) == 0 || v[0] != '"' {
		return "", &Error{Err: ErrKind, Offset: -1}
	}
	s, err := jsontext.AppendUnquote(nil, v)
	if err != nil {
		return "", fail(err)
	}
	return string(s), nil
}
