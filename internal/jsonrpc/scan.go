package jsonrpc

import (
	"bytes"
	"encoding/binary"
	"sync"
	"unicode/utf8"
)

// This file is the fast path of Parse and ObjectMembers: one pass over the
// bytes that checks RFC 8259 syntax, UTF-8 and member names (exact and
// case-folded duplicates) and finds the top-level members, without a
// tokenizer.
//
// It is conservative: it says yes only when it is sure the jsontext-based
// path (the reference) would accept the same bytes with the same result,
// and declines everything it does not handle itself, which then goes
// through the reference: escaped member names, \u escapes of surrogates,
// nesting deeper than maxFastDepth, objects with more than maxFastNames
// members, and anything invalid (so that every error, its text included,
// comes from one place). FuzzFastParse and FuzzFastMembers check the "same
// result" against the reference.

// maxFastDepth is the deepest nesting the fast path validates; deeper
// values go to the reference (whose limit is 10,000).
const maxFastDepth = 256

// maxFastNames is the most members an object may have on the fast path
// (its duplicate check compares every pair).
const maxFastNames = 64

// SWAR constants: one bit pattern per byte of a uint64.
const (
	swarLo = 0x0101010101010101
	swarHi = 0x8080808080808080
)

// plainRun reports whether every byte of b is printable ASCII or space
// (0x20..0x7f): no control character and nothing that needs a UTF-8 check.
func plainRun(b []byte) bool {
	// Per 8 bytes, (x - lo*0x20) | x has a byte's high bit set when the
	// byte is below 0x20 (the lowest such byte takes no borrow from
	// below) or at least 0x80.
	var acc uint64
	j := 0
	for ; j+8 <= len(b); j += 8 {
		x := binary.LittleEndian.Uint64(b[j:])
		acc |= (x - swarLo*0x20) | x
	}
	for ; j < len(b); j++ {
		if c := b[j]; c < 0x20 || c >= 0x80 {
			return false
		}
	}
	return acc&swarHi == 0
}

// validRun reports whether b, a run of string content without '"' or
// '\\', has no control character and is valid UTF-8.
func validRun(b []byte) bool {
	for j := 0; j < len(b); {
		c := b[j]
		switch {
		case c < 0x20:
			return false
		case c < 0x80:
			j++
		default:
			r, n := utf8.DecodeRune(b[j:])
			if r == utf8.RuneError && n <= 1 {
				return false
			}
			j += n
		}
	}
	return true
}

// scanner validates JSON on the fast path. names holds the member names of
// the objects being read, innermost object last.
type scanner struct {
	b []byte
	// escaped is set by str when the string just read had a backslash.
	escaped bool
	// nonASCII is set when a member name has a byte >= 0x80: case-folded
	// duplicates then need the Unicode check (foldedDuplicate).
	nonASCII bool
	names    [][]byte
}

// scanners reuses scanners, for their names' backing array.
var scanners = sync.Pool{New: func() any { return &scanner{names: make([][]byte, 0, 32)} }}

// skipWS returns the index of the first byte at or after i that is not
// JSON whitespace (RFC 8259 §2).
func skipWS(b []byte, i int) int {
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

// value reads the value at i and returns the index after it, or -1 to
// decline.
func (s *scanner) value(i, depth int) int {
	b := s.b
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; {
	case c == '"':
		return s.str(i)
	case c == '{':
		return s.object(i, depth+1)
	case c == '[':
		return s.array(i, depth+1)
	case c == '-' || c >= '0' && c <= '9':
		return number(b, i)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	}
	return -1
}

// str reads the string whose opening quote is at i and returns the index
// after its closing quote, or -1 to decline. It sets s.escaped.
func (s *scanner) str(i int) int {
	b := s.b
	s.escaped = false
	i++
	// quote is the next '"' at or after i: searched again only once an
	// escape has moved i past it, so that a string of many escapes costs
	// one pass, not one pass per escape.
	quote := -1
	for {
		// The run up to the next quote or backslash, found with the
		// vectorized IndexByte, then checked in one pass.
		if quote < i {
			q := bytes.IndexByte(b[i:], '"')
			if q < 0 {
				return -1
			}
			quote = i + q
		}
		run := b[i:quote]
		bs := bytes.IndexByte(run, '\\')
		if bs >= 0 {
			run = run[:bs]
		}
		if !plainRun(run) && !validRun(run) {
			return -1
		}
		i += len(run)
		if bs < 0 {
			return i + 1 // b[i] is the closing quote
		}
		s.escaped = true
		if i+1 >= len(b) {
			return -1
		}
		switch b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			r, ok := hex4(b, i+2)
			if !ok || r >= 0xD800 && r <= 0xDFFF {
				return -1 // surrogates (paired or not): the reference decides
			}
			i += 6
		default:
			return -1
		}
	}
}

