package jcs

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// These appenders write JSON values directly in RFC 8785 form, for encoders
// of records whose canonical bytes are produced without a canonicalization
// pass (package evidence). Each writes exactly what [Canonical] makes of
// the value as encoding/json marshals it.

// AppendString appends s to b as an RFC 8785 JSON string (§3.2.2.2): '"'
// and '\\' escaped, control characters U+0000..U+001F as \b \t \n \f \r or
// \u00xx with lowercase hex, every other character as itself (so '<', '&',
// U+2028 unescaped). Each byte of s that is not part of valid UTF-8 is
// written as U+FFFD, as encoding/json does, so the result is always valid.
// It returns the extended slice.
func AppendString(b []byte, s string) []byte {
	const hexdigits = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if plain[c] {
				i++
				for len(s)-i >= 8 && notPlain(uint64(s[i])|uint64(s[i+1])<<8|uint64(s[i+2])<<16|uint64(s[i+3])<<24|
					uint64(s[i+4])<<32|uint64(s[i+5])<<40|uint64(s[i+6])<<48|uint64(s[i+7])<<56) == 0 {
					i += 8
				}
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\t':
				b = append(b, '\\', 't')
			case '\n':
				b = append(b, '\\', 'n')
			case '\f':
				b = append(b, '\\', 'f')
			case '\r':
				b = append(b, '\\', 'r')
			default:
				b = append(b, '\\', 'u', '0', '0', hexdigits[c>>4], hexdigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, s[start:i]...)
			b = append(b, "\uFFFD"...)
			i++
			start = i
			continue
		}
		i += n
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendFloat appends f to b as an RFC 8785 number (§3.2.2.3): the
// shortest decimal that round-trips, in ECMAScript's notation (1e+21,
// 1e-7, 0.000001), -0 as 0. It returns an error, and b unchanged, for NaN
// and the infinities, which JSON cannot hold.
func AppendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, fmt.Errorf("jcs: %v is not a JSON number", f)
	}
	return appendES6(b, f), nil
}

// AppendInt appends n to b as an RFC 8785 number: its decimal digits, when
// its double prints as exactly them. Otherwise (most integers beyond 2^53,
// such as 9007199254740993) it returns b unchanged and an error wrapping
// [ErrInexactNumber], as [Canonical] does for the same literal: never a
// rounded value.
func AppendInt(b []byte, n int64) ([]byte, error) {
	const exact = 1 << 53
	if -exact <= n && n <= exact {
		return strconv.AppendInt(b, n, 10), nil
	}
	var buf [24]byte
	lit := strconv.AppendInt(buf[:0], n, 10)
	if !exactNumber(string(lit)) {
		return b, fmt.Errorf("%w: %s", ErrInexactNumber, lit)
	}
	return append(b, lit...), nil
}
