// Package linesafe writes JSON and text that a line-oriented reader and a
// terminal read as they were meant: one record per line, and no character
// that moves the cursor, rewrites the title, rings the bell or starts an
// escape sequence.
//
// JSON (RFC 8259 §7) lets a string hold most control characters and every
// Unicode line break as they are; encoding/json escapes C0 controls and
// U+2028/U+2029, RFC 8785 (jcs) and jsontext escape only C0. A reader that
// splits on every Unicode line break (U+0085 NEL, U+2028, U+2029, as
// Unicode's line breaking and many editors and log tools do) then sees two
// records where one was written, and a terminal shown a C1 control (U+009B
// is CSI) or DEL obeys it. Every JSON writer of Gatehouse that a line
// reader or a terminal reads (the decision log, the CLI's JSON output)
// goes through this package, so that the set of characters escaped is
// defined once, by [Escaped].
//
// Escaping changes bytes, never values: the escaped text decodes (with
// encoding/json, jsontext, any RFC 8259 parser) to the same strings.
package linesafe

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escaped reports whether r is written as a \u escape in JSON strings (and
// shown escaped in text): the C0 controls U+0000–U+001F, DEL U+007F, the
// C1 controls U+0080–U+009F (U+0085 NEL among them), U+2028 LINE SEPARATOR
// and U+2029 PARAGRAPH SEPARATOR.
//
// DEL is escaped too: it is no line break, but it is a control character
// (Unicode Cc) that a terminal may act on (as a rubout) and that shows as
// nothing, so a name holding it does not look like what it is.
func Escaped(r rune) bool {
	return r < 0x20 || 0x7F <= r && r <= 0x9F || r == '\u2028' || r == '\u2029'
}

const hexDigits = "0123456789abcdef"

// appendU appends r (at most U+FFFF) as \uXXXX with lowercase hex digits,
// the form encoding/json writes.
func appendU(b []byte, r rune) []byte {
	return append(b, '\\', 'u', hexDigits[r>>12&0xF], hexDigits[r>>8&0xF], hexDigits[r>>4&0xF], hexDigits[r&0xF])
}

// AppendString appends s to dst as a JSON string (RFC 8259 §7): '"' and
// '\\' escaped, \b \f \n \r \t in their short forms, every other
// [Escaped] character as \uXXXX (lowercase hex), each byte of invalid
// UTF-8 as \ufffd, and everything else as it is (no HTML escaping).
//
// For any s the bytes are those of encoding/json (Marshal with HTML
// escaping off) passed through [Append].
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != 0x7F {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = appendU(dst, rune(c))
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if Escaped(r) {
			dst = append(dst, s[start:i]...)
			dst = appendU(dst, r)
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// Append appends the JSON text src to dst with every [Escaped] character
// that src holds as it is written as \uXXXX, and each byte of invalid
// UTF-8 as \ufffd; all other bytes, the whitespace between tokens
// included, are copied unchanged.
//
// src must be valid JSON text (RFC 8259), as encoding/json, jsontext and
// jcs write it: there a raw C0 control can only be whitespace between
// tokens (kept), and DEL, a C1 control, U+2028, U+2029 or a non-ASCII byte
// only the content of a string, where an escape stands for the same
// character. For other input the result is unspecified.
func Append(dst, src []byte) []byte {
	start := 0
	for i := 0; i < len(src); {
		c := src[i]
		if c < utf8.RuneSelf {
			if c == 0x7F {
				dst = append(dst, src[start:i]...)
				dst = appendU(dst, 0x7F)
				start = i + 1
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(src[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, src[start:i]...)
			dst = append(dst, `\ufffd`...)
		case Escaped(r):
			dst = append(dst, src[start:i]...)
			dst = appendU(dst, r)
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(dst, src[start:]...)
}

// Text returns s for a terminal or a table: every [Escaped] character,
// and every other control or format character (Unicode Cc and Cf:
// bidirectional overrides, zero-width characters), written as \uXXXX
// (\UXXXXXXXX above U+FFFF), each byte of invalid UTF-8 as \xNN, and a
// backslash as it is. The output is valid UTF-8 that a terminal shows
// character by character rather than obeys; it is meant to be read, not
// decoded back (a backslash in s is not escaped).
func Text(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || textEscaped(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteByte(hexDigits[s[i]>>4])
			b.WriteByte(hexDigits[s[i]&0xF])
		case textEscaped(r) && r > 0xFFFF:
			b.WriteString(`\U`)
			for shift := 28; shift >= 0; shift -= 4 {
				b.WriteByte(hexDigits[r>>shift&0xF])
			}
		case textEscaped(r):
			b.Write(appendU(nil, r))
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// textEscaped reports whether Text escapes r.
func textEscaped(r rune) bool {
	return Escaped(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}
