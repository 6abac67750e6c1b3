// Package jsonrpc classifies one frame as a JSON-RPC 2.0 request,
// notification, response or batch, by a strict parse, without re-encoding
// anything (JSON-RPC 2.0 specification §4–§6; RFC 8259).
//
// Strict means: the frame is valid UTF-8, is exactly one JSON value, has no
// duplicate member names at any depth (a parser differential between the
// gateway and the server would be a policy bypass), and has the shape of a
// JSON-RPC 2.0 message. Member values are returned as sub-slices of the frame,
// so ids keep their JSON type and exact number text.
package jsonrpc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/gatehouse-mcp/gatehouse/internal/strictjson"
)

// Kind is what a frame was classified as.
type Kind uint8

// The kinds of frame.
const (
	KindInvalid Kind = iota
	KindRequest
	KindNotification
	KindResponse
	KindBatch
)

// String returns the kind's name: "request", "notification", "response",
// "batch" or "invalid".
func (k Kind) String() string {
	switch k {
	case KindRequest:
		return "request"
	case KindNotification:
		return "notification"
	case KindResponse:
		return "response"
	case KindBatch:
		return "batch"
	}
	return "invalid"
}

// JSON-RPC 2.0 error codes (JSON-RPC 2.0 §5.1).
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// ID is a JSON-RPC id as it appeared on the wire: the raw token text
// (`"7"`, `7`, `1.0`, `null`), or absent.
type ID struct {
	raw []byte
}

// NewID returns the ID whose raw token text is raw (a JSON string, number or
// null). It does not validate raw.
func NewID(raw []byte) ID { return ID{raw: raw} }

// Present reports whether the message had an "id" member.
func (id ID) Present() bool { return id.raw != nil }

// Raw returns the id's exact token text, or nil when absent.
func (id ID) Raw() []byte { return id.raw }

// IsNull reports whether the id is present and the JSON null.
func (id ID) IsNull() bool { return string(id.raw) == "null" }

// String returns the raw token text, or "" when absent.
func (id ID) String() string { return string(id.raw) }

// Key returns an identity for matching a response to its request. Two ids
// have the same key when they are the same JSON value of the same type: the
// string "7" and the number 7 differ; the numbers 1, 1.0 and 1e0 are equal;
// "\u0037" equals "7". Absent ids have the key "".
func (id ID) Key() string {
	if len(id.raw) == 0 {
		return ""
	}
	switch c := id.raw[0]; {
	case c == '"':
		if bytes.IndexByte(id.raw, '\\') < 0 {
			return "s:" + string(id.raw[1:len(id.raw)-1])
		}
		v, err := jsontext.AppendUnquote(nil, id.raw)
		if err != nil {
			return "r:" + string(id.raw)
		}
		return "s:" + string(v)
	case c == 'n':
		return "null"
	default:
		return "n:" + canonicalNumber(id.raw)
	}
}

// canonicalNumber returns a canonical text for a JSON number token so that
// equal values compare equal. Plain integers are returned as they are.
func canonicalNumber(tok []byte) string {
	plain := true
	for i, c := range tok {
		if c == '-' && i == 0 {
			continue
		}
		if c < '0' || c > '9' {
			plain = false
			break
		}
	}
	if plain {
		if string(tok) == "-0" {
			return "0"
		}
		return string(tok)
	}
	// Bound the work a hostile exponent can cause.
	if e := bytes.IndexAny(tok, "eE"); e >= 0 && len(tok)-e > 5 {
		return string(tok)
	}
	var r big.Rat
	if _, ok := r.SetString(string(tok)); !ok {
		return string(tok)
	}
	return r.RatString()
}

// Message is one classified frame. Byte slices alias the frame passed to
// Parse and are valid as long as it is.
type Message struct {
	// Kind is the classification.
	Kind Kind
	// ID is the "id" member (requests and responses).
	ID ID
	// Method is the "method" member (requests and notifications).
	Method string
	// Params is the raw "params" value, nil when absent.
	Params []byte
	// Result is the raw "result" value of a response, nil when absent.
	Result []byte
	// Error is the raw "error" value of a response, nil when absent.
	Error []byte
	// Members are the messages of a batch, in order.
	Members []Message
	// Raw is the message's JSON text: the whole frame body for a top-level
	// message (terminator excluded), or the member's text in a batch.
	Raw []byte
}

