package jsonrpc

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// referenceFoldedDuplicate is the tokenizer-based implementation that
// foldedDuplicate replaced, kept as the reference it must agree with on
// every strict JSON value: it re-reads body with a jsontext.Decoder and
// compares each member name's foldKey with those of the earlier names of the
// same object.
func referenceFoldedDuplicate(body []byte) string {
	mayFoldCollide := false
	for _, c := range body {
		if c >= 0x80 || (c >= 'A' && c <= 'Z') || c == '\\' {
			mayFoldCollide = true
			break
		}
	}
	if !mayFoldCollide {
		return ""
	}
	type level struct {
		object, wantName bool
		names            []string
	}
	var stack []level
	dec := jsontext.NewDecoder(bytes.NewBuffer(body))
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			return ""
		}
		k := tok.Kind()
		if k == '}' || k == ']' {
			stack = stack[:len(stack)-1]
			continue
		}
		if n := len(stack); n > 0 && stack[n-1].object {
			top := &stack[n-1]
			if top.wantName {
				name := tok.String()
				key := foldKey(name)
				for _, seen := range top.names {
					if seen == key {
						return name
					}
				}
				top.names = append(top.names, key)
				top.wantName = false
				continue
			}
			top.wantName = true // after this value, a name or '}'
		}
		switch k {
		case '{':
			stack = append(stack, level{object: true, wantName: true})
		case '[':
			stack = append(stack, level{})
		}
	}
}

// strictValue reports whether b is exactly one JSON value under jsontext's
// default (strict) options, the precondition of foldedDuplicate.
func strictValue(b []byte) bool {
	dec := jsontext.NewDecoder(bytes.NewBuffer(b))
	if _, err := dec.ReadValue(); err != nil {
		return false
	}
	_, err := dec.ReadToken()
	return err == io.EOF
}

// bigObject returns an object of n members, the i-th named by the JSON string
// contents name(i) (written as they are, escapes included) with the value i.
func bigObject(n int, name func(i int) string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%s":%d`, name(i), i)
	}
	b.WriteByte('}')
	return b.String()
}