// hex4 decodes the four hex digits at b[i:i+4].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// number reads the number at i (RFC 8259 §6) and returns the index after
// it, or -1. What follows is checked by the caller (a delimiter or the end).
func number(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// literal reads lit at i and returns the index after it, or -1.
func literal(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// name reads the member name at i, checks it against the names before it
// in the same object (those from base on) and records it. It returns the
// index after the name, or -1 to decline (no string, an escaped name, a
// duplicate or case-folded duplicate, too many names).
func (s *scanner) name(i, base int) int {
	b := s.b
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	j := s.str(i)
	if j < 0 || s.escaped || len(s.names)-base >= maxFastNames {
		return -1
	}
	n := b[i+1 : j-1]
	for _, c := range n {
		if c >= 0x80 {
			s.nonASCII = true
			break
		}
	}
	for _, prev := range s.names[base:] {
		if equalFoldASCII(prev, n) {
			return -1
		}
	}
	s.names = append(s.names, n)
	return j
}

// equalFoldASCII reports whether a and b are equal when ASCII letters are
// compared without case. Non-ASCII bytes compare exactly (those names are
// checked again by foldedDuplicate).
func equalFoldASCII(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if x|0x20 != y|0x20 || x|0x20 < 'a' || x|0x20 > 'z' {
			return false
		}
	}
	return true
}

// object reads the object whose '{' is at i and returns the index after
// its '}', or -1 to decline.
func (s *scanner) object(i, depth int) int {
	if depth > maxFastDepth {
		return -1
	}
	b := s.b
	base := len(s.names)
	defer func() { s.names = s.names[:base] }()
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for {
		if i = s.name(i, base); i < 0 {
			return -1
		}
		if i = skipWS(b, i); i >= len(b) || b[i] != ':' {
			return -1
		}
		if i = s.value(skipWS(b, i+1), depth); i < 0 {
			return -1
		}
		var end bool
		if i, end = after(b, i, '}'); i < 0 || end {
			return i
		}
	}
}

// array reads the array whose '[' is at i and returns the index after its
// ']', or -1 to decline.
func (s *scanner) array(i, depth int) int {
	if depth > maxFastDepth {
		return -1
	}
	b := s.b
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1
	}
	for {
		if i = s.value(i, depth); i < 0 {
			return -1
		}
		var end bool
		if i, end = after(b, i, ']'); i < 0 || end {
			return i
		}
	}
}

// after reads what follows a member or an element ending at i: a ',' (it
// returns the index of the next one, and false) or closer (the index after
// it, and true); -1 declines.
func after(b []byte, i int, closer byte) (int, bool) {
	if i = skipWS(b, i); i >= len(b) {
		return -1, false
	}
	switch b[i] {
	case ',':
		return skipWS(b, i+1), false
	case closer:
		return i + 1, true
	}
	return -1, false
}

// member is one top-level member found by the fast path.
type member struct {
	name  []byte // as written, unescaped (escaped names are declined)
	value []byte
}

// topMembers reads the JSON text b, which must be exactly one object
// (whitespace around it allowed), validating all of it, and calls fn for
// each member with its name and raw value. fn is called only after the
// whole text was found valid, so a false return (decline) has called
// nothing. It returns the object's start and end offsets.
func topMembers(b []byte, fn func(name, value []byte)) (start, end int, ok bool) {
	s := scanners.Get().(*scanner)
	*s = scanner{b: b, names: s.names[:0]}
	defer func() {
		clear(s.names[:cap(s.names)])
		*s = scanner{names: s.names[:0]}
		scanners.Put(s)
	}()
	start = skipWS(b, 0)
	if start >= len(b) || b[start] != '{' {
		return 0, 0, false
	}
	var buf [8]member
	ms := buf[:0]
	i := skipWS(b, start+1)
	if i < len(b) && b[i] == '}' {
		end = i + 1
	} else {
		for {
			n := i
			if i = s.name(i, 0); i < 0 {
				return 0, 0, false
			}
			nm := b[n+1 : i-1]
			if i = skipWS(b, i); i >= len(b) || b[i] != ':' {
				return 0, 0, false
			}
			v := skipWS(b, i+1)
			if i = s.value(v, 1); i < 0 {
				return 0, 0, false
			}
			ms = append(ms, member{name: nm, value: b[v:i]})
			var last bool
			if i, last = after(b, i, '}'); i < 0 {
				return 0, 0, false
			}
			if last {
				end = i
				break
			}
		}
	}
	if skipWS(b, end) != len(b) {
		return 0, 0, false
	}
	if s.nonASCII && foldedDuplicate(b) != "" {
		return 0, 0, false
	}
	for _, m := range ms {
		fn(m.name, m.value)
	}
	return start, end, true
}
