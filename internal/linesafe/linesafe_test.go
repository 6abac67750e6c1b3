package linesafe

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// TestAppendStringGolden: the exact bytes written for each character this
// package escapes, and for its neighbours that it does not.
func TestAppendStringGolden(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", `"plain"`},
		{`"\`, `"\"\\"`},
		{"\b\f\n\r\t", `"\b\f\n\r\t"`},
		{"\x00\x01\x07\x1b\x1f", `"\u0000\u0001\u0007\u001b\u001f"`},
		{" ~", `" ~"`},
		{"\x7f", `"\u007f"`},
		{"\u0080\u0085\u009b\u009f", `"\u0080\u0085\u009b\u009f"`},
		{"\u00a0é", "\"\u00a0é\""},
		{"a\u2028b\u2029c", `"a\u2028b\u2029c"`},
		{"\u2027\u202a", "\"\u2027\u202a\""}, // neighbours: a format character is JSON-safe (Text shows it)
		{"x\x1b]0;pwned\x07", `"x\u001b]0;pwned\u0007"`},
		{"<&>", `"<&>"`},
		{"\xff\xed\xa0\x80", `"\ufffd\ufffd\ufffd\ufffd"`},
		{"𝄞", `"𝄞"`},
	}
	for _, tc := range tests {
		if got := string(AppendString(nil, tc.in)); got != tc.want {
			t.Errorf("AppendString(%q) = %s, want %s", tc.in, got, tc.want)
		}
		if got := string(Append(nil, encodingJSON(t, tc.in))); got != tc.want {
			t.Errorf("Append(encoding/json %q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// encodingJSON is s as encoding/json writes it with HTML escaping off.
func encodingJSON(t testing.TB, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// TestAppendKeepsStructure: whitespace between tokens (the indentation of
// MarshalIndent) is kept; raw characters inside strings are escaped.
func TestAppendKeepsStructure(t *testing.T) {
	in := "{\n  \"a\u2028\": [\n\t\"\u0085\x7f\"\r\n  ]\n}\n"
	want := "{\n  \"a\\u2028\": [\n\t\"\\u0085\\u007f\"\r\n  ]\n}\n"
	if got := string(Append(nil, []byte(in))); got != want {
		t.Fatalf("Append = %q, want %q", got, want)
	}
}

func TestText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"read_file", "read_file"},
		{"x\x1b]0;pwned\x07", `x\u001b]0;pwned\u0007`},
		{"a\u2028b", `a\u2028b`},
		{"a\u0085b\x7f", `a\u0085b\u007f`},
		{"evil\u202egnp.exe", `evil\u202egnp.exe`},
		{"zw\u200bsp", `zw\u200bsp`},
		{"tag\U000e0041", `tag\U000e0041`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"\ufffd ok", "\ufffd ok"},
		{`back\slash`, `back\slash`},
		{"tab\there", `tab\u0009here`},
	}
	for _, tc := range tests {
		if got := Text(tc.in); got != tc.want {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// rawHazard returns the first character of b that Escaped covers, written
// as it is (not escaped), or -1.
func rawHazard(b []byte) rune {
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if Escaped(r) {
			return r
		}
		b = b[size:]
	}
	return -1
}

// FuzzAppendString: for any string, the JSON written holds none of the
// characters Escaped covers as they are (no byte sequence of any of them:
// every line break and control is an escape), is valid UTF-8 and valid
// JSON, decodes with encoding/json to the string itself (invalid UTF-8 to
// U+FFFD, as encoding/json reads it), and equals encoding/json's encoding
// passed through Append; Append keeps the same guarantee for a JSON object
// holding the string as a name and a value, indented.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a", "x\x1b]0;pwned\x07", "a\u2028b", "\u0085\x7f\u009b", "\xff", "\"\\\n", "é𝄞\u2029"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := AppendString(nil, s)
		if r := rawHazard(b); r >= 0 {
			t.Fatalf("AppendString(%q) = %q holds U+%04X as it is", s, b, r)
		}
		if !utf8.Valid(b) || !json.Valid(b) {
			t.Fatalf("AppendString(%q) = %q is not valid UTF-8 JSON", s, b)
		}
		var back string
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if want := string([]rune(s)); back != want {
			t.Fatalf("AppendString(%q) decodes to %q, want %q", s, back, want)
		}
		if ref := Append(nil, encodingJSON(t, s)); !bytes.Equal(ref, b) {
			t.Fatalf("AppendString(%q) = %q, encoding/json through Append %q", s, b, ref)
		}
		obj, err := json.MarshalIndent(map[string]string{s: s}, "", "\t")
		if err != nil {
			t.Fatal(err)
		}
		safe := Append(nil, obj)
		if r := rawHazard(bytes.ReplaceAll(bytes.ReplaceAll(safe, []byte("\n"), nil), []byte("\t"), nil)); r >= 0 {
			t.Fatalf("Append(%q) = %q holds U+%04X inside a string", obj, safe, r)
		}
		var m map[string]string
		if err := json.Unmarshal(safe, &m); err != nil || len(m) != 1 || m[back] != back {
			t.Fatalf("Append(%q) = %q decodes to %v (%v)", obj, safe, m, err)
		}
	})
}
