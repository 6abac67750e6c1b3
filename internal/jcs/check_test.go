package jcs

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"math"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// fixedPoint reports whether jsontext's RFC 8785 canonicalization leaves b
// unchanged.
func fixedPoint(b []byte) bool {
	v := jsontext.Value(bytes.Clone(b))
	return v.Canonicalize() == nil && bytes.Equal(v, b)
}

var checkCases = []struct {
	in string
	ok bool
}{
	{`0`, true}, {`-0`, false}, {`1.0`, false}, {`1E2`, false}, {`100`, true}, {`-5`, true},
	{`1e+21`, true}, {`1e21`, false}, {`1e-7`, true}, {`1e-07`, false}, {`0.000001`, true}, {`1e-6`, false},
	{`123456789012345680000`, true}, {`12345678901234567890`, false},
	{`9007199254740992`, true}, {`9007199254740993`, false}, {`-9007199254740993`, false},
	{`999999999999999`, true}, {`-999999999999999`, true}, {`9999999999999999`, false}, {`1000000000000000`, true},
	{`18446744073709552000`, true}, {`18446744073709551616`, false}, {`18446744073709551615`, false},
	{`1e400`, false}, {`00`, false}, {`01`, false}, {`.5`, false}, {`0.5`, true}, {`-`, false}, {`-a`, false},
	{`0.1`, true}, {`0.10`, false}, {`0.30000000000000004`, true}, {`0.10000000000000000001`, false},
	{`"\u001f"`, true}, {`"\u001F"`, false}, {`"\u0008"`, false}, {`"\b"`, true}, {`"\/"`, false}, {`"\u0041"`, false},
	{`"\u00e9"`, false}, {`"\ud83d\ude00"`, false}, {`"\ud800"`, false}, {`"\u0`, false}, {`"\`, false}, {`"\x"`, false},
	{`"` + "\x7f" + `"`, true}, {`"` + "\x01" + `"`, false}, {"\"\xff\"", false}, {"\"\xed\xa0\x80\"", false},
	{`"é😀 "`, true}, {`"<&>"`, true}, {`"` + "\u2028" + `"`, true}, {`"abc`, false}, {`"0123456789abcdefghij"`, true},
	{`"0123456789abcdef` + "\x00" + `"`, false}, {`"0123456789abcdef\"x"`, true}, {`"0123456789abcdef\\"`, true},
	{`{"a":1,"b":2}`, true}, {`{"b":1,"a":2}`, false}, {`{"a":1,"a":2}`, false},
	{`{"😀":2,"ﬀ":1}`, true}, {`{"ﬀ":1,"😀":2}`, false}, {`{"é":1,"😀":2}`, true}, {`{"😀":1,"é":2}`, false},
	{`{"a":1,"ab":2}`, true}, {`{"ab":1,"a":2}`, false}, {`{"\u0000":0,"a":1}`, true}, {`{"\n":0,"\u000b":1}`, true},
	{`{"\u000b":0,"\n":1}`, false}, {`{"a\"":0,"a\\":1}`, true},
	{`{"a":{"b":1,"c":2},"b":[{"a":1},{"a":2,"b":3}]}`, true}, {`{"a":{"c":1,"b":2}}`, false},
	{`[1,2]`, true}, {`[1, 2]`, false}, {` 1`, false}, {`1 `, false}, {`[]`, true}, {`{}`, true}, {`[1,]`, false},
	{`true`, true}, {`false`, true}, {`null`, true}, {`nul`, false}, {`[`, false}, {`{"a":}`, false}, {``, false},
	{`{"a" :1}`, false}, {`{"a":1`, false}, {`{"a":1]`, false}, {`[1}`, false}, {`{1:2}`, false},
}

func TestCheck(t *testing.T) {
	for _, tc := range checkCases {
		err := Check([]byte(tc.in))
		if (err == nil) != tc.ok {
			t.Errorf("Check(%s) = %v, want ok=%v", tc.in, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrNotCanonical) {
			t.Errorf("Check(%s) = %v, not ErrNotCanonical", tc.in, err)
		}
		if tc.ok != fixedPoint([]byte(tc.in)) {
			t.Errorf("%s: the table disagrees with jsontext", tc.in)
		}
	}
	if err := Check([]byte(strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1))); err == nil {
		t.Error("nesting beyond the limit accepted")
	}
	if err := Check([]byte(strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth))); err != nil {
		t.Errorf("nesting at the limit: %v", err)
	}
}

