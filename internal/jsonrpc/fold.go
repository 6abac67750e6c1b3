package jsonrpc

import (
	"bytes"
	"io"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// Member names that differ only in case are a parser differential: a
// server that decodes with a case-insensitive matcher (Go's encoding/json
// into a struct, for one, where the last match wins and Unicode simple
// folding makes "paramſ" match "params") reads a different message than the
// gateway decided. So a frame is refused when, in any object at any depth,
// two member names are equal under case folding, and when a top-level member
// name folds to a JSON-RPC member name without being it ("METHOD").

// foldKey returns the name under case folding: ASCII lowercased, and for
// other names lower(upper(name)), which also maps U+017F (long s) to "s"
// and U+212A (Kelvin sign) to "k".
func foldKey(name string) string {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 0x80 {
			return strings.ToLower(strings.ToUpper(name))
		}
	}
	return strings.ToLower(name)
}

// mayFoldCollide reports whether body has a byte that can make two distinct
// member names fold together: an ASCII capital, any non-ASCII byte, or a
// backslash (an escape such as \u212a spells a non-ASCII name in ASCII).
// Without one, names are lowercase ASCII, where folding is identity and
// exact duplicates are already refused.
func mayFoldCollide(body []byte) bool {
	for _, c := range body {
		if c >= 0x80 || (c >= 'A' && c <= 'Z') || c == '\\' {
			return true
		}
	}
	return false
}

// foldedDuplicate walks the strict JSON value body and returns the first
// member name that equals an earlier one of the same object under case
// folding, or "" when there is none. body must already be valid JSON.
func foldedDuplicate(body []byte) string {
	if !mayFoldCollide(body) {
		return ""
	}
	type level struct {
		object, wantName bool
		names            []string
	}
	var stack []level
	dec := jsontext.NewDecoder(bytes.NewBuffer(body))
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			if err != io.EOF {
				return "" // a syntax error is reported by the strict parse
			}
			return ""
		}
		k := tok.Kind()
		if k == '}' || k == ']' {
			stack = stack[:len(stack)-1]
			continue
		}
		if n := len(stack); n > 0 && stack[n-1].object {
			top := &stack[n-1]
			if top.wantName {
				name := tok.String()
				key := foldKey(name)
				for _, seen := range top.names {
					if seen == key {
						return name
					}
				}
				top.names = append(top.names, key)
				top.wantName = false
				continue
			}
			top.wantName = true // after this value, a name or '}'
		}
		switch k {
		case '{':
			stack = append(stack, level{object: true, wantName: true})
		case '[':
			stack = append(stack, level{})
		}
	}
}

// rpcMembers are the JSON-RPC 2.0 member names; a top-level member whose
// name folds to one of them must be exactly it.
var rpcMembers = map[string]bool{"jsonrpc": true, "id": true, "method": true, "params": true, "result": true, "error": true}
