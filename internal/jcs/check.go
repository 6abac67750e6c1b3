package jcs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// This file checks that bytes are already in RFC 8785 canonical form, in
// one pass and without building anything: the fast path of [Canonical], of
// the ledger's payload check and of its leaf parser. It accepts exactly
// what jsontext.Value.Canonicalize leaves unchanged (FuzzCheck holds the
// two together, FuzzCanonicalFastPath the fast and slow paths of
// Canonical):
//
//   - no whitespace outside strings;
//   - object members sorted by their names' UTF-16 code units, strictly
//     (so no duplicates) (§3.2.3);
//   - strings of valid UTF-8 where only '"', '\\' and U+0000..U+001F are
//     escaped, as \" \\ \b \t \n \f \r or \u00xx with lowercase hex
//     (§3.2.2.2); so no escaped surrogates at all;
//   - numbers exactly as ECMAScript's Number.prototype.toString prints their
//     double value (§3.2.2.3): no -0, no exponent below 1e21 or at or above
//     1e-6, no trailing fraction zeros, and nothing beyond a double's range.
//
// A number accepted here is also exact in the sense of [ErrInexactNumber]:
// its literal is the shortest decimal of its double, which is what
// exactNumber compares with. So 9007199254740993 (which prints as
// 9007199254740992) is rejected here and then fails Canonical's slow path
// with ErrInexactNumber; it is never rounded.

// ErrNotCanonical is wrapped by the errors of [Check] and [Scanner]: the
// bytes are not one JSON value in RFC 8785 canonical form. The message says
// what is wrong and at which byte offset.
var ErrNotCanonical = errors.New("jcs: not RFC 8785 canonical JSON")

// maxDepth bounds nesting, as jsontext does.
const maxDepth = 10000

// Scanner checks RFC 8785 canonical JSON values inside a larger byte
// string, for parsers of formats built on canonical JSON (the ledger's
// leaf). The zero value is ready to use; a Scanner keeps buffers between
// calls, so reusing one avoids allocations. It is not safe for concurrent
// use.
type Scanner struct {
	b   []byte
	pos int
	// what is the failure, "" while none; set by fail.
	what string
	// name is scratch space for decoding member names with escapes;
	// levels holds, per nesting level, the previous member name of the
	// object open there.
	name   []byte
	levels []level
	// ascii is set by str: the string held no byte >= 0x80.
	ascii bool
}

// level is the previous member name of the object open at one nesting
// level: prev, which aliases the input when the name has no escape and buf
// otherwise, and whether it is all ASCII.
type level struct {
	prev  []byte
	buf   []byte
	ascii bool
}

// Value checks the canonical JSON value that starts at b[pos] and returns
// the offset just after it. Bytes after the value are not looked at. On
// error, end is the offset of the problem and the error wraps
// [ErrNotCanonical].
func (s *Scanner) Value(b []byte, pos int) (end int, err error) {
	s.b, s.pos, s.what = b, pos, ""
	ok := s.value(0)
	s.b = nil
	if !ok {
		return s.pos, s.err()
	}
	return s.pos, nil
}

// String checks the canonical JSON string that starts at b[pos] (its
// opening quote) and returns its content, unescaped, and the offset just
// after its closing quote. content aliases b when the string has no
// escapes, and otherwise the Scanner's buffer, valid until its next call.
// On error, end is the offset of the problem and the error wraps
// [ErrNotCanonical].
func (s *Scanner) String(b []byte, pos int) (content []byte, end int, err error) {
	s.b, s.pos, s.what = b, pos, ""
	if pos >= len(b) || b[pos] != '"' {
		s.fail("expected a string")
		s.b = nil
		return nil, pos, s.err()
	}
	content, ok := s.str(true)
	s.b = nil
	if !ok {
		return nil, s.pos, s.err()
	}
	return content, s.pos, nil
}

func (s *Scanner) err() error {
	return fmt.Errorf("%w: %s at byte %d", ErrNotCanonical, s.what, s.pos)
}

// fail records the first problem; it returns false for the callers'
// convenience.
func (s *Scanner) fail(what string) bool {
	if s.what == "" {
		s.what = what
	}
	return false
}

// Check reports whether b is exactly one JSON value in RFC 8785 canonical
// form, with nothing before or after it: nil if so, otherwise an error
// wrapping [ErrNotCanonical] that names the first problem and its byte
// offset. It allocates nothing unless it fails. Cost: one pass over b.
func Check(b []byte) error {
	s := scannerPool.Get().(*Scanner)
	end, err := s.Value(b, 0)
	if err == nil && end != len(b) {
		s.pos, s.what = end, "data after the value"
		err = s.err()
	}
	putScanner(s)
	return err
}