// TestCheckNamesTheProblem: the error says what and where.
func TestCheckNamesTheProblem(t *testing.T) {
	for in, want := range map[string]string{
		`{"b":1,"a":2}`: "member names not in strictly increasing UTF-16 order at byte 7",
		`[1, 2]`:        "unexpected character at byte 3",
		`"a` + "\x01":   "unescaped control character at byte 2",
		`"\u0041"`:      "non-canonical \\u escape at byte 1",
		`1.50`:          "number not in its shortest ECMAScript form",
		`1 `:            "data after the value at byte 1",
	} {
		err := Check([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check(%q) = %v, want %q", in, err, want)
		}
	}
}

func TestScanner(t *testing.T) {
	var s Scanner
	b := []byte(`x{"a":[1,"\n"]}"k\"ey"y`)
	end, err := s.Value(b, 1)
	if err != nil || end != 15 {
		t.Fatalf("Value = %d, %v", end, err)
	}
	content, end, err := s.String(b, end)
	if err != nil || end != 22 || string(content) != `k"ey` {
		t.Fatalf("String = %q, %d, %v", content, end, err)
	}
	content, end, err = s.String([]byte(`"plain"`), 0)
	if err != nil || end != 7 || string(content) != "plain" {
		t.Fatalf("String = %q, %d, %v", content, end, err)
	}
	if _, end, err := s.String(b, 0); err == nil || end != 0 {
		t.Fatalf("String of a non-string = %d, %v", end, err)
	}
	if end, err := s.Value([]byte(`[1,{"b":1,"a":2}]`), 0); !errors.Is(err, ErrNotCanonical) || end != 10 {
		t.Fatalf("Value of unsorted members = %d, %v", end, err)
	}
}

// TestCanonicalFastPath: canonical input comes back as itself (aliased),
// anything else is re-encoded into a new slice, and numbers beyond a
// double's precision are an error on both paths, never rounded.
func TestCanonicalFastPath(t *testing.T) {
	in := []byte(`{"a":[1,"x"],"b":null}`)
	out, err := Canonical(in)
	if err != nil || !bytes.Equal(out, in) || &out[0] != &in[0] {
		t.Fatalf("canonical input: %s %v (aliased: %v)", out, err, err == nil && &out[0] == &in[0])
	}
	in = []byte(`{"b":null, "a":[1.0,"x"]}`)
	orig := bytes.Clone(in)
	out, err = Canonical(in)
	if err != nil || string(out) != `{"a":[1,"x"],"b":null}` || !bytes.Equal(in, orig) {
		t.Fatalf("non-canonical input: %s %v (input now %s)", out, err, in)
	}
	for _, lit := range []string{
		`9007199254740993`, `-9007199254740993`, `[9007199254740993]`, `{"n":9007199254740993}`,
		`12345678901234567890`, `18446744073709551615`, `0.10000000000000000001`, `1e400`, `1e-400`,
	} {
		if out, err := Canonical([]byte(lit)); !errors.Is(err, ErrInexactNumber) {
			t.Errorf("Canonical(%s) = %s, %v; want ErrInexactNumber", lit, out, err)
		}
	}
	for lit, want := range map[string]string{
		`9007199254740992`: `9007199254740992`, `-0`: `0`, `1E2`: `100`, `123456789012345680000`: `123456789012345680000`,
		`1e21`: `1e+21`, `0.0000001`: `1e-7`, `18446744073709552000`: `18446744073709552000`,
	} {
		if out, err := Canonical([]byte(lit)); err != nil || string(out) != want {
			t.Errorf("Canonical(%s) = %s, %v; want %s", lit, out, err, want)
		}
	}
}

// errClass is the class of a Canonical error, for comparing paths.
func errClass(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrInexactNumber):
		return "inexact"
	}
	return "invalid"
}