// Error is why a frame is invalid. Code is the JSON-RPC error code the sender
// should get: CodeParseError for frames that are not strict JSON,
// CodeInvalidRequest for JSON that is not a JSON-RPC 2.0 message.
type Error struct {
	Code    int
	Message string
	// ID is the message's id when one could be read, so that the error can
	// be addressed to the sender.
	ID ID
}

// Error returns the reason the frame is invalid.
func (e *Error) Error() string { return e.Message }

// ErrInvalid is matched by errors.Is for every *Error.
var ErrInvalid = errors.New("invalid JSON-RPC frame")

// Is makes errors.Is(err, ErrInvalid) true.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

var decoders = sync.Pool{New: func() any { return new(parser) }}

// parser holds a reusable decoder. The decoder reads from a bytes.Buffer,
// which jsontext parses in place instead of copying into its own buffer:
// a 16 MiB frame is not duplicated to be classified.
type parser struct {
	rd  bytes.Buffer
	dec jsontext.Decoder
}

// reset points p at b.
func (p *parser) reset(b []byte) {
	p.rd = *bytes.NewBuffer(b)
	p.dec.Reset(&p.rd)
}

// newDecoder returns a decoder that parses b in place.
func newDecoder(b []byte, opts ...jsontext.Options) *jsontext.Decoder {
	return jsontext.NewDecoder(bytes.NewBuffer(b), opts...)
}

// Body returns frame without its line terminator ("\n" or "\r\n").
func Body(frame []byte) []byte {
	n := len(frame)
	if n > 0 && frame[n-1] == '\n' {
		n--
		if n > 0 && frame[n-1] == '\r' {
			n--
		}
	}
	return frame[:n]
}

// Parse classifies one frame (its terminator, if any, is ignored). On
// success the returned Message has Kind request, notification, response or
// batch. Otherwise it returns a Message of KindInvalid and an *Error whose
// Code says how to answer: -32700 for anything that is not exactly one strict
// JSON value (bad syntax, invalid UTF-8, duplicate member names, trailing
// data), -32600 for JSON that is not a JSON-RPC 2.0 message or batch.
//
// A -32700 for duplicate member names carries the id (Error.ID) when the
// frame is otherwise strict JSON and has exactly one top-level member whose
// name folds to "id", spelled "id", with a string or number value: the
// sender can then be answered instead of waiting for a response that never
// comes.
func Parse(frame []byte) (Message, error) {
	body := Body(frame)
	if m, ok := parseFast(body); ok {
		return m, nil
	}
	return parseRef(body)
}

// duplicatesID returns the id of body when body is a JSON object that is
// strict JSON but for duplicate member names (anywhere), has a top-level
// member named "method" (a request: the id of a response names a request
// of the other side, which an error must not be addressed to), and has
// exactly one top-level member whose name folds to "id" as the duplicate
// check folds names (foldKey), named exactly "id", with a string or number
// value; else the absent ID. A second "id", or an "ID" or "ıd" beside it,
// makes the id ambiguous: a server reading names another way could see
// another one.
func duplicatesID(body []byte) ID {
	dec := newDecoder(body, jsontext.AllowDuplicateNames(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return ID{}
	}
	var id ID
	ids, hasMethod := 0, false
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return ID{}
		}
		name := tok.String()
		v, err := dec.ReadValue()
		if err != nil {
			return ID{}
		}
		if name == "method" {
			hasMethod = true
		}
		if foldKey(name) != "id" {
			continue
		}
		ids++
		end := int(dec.InputOffset())
		if name == "id" {
			id = validID(ID{raw: append([]byte(nil), body[end-len(v):end]...)})
		}
	}
	if _, err := dec.ReadToken(); err != nil { // the closing brace
		return ID{}
	}
	if _, err := dec.ReadToken(); err != io.EOF || ids != 1 || !hasMethod {
		return ID{}
	}
	return id
}

// parseFast classifies body on the fast path (scan.go): ok is false when
// the fast path declines, and then parseRef decides, errors included.
func parseFast(body []byte) (m Message, ok bool) {
	var (
		version                    []byte
		hasMethod, hasID, nearMiss bool
		method                     []byte
	)
	start, end, ok := topMembers(body, func(name, v []byte) {
		switch string(name) {
		case "jsonrpc":
			version = v
		case "id":
			hasID = true
			m.ID = ID{raw: v}
		case "method":
			hasMethod = true
			method = v
		case "params":
			m.Params = v
		case "result":
			m.Result = v
		case "error":
			m.Error = v
		default:
			if rpcMembers[foldKey(string(name))] {
				nearMiss = true
			}
		}
	})
	if !ok || nearMiss {
		return Message{}, false
	}
	methodIsString := hasMethod && method[0] == '"'
	if methodIsString {
		if m.Method, ok = methodName(method); !ok {
			return Message{}, false
		}
	}
	m.Raw = body[start:end]
	m, perr := shape(m, version, hasID, hasMethod, methodIsString, "")
	if perr != nil {
		return Message{}, false
	}
	return m, true
}