// foldCases are strict JSON values with the name foldedDuplicate must
// return for each.
var foldCases = []struct {
	name, body, want string
}{
	{"empty object", `{}`, ""},
	{"scalar", `"Params"`, ""},
	{"lowercase only", `{"a":1,"b":{"a":2},"c":[{"a":3}]}`, ""},
	{"ascii case", `{"params":1,"Params":2}`, "Params"},
	{"ascii case first upper", `{"METHOD":1,"method":2}`, "method"},
	{"long s", `{"params":1,"paramſ":2}`, "paramſ"},
	{"long s first", `{"paramſ":1,"PARAMS":2}`, "PARAMS"},
	{"kelvin", `{"k":1,"` + "\u212a" + `":2}`, "\u212a"},
	{"kelvin escaped", `{"k":1,"\u212a":2}`, "\u212a"},
	{"kelvin escaped upper hex", `{"\u212A":1,"K":2}`, "K"},
	{"dotted capital I", `{"id":1,"İd":2}`, "İd"},
	{"dotless i", `{"ıd":1,"ID":2}`, "ID"},
	{"escaped P", `{"params":1,"\u0050arams":2}`, "Params"},
	{"escaped p exact is not folded", `{"Params":1,"\u0070arams":2}`, "params"},
	{"escaped newline", `{"a\nb":1,"A\nB":2}`, "A\nB"},
	{"escaped newline differs", `{"a\nb":1,"a\\nb":2}`, ""},
	{"escaped quote in name", `{"a\"b":1,"A\"B":2}`, "A\"B"},
	{"escaped backslash in name", `{"a\\":1,"A\\":2}`, `A\`},
	{"surrogate pair", `{"\ud801\udc00":1,"\ud801\udc28":2}`, "\U00010428"},
	{"surrogate pair raw vs escaped", `{"` + "\U00010400" + `":1,"\ud801\udc28":2}`, "\U00010428"},
	{"surrogate pair distinct", `{"\ud83d\ude00":1,"\ud83d\ude01":2}`, ""},
	{"arrays of objects", `[{"a":1},{"A":2},{"b":1,"x":[{"c":1,"C":2}]}]`, "C"},
	{"same name at other depth", `{"Path":"a","other":{"path":"b","x":{"PATH":1}},"list":[{"path":1}]}`, ""},
	{"sibling objects", `{"a":{"Name":1},"b":{"name":2}}`, ""},
	{"outer after inner", `{"Name":{"x":1,"X":2},"name":1}`, "X"},
	{"inner clean, outer collides", `{"Name":{"x":1},"name":1}`, "name"},
	{"value is not a name", `{"a":"A","b":"a","c":["A","a"]}`, ""},
	{"quote escape before end", `{"a":"x\"","A":1}`, "A"},
	{"backslash before end", `{"a":"x\\","A":1}`, "A"},
	{"three backslashes before end", `{"a":"x\\\"}\"","b":{"B":1,"b":2}}`, "b"},
	{"escaped quote then name-like text", `{"s":"\",\"S\":1","t":1}`, ""},
	{"whitespace", " \t\r\n{ \"a\" : 1 ,\n \"A\" : [ ] } \n", "A"},
	{"numbers and literals", `{"a":-1.5e+3,"b":true,"c":null,"d":false,"B":0}`, "B"},
	{"big object no collision", bigObject(40, func(i int) string { return fmt.Sprintf("Key%d", i) }), ""},
	{"big object collision at end", bigObject(40, func(i int) string {
		if i == 39 {
			return "KEY3"
		}
		return fmt.Sprintf("Key%d", i)
	}), "KEY3"},
	{"big lowercase object then upper", bigObject(40, func(i int) string {
		if i == 39 {
			return "K20"
		}
		return fmt.Sprintf("k%d", i)
	}), "K20"},
	{"big object upper then lowercase", bigObject(40, func(i int) string {
		if i == 0 {
			return "K39"
		}
		return fmt.Sprintf("k%d", i)
	}), "k39"},
	{"big object long s at end", bigObject(30, func(i int) string {
		if i == 29 {
			return "paramſ"
		}
		if i == 3 {
			return "params"
		}
		return fmt.Sprintf("p%d", i)
	}), "paramſ"},
	{"big object escaped at end", bigObject(30, func(i int) string {
		if i == 29 {
			return `\u0050arams`
		}
		if i == 3 {
			return "params"
		}
		return fmt.Sprintf("p%d", i)
	}), "Params"},
	{"big nested in big", `{` + strings.TrimSuffix(strings.TrimPrefix(bigObject(20, func(i int) string { return fmt.Sprintf("A%d", i) }), "{"), "}") +
		`,"in":` + bigObject(20, func(i int) string { return fmt.Sprintf("a%d", i) }) + `,"a19":1}`, "a19"},
	{"tools call", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"Path":"/tmp/a","path":"/etc/shadow"}}}`, "path"},
}

func TestFoldedDuplicate(t *testing.T) {
	for _, tc := range foldCases {
		body := []byte(tc.body)
		if !strictValue(body) {
			t.Fatalf("%s: %s is not strict JSON", tc.name, body)
		}
		if got := foldedDuplicate(body); got != tc.want {
			t.Errorf("%s: foldedDuplicate(%s) = %q, want %q", tc.name, body, got, tc.want)
		}
		if got := referenceFoldedDuplicate(body); got != tc.want {
			t.Errorf("%s: referenceFoldedDuplicate(%s) = %q, want %q", tc.name, body, got, tc.want)
		}
	}
}

// TestFoldedDuplicateManyMembers: an object of 200,000 distinct members is
// checked in full, in linear time (a quadratic comparison would take
// minutes), with and without names that need folding.
func TestFoldedDuplicateManyMembers(t *testing.T) {
	const n = 200_000
	for _, tc := range []struct {
		name string
		key  func(i int) string
		want string
	}{
		{"lowercase", func(i int) string { return fmt.Sprintf("m%d", i) }, ""},
		{"mixed case", func(i int) string { return fmt.Sprintf("Member%d", i) }, ""},
		{"non-ASCII", func(i int) string { return fmt.Sprintf("ſ%d", i) }, ""},
		{"collision last", func(i int) string {
			if i == n-1 {
				return "M12345"
			}
			return fmt.Sprintf("m%d", i)
		}, "M12345"},
	} {
		body := []byte(bigObject(n, tc.key))
		if got := foldedDuplicate(body); got != tc.want {
			t.Errorf("%s: foldedDuplicate of %d members = %q, want %q", tc.name, n, got, tc.want)
		}
		arr := append(append([]byte("[1,"), body...), ']')
		if got := foldedDuplicate(arr); got != tc.want {
			t.Errorf("%s: foldedDuplicate of %d members in an array = %q, want %q", tc.name, n, got, tc.want)
		}
	}
}

