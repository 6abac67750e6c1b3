package inspect

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
	"unicode/utf8"
)

// minEncoded is the shortest encoded value decoded: shorter ones are
// words, not encodings.
const minEncoded = 8

// b64encodings are the base64 variants a value is tried in, in order; a
// layer's enc indexes them, so a textual blob is re-encoded as it came.
var b64encodings = [...]*base64.Encoding{
	base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding,
}

// decodeBase64 decodes t as base64 (RFC 4648 §4, padded or not) or
// base64url (§5) and appends the bytes to dst.
func decodeBase64(dst, t []byte) (enc uint8, d []byte, ok bool) {
	if len(t) < minEncoded {
		return 0, dst, false
	}
	std, url, pad := false, false, false
	for i, c := range t {
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case c == '+' || c == '/':
			std = true
		case c == '-' || c == '_':
			url = true
		case c == '=' && i >= len(t)-2:
			pad = true
		default:
			return 0, dst, false
		}
	}
	if std && url {
		return 0, dst, false
	}
	e := 0
	if url {
		e = 2
	}
	if !pad && len(t)%4 != 0 {
		// Unpadded: its length shows it. A length that is a multiple of
		// 4 without '=' is what every padded encoder writes for a
		// multiple of 3 bytes: it is taken as padded, so that a value
		// re-encoded after redaction (another length) gets its padding.
		e++
	}
	enc64 := b64encodings[e]
	n := enc64.DecodedLen(len(t))
	start := len(dst)
	dst = append(dst, make([]byte, n)...)
	m, err := enc64.Decode(dst[start:], t)
	if err != nil {
		return 0, dst[:start], false
	}
	return uint8(e), dst[:start+m], true
}

// decodeValue decodes t, a value next to a secret-like key, when it is
// percent-encoded, hex or base64 and its decoding is UTF-8 text.
func decodeValue(dst, t []byte) (kind layerKind, enc uint8, d []byte, ok bool) {
	if len(t) < minEncoded {
		return 0, 0, dst, false
	}
	if d, ok := decodePercent(dst, t); ok {
		return layerPercent, 0, d, utf8.Valid(d)
	}
	if len(t)%2 == 0 && allHex(t) {
		start := len(dst)
		dst = append(dst, make([]byte, len(t)/2)...)
		if _, err := hex.Decode(dst[start:], t); err != nil {
			return 0, 0, dst[:start], false
		}
		d := dst
		return layerHex, 0, d, utf8.Valid(d[start:]) && looksText(d[start:])
	}
	if enc, d, ok := decodeBase64(dst, t); ok && utf8.Valid(d) && looksText(d) {
		return layerBase64, enc, d, true
	}
	return 0, 0, dst, false
}

func allHex(t []byte) bool {
	for _, c := range t {
		if hexVal(c) < 0 {
			return false
		}
	}
	return true
}

// decodePercent decodes t when it holds at least one %XX escape and every
// '%' starts one ('+' stays '+').
func decodePercent(dst, t []byte) ([]byte, bool) {
	n := 0
	for i := 0; i < len(t); i++ {
		if t[i] == '%' {
			if i+2 >= len(t) || hexVal(t[i+1]) < 0 || hexVal(t[i+2]) < 0 {
				return dst, false
			}
			n++
			i += 2
		}
	}
	if n == 0 {
		return dst, false
	}
	for i := 0; i < len(t); i++ {
		if t[i] == '%' {
			dst = append(dst, byte(hexVal(t[i+1])<<4|hexVal(t[i+2])))
			i += 2
			continue
		}
		dst = append(dst, t[i])
	}
	return dst, true
}

// looksText reports whether d (valid UTF-8) is text: no C0 control
// characters other than tab, newline and carriage return, and no DEL.
// looksText reports whether decoded bytes are text: no control
// characters but tab, LF and CR (bytes of another charset or invalid UTF-8
// count as text: a Latin-1 .env file is still scanned).
func looksText(d []byte) bool {
	for _, c := range d {
		if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f {
			return false
		}
	}
	return true
}

// mediaMIME reports whether m is an image, audio or video type (a blob of
// that type is not scanned, when it is base64).
func mediaMIME(m string) bool {
	m = strings.ToLower(strings.TrimSpace(m))
	return strings.HasPrefix(m, "image/") || strings.HasPrefix(m, "audio/") || strings.HasPrefix(m, "video/")
}

// plainBase64 reports whether b (a string token's content) is standard
// base64 as MCP's image, audio and blob data are: only the alphabet and
// '=' padding, no escapes or white space, a length that is a multiple of
// 4. Data that is not is text, whatever its object says, and is scanned.
func plainBase64(b []byte) bool {
	if len(b)%4 != 0 {
		return false
	}
	for i, c := range b {
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '+', c == '/':
		case c == '=' && i >= len(b)-2:
		default:
			return false
		}
	}
	return true
}

// textualMIME reports whether a resource's mimeType names text: text/*,
// JSON, XML, YAML, JavaScript, form data and the +json / +xml structured
// syntax suffixes (RFC 6839). Parameters (";charset=...") are ignored.
func textualMIME(m string) bool {
	if i := strings.IndexByte(m, ';'); i >= 0 {
		m = m[:i]
	}
	m = strings.ToLower(strings.TrimSpace(m))
	if strings.HasPrefix(m, "text/") {
		return true
	}
	if strings.HasSuffix(m, "+json") || strings.HasSuffix(m, "+xml") || strings.HasSuffix(m, "+yaml") {
		return true
	}
	switch m {
	case "application/json", "application/xml", "application/yaml", "application/x-yaml",
		"application/javascript", "application/ecmascript", "application/x-www-form-urlencoded",
		"application/toml", "application/sql", "application/graphql", "application/x-sh",
		"application/x-ndjson", "application/jsonl":
		return true
	}
	return false
}

// maybeEncoded is decodeValue's cheap precheck: at least minEncoded bytes,
// every one of the base64, base64url, hex or percent-encoding alphabets.
func maybeEncoded(t []byte) bool {
	if len(t) < minEncoded {
		return false
	}
	for _, c := range t {
		if !encodedByte[c] {
			return false
		}
	}
	return true
}

var encodedByte = func() (t [256]bool) {
	for c := range 256 {
		t[c] = 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
			c == '+' || c == '/' || c == '=' || c == '-' || c == '_' || c == '%' || c == '.' || c == '~'
	}
	return t
}()