// methodName returns the value of the JSON string raw without allocating
// for the methods of the MCP specification.
func methodName(raw []byte) (string, bool) {
	if bytes.IndexByte(raw, '\\') >= 0 {
		s, err := jsontext.AppendUnquote(nil, raw)
		return string(s), err == nil
	}
	v := raw[1 : len(raw)-1]
	switch string(v) {
	case "tools/call":
		return "tools/call", true
	case "tools/list":
		return "tools/list", true
	case "notifications/progress":
		return "notifications/progress", true
	case "notifications/cancelled":
		return "notifications/cancelled", true
	case "ping":
		return "ping", true
	}
	return string(v), true
}

// parseRef is Parse by the jsontext tokenizer: the reference the fast path
// is checked against, and the path of every frame the fast path declines.
func parseRef(body []byte) (Message, error) {
	m, err := parseStrict(body)
	if perr, ok := err.(*Error); ok && perr.Code == CodeParseError && !perr.ID.Present() {
		perr.ID = duplicatesID(body)
	}
	return m, err
}

// parseStrict is parseRef without the id of a frame refused for duplicate
// member names.
func parseStrict(body []byte) (Message, error) {
	p := decoders.Get().(*parser)
	defer decoders.Put(p)
	p.reset(body)
	if p.dec.PeekKind() == '{' {
		return p.parseObject(body)
	}
	v, err := p.dec.ReadValue()
	if err != nil {
		return Message{Raw: body}, &Error{Code: CodeParseError, Message: "parse error: " + syntaxReason(err)}
	}
	end := int(p.dec.InputOffset())
	val := body[end-len(v) : end]
	// v is only valid until the next read; val is its place in body.
	if _, err := p.dec.ReadToken(); err != io.EOF {
		return Message{Raw: body}, &Error{Code: CodeParseError, Message: "parse error: data after the JSON value"}
	}
	switch val[0] {
	case '{':
		p.reset(val)
		m, perr := classify(&p.dec, val)
		if perr != nil {
			return Message{Raw: body}, perr
		}
		return m, nil
	case '[':
		if foldedDuplicate(val) != "" {
			return Message{Raw: body}, &Error{Code: CodeParseError, Message: "parse error: duplicate member name (names may not differ only in case)"}
		}
		p.reset(val)
		return parseBatch(&p.dec, val)
	}
	return Message{Raw: body}, &Error{Code: CodeInvalidRequest, Message: "invalid request: not a JSON-RPC 2.0 object or batch"}
}

// parseObject classifies a body whose value is an object in one pass: the
// member reads validate the syntax (strictness included), classify checks
// the shape, and the read after the object must find the end of input. A
// syntax error anywhere, trailing data included, wins over a shape error.
func (p *parser) parseObject(body []byte) (Message, error) {
	start := int(p.dec.InputOffset()) + bytes.IndexByte(body[p.dec.InputOffset():], '{')
	m, perr := classify(&p.dec, body)
	if perr != nil && perr.Code == CodeParseError {
		return Message{Raw: body}, perr
	}
	end := int(p.dec.InputOffset())
	if _, err := p.dec.ReadToken(); err != io.EOF {
		return Message{Raw: body}, &Error{Code: CodeParseError, Message: "parse error: data after the JSON value"}
	}
	if foldedDuplicate(body) != "" {
		return Message{Raw: body}, &Error{Code: CodeParseError, Message: "parse error: duplicate member name (names may not differ only in case)"}
	}
	if perr != nil {
		return Message{Raw: body}, perr
	}
	m.Raw = body[start:end]
	return m, nil
}

func syntaxReason(err error) string {
	var se *jsontext.SyntacticError
	if errors.As(err, &se) {
		msg := se.Err.Error()
		if strings.Contains(msg, "duplicate") {
			return fmt.Sprintf("duplicate member name at byte %d", se.ByteOffset)
		}
		return fmt.Sprintf("%s at byte %d", contentFree(msg), se.ByteOffset)
	}
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return "empty or truncated JSON"
	}
	return err.Error()
}