// namePieces are fragments of member names (JSON string contents) that are
// equal or not under folding in the ways that matter: ASCII case, escapes,
// the long s and Kelvin sign, dotted and dotless i, surrogate pairs, escaped
// quotes and backslashes.
var namePieces = []string{
	"s", "S", `\u0053`, `\u0073`, "ſ", `\u017f`, "k", "K", "\u212a", `\u212A`, "K",
	"i", "I", "İ", "ı", `\u0130`, "é", "É", `\u00e9`, "\U00010400", "\U00010428", `\ud801\udc28`,
	`\"`, `\\`, `\n`, "a", "A", "",
}

// randomValue writes a random JSON value of at most depth levels to b.
func randomValue(r *rand.Rand, b *strings.Builder, depth int) {
	k := r.IntN(6)
	if depth <= 0 {
		k = r.IntN(2)
	}
	switch k {
	case 0:
		b.WriteString([]string{"1", "-2.5e3", "true", "null"}[r.IntN(4)])
	case 1:
		b.WriteByte('"')
		for range r.IntN(3) {
			b.WriteString(namePieces[r.IntN(len(namePieces))])
		}
		b.WriteByte('"')
	case 2:
		b.WriteByte('[')
		for i := range r.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
			}
			randomValue(r, b, depth-1)
		}
		b.WriteByte(']')
	default:
		b.WriteByte('{')
		n := r.IntN(6)
		if r.IntN(8) == 0 {
			n += 16 + r.IntN(16) // past strictjson's linear comparison (16 names)
		}
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('"')
			for range 1 + r.IntN(2) {
				b.WriteString(namePieces[r.IntN(len(namePieces))])
			}
			if r.IntN(2) == 0 {
				fmt.Fprintf(b, "%d", r.IntN(n+1))
			}
			b.WriteString(`":`)
			randomValue(r, b, depth-1)
		}
		b.WriteByte('}')
	}
}

// TestFoldedDuplicateRandom compares foldedDuplicate with the reference on
// generated strict JSON built from names that fold together in many ways,
// small and large objects, at several depths.
func TestFoldedDuplicateRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	valid, found := 0, 0
	for range 20000 {
		var b strings.Builder
		randomValue(r, &b, 4)
		body := []byte(b.String())
		if !strictValue(body) {
			continue // an exact duplicate name
		}
		valid++
		got, want := foldedDuplicate(body), referenceFoldedDuplicate(body)
		if got != want {
			t.Fatalf("foldedDuplicate(%s) = %q, reference %q", body, got, want)
		}
		if got != "" {
			found++
		}
	}
	t.Logf("%d strict values, %d with a folded duplicate", valid, found)
	if valid < 5000 || found < 500 || valid-found < 500 {
		t.Fatalf("generator too weak: %d strict values, %d with a folded duplicate", valid, found)
	}
}

// FuzzFoldedDuplicate checks foldedDuplicate against the tokenizer-based
// reference on every strict JSON value, and that it does not panic on any
// other input.
func FuzzFoldedDuplicate(f *testing.F) {
	for _, tc := range foldCases {
		f.Add([]byte(tc.body))
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"data":"Hello World"}}}`,
		`{"a":"\\\\","B":"\"","b":1}`,
		`[{"\u00e9":1,"\u00c9":2}]`,
		`{"é":1,"É":2}`,
		`{"ǅ":1,"ǆ":2,"Ǆ":3}`,
		`{"σ":1,"ς":2}`,
		`{"ß":1,"ẞ":2}`,
		`{"a":{"b":{"c":{"C":1}}}}`,
		`[[[[{"x":[{"X":1}]}]]]]`,
		`}`, `,`, `{"a`, `{"a\"`, `]]`, `{"A":1,"a`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !strictValue(body) {
			_ = foldedDuplicate(body)
			return
		}
		got, want := foldedDuplicate(body), referenceFoldedDuplicate(body)
		if got != want {
			t.Fatalf("foldedDuplicate(%q) = %q, reference %q", body, got, want)
		}
	})
}

// BenchmarkFoldedDuplicate measures the check on a typical tools/call frame
// whose argument is 1 KiB of mixed-case text.
func BenchmarkFoldedDuplicate(b *testing.B) {
	text := strings.Repeat("The Quick Brown Fox jumps over the lazy dog. ", 24)[:1024]
	frame := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"data":"` + text + `"}}}`)
	if !strictValue(frame) {
		b.Fatal("benchmark frame is not strict JSON")
	}
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if foldedDuplicate(frame) != "" {
			b.Fatal("unexpected duplicate")
		}
	}
}