// isCanonical is Check without the error.
func isCanonical(b []byte) bool {
	s := scannerPool.Get().(*Scanner)
	s.b, s.pos, s.what = b, 0, ""
	ok := s.value(0) && s.pos == len(b)
	s.b = nil
	putScanner(s)
	return ok
}

var scannerPool = sync.Pool{New: func() any { return new(Scanner) }}

func putScanner(s *Scanner) {
	if len(s.levels) <= 64 && cap(s.name) <= 4096 {
		scannerPool.Put(s) // its name buffers serve the next check
	}
}

// value scans one value starting at s.pos.
func (s *Scanner) value(depth int) bool {
	if s.pos >= len(s.b) {
		return s.fail("missing value")
	}
	switch c := s.b[s.pos]; {
	case c == '"':
		_, ok := s.str(false)
		return ok
	case c == '{':
		return s.object(depth + 1)
	case c == '[':
		return s.array(depth + 1)
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

func (s *Scanner) literal(lit string) bool {
	if len(s.b)-s.pos < len(lit) || string(s.b[s.pos:s.pos+len(lit)]) != lit {
		return s.fail("invalid literal")
	}
	s.pos += len(lit)
	return true
}

func (s *Scanner) object(depth int) bool {
	if depth > maxDepth {
		return s.fail("nesting too deep")
	}
	s.pos++ // '{'
	if s.pos < len(s.b) && s.b[s.pos] == '}' {
		s.pos++
		return true
	}
	// Member names are compared with the previous one of this object,
	// kept per nesting level (buffers reused across objects).
	for len(s.levels) <= depth {
		s.levels = append(s.levels, level{})
	}
	first := true
	for {
		if s.pos >= len(s.b) || s.b[s.pos] != '"' {
			return s.fail("expected a member name")
		}
		start := s.pos
		name, ok := s.str(true)
		if !ok {
			return false
		}
		lv := &s.levels[depth]
		if !first {
			var c int
			if lv.ascii && s.ascii {
				c = bytes.Compare(lv.prev, name)
			} else {
				c = compareNames(lv.prev, name)
			}
			if c >= 0 {
				s.pos = start
				return s.fail("member names not in strictly increasing UTF-16 order")
			}
		}
		lv.ascii = s.ascii
		if len(name) > 0 && &name[0] == &s.b[start+1] {
			lv.prev = name // unescaped: the input itself, unchanged during the scan
		} else {
			lv.buf = append(lv.buf[:0], name...)
			lv.prev = lv.buf
		}
		first = false
		if s.pos >= len(s.b) || s.b[s.pos] != ':' {
			return s.fail("expected ':'")
		}
		s.pos++
		if !s.value(depth) {
			return false
		}
		if end, ok := s.after('}', "object"); end || !ok {
			return ok
		}
	}
}

func (s *Scanner) array(depth int) bool {
	if depth > maxDepth {
		return s.fail("nesting too deep")
	}
	s.pos++ // '['
	if s.pos < len(s.b) && s.b[s.pos] == ']' {
		s.pos++
		return true
	}
	for {
		if !s.value(depth) {
			return false
		}
		if end, ok := s.after(']', "array"); end || !ok {
			return ok
		}
	}
}

// after reads what follows a member or an element of the object or array
// (what) that closer ends: ',' (more follows: end false) or closer (end
// true). ok is false, with the failure recorded, for anything else.
func (s *Scanner) after(closer byte, what string) (end, ok bool) {
	if s.pos >= len(s.b) {
		return false, s.fail("unterminated " + what)
	}
	switch s.b[s.pos] {
	case ',':
		s.pos++
		return false, true
	case closer:
		s.pos++
		return true, true
	}
	return false, s.fail("expected ',' or '" + string(closer) + "'")
}

// plain[c] is true for the bytes a canonical string holds as themselves
// and that need no further look: printable ASCII but '"' and '\\'.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// notPlain returns, for the 8 bytes of x (a little-endian load), a mask
// whose lowest set bit is the high bit of the first byte that is not plain
// (below 0x20, at or above 0x80, '"' or '\\'), or 0 when all are plain.
// These are the "has a byte less than n" and "has a zero byte" bit tricks:
// a borrow only starts at a matching byte, so no byte before the first
// match is flagged.
func notPlain(x uint64) uint64 {
	q := x ^ (ones * '"')
	bs := x ^ (ones * '\\')
	return ((x-ones*0x20)&^x | (q-ones)&^q | (bs-ones)&^bs | x) & highs
}

// skipPlain returns the index of the first byte of b at or after i that is
// not plain, or len(b).
func skipPlain(b []byte, i int) int {
	for len(b)-i >= 8 {
		if m := notPlain(binary.LittleEndian.Uint64(b[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	for i < len(b) && plain[b[i]] {
		i++
	}
	return i
}

// str scans a string at s.pos (on its opening quote). With decode, it
// returns the content: a slice of s.b when there is no escape, else
// decoded into s.name (valid until the next call).
func (s *Scanner) str(decode bool) ([]byte, bool) {
	const hexdigits = "0123456789abcdef"
	b := s.b
	s.pos++ // '"'
	start := s.pos
	escaped := false
	s.ascii = true
	i := s.pos
	for {
		i = skipPlain(b, i)
		if i >= len(b) {
			s.pos = i
			return nil, s.fail("unterminated string")
		}
		switch c := b[i]; {
		case c == '"':
			s.pos = i + 1
			if !escaped {
				return b[start:i], true
			}
			if decode {
				s.name = append(s.name, b[start:i]...)
			}
			return s.name, true
		case c == '\\':
			if decode {
				if !escaped {
					s.name = s.name[:0]
				}
				s.name = append(s.name, b[start:i]...)
			}
			escaped = true
			s.pos = i
			if i+1 >= len(b) {
				return nil, s.fail("unterminated escape")
			}
			var r byte
			switch b[i+1] {
			case '"', '\\':
				r, i = b[i+1], i+2
			case 'b':
				r, i = '\b', i+2
			case 't':
				r, i = '\t', i+2
			case 'n':
				r, i = '\n', i+2
			case 'f':
				r, i = '\f', i+2
			case 'r':
				r, i = '\r', i+2
			case 'u':
				// Only \u00xx for the control characters without a
				// short escape, lowercase hex.
				if len(b)-i < 6 || b[i+2] != '0' || b[i+3] != '0' || b[i+4] > '1' || b[i+4] < '0' {
					return nil, s.fail("non-canonical \\u escape")
				}
				lo := strings.IndexByte(hexdigits, b[i+5])
				if lo < 0 {
					return nil, s.fail("non-canonical \\u escape")
				}
				r = (b[i+4]-'0')<<4 | byte(lo)
				if r == '\b' || r == '\t' || r == '\n' || r == '\f' || r == '\r' {
					return nil, s.fail("\\u escape of a character with a short escape")
				}
				i += 6
			default:
				return nil, s.fail("non-canonical escape")
			}
			if decode {
				s.name = append(s.name, r)
			}
			start = i
		case c < 0x20:
			s.pos = i
			return nil, s.fail("unescaped control character")
		default: // c >= 0x80
			s.ascii = false
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n <= 1 {
				s.pos = i
				return nil, s.fail("invalid UTF-8")
			}
			i += n
		}
	}
}

// number scans a number and checks it is the ECMAScript form of its double.
func (s *Scanner) number() bool {
	b := s.b
	start := s.pos
	i := s.pos
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	default:
		return s.fail("invalid number")
	}
	integer := true
	if i < len(b) && b[i] == '.' {
		integer = false
		i++
		d := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == d {
			return s.fail("invalid number")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		integer = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == d {
			return s.fail("invalid number")
		}
	}
	lit := b[start:i]
	// An integer of at most 15 digits without a leading zero is below
	// 2^53, exact, and prints as itself; "-0" prints as 0.
	if integer {
		digits := len(lit)
		if lit[0] == '-' {
			digits--
		}
		if digits <= 15 && string(lit) != "-0" {
			s.pos = i
			return true
		}
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		return s.fail("number out of a double's range")
	}
	var buf [32]byte
	if string(appendES6(buf[:0], f)) != string(lit) {
		return s.fail("number not in its shortest ECMAScript form (integers beyond 2^53 cannot be canonical)")
	}
	s.pos = i
	return true
}

// appendES6 formats f as ECMAScript's Number.prototype.toString does
// (RFC 8785 §3.2.2.3): the shortest round-tripping digits, fixed notation
// for 1e-6 <= |f| < 1e21, otherwise exponent notation "d.ddde+x". -0 is 0.
// NaN and the infinities, which JSON cannot hold, give "NaN".
func appendES6(b []byte, f float64) []byte {
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

// compareNames compares two valid UTF-8 member names by their UTF-16 code
// units (RFC 8785 §3.2.3). Byte order is code point order, which is UTF-16
// order except between U+E000..U+FFFF (lead bytes EE, EF) and the
// supplementary planes (lead bytes F0..F4, surrogates in UTF-16): only
// there does it decode.
func compareNames(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i < n && a[i] >= 0xEE && b[i] >= 0xEE {
		return compareUTF16(a[i:], b[i:])
	}
	return bytes.Compare(a[i:], b[i:])
}

// compareUTF16 compares two valid UTF-8 strings by their UTF-16 code units.
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
