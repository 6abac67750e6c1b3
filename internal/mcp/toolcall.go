package mcp

import (
	"errors"

	"github.com/gatehouse-mcp/gatehouse/internal/strictjson"
)

// ErrToolCallParams is returned (wrapped in a *ToolCallError) by
// [ParseToolCall] for tools/call params the gateway cannot decide on.
var ErrToolCallParams = errors.New("tools/call params need a string name and object arguments")

// ToolCallError says which member of tools/call params is at fault, never
// its value.
type ToolCallError struct {
	// Field is "/name", "/arguments" or "/_meta", or "" for params as a
	// whole (not an object).
	Field string
	// Reason says what is wrong with it.
	Reason string
}

// Error names the field and the reason.
func (e *ToolCallError) Error() string {
	if e.Field == "" {
		return "tools/call params: " + e.Reason
	}
	return "tools/call params: " + e.Field + ": " + e.Reason
}

// Unwrap returns ErrToolCallParams.
func (e *ToolCallError) Unwrap() error { return ErrToolCallParams }

// ToolCall is the view of one tools/call request's params ("Tools" page,
// CallToolRequest, of each revision) that the gateway decides on, read
// once: the tool's name, and the raw arguments and _meta values as
// sub-slices of the params they were read from (valid as long as those
// are: for a transport.Frame's message, until the next Read unless the
// frame is retained).
type ToolCall struct {
	// Name is params.name, decoded.
	Name string
	// Arguments is the raw params.arguments object, nil when absent.
	Arguments []byte
	// Meta is the raw params._meta value, nil when absent.
	Meta []byte
}

// ParseToolCall reads the tools/call params (the raw "params" value of a
// message from jsonrpc.Parse, which has already found it strict JSON) in
// one walk of its top-level members, without validating it again
// (strictjson.ValidatedMembers): values are not descended into, so a 1 MiB
// arguments object costs one skip over its bytes.
//
// Names are matched exactly. It returns a *ToolCallError wrapping
// ErrToolCallParams when params is absent or not an object, name is
// missing, not a string or empty, arguments is present but not an object,
// or a member name differs from name, arguments or _meta only in case
// (strictjson.Fold): a server matching names case-insensitively would read
// what the gateway did not. params that did not come from a strict parse
// get an unspecified result, but no panic.
func ParseToolCall(params []byte) (ToolCall, error) {
	var c ToolCall
	if len(params) == 0 || params[0] != '{' {
		return c, &ToolCallError{Reason: "not an object"}
	}
	var fault *ToolCallError
	hasName := false
	err := strictjson.ValidatedMembers(params, func(n string, v []byte) bool {
		switch n {
		case "name":
			s, err := strictjson.String(v)
			if err != nil {
				fault = &ToolCallError{Field: "/name", Reason: "not a string"}
				return false
			}
			c.Name, hasName = s, true
		case "arguments":
			if v[0] != '{' {
				fault = &ToolCallError{Field: "/arguments", Reason: "not an object"}
				return false
			}
			c.Arguments = v
		case "_meta":
			c.Meta = v
		default:
			switch strictjson.Fold(n) {
			case "name", "arguments", "_meta":
				fault = &ToolCallError{Field: "/" + strictjson.Fold(n), Reason: "a member name differs from it only in case"}
				return false
			}
		}
		return true
	})
	switch {
	case fault != nil:
		return ToolCall{}, fault
	case err != nil:
		return ToolCall{}, &ToolCallError{Reason: "not strict JSON"}
	case !hasName || c.Name == "":
		return ToolCall{}, &ToolCallError{Field: "/name", Reason: "missing or empty"}
	}
	return c, nil
}
