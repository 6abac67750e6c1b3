package receipts

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/go-json-experiment/json/jsontext"
)

// MetadataPointer is the RFC 6901 pointer, into request_line, of the
// request's params._meta member (request-receipts.md §3).
const MetadataPointer = "/params/_meta"

// Values of declared_protocol_version_state (request-receipts.md §3).
const (
	VersionPresent   = "present"
	VersionAbsent    = "absent"
	VersionMalformed = "malformed"
)

// ErrNotToolCall is wrapped by [InspectRequest] errors: the line is not a
// strict JSON-RPC 2.0 tools/call request or notification with a string
// params.name.
var ErrNotToolCall = errors.New("not a valid tools/call request line")

// Request is what a receipt states about a request line, recomputed from the
// line's bytes alone (request-receipts.md §3).
type Request struct {
	// Tool is params.name, decoded.
	Tool string
	// RPCIDPresent reports whether the request has an `id` member.
	RPCIDPresent bool
	// RPCID is a copy of the id's exact token text; `null` when the id is
	// absent (and also when it is an explicit null).
	RPCID []byte
	// HasMeta reports whether params has a `_meta` member (of any type);
	// the receipt's metadata_pointer is then [MetadataPointer], else null.
	HasMeta bool
	// VersionState is present, absent or malformed, from
	// params._meta["io.modelcontextprotocol/protocolVersion"].
	VersionState string
	// Version is the declared version when VersionState is present, else "".
	Version string
}

// InspectRequest parses one request line (terminator "\n" or "\r\n"
// included or not; an LF anywhere else is refused: it is not one line) strictly, with the same classifier the relay uses
// (package jsonrpc: valid UTF-8, exactly one JSON value, no duplicate member
// names at any depth, JSON-RPC 2.0 shape), and requires method "tools/call",
// an object params and a string params.name. It reads nothing but the id,
// the method, params.name and params._meta. The error wraps
// [ErrNotToolCall] and never quotes the line.
func InspectRequest(line []byte) (Request, error) {
	if i := bytes.IndexByte(line, '\n'); i >= 0 && i != len(line)-1 {
		return Request{}, fmt.Errorf("%w: LF before the end of the line", ErrNotToolCall)
	}
	m, err := jsonrpc.Parse(line)
	if err != nil {
		return Request{}, fmt.Errorf("%w: %v", ErrNotToolCall, err)
	}
	if m.Kind != jsonrpc.KindRequest && m.Kind != jsonrpc.KindNotification {
		return Request{}, fmt.Errorf("%w: a %s, not a request", ErrNotToolCall, m.Kind)
	}
	if m.Method != mcp.MethodToolsCall {
		return Request{}, fmt.Errorf("%w: method is not tools/call", ErrNotToolCall)
	}
	if len(m.Params) == 0 || m.Params[0] != '{' {
		return Request{}, fmt.Errorf("%w: params is not an object", ErrNotToolCall)
	}
	r := Request{RPCIDPresent: m.ID.Present(), VersionState: VersionAbsent}
	if r.RPCIDPresent {
		r.RPCID = append([]byte(nil), m.ID.Raw()...)
	} else {
		r.RPCID = []byte("null")
	}
	var (
		name    []byte
		hasName bool
		meta    []byte
	)
	if err := jsonrpc.ObjectMembers(m.Params, func(n string, v []byte) {
		switch n {
		case "name":
			name, hasName = v, true
		case "_meta":
			meta, r.HasMeta = v, true
		}
	}); err != nil {
		return Request{}, fmt.Errorf("%w: params: %v", ErrNotToolCall, err)
	}
	if !hasName || name[0] != '"' {
		return Request{}, fmt.Errorf("%w: params.name is missing or not a string", ErrNotToolCall)
	}
	tool, err := jsontext.AppendUnquote(nil, name)
	if err != nil {
		return Request{}, fmt.Errorf("%w: params.name: %v", ErrNotToolCall, err)
	}
	r.Tool = string(tool)
	if r.HasMeta {
		r.VersionState, r.Version = declaredVersion(meta)
	}
	return r, nil
}

// declaredVersion classifies params._meta (its raw, already strict JSON
// value): absent when the key is missing; present with the version when it
// is a string that is a real calendar date YYYY-MM-DD; malformed when the
// value is anything else or _meta is not an object (null included).
func declaredVersion(meta []byte) (state, version string) {
	if meta[0] != '{' {
		return VersionMalformed, ""
	}
	var v []byte
	found := false
	if err := jsonrpc.ObjectMembers(meta, func(n string, val []byte) {
		if n == mcp.MetaProtocolVersion {
			v, found = val, true
		}
	}); err != nil {
		return VersionMalformed, ""
	}
	if !found {
		return VersionAbsent, ""
	}
	if v[0] != '"' {
		return VersionMalformed, ""
	}
	s, err := jsontext.AppendUnquote(nil, v)
	if err != nil || !IsCalendarDate(string(s)) {
		return VersionMalformed, ""
	}
	return VersionPresent, string(s)
}

// IsCalendarDate reports whether s is exactly ten bytes of the form
// YYYY-MM-DD naming a real calendar day (2025-02-29 is not; 2024-02-29 is).
func IsCalendarDate(s string) bool {
	if len(s) != 10 {
		return false
	}
	for i := 0; i < 10; i++ {
		c := s[i]
		if i == 4 || i == 7 {
			if c != '-' {
				return false
			}
		} else if c < '0' || c > '9' {
			return false
		}
	}
	_, err := time.Parse("2006-01-02", s)
	return err == nil
}