// canonicalReference is Canonical as it was before its fast paths: the
// strict exact-number check, then jsontext's canonicalization.
func canonicalReference(raw []byte) ([]byte, error) {
	if err := checkNumbers(raw); err != nil {
		return nil, err
	}
	v := jsontext.Value(bytes.Clone(raw))
	if err := v.Canonicalize(); err != nil {
		return nil, err
	}
	return v, nil
}

// The fast paths change nothing: for every input, Canonical's result
// (bytes and error class) is the slow path's, and both are the
// reference's; numbersExact never vouches for a number checkNumbers
// rejects.
func FuzzCanonicalFastPath(f *testing.F) {
	for _, tc := range checkCases {
		f.Add([]byte(tc.in))
	}
	for _, s := range []string{`{"a":[1,"x",null,true,{"b":-1.5e-7}]}`, ` {"a":1} `, `{"n":9007199254740993}`, `"\u2028"`,
		`{"s":"1e400\"9007199254740993","n":[1e400]}`, `[1, "\xff", 1e400]`, `[1e400 x]`, `{"a":1,"a":1e400}`, `[0.10000000000000000001`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		orig := bytes.Clone(b)
		fast, ferr := Canonical(b)
		slow, serr := canonicalSlow(b)
		if !bytes.Equal(b, orig) {
			t.Fatalf("Canonical modified its input")
		}
		if errClass(ferr) != errClass(serr) || !bytes.Equal(fast, slow) {
			t.Fatalf("Canonical(%q) = %q, %v; slow path %q, %v", b, fast, ferr, slow, serr)
		}
		ref, rerr := canonicalReference(b)
		if errClass(ferr) != errClass(rerr) || !bytes.Equal(fast, ref) {
			t.Fatalf("Canonical(%q) = %q, %v; reference %q, %v", b, fast, ferr, ref, rerr)
		}
		if numbersExact(b) && errors.Is(checkNumbers(b), ErrInexactNumber) {
			t.Fatalf("numbersExact(%q) but checkNumbers: %v", b, checkNumbers(b))
		}
		if ferr == nil && Check(fast) != nil {
			t.Fatalf("Canonical(%q) = %q, which Check rejects: %v", b, fast, Check(fast))
		}
		var w bytes.Buffer
		werr := WriteCanonical(&w, b)
		if errClass(werr) != errClass(ferr) || (ferr == nil && !bytes.Equal(w.Bytes(), fast)) {
			t.Fatalf("WriteCanonical(%q) wrote %q, %v; Canonical %q, %v", b, w.Bytes(), werr, fast, ferr)
		}
		w.Reset()
		serr = writeCanonical(&w, b, 0) // everything taken apart
		if errClass(serr) != errClass(ferr) || (ferr == nil && !bytes.Equal(w.Bytes(), fast)) {
			t.Fatalf("WriteCanonical taking apart (%q) wrote %q, %v; Canonical %q, %v", b, w.Bytes(), serr, fast, ferr)
		}
		if !bytes.Equal(b, orig) {
			t.Fatalf("WriteCanonical modified its input")
		}
	})
}

// TestWriteCanonicalWriterError: a failing writer's error is returned, on
// both paths (already canonical, and re-encoded).
func TestWriteCanonicalWriterError(t *testing.T) {
	boom := errors.New("boom")
	for _, in := range []string{`{"a":1}`, `{"b":1,"a":[1.0,2]}`} {
		if err := WriteCanonical(failWriter{boom}, []byte(in)); !errors.Is(err, boom) {
			t.Errorf("WriteCanonical(%s) to a failing writer = %v, want %v", in, err, boom)
		}
	}
}

type failWriter struct{ err error }

func (f failWriter) Write([]byte) (int, error) { return 0, f.err }

// Check agrees with jsontext's canonicalizer on every input.
func FuzzCheck(f *testing.F) {
	for _, tc := range checkCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := Check(b) == nil
		if want := fixedPoint(b); got != want {
			t.Fatalf("Check(%q) ok=%v, jsontext fixed point=%v", b, got, want)
		}
		if got && !utf8.Valid(b) {
			t.Fatalf("accepted invalid UTF-8 %q", b)
		}
	})
}

