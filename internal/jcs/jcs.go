// Package jcs is the JSON Canonicalization Scheme (RFC 8785) as Gatehouse
// uses it for hashes, signatures and ledger entries: jsontext's
// canonicalization, after a check that no number would change value. Its
// own code only decides what need not be re-encoded: a one-pass check that
// bytes are canonical already (Check), and, for big values, the outer
// levels of objects and arrays taken apart so that only the parts that are
// not canonical go through jsontext (WriteCanonical); both are fuzzed
// against jsontext's result.
package jcs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// ErrInexactNumber is returned (wrapped) by [Canonical] when a
// JSON number in the input would change value under RFC 8785, which writes
// every number as the shortest IEEE 754 double that round-trips: integers
// beyond 2^53 such as 9007199254740993, decimals with more precision than a
// double such as 0.10000000000000000001, and magnitudes outside the double
// range such as 1e400 or 1e-400. Such a value is never silently rounded: the
// hash of a rounded value would be evidence of a value that was never sent
// (shared/spec/evidence.md §3).
var ErrInexactNumber = errors.New("jcs: JSON number not exactly representable as an IEEE 754 double")

// Canonical returns the RFC 8785 (JSON Canonicalization Scheme) form of the
// single JSON value raw: no insignificant whitespace, strings in their
// minimal escaping, numbers in the ECMAScript shortest form (1.0 -> 1,
// 1e21 -> 1e+21), object members sorted by the UTF-16 code units of their
// names (evidence.md §3).
//
// The input must be I-JSON (RFC 7493): valid UTF-8 with no escaped lone
// surrogates, no duplicate member names at any depth, exactly one value with
// only whitespace around it. Any violation is an error. A number whose
// canonical text would denote a different value wraps [ErrInexactNumber]
// (integers beyond 2^53 such as 9007199254740993 among them: never
// rounded); "-0" is accepted and written as 0 (RFC 8785 §3.2.2.3).
//
// raw is never modified. When raw is already canonical ([Check] accepts
// it: one pass, no allocation) the result is raw itself, aliasing it;
// otherwise it is a new slice, re-encoded by jsontext. Callers that modify
// raw afterwards and need the result unchanged must copy one of them. Cost
// is linear in len(raw), plus the sort of each object's members when raw is
// not canonical.
func Canonical(raw []byte) ([]byte, error) {
	if isCanonical(raw) {
		return raw, nil
	}
	return canonicalSlow(raw)
}

// WriteCanonical writes the RFC 8785 form of the single JSON value raw to w:
// the bytes Canonical returns, under the same rules and with the same
// errors (wrapping [ErrInexactNumber] for numbers that would change value),
// plus w's. raw is never modified. It exists for hashing, where a big value
// must not be copied: a value of [splitMinBytes] or more that is not
// canonical, when it is an object or an array, is taken apart (to
// [maxSplitDepth] levels): its members are sorted and written one by one,
// each as it is when it is canonical already and re-encoded by jsontext
// otherwise, so that hashing a 16 MiB tool result whose only fault is the
// order of two small members ({"type":…,"text":…} in content) copies
// neither its big part nor the whole. A smaller value goes through
// jsontext's encoder whole, which is faster. On an error, part of the value
// may have been written to w already.
func WriteCanonical(w io.Writer, raw []byte) error {
	return writeCanonical(w, raw, splitMinBytes)
}

// writeCanonical is WriteCanonical taking apart values of splitMin bytes
// or more (tests take apart everything).
func writeCanonical(w io.Writer, raw []byte, splitMin int) error {
	if isCanonical(raw) {
		_, err := w.Write(raw)
		return err
	}
	if !numbersExact(raw) {
		if err := checkNumbers(raw); err != nil {
			return err
		}
	}
	return writeSplit(w, raw, 0, splitMin)
}

// splitMinBytes is the size from which WriteCanonical takes a value apart
// rather than re-encode it whole: below it, the copy in the encoder's
// buffer is cheap and the encoder is faster than taking apart
// (BenchmarkWriteCanonical).
const splitMinBytes = 64 << 10

// maxSplitDepth is how many levels of objects and arrays WriteCanonical
// takes apart before it leaves the rest of a value to the encoder: each
// level reads its part of the value once more, so the work stays linear in
// the size of the value times this bound.
const maxSplitDepth = 4

