package ledger

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// This file checks that bytes are already in RFC 8785 (JCS) canonical form,
// in one pass and without building anything: the fast path of Append and
// ParseLeaf. It accepts exactly what jsontext.Value.Canonicalize leaves
// unchanged (FuzzCheckCanonical holds the two together):
//
//   - no whitespace outside strings;
//   - object members sorted by their names' UTF-16 code units, strictly
//     (so no duplicates) (§3.2.3);
//   - strings of valid UTF-8 where only '"', '\\' and U+0000..U+001F are
//     escaped, as \" \\ \b \t \n \f \r or \u00xx with lowercase hex (§3.2.2.2);
//   - numbers exactly as ECMAScript's Number.prototype.toString prints their
//     double value (§3.2.2.3): no -0, no exponent below 1e21 or at or above
//     1e-6, no trailing fraction zeros, and nothing beyond a double's range.

// maxCanonicalDepth bounds nesting, as jsontext does.
const maxCanonicalDepth = 10000

var errNotCanonical = errors.New("not canonical")

type canonScanner struct {
	b   []byte
	pos int
	// name is scratch space for decoding strings; prevs holds, per
	// nesting level, the previous member name of the object open there.
	name  []byte
	prevs [][]byte
}

func (s *canonScanner) fail(what string) error {
	return fmt.Errorf("%w: %s at byte %d", errNotCanonical, what, s.pos)
}

// checkCanonical reports whether b is one JSON value in RFC 8785 canonical
// form.
func checkCanonical(b []byte) error {
	s := scannerPool.Get().(*canonScanner)
	s.b, s.pos = b, 0
	err := s.value(0)
	if err == nil && s.pos != len(b) {
		err = s.fail("data after the value")
	}
	s.b = nil
	if len(s.prevs) <= 64 && cap(s.name) <= 4096 {
		scannerPool.Put(s) // its name buffers serve the next check
	}
	return err
}

var scannerPool = sync.Pool{New: func() any { return new(canonScanner) }}