// TestAppend: the appenders write what Canonical makes of encoding/json's
// output for the same value.
func TestAppend(t *testing.T) {
	viaJSON := func(v any) (string, error) {
		b, err := json.Marshal(v)
		if err != nil {
			return "", err
		}
		c, err := Canonical(b)
		return string(c), err
	}
	strs := []string{"", "plain", `q"b\s/`, "<&>", "\u2028\u2029", "\x00\x01\b\t\n\v\f\r\x1f\x7f", "é😀ﬀ",
		"bad\xffutf8\xc3", "\xed\xa0\x80", "\xef\xbf\xbd", strings.Repeat("long ", 40) + "\"end"}
	for _, s := range strs {
		want, err := viaJSON(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(AppendString([]byte("x"), s)); got != "x"+want {
			t.Errorf("AppendString(%q) = %s, want %s", s, got[1:], want)
		}
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1.5, 0.1, 0.45, 1e21, 1e20, 1e-6, 1e-7, 123456789012345680000,
		math.MaxFloat64, math.SmallestNonzeroFloat64, 9007199254740993, 1.0 / 3} {
		want, err := viaJSON(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := AppendFloat(nil, f)
		if err != nil || string(got) != want {
			t.Errorf("AppendFloat(%v) = %s, %v; want %s", f, got, err, want)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if got, err := AppendFloat([]byte("x"), f); err == nil || string(got) != "x" {
			t.Errorf("AppendFloat(%v) = %s, %v; want an error", f, got, err)
		}
	}
	for _, n := range []int64{0, 1, -1, 1 << 53, -(1 << 53), 1<<53 + 1, 1<<53 + 2, 1e18, math.MaxInt64, math.MinInt64, 12345678901234567} {
		want, werr := viaJSON(n)
		got, err := AppendInt(nil, n)
		if errClass(err) != errClass(werr) || string(got) != want {
			t.Errorf("AppendInt(%d) = %s, %v; want %s, %v", n, got, err, want, werr)
		}
	}
	if _, err := AppendInt(nil, 1<<53+1); !errors.Is(err, ErrInexactNumber) {
		t.Errorf("AppendInt(2^53+1) = %v, want ErrInexactNumber", err)
	}
}

// FuzzAppendString: any string is written as Canonical writes it after
// encoding/json.
func FuzzAppendString(f *testing.F) {
	f.Add("plain")
	f.Add("\x00<\u2028\xff")
	f.Fuzz(func(t *testing.T, s string) {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Canonical(b)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
	})
}

// TestNumbersExact: the quick look vouches only for exact, well-formed
// numbers outside strings, and numbers inside strings do not count.
func TestNumbersExact(t *testing.T) {
	for in, want := range map[string]bool{
		`{"a":[1,2.5,-0,1e21,1E2,0.000001]}`: true,
		`"9007199254740993"`:                 true,
		`"\"9007199254740993"`:               true,
		`"\\"`:                               true,
		`[9007199254740993]`:                 false,
		`[1e400]`:                            false,
		`[123456789012345680000]`:            true,
		`[12345678901234567890]`:             false,
		`[1-2]`:                              false,
		`[--1]`:                              false,
		`[01]`:                               false,
		`[1.]`:                               false,
		`{"a":true,"b":null}`:                true,
		`"unterminated 1e400`:                true,
		"\"\xff\" 1e400":                     false,
	} {
		if got := numbersExact([]byte(in)); got != want {
			t.Errorf("numbersExact(%s) = %v, want %v", in, got, want)
		}
	}
}

// TestWriteCanonicalSplit: the split path (objects and arrays taken apart,
// canonical parts written as they are) writes exactly the reference's
// bytes, and fails where the reference fails, at every depth and past
// maxSplitDepth.
func TestWriteCanonicalSplit(t *testing.T) {
	deep := `{"b":1.0,"a":` + strings.Repeat(`[{"y":2,"x":[1.0]},`, maxSplitDepth+2) + `0` + strings.Repeat(`]`, maxSplitDepth+2) + `}`
	for _, in := range []string{
		`{"content":[{"type":"text","text":"ok"}],"structuredContent":{"a":"b"}}`,
		` { "b" : [ 1.0 , -0 , 1e2 , "\u00e9\/" ] , "a" : { } , "c" : [ ] } `,
		`[{"b":1,"a":2},{"d":[true,false,null],"c":"\ud83d\ude00"}]`,
		`{"\uffff":1,"\ud83d\ude00":2,"":3,"a\u0000":4}`,
		`{"é":1,"e":2,"z":{"é":{"y":1,"x":2}}}`,
		deep,
		// What the reference refuses, the split path refuses too.
		`{"b":1,"a":2} x`,
		`{"b":1,"a":2}{}`,
		`{"b":1,"a":2,"b":3}`,
		`{"b":{"d":1,"c":2,"d":3},"a":1}`,
		`{"b":[1,2,],"a":1}`,
		`{"b":"\xff","a":1}`,
		`{"b":"\ud800","a":1}`,
		`{"\ud800":1,"a":1}`,
		`{"b":1,"a":2`,
		`[{"b":1,"a":2}`,
		`{"b":1,"a":12345678901234567890}`,
		`[1,{"b":1e400,"a":1}]`,
		`{"a":1,"\u0061":2}`,
		`{"b":[1.0],"` + strings.Repeat("n", maxSplitName+1) + `":{"y":1,"x":2}}`,
		`{"` + strings.Repeat("n", maxSplitName+1) + `":1,"` + strings.Repeat("n", maxSplitName+1) + `":2}`,
		`{"` + strings.Repeat("n", maxSplitName+1) + `":1} x`,
		`[` + strings.Repeat(`{"b":1,"a":2},`, maxSplitParts) + `1.0]`,
		`[` + strings.Repeat(`{"b":1,"a":2},`, maxSplitParts) + `1.0] x`,
		`{"z":[` + strings.Repeat(`1,`, maxSplitParts) + `{"b":1,"a":2}],"a":1.0}`,
	} {
		var w bytes.Buffer
		err := writeCanonical(&w, []byte(in), 0) // everything taken apart
		ref, rerr := canonicalReference([]byte(in))
		if errClass(err) != errClass(rerr) || err == nil && !bytes.Equal(w.Bytes(), ref) {
			t.Errorf("WriteCanonical(%s) = %q, %v; reference %q, %v", in, w.Bytes(), err, ref, rerr)
		}
	}
}

// TestWriteCanonicalManySmallParts: a big array of small unsorted objects
// (nothing worth not copying) goes through the encoder in one pass, not an
// encoder per element: a bounded number of allocations, whatever its
// length.
func TestWriteCanonicalManySmallParts(t *testing.T) {
	in := []byte("[" + strings.Repeat(`{"type":"text","text":"line"},`, 40000) + `{"b":1,"a":2}]`)
	if len(in) < splitMinBytes {
		t.Fatal("the input is too small to be taken apart")
	}
	h := sha256.New()
	measure := func(write func(io.Writer, []byte) error) float64 {
		return testing.AllocsPerRun(3, func() {
			h.Reset()
			if err := write(h, in); err != nil {
				t.Fatal(err)
			}
		})
	}
	// Relative to the encoder alone, so that the race detector's extra
	// allocations (sync.Pool drops items under -race) count on both sides.
	whole := measure(encodeCanonical)
	allocs := measure(WriteCanonical)
	if allocs > 2*whole+200 {
		t.Errorf("WriteCanonical of %d small objects: %.0f allocations; the encoder alone %.0f", 40001, allocs, whole)
	}
	ref, _ := canonicalReference(in)
	if want := sha256.Sum256(ref); !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatal("the hash differs from the reference's canonical form")
	}
}

// TestWriteCanonicalCopiesOnlyWhatIsNotCanonical: a 4 MiB tool result
// whose only fault is the order of two small members is hashed without
// copying its big, canonical part (the encoder alone would hold all of it).
func TestWriteCanonicalCopiesOnlyWhatIsNotCanonical(t *testing.T) {
	big := `{"data":"` + strings.Repeat("x", 4<<20) + `"}`
	in := []byte(`{"content":[{"type":"text","text":"ok"}],"structuredContent":` + big + `}`)
	h := sha256.New()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := WriteCanonical(h, in); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	ref, err := canonicalReference(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := sha256.Sum256(ref); !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatal("the hash differs from the reference's canonical form")
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 256<<10 {
		t.Errorf("WriteCanonical allocated %d bytes for a 4 MiB value", got)
	}
}