// writeSplit writes the canonical form of raw, a JSON value whose numbers
// are exact (WriteCanonical checked them), at depth levels below the top:
// as it is when canonical; taken apart when it is an object or an array
// of splitMin bytes or more with a member or element that size or more
// (the part worth not copying), depth allowing; through the encoder
// otherwise. The decoder that takes it apart rejects what the encoder
// would (invalid UTF-8, duplicate names, bad syntax; at the top, what
// follows the value) before anything is written.
func writeSplit(w io.Writer, raw []byte, depth, splitMin int) error {
	if depth > 0 && isCanonical(raw) {
		_, err := w.Write(raw)
		return err
	}
	if depth >= maxSplitDepth || len(raw) < splitMin {
		return encodeCanonical(w, raw)
	}
	d := jsontext.NewDecoder(bytes.NewBuffer(raw))
	kind := d.PeekKind()
	if kind != '{' && kind != '[' {
		return encodeCanonical(w, raw)
	}
	parts, err := readParts(d, depth == 0)
	if err == errLongName || err == errManyParts {
		// Names are copied and sorted, parts kept: a huge name or a
		// great many parts are the encoder's to handle (which also
		// finds any fault after them).
		return encodeCanonical(w, raw)
	}
	if err != nil {
		return err
	}
	big := false
	for _, p := range parts {
		big = big || p.end-p.start >= int64(splitMin)
	}
	if !big {
		// Many small parts: one pass of the encoder beats a pass per
		// part.
		return encodeCanonical(w, raw)
	}
	if kind == '{' {
		// RFC 8785 §3.2.3: members sorted by the UTF-16 code units of
		// their names.
		slices.SortFunc(parts, func(a, b part) int { return compareNames(a.name, b.name) })
	}
	buf := []byte{byte(kind)}
	for i, p := range parts {
		if i > 0 {
			buf = append(buf, ',')
		}
		if kind == '{' {
			buf = append(AppendString(buf, string(p.name)), ':')
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
		buf = buf[:0]
		if err := writeSplit(w, raw[p.start:p.end], depth+1, splitMin); err != nil {
			return err
		}
	}
	closer := byte('}')
	if kind == '[' {
		closer = ']'
	}
	_, err = w.Write(append(buf, closer))
	return err
}

// maxSplitName is the longest member name (as spelled, quotes aside, in
// bytes) of an object writeSplit takes apart.
const maxSplitName = 4 << 10

// maxSplitParts is the most members or elements of an object or array
// writeSplit takes apart.
const maxSplitParts = 1024

// errLongName and errManyParts: readParts met a name longer than
// maxSplitName, or more than maxSplitParts parts.
var (
	errLongName  = errors.New("jcs: member name too long to take the object apart")
	errManyParts = errors.New("jcs: too many parts to take the value apart")
)

// part is a member of an object (name decoded) or an element of an array
// (no name) as readParts finds it: the value's bytes are raw[start:end] of
// the decoder's input.
type part struct {
	name       []byte
	start, end int64
}

// readParts reads the object or array d is at (d reads raw from its start)
// to its end, and with top the end of the input after it (only whitespace
// may follow). Values are validated by jsontext and kept as offsets, never
// copied.
func readParts(d *jsontext.Decoder, top bool) ([]part, error) {
	wrap := func(err error) error { return fmt.Errorf("jcs: canonical JSON: %w", err) }
	open, err := d.ReadToken()
	if err != nil {
		return nil, wrap(err)
	}
	closer := jsontext.Kind('}')
	if open.Kind() == '[' {
		closer = ']'
	}
	var parts []part
	for d.PeekKind() != closer {
		var p part
		if closer == '}' {
			// The name as it is spelled (no copy), decoded only when
			// short: a huge one is left to the encoder.
			n, err := d.ReadValue()
			if err != nil {
				return nil, wrap(err)
			}
			if len(n) > maxSplitName+2 {
				return nil, errLongName
			}
			if p.name, err = jsontext.AppendUnquote(nil, n); err != nil {
				return nil, wrap(err)
			}
		}
		v, err := d.ReadValue()
		if err != nil {
			return nil, wrap(err)
		}
		p.end = d.InputOffset()
		p.start = p.end - int64(len(v))
		if len(parts) == maxSplitParts {
			return nil, errManyParts
		}
		parts = append(parts, p)
	}
	if _, err := d.ReadToken(); err != nil { // the closer
		return nil, wrap(err)
	}
	if top {
		if _, err := d.ReadToken(); err != io.EOF {
			if err == nil {
				err = errors.New("more than one top-level value")
			}
			return nil, wrap(err)
		}
	}
	return parts, nil
}

// encodeCanonical writes the canonical form of raw through jsontext's
// encoder (its buffer holds the re-encoded value), with jsontext's error
// when raw is not valid.
func encodeCanonical(w io.Writer, raw []byte) error {
	tw := &trimNewline{w: w}
	enc := jsontext.NewEncoder(tw, jsontext.CanonicalizeRawInts(true), jsontext.CanonicalizeRawFloats(true), jsontext.ReorderRawObjects(true))
	if err := enc.WriteValue(jsontext.Value(raw)); err != nil {
		if tw.err != nil {
			return tw.err
		}
		return fmt.Errorf("jcs: canonical JSON: %w", err)
	}
	return tw.finish()
}

// trimNewline passes writes on to w but holds back the last byte written,
// so that the newline jsontext.Encoder ends every top-level value with can
// be dropped at the end (finish).
type trimNewline struct {
	w    io.Writer
	last []byte // the held-back byte, when there is one
	buf  [1]byte
	err  error
}

func (t *trimNewline) Write(p []byte) (int, error) {
	if t.err != nil {
		return 0, t.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if t.last != nil {
		if _, err := t.w.Write(t.last); err != nil {
			t.err = err
			return 0, err
		}
	}
	if _, err := t.w.Write(p[:len(p)-1]); err != nil {
		t.err = err
		return 0, err
	}
	t.buf[0] = p[len(p)-1]
	t.last = t.buf[:]
	return len(p), nil
}

// finish checks that the held-back byte is the encoder's newline.
func (t *trimNewline) finish() error {
	if t.err != nil {
		return t.err
	}
	if t.last == nil || t.last[0] != '\n' {
		return errors.New("jcs: canonical JSON: the encoder did not end the value with a newline")
	}
	return nil
}

// canonicalSlow is Canonical without the fast path: the exact-number check
// and jsontext's canonicalization, always into a new slice. The strict
// token-by-token exact-number check runs only when a quick look at the
// numbers finds one that may not be exact; otherwise jsontext's own
// validation, as strict, finds any syntax error.
func canonicalSlow(raw []byte) ([]byte, error) {
	if !numbersExact(raw) {
		if err := checkNumbers(raw); err != nil {
			return nil, err
		}
	}
	v := jsontext.Value(bytes.Clone(raw))
	if err := v.Canonicalize(); err != nil {
		return nil, fmt.Errorf("jcs: canonical JSON: %w", err)
	}
	return v, nil
}

// checkNumbers reads raw strictly (I-JSON, exactly one value) and reports
// the first number whose RFC 8785 form changes its value.
func checkNumbers(raw []byte) error {
	d := jsontext.NewDecoder(bytes.NewBuffer(raw))
	for {
		tok, err := d.ReadToken()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("jcs: canonical JSON: %w", err)
		}
		if tok.Kind() == '0' {
			if !exactNumber(tok.String()) {
				return fmt.Errorf("%w (at %s)", ErrInexactNumber, d.StackPointer())
			}
		}
		if d.StackDepth() == 0 {
			break
		}
	}
	if _, err := d.ReadToken(); err != io.EOF {
		if err == nil {
			err = errors.New("more than one top-level value")
		}
		return fmt.Errorf("jcs: canonical JSON: %w", err)
	}
	return nil
}

// numbersExact reports whether every number of raw is certainly exact: it
// reads raw as JSON tokens without validating them, skipping strings, and
// checks each run of number characters outside strings against the JSON
// number grammar and exactNumber. It errs only towards false. When raw is
// valid JSON its runs are exactly its number tokens; when it is not, every
// token checkNumbers would read before the syntax error is read alike here,
// so if checkNumbers would report ErrInexactNumber, this reports false and
// the caller runs checkNumbers to decide.
func numbersExact(raw []byte) bool {
	for i := 0; i < len(raw); {
		switch c := raw[i]; {
		case c == '"':
			i++
			for i < len(raw) {
				i = skipPlain(raw, i)
				if i >= len(raw) {
					break
				}
				if raw[i] == '"' {
					i++
					break
				}
				if raw[i] == '\\' {
					i++ // the escaped byte is skipped below
				}
				i++
			}
		case c == '-' || '0' <= c && c <= '9':
			j := i
			for j < len(raw) && (raw[j] >= '0' && raw[j] <= '9' || raw[j] == '-' || raw[j] == '+' || raw[j] == '.' || raw[j] == 'e' || raw[j] == 'E') {
				j++
			}
			if !numberGrammar(raw[i:j]) || !shortExactInt(raw[i:j]) && !exactNumber(string(raw[i:j])) {
				return false
			}
			i = j
		default:
			i++
		}
	}
	return true
}

// numberGrammar reports whether lit is exactly one JSON number:
// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func numberGrammar(lit []byte) bool {
	i := 0
	digits := func() int {
		n := 0
		for i < len(lit) && '0' <= lit[i] && lit[i] <= '9' {
			i, n = i+1, n+1
		}
		return n
	}
	if i < len(lit) && lit[i] == '-' {
		i++
	}
	switch {
	case i < len(lit) && lit[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(lit) && lit[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		if i < len(lit) && (lit[i] == '+' || lit[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(lit)
}

// shortExactInt reports whether lit, a valid JSON number, is an integer of
// at most 15 digits without fraction or exponent: below 2^53, so exact.
func shortExactInt(lit []byte) bool {
	if lit[0] == '-' {
		lit = lit[1:]
	}
	if len(lit) > 15 {
		return false
	}
	for _, c := range lit {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// exactNumber reports whether the JSON number literal lit denotes exactly
// the value written by RFC 8785 for it: the shortest decimal that
// round-trips the nearest double. Both are compared as exact decimals, so
// 1.0, 1e0 and 100e-2 are exact while 9007199254740993 is not.
func exactNumber(lit string) bool {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil { // ErrRange: beyond the largest double
		return false
	}
	var buf [32]byte
	return sameDecimal(lit, string(strconv.AppendFloat(buf[:0], f, 'e', -1, 64)))
}

// sameDecimal reports whether the decimal literals a and b (JSON number
// grammar, exponent sign optional) denote the same number. All zeros are
// equal whatever their sign.
func sameDecimal(a, b string) bool {
	na, da, ea := decimal(a)
	nb, db, eb := decimal(b)
	if da == "" || db == "" {
		return da == db
	}
	return na == nb && da == db && ea == eb
}

// expLimit saturates exponents: far beyond any double's exponent, and far
// below overflow when a literal's digit count is added.
const expLimit = 1 << 40

// decimal normalizes a number literal to its sign, its significant digits
// without leading or trailing zeros, and the exponent e such that the value
// is 0.digits × 10^e. Zero has no digits.
func decimal(s string) (neg bool, digits string, exp int64) {
	if s != "" && s[0] == '-' {
		neg, s = true, s[1:]
	}
	mant := s
	var expPart string
	for i := 0; i < len(s); i++ {
		if s[i] == 'e' || s[i] == 'E' {
			mant, expPart = s[:i], s[i+1:]
			break
		}
	}
	intPart, frac := mant, ""
	for i := 0; i < len(mant); i++ {
		if mant[i] == '.' {
			intPart, frac = mant[:i], mant[i+1:]
			break
		}
	}
	point := int64(len(intPart))
	all := intPart + frac
	i := 0
	for i < len(all) && all[i] == '0' {
		i++
	}
	point -= int64(i)
	all = all[i:]
	j := len(all)
	for j > 0 && all[j-1] == '0' {
		j--
	}
	all = all[:j]
	if all == "" {
		return neg, "", 0
	}
	var e int64
	eneg := false
	if expPart != "" && (expPart[0] == '+' || expPart[0] == '-') {
		eneg = expPart[0] == '-'
		expPart = expPart[1:]
	}
	for k := 0; k < len(expPart); k++ {
		e = min(e*10+int64(expPart[k]-'0'), expLimit)
	}
	if eneg {
		e = -e
	}
	return neg, all, e + point
}
