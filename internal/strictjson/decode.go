package strictjson

import (
	"bytes"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// Decode decodes v, a JSON value already found strict (by [Validate] or a
// strict parse of the frame it is part of), into Go values for policy
// conditions, without validating it again: an object becomes
// map[string]any, an array []any, a string string, true and false bool,
// null nil, and a number int64 when its text is an integer that fits
// (strconv.ParseInt: "7", "-0"), else float64 (strconv.ParseFloat: "1.0",
// "1e2"; ±Inf when out of range). These are the values encoding/json with
// UseNumber and that conversion gives (FuzzDecode holds the two together),
// in one pass and without encoding/json's reflection.
//
// For text that is not strict JSON the result is unspecified (an *Error
// wrapping ErrSyntax, or values of no meaning) but it never panics.
func Decode(v []byte) (any, error) {
	d := valueDecoder{b: v}
	i := skipSpace(v, 0)
	out, i, err := d.value(i, 0)
	if err != nil {
		return nil, err
	}
	if skipSpace(v, i) != len(v) {
		return nil, &Error{Err: ErrTrailing, Offset: int64(i)}
	}
	return out, nil
}

type valueDecoder struct{ b []byte }

func (d *valueDecoder) value(i, depth int) (any, int, error) {
	b := d.b
	if i >= len(b) || depth > MaxDepth {
		return nil, i, bad(i)
	}
	switch c := b[i]; c {
	case '"':
		s, end, err := d.str(i)
		return s, end, err
	case '{':
		m := map[string]any{}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == '}' {
			return m, i + 1, nil
		}
		for {
			name, end, err := d.str(i)
			if err != nil {
				return nil, i, err
			}
			i = skipSpace(b, end)
			if i >= len(b) || b[i] != ':' {
				return nil, i, bad(i)
			}
			v, end, err := d.value(skipSpace(b, i+1), depth+1)
			if err != nil {
				return nil, end, err
			}
			m[name] = v
			i = skipSpace(b, end)
			if i >= len(b) {
				return nil, i, bad(i)
			}
			switch b[i] {
			case ',':
				i = skipSpace(b, i+1)
			case '}':
				return m, i + 1, nil
			default:
				return nil, i, bad(i)
			}
		}
	case '[':
		a := []any{}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return a, i + 1, nil
		}
		for {
			v, end, err := d.value(i, depth+1)
			if err != nil {
				return nil, end, err
			}
			a = append(a, v)
			i = skipSpace(b, end)
			if i >= len(b) {
				return nil, i, bad(i)
			}
			switch b[i] {
			case ',':
				i = skipSpace(b, i+1)
			case ']':
				return a, i + 1, nil
			default:
				return nil, i, bad(i)
			}
		}
	case 't':
		return true, i + 4, literal(b, i, "true")
	case 'f':
		return false, i + 5, literal(b, i, "false")
	case 'n':
		return nil, i + 4, literal(b, i, "null")
	default:
		end := skipValue(b, i)
		if end < 0 {
			return nil, i, bad(i)
		}
		lit := string(b[i:end])
		if n, err := strconv.ParseInt(lit, 10, 64); err == nil {
			return n, end, nil
		}
		f, err := strconv.ParseFloat(lit, 64)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
				return nil, i, bad(i)
			}
		}
		return f, end, nil
	}
}

// literal checks that b at i spells lit.
func literal(b []byte, i int, lit string) error {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return bad(i)
	}
	return nil
}

// str decodes the string whose opening quote is at i.
func (d *valueDecoder) str(i int) (string, int, error) {
	b := d.b
	if i >= len(b) || b[i] != '"' {
		return "", i, bad(i)
	}
	end := stringEnd(b, i)
	if end < 0 {
		return "", i, bad(i)
	}
	q := b[i:end]
	if bytes.IndexByte(q, '\\') >= 0 {
		s, err := jsontext.AppendUnquote(nil, q)
		if err != nil {
			return "", i, bad(i)
		}
		return string(s), end, nil
	}
	return string(q[1 : len(q)-1]), end, nil
}
