package inspect

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// stringTokenRef is the byte-at-a-time string tokenizer that stringToken
// replaced: stringToken must agree with it on every input (content,
// next offset, escapes, and the error's offset and text).
func stringTokenRef(b []byte, i int) (cs, ce, next int, esc bool, err error) {
	cs = i + 1
	hi := false
	for j := cs; j < len(b); j++ {
		c := b[j]
		switch {
		case c == '"':
			if hi && !utf8.Valid(b[cs:j]) {
				return 0, 0, 0, false, &SyntaxError{Offset: cs, What: "invalid UTF-8 in a string"}
			}
			return cs, j, j + 1, esc, nil
		case c == '\\':
			esc = true
			if j+1 >= len(b) {
				return 0, 0, 0, false, &SyntaxError{Offset: j, What: "string cut off"}
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j++
			case 'u':
				if j+5 >= len(b) || !isHex4(b[j+2:j+6]) {
					return 0, 0, 0, false, &SyntaxError{Offset: j, What: "invalid \\u escape"}
				}
				j += 5
			default:
				return 0, 0, 0, false, &SyntaxError{Offset: j, What: "invalid escape"}
			}
		case c < 0x20:
			return 0, 0, 0, false, &SyntaxError{Offset: j, What: "control character in a string"}
		case c >= 0x80:
			hi = true
		}
	}
	return 0, 0, 0, false, &SyntaxError{Offset: i, What: "string cut off"}
}

func checkStringToken(t *testing.T, b []byte) {
	t.Helper()
	cs, ce, next, esc, err := stringToken(b, 0)
	rcs, rce, rnext, resc, rerr := stringTokenRef(b, 0)
	if cs != rcs || ce != rce || next != rnext || esc != resc || (err == nil) != (rerr == nil) ||
		(err != nil && err.Error() != rerr.Error()) {
		t.Fatalf("stringToken(%q) = %d %d %d %v %v; reference %d %d %d %v %v",
			b, cs, ce, next, esc, err, rcs, rce, rnext, resc, rerr)
	}
}

// TestStringTokenWords puts every special byte (and a few others) at
// every offset of strings longer than a word, so that each falls in
// every lane of the eight-byte scan and in the tail.
func TestStringTokenWords(t *testing.T) {
	specials := []string{`"`, `\`, `\"`, `\\`, `\n`, `\u00e9`, `\u12`, `\x`, "\x00", "\x1f", "\x7f",
		"\x80", "é", "\xff", "\xe2\x82", "€", " ", "!", "#", "[", "]", "]\"", "\xc3\"", "\xed\xa0\x80"}
	for n := 0; n <= 40; n++ {
		for _, sp := range specials {
			for at := 0; at <= n; at++ {
				body := strings.Repeat("a", at) + sp + strings.Repeat("b", n-at)
				checkStringToken(t, []byte(`"`+body))
				checkStringToken(t, []byte(`"`+body+`"`))
				checkStringToken(t, []byte(`"`+body+`" ,`))
			}
		}
	}
	// Every byte value in every lane.
	for c := range 256 {
		for at := 0; at < 24; at++ {
			b := bytes.Repeat([]byte{'x'}, 32)
			b[0] = '"'
			b[1+at] = byte(c)
			checkStringToken(t, b)
			checkStringToken(t, append(b, '"'))
		}
	}
}

// FuzzStringToken checks stringToken against the reference on any
// input.
func FuzzStringToken(f *testing.F) {
	for _, s := range []string{`"abc"`, `"a\"b"`, `"caf\u00e9 \ud83d\ude00"`, "\"\xff\"", `"cut`,
		`"0123456789abcdef0123456789abcdef\"0123456789abcdef"`, "\"0123456789abcde\x01\"", "\"é€0123456789abcdef\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		b = append([]byte{'"'}, b...)
		checkStringToken(t, b)
	})
}

// checkDecode: the decoding of a well-formed string token is what
// encoding/json decodes (decodeString fails on lone surrogates, which
// encoding/json replaces).
func checkDecode(t *testing.T, tok []byte) {
	t.Helper()
	cs, ce, _, _, err := stringToken(tok, 0)
	if err != nil {
		return
	}
	got, err := decodeString(nil, tok[cs:ce])
	if err != nil {
		return
	}
	var want string
	if err := json.Unmarshal(tok[:ce+1], &want); err != nil {
		t.Fatalf("%q: encoding/json: %v", tok, err)
	}
	if string(got) != want {
		t.Fatalf("decodeString(%q) = %q, want %q", tok[cs:ce], got, want)
	}
}

// TestDecodeStringEscapes puts escapes at every distance from each other
// (the eight-byte test and bytes.IndexByte take turns).
func TestDecodeStringEscapes(t *testing.T) {
	for _, e := range []string{`\n`, `\"`, `\\`, `\/`, `\b`, `\f`, `\r`, `\t`, `\u00e9`, `\ud83d\ude00`, `\u2014`} {
		for gap := 0; gap < 24; gap++ {
			body := e + strings.Repeat("é", gap%3) + strings.Repeat("x", gap) + e + "y" + e
			checkDecode(t, []byte(`"`+body+`"`))
		}
	}
}

// FuzzDecodeString checks decodeString against encoding/json on any
// well-formed string token.
func FuzzDecodeString(f *testing.F) {
	for _, s := range []string{`"abc"`, `"a\"b\nc"`, `"caf\u00e9 \ud83d\ude00"`, `"\\\\x"`, `"0123456789\t0123456789"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkDecode(t, append([]byte{'"'}, b...))
	})
}