// contentFree removes from a parser message the parts that quote the
// frame: the tokenizer quotes the bytes of a bad escape or string between
// backticks (invalid surrogate pair `\udc00sk-liv`), and those bytes may
// be a secret. Error messages are recorded in the decision log and shown
// on stderr, which must never hold frame content; the single character
// the tokenizer names in 'x' is kept (it says what was found).
func contentFree(msg string) string {
	for {
		i := strings.IndexByte(msg, '`')
		if i < 0 {
			return msg
		}
		j := strings.IndexByte(msg[i+1:], '`')
		if j < 0 {
			return strings.TrimSpace(msg[:i])
		}
		msg = strings.TrimRight(msg[:i], " ") + msg[i+1+j+1:]
	}
}

// parseBatch splits an already validated array into members.
func parseBatch(dec *jsontext.Decoder, val []byte) (Message, error) {
	m := Message{Kind: KindBatch, Raw: val}
	if _, err := dec.ReadToken(); err != nil {
		return Message{Raw: val}, &Error{Code: CodeParseError, Message: "parse error: " + syntaxReason(err)}
	}
	for dec.PeekKind() != ']' {
		v, err := dec.ReadValue()
		if err != nil {
			return Message{Raw: val}, &Error{Code: CodeParseError, Message: "parse error: " + syntaxReason(err)}
		}
		end := int(dec.InputOffset())
		member := val[end-len(v) : end]
		if v.Kind() != '{' {
			return Message{Raw: val}, &Error{Code: CodeInvalidRequest, Message: "invalid request: batch member is not an object"}
		}
		mm, perr := classify(newDecoder(member), member)
		if perr != nil {
			return Message{Raw: val}, perr
		}
		m.Members = append(m.Members, mm)
	}
	if len(m.Members) == 0 {
		return Message{Raw: val}, &Error{Code: CodeInvalidRequest, Message: "invalid request: empty batch"}
	}
	return m, nil
}

// classify reads the members of one JSON object that is known to be strict
// JSON and decides what JSON-RPC message it is.
func classify(dec *jsontext.Decoder, obj []byte) (Message, *Error) {
	m := Message{Raw: obj}
	if _, err := dec.ReadToken(); err != nil {
		return m, &Error{Code: CodeParseError, Message: "parse error: " + syntaxReason(err)}
	}
	var (
		version          []byte
		hasMethod, hasID bool
		methodKind       jsontext.Kind
		nearMiss         string // a member that is a JSON-RPC name in another case
	)
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return m, &Error{Code: CodeParseError, Message: "parse error: " + syntaxReason(err)}
		}
		key := name.String()
		v, err := dec.ReadValue()
		if err != nil {
			return m, &Error{Code: CodeParseError, Message: "parse error: " + syntaxReason(err)}
		}
		end := int(dec.InputOffset())
		raw := obj[end-len(v) : end]
		switch key {
		case "jsonrpc":
			version = raw
		case "id":
			hasID = true
			m.ID = ID{raw: raw}
		case "method":
			hasMethod = true
			methodKind = v.Kind()
			if methodKind == '"' {
				s, err := jsontext.AppendUnquote(nil, raw)
				if err != nil {
					return m, &Error{Code: CodeParseError, Message: "parse error: bad method string"}
				}
				m.Method = string(s)
			}
		case "params":
			m.Params = raw
		case "result":
			m.Result = raw
		case "error":
			m.Error = raw
		default:
			if f := foldKey(key); rpcMembers[f] && nearMiss == "" {
				nearMiss = "invalid request: member " + key + " differs from the JSON-RPC member " + f + " only in case"
			}
		}
	}
	if _, err := dec.ReadToken(); err != nil { // the closing '}'
		return m, &Error{Code: CodeParseError, Message: "parse error: " + syntaxReason(err)}
	}
	return shape(m, version, hasID, hasMethod, methodKind == '"', nearMiss)
}

