package main

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math/big"
	"strings"
)

// Alphabets of synthesized values.
const (
	digits   = "0123456789"
	hexLower = "0123456789abcdef"
	upper    = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	lower    = "abcdefghijklmnopqrstuvwxyz"
	alnum    = digits + upper + lower
	base62   = digits + upper + lower // GitHub's checksum alphabet order
	lowAlnum = digits + lower
	word     = alnum + "_"
	wordDash = alnum + "_-"
	b32Upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	bech32Up = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
)

func (g *gen) str(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[g.r.IntN(len(alphabet))]
	}
	return string(b)
}

func (g *gen) bytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.r.UintN(256))
	}
	return b
}

func (g *gen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

func (g *gen) between(lo, hi int) int { return lo + g.r.IntN(hi-lo+1) }

// ghChecksum is GitHub's token checksum: CRC-32 (IEEE) of the random
// part, in base62, left-padded with '0' to six characters
// (github.blog, "Behind GitHub's new authentication token formats").
func ghChecksum(random string) string {
	n := crc32.ChecksumIEEE([]byte(random))
	var s []byte
	for n > 0 {
		s = append([]byte{base62[n%62]}, s...)
		n /= 62
	}
	for len(s) < 6 {
		s = append([]byte{'0'}, s...)
	}
	return string(s)
}

// luhnDigit returns the check digit making partial+digit pass Luhn.
func luhnDigit(partial string) byte {
	sum := 0
	double := true
	for i := len(partial) - 1; i >= 0; i-- {
		d := int(partial[i] - '0')
		if double {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
		double = !double
	}
	return byte('0' + (10-sum%10)%10)
}

// luhnValid reports whether s (digits only) passes Luhn.
func luhnValid(s string) bool {
	return len(s) > 1 && luhnDigit(s[:len(s)-1]) == s[len(s)-1]
}

// ibanCheck returns the two check digits of an IBAN (ISO 13616,
// mod 97-10) for country cc and basic bank account number bban.
func ibanCheck(cc, bban string) string {
	n := ibanNumber(bban + cc + "00")
	r := new(big.Int).Mod(n, big.NewInt(97)).Int64()
	return fmt.Sprintf("%02d", 98-r)
}

func ibanNumber(s string) *big.Int {
	var b strings.Builder
	for _, c := range strings.ToUpper(s) {
		switch {
		case c >= '0' && c <= '9':
			b.WriteRune(c)
		case c >= 'A' && c <= 'Z':
			fmt.Fprintf(&b, "%d", c-'A'+10)
		}
	}
	n, _ := new(big.Int).SetString(b.String(), 10)
	return n
}

// ibanValid reports whether iban (no spaces) passes mod-97.
func ibanValid(iban string) bool {
	if len(iban) < 5 {
		return false
	}
	n := ibanNumber(iban[4:] + iban[:4])
	return new(big.Int).Mod(n, big.NewInt(97)).Int64() == 1
}

// js is s as a JSON string token, escaping only what RFC 8259 requires
// (no HTML escaping).
func js(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		panic(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// jsEscaped is s as a JSON string token in the "json-escaped" form:
// every '/' as "\/", some ASCII letters and digits as \u00XX, quotes and
// control characters escaped.
func (g *gen) jsEscaped(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range s {
		switch {
		case c == '"':
			b.WriteString(`\"`)
		case c == '\\':
			b.WriteString(`\\`)
		case c == '/':
			b.WriteString(`\/`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20:
			fmt.Fprintf(&b, `\u%04x`, c)
		case c < 0x80 && g.r.IntN(3) == 0:
			fmt.Fprintf(&b, `\u%04X`, c)
		case c >= 0x80 && c < 0x10000 && g.r.IntN(2) == 0:
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// ptr escapes one RFC 6901 reference token.
func ptr(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}

func b64(s string) string    { return base64.StdEncoding.EncodeToString([]byte(s)) }
func b64url(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
func hexs(s string) string   { return hex.EncodeToString([]byte(s)) }

// percentAll percent-encodes every byte that is not unreserved
// (RFC 3986 §2.3) and, for values made only of unreserved characters,
// every byte: the shape of a value a client percent-encoded wholesale.
func percentAll(s string) string {
	var b strings.Builder
	special := strings.IndexFunc(s, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~')
	}) >= 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		unreserved := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
		if special && unreserved {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// pem wraps der's base64 in 64-character lines between BEGIN and END
// lines of label.
func pem(label string, der []byte) string {
	s := base64.StdEncoding.EncodeToString(der)
	var b strings.Builder
	fmt.Fprintf(&b, "-----BEGIN %s-----\n", label)
	for len(s) > 64 {
		b.WriteString(s[:64])
		b.WriteByte('\n')
		s = s[64:]
	}
	b.WriteString(s)
	fmt.Fprintf(&b, "\n-----END %s-----\n", label)
	return b.String()
}

// pemLine returns the second body line of a PEM block: the planted value
// the test looks for after redaction.
func pemLine(p string) string {
	return strings.Split(p, "\n")[2]
}