// value scans one value starting at s.pos.
func (s *canonScanner) value(depth int) error {
	if s.pos >= len(s.b) {
		return s.fail("missing value")
	}
	switch c := s.b[s.pos]; {
	case c == '{':
		return s.object(depth + 1)
	case c == '[':
		return s.array(depth + 1)
	case c == '"':
		_, err := s.str(false)
		return err
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return s.fail("unexpected character")
}

func (s *canonScanner) literal(lit string) error {
	if len(s.b)-s.pos < len(lit) || string(s.b[s.pos:s.pos+len(lit)]) != lit {
		return s.fail("invalid literal")
	}
	s.pos += len(lit)
	return nil
}

func (s *canonScanner) object(depth int) error {
	if depth > maxCanonicalDepth {
		return s.fail("nesting too deep")
	}
	s.pos++ // '{'
	if s.pos < len(s.b) && s.b[s.pos] == '}' {
		s.pos++
		return nil
	}
	// Member names are compared with the previous one of this object,
	// kept in a buffer per nesting level (reused across objects).
	for len(s.prevs) <= depth {
		s.prevs = append(s.prevs, nil)
	}
	first := true
	for {
		if s.pos >= len(s.b) || s.b[s.pos] != '"' {
			return s.fail("expected a member name")
		}
		start := s.pos
		name, err := s.str(true)
		if err != nil {
			return err
		}
		if !first && compareUTF16(s.prevs[depth], name) >= 0 {
			s.pos = start
			return s.fail("member names not in strictly increasing UTF-16 order")
		}
		s.prevs[depth] = append(s.prevs[depth][:0], name...)
		first = false
		if s.pos >= len(s.b) || s.b[s.pos] != ':' {
			return s.fail("expected ':'")
		}
		s.pos++
		if err := s.value(depth); err != nil {
			return err
		}
		if s.pos >= len(s.b) {
			return s.fail("unterminated object")
		}
		switch s.b[s.pos] {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return nil
		default:
			return s.fail("expected ',' or '}'")
		}
	}
}

func (s *canonScanner) array(depth int) error {
	if depth > maxCanonicalDepth {
		return s.fail("nesting too deep")
	}
	s.pos++ // '['
	if s.pos < len(s.b) && s.b[s.pos] == ']' {
		s.pos++
		return nil
	}
	for {
		if err := s.value(depth); err != nil {
			return err
		}
		if s.pos >= len(s.b) {
			return s.fail("unterminated array")
		}
		switch s.b[s.pos] {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return nil
		default:
			return s.fail("expected ',' or ']'")
		}
	}
}

// str scans a string at s.pos (on its opening quote). With decode, it
// returns the decoded content in s.name (valid until the next call).
func (s *canonScanner) str(decode bool) ([]byte, error) {
	const hexdigits = "0123456789abcdef"
	s.pos++ // '"'
	s.name = s.name[:0]
	start := s.pos
	for s.pos < len(s.b) {
		c := s.b[s.pos]
		switch {
		case c == '"':
			if decode {
				s.name = append(s.name, s.b[start:s.pos]...)
			}
			s.pos++
			return s.name, nil
		case c == '\\':
			if decode {
				s.name = append(s.name, s.b[start:s.pos]...)
			}
			if s.pos+1 >= len(s.b) {
				return nil, s.fail("unterminated escape")
			}
			var r byte
			switch s.b[s.pos+1] {
			case '"', '\\':
				r = s.b[s.pos+1]
				s.pos += 2
			case 'b':
				r, s.pos = '\b', s.pos+2
			case 't':
				r, s.pos = '\t', s.pos+2
			case 'n':
				r, s.pos = '\n', s.pos+2
			case 'f':
				r, s.pos = '\f', s.pos+2
			case 'r':
				r, s.pos = '\r', s.pos+2
			case 'u':
				// Only \u00xx for the control characters without a
				// short escape, lowercase hex.
				if len(s.b)-s.pos < 6 || s.b[s.pos+2] != '0' || s.b[s.pos+3] != '0' || s.b[s.pos+4] > '1' {
					return nil, s.fail("non-canonical \\u escape")
				}
				h := s.b[s.pos+4] - '0'
				lo := indexByte(hexdigits, s.b[s.pos+5])
				if h > 1 || lo < 0 {
					return nil, s.fail("non-canonical \\u escape")
				}
				r = h<<4 | byte(lo)
				if r == '\b' || r == '\t' || r == '\n' || r == '\f' || r == '\r' {
					return nil, s.fail("\\u escape of a character with a short escape")
				}
				s.pos += 6
			default:
				return nil, s.fail("non-canonical escape")
			}
			if decode {
				s.name = append(s.name, r)
			}
			start = s.pos
		case c < 0x20:
			return nil, s.fail("unescaped control character")
		case c < utf8.RuneSelf:
			s.pos++
		default:
			r, n := utf8.DecodeRune(s.b[s.pos:])
			if r == utf8.RuneError && n <= 1 {
				return nil, s.fail("invalid UTF-8")
			}
			s.pos += n
		}
	}
	return nil, s.fail("unterminated string")
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// number scans a number and checks it is the ECMAScript form of its double.
func (s *canonScanner) number() error {
	start := s.pos
	i := s.pos
	if i < len(s.b) && s.b[i] == '-' {
		i++
	}
	switch {
	case i < len(s.b) && s.b[i] == '0':
		i++
	case i < len(s.b) && '1' <= s.b[i] && s.b[i] <= '9':
		for i < len(s.b) && '0' <= s.b[i] && s.b[i] <= '9' {
			i++
		}
	default:
		return s.fail("invalid number")
	}
	if i < len(s.b) && s.b[i] == '.' {
		i++
		d := i
		for i < len(s.b) && '0' <= s.b[i] && s.b[i] <= '9' {
			i++
		}
		if i == d {
			return s.fail("invalid number")
		}
	}
	if i < len(s.b) && (s.b[i] == 'e' || s.b[i] == 'E') {
		i++
		if i < len(s.b) && (s.b[i] == '+' || s.b[i] == '-') {
			i++
		}
		d := i
		for i < len(s.b) && '0' <= s.b[i] && s.b[i] <= '9' {
			i++
		}
		if i == d {
			return s.fail("invalid number")
		}
	}
	lit := s.b[start:i]
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		return s.fail("number out of a double's range")
	}
	var buf [32]byte
	if string(appendES6Number(buf[:0], f)) != string(lit) {
		return s.fail("number not in its shortest ECMAScript form (integers beyond 2^53 cannot be canonical)")
	}
	s.pos = i
	return nil
}

// appendES6Number formats f as ECMAScript's Number.prototype.toString does
// (RFC 8785 §3.2.2.3): the shortest round-tripping digits, fixed notation
// for 1e-6 <= |f| < 1e21, otherwise exponent notation "d.ddde+x".
func appendES6Number(b []byte, f float64) []byte {
	if f == 0 {
		return append(b, '0') // -0 too
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "NaN"...) // never equal to a JSON literal
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// strconv writes e-07; ECMAScript writes e-7.
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// compareUTF16 compares two valid UTF-8 strings by their UTF-16 code units
// (RFC 8785 §3.2.3).
func compareUTF16(a, b []byte) int {
	for len(a) > 0 && len(b) > 0 {
		ra, na := utf8.DecodeRune(a)
		rb, nb := utf8.DecodeRune(b)
		if ra != rb {
			ua, ub := utf16Units(ra), utf16Units(rb)
			if ua[0] != ub[0] {
				if ua[0] < ub[0] {
					return -1
				}
				return 1
			}
			if ua[1] < ub[1] {
				return -1
			}
			return 1
		}
		a, b = a[na:], b[nb:]
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}

// utf16Units returns the code units of r (the second is 0 for the BMP).
func utf16Units(r rune) [2]uint16 {
	if r < 0x10000 {
		return [2]uint16{uint16(r), 0}
	}
	r1, r2 := utf16.EncodeRune(r)
	return [2]uint16{uint16(r1), uint16(r2)}
}