// shape decides what JSON-RPC message an object with the given members is:
// version is the raw "jsonrpc" value, nearMiss the error for a member that
// is a JSON-RPC name in another case ("" for none).
func shape(m Message, version []byte, hasID, hasMethod, methodIsString bool, nearMiss string) (Message, *Error) {
	if nearMiss != "" {
		return m, &Error{Code: CodeInvalidRequest, Message: nearMiss}
	}
	if string(version) != `"2.0"` {
		return m, &Error{Code: CodeInvalidRequest, Message: `invalid request: "jsonrpc" must be "2.0"`, ID: validID(m.ID)}
	}
	if hasID {
		switch m.ID.raw[0] {
		case '"', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		default:
			return m, &Error{Code: CodeInvalidRequest, Message: "invalid request: id must be a string, a number or null"}
		}
		if m.ID.raw[0] == 'n' && string(m.ID.raw) != "null" {
			return m, &Error{Code: CodeInvalidRequest, Message: "invalid request: id must be a string, a number or null"}
		}
	}
	if hasMethod {
		if !methodIsString {
			return m, &Error{Code: CodeInvalidRequest, Message: `invalid request: "method" must be a string`, ID: m.ID}
		}
		if m.Result != nil || m.Error != nil {
			return m, &Error{Code: CodeInvalidRequest, Message: "invalid request: a request cannot carry result or error", ID: m.ID}
		}
		if m.Params != nil && m.Params[0] != '{' && m.Params[0] != '[' {
			return m, &Error{Code: CodeInvalidRequest, Message: `invalid request: "params" must be an object or an array`, ID: m.ID}
		}
		if hasID {
			m.Kind = KindRequest
		} else {
			m.Kind = KindNotification
		}
		return m, nil
	}
	if !hasID {
		return m, &Error{Code: CodeInvalidRequest, Message: "invalid request: neither a request (method) nor a response (id)"}
	}
	if (m.Result == nil) == (m.Error == nil) {
		return m, &Error{Code: CodeInvalidRequest, Message: "invalid response: exactly one of result and error is required", ID: m.ID}
	}
	if m.Error != nil && m.Error[0] != '{' {
		return m, &Error{Code: CodeInvalidRequest, Message: `invalid response: "error" must be an object`, ID: m.ID}
	}
	m.Kind = KindResponse
	return m, nil
}

// validID returns id when it has a JSON-RPC id type, else the absent ID.
func validID(id ID) ID {
	if len(id.raw) == 0 {
		return ID{}
	}
	switch id.raw[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return id
	}
	return ID{}
}

// SniffID looks for a top-level "id" member in the leading bytes of a JSON
// object that may be cut off anywhere (the prefix of an oversized frame). It
// returns the id when its whole value was read and is a string or number,
// else the absent ID. Nothing else of the prefix is trusted.
func SniffID(prefix []byte) ID {
	id, _ := Sniff(prefix)
	return id
}

// Sniff reads the top-level members of a JSON object's leading bytes, which
// may be cut off anywhere, and returns the "id" (as SniffID does) and
// whether a "method" member name was seen: true means the frame was a
// request or notification, not a response.
func Sniff(prefix []byte) (id ID, hasMethod bool) {
	dec := newDecoder(prefix, jsontext.AllowDuplicateNames(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return ID{}, false
	}
	for {
		tok, err := dec.ReadToken()
		if err != nil || tok.Kind() != '"' {
			return id, hasMethod
		}
		name := tok.String()
		v, err := dec.ReadValue()
		if err != nil {
			return id, hasMethod || name == "method"
		}
		switch name {
		case "method":
			hasMethod = true
		case "id":
			end := int(dec.InputOffset())
			// A number that ends where the prefix ends may continue in
			// the bytes that were cut off ("12" of "123"): not an id.
			if k := v.Kind(); k == '"' || (k == '0' && end < len(prefix)) {
				id = ID{raw: append([]byte(nil), prefix[end-len(v):end]...)}
			}
		}
	}
}

// ObjectMembers calls fn for each member of the JSON object obj, in order,
// with the member name and its raw value (a sub-slice of obj). obj must
// already be strict JSON (from a parsed Message). It returns an error when
// obj is not an object.
func ObjectMembers(obj []byte, fn func(name string, value []byte)) error {
	if _, _, ok := topMembers(obj, func(name, value []byte) { fn(string(name), value) }); ok {
		return nil
	}
	return objectMembersRef(obj, fn)
}

// objectMembersRef is ObjectMembers by strictjson.Members, the project's
// one strict reader: the reference the fast path is held to
// (FuzzFastMembers), and the path of every object the fast path declines.
// Names equal under case folding are not an error here (obj was strict
// already, as a frame or part of one, and Parse refuses folded names in
// frames); text after the object is.
func objectMembersRef(obj []byte, fn func(name string, value []byte)) error {
	err := strictjson.Members(obj, func(name string, v []byte) error {
		fn(name, v)
		return nil
	})
	if err != nil && !errors.Is(err, strictjson.ErrFoldedDuplicate) {
		return fmt.Errorf("read object: %w", err)
	}
	return nil
}
