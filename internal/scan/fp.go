package scan

import (
	"encoding/base64"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// False-positive controls shared by the secret rules (docs/scanning.md).

// shannon is the Shannon entropy of s in bits per byte.
func shannon(s string) float64 {
	if s == "" {
		return 0
	}
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	n := float64(len(s))
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

// mask is a finding's excerpt for value v: at most 4 leading characters
// and never more than a quarter of v, then "…" and v's length in
// characters: "AKIA…(20)". Control characters among the leading ones
// are shown as "?".
func mask(v string) string {
	n := utf8.RuneCountInString(v)
	keep := min(4, n/4)
	var b strings.Builder
	i := 0
	for k := 0; k < keep; k++ {
		r, size := utf8.DecodeRuneInString(v[i:])
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			r = '?'
		}
		b.WriteRune(r)
		i += size
	}
	b.WriteString("…(")
	b.WriteString(strconv.Itoa(n))
	b.WriteString(")")
	return b.String()
}

// placeholderWords mark a documentation or template value, not a
// credential (ASCII case-insensitive substrings).
var placeholderWords = newKeywords([]string{
	"example", "your_", "your-", "yourapikey", "yourtoken", "yoursecret", "placeholder",
	"xxxx", "****", "....", "dummy", "changeme", "change_me", "redacted", "insert", "replace_me", "replaceme",
	"<", ">", "${", "{{", "$(", "%s", "fake", "sample", "todo",
	"0123456789", "1234567890", "abcdefgh", "qwerty",
})

// isPlaceholder reports whether v is a placeholder rather than a
// credential: a template reference (${TOKEN}, {{ secrets.X }}, <token>),
// a documentation value (YOUR_API_KEY, ...EXAMPLE keys, sk-xxxx...), or a
// run of few distinct characters (a long value using at most 3 distinct
// bytes, or one byte repeated 6 or more times in a row after a prefix).
func isPlaceholder(v string) bool {
	if placeholderWords.any(v) {
		return true
	}
	if len(v) >= 8 {
		var seen [256]bool
		d := 0
		for i := 0; i < len(v); i++ {
			if !seen[v[i]] {
				seen[v[i]] = true
				d++
			}
		}
		if d <= 3 {
			return true
		}
	}
	run := 1
	for i := 1; i < len(v); i++ {
		if v[i] == v[i-1] && isWordByte(v[i]) {
			run++
			if run >= 6 {
				return true
			}
		} else {
			run = 1
		}
	}
	return false
}

// isPasswordPlaceholder reports a password that is a word standing for
// one ("password", "pass", "secret", "token", "test", ...).
func isPasswordPlaceholder(pw string) bool {
	switch strings.ToLower(pw) {
	case "password", "passwd", "pass", "pwd", "secret", "token", "test", "admin", "user", "username",
		"root", "guest", "none", "null", "empty", "mypassword", "yourpassword", "pw", "p@ssw0rd", "x", "foo", "bar", "foobar":
		return true
	}
	return false
}

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// isUUID: 8-4-4-4-12 hex digits (RFC 9562 §4).
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !isHex(s[i : i+1]) {
				return false
			}
		}
	}
	return true
}

// isULID: 26 characters of Crockford base32, the first 0-7.
func isULID(s string) bool {
	if len(s) != 26 || s[0] < '0' || s[0] > '7' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		if !('0' <= s[i] && s[i] <= '9' || 'a' <= c && c <= 'z' && c != 'i' && c != 'l' && c != 'o' && c != 'u') {
			return false
		}
	}
	return true
}

// isDigest: a hex digest of 32, 40, 64 or 128 digits (MD5, SHA-1,
// SHA-256, SHA-512), optionally as "<algorithm>:<hex>" (OCI, Docker); or
// a subresource-integrity string "sha256-", "sha384-", "sha512-" and
// base64 (W3C SRI, npm "integrity").
func isDigest(s string) bool {
	switch len(s) {
	case 32, 40, 64, 128:
		if isHex(s) {
			return true
		}
	}
	if i := strings.IndexByte(s, ':'); i > 0 {
		switch strings.ToLower(s[:i]) {
		case "md5", "sha1", "sha224", "sha256", "sha384", "sha512", "blake2b", "blake3", "sha3-256":
			return isHex(s[i+1:])
		}
	}
	for _, p := range []string{"sha256-", "sha384-", "sha512-", "sha1-"} {
		if strings.HasPrefix(s, p) {
			rest := s[len(p):]
			for k := 0; k < len(rest); k++ {
				if !isB64(rest[k]) {
					return false
				}
			}
			return len(rest) >= 20
		}
	}
	return false
}

// isMediaData: a data: URI of an image or audio, or base64 that decodes
// to a PNG, JPEG, GIF, WebP/WAV (RIFF), Ogg, MP3 (ID3) or PDF header.
func isMediaData(s string) bool {
	ls := strings.ToLower(s[:min(len(s), 16)])
	if strings.HasPrefix(ls, "data:image/") || strings.HasPrefix(ls, "data:audio/") || strings.HasPrefix(ls, "data:video/") {
		return true
	}
	if len(s) < 12 {
		return false
	}
	var buf [9]byte
	n, _ := base64.StdEncoding.Decode(buf[:], []byte(s[:12]))
	h := buf[:n]
	for _, magic := range []string{"\x89PNG", "\xff\xd8\xff", "GIF8", "RIFF", "OggS", "ID3", "%PDF", "\x1aE\xdf\xa3"} {
		if strings.HasPrefix(string(h), magic) {
			return true
		}
	}
	return false
}

// notSecretShape reports a value of a known non-secret shape, which a
// generic (keyword-plus-entropy) rule must not report: UUID, ULID, hex
// digest, algorithm-prefixed digest, integrity string, media data,
// decimal numbers and dotted versions.
func notSecretShape(s string) bool {
	s = strings.Trim(s, "\"'`")
	if isUUID(s) || isULID(s) || isDigest(s) || isMediaData(s) {
		return true
	}
	numeric := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || c == '.' || c == '-' || c == ':' || c == '_' || c == 'v' || c == 'T' || c == 'Z' || c == '+') {
			numeric = false
			break
		}
	}
	if numeric {
		return true // numbers, versions, dates, timestamps
	}
	// identifiers: letters and separators only (camelCase, snake_case,
	// dotted names).
	letters := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '.' || c == '-') {
			letters = false
			break
		}
	}
	return letters
}
