package strictjson

import (
	"bytes"

	"github.com/go-json-experiment/json/jsontext"
)

// ValidatedMembers walks the members of obj, a JSON object that has
// already been found strict (by [Validate], [Members], or jsonrpc.Parse,
// whose params, result and error values are sub-slices of a validated
// frame), without validating it again: one pass over obj's structural bytes
// in which strings are skipped with bytes.IndexByte. It calls fn, in order,
// with each member's decoded name and raw value (a sub-slice of obj); fn
// returns false to stop the walk.
//
// This is how a value is read a second time without a second parse (the
// parse-once rule of the request path): the cost is a fraction of a
// strict parse and no allocation unless a name has escapes. For text that
// is not strict JSON the result is unspecified (an error wrapping
// ErrSyntax, or members of no meaning) but it never panics; FuzzMembers
// holds it to Members on strict input.
func ValidatedMembers(obj []byte, fn func(name string, value []byte) bool) error {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return &Error{Err: ErrKind, Offset: -1}
	}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return nil
	}
	for {
		if i >= len(obj) || obj[i] != '"' {
			return bad(i)
		}
		e := stringEnd(obj, i)
		if e < 0 {
			return bad(i)
		}
		quoted := obj[i:e]
		var name string
		if bytes.IndexByte(quoted, '\\') >= 0 {
			s, err := jsontext.AppendUnquote(nil, quoted)
			if err != nil {
				return bad(i)
			}
			name = string(s)
		} else {
			name = string(quoted[1 : len(quoted)-1])
		}
		i = skipSpace(obj, e)
		if i >= len(obj) || obj[i] != ':' {
			return bad(i)
		}
		start := skipSpace(obj, i+1)
		stop := skipValue(obj, start)
		if stop < 0 {
			return bad(start)
		}
		if !fn(name, obj[start:stop:stop]) {
			return nil
		}
		i = skipSpace(obj, stop)
		if i >= len(obj) {
			return bad(i)
		}
		switch obj[i] {
		case ',':
			i = skipSpace(obj, i+1)
		case '}':
			return nil
		default:
			return bad(i)
		}
	}
}

func bad(off int) error { return &Error{Err: ErrSyntax, Offset: int64(off)} }

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipValue returns the index just after the value that starts at b[i]
// in validated JSON, or -1 when it finds no end.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				e := stringEnd(b, i)
				if e < 0 {
					return -1
				}
				i = e
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	default:
		// A number or a literal: up to the next delimiter.
		j := i
		for j < len(b) {
			switch b[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				if j == i {
					return -1
				}
				return j
			case '"', '{', '[', ':':
				return -1
			}
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
}
