package evidence

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCanonicalGolden canonicalizes every testdata/canonical/*.json and
// compares with its .canonical golden file. The first two are the examples
// of RFC 8785 §3.2.2 and §3.2.3 (with 333333333.3333333 instead of
// 333333333.33333329, which is inexact: see TestCanonicalInexact); their
// golden files are the RFC's expected output byte for byte.
func TestCanonicalGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/canonical/*.json")
	if err != nil || len(files) == 0 {
		t.Fatal("no testdata/canonical/*.json", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Canonical(in)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "canonical/"+name+".canonical", got)
			again, err := Canonical(got)
			if err != nil || string(again) != string(got) {
				t.Errorf("not idempotent: %s, %v", again, err)
			}
		})
	}
}

// TestCanonicalRFCExamples checks the golden files of the RFC examples
// against the RFC's text, so that -update cannot silently accept a wrong
// output.
func TestCanonicalRFCExamples(t *testing.T) {
	want := map[string]string{
		"rfc8785_structure": `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
		"rfc8785_sorting":   "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"\u00f6\":\"Latin Small Letter O With Diaeresis\",\"\u20ac\":\"Euro Sign\",\"\U0001F600\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}",
	}
	for name, w := range want {
		got, err := Canonical(readTestdata(t, "canonical/"+name+".json"))
		if err != nil {
			t.Fatal(name, err)
		}
		if string(got) != w {
			t.Errorf("%s:\n got %s\nwant %s", name, got, w)
		}
	}
}

// TestCanonicalNumbers is RFC 8785 Appendix B: each IEEE 754 value, given
// as Go's shortest 'e' form (which is exact), is written in ES6 form.
func TestCanonicalNumbers(t *testing.T) {
	tests := []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	}
	for _, tt := range tests {
		in := strconv.FormatFloat(math.Float64frombits(tt.bits), 'e', -1, 64)
		got, err := Canonical([]byte(in))
		if err != nil {
			t.Errorf("%#x (%s): %v", tt.bits, in, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("%#x (%s) = %s, want %s", tt.bits, in, got, tt.want)
		}
		// The RFC's own text is exact too and canonicalizes to itself.
		if got, err := Canonical([]byte(tt.want)); err != nil || string(got) != tt.want {
			t.Errorf("%s -> %s, %v", tt.want, got, err)
		}
	}
}

// TestCanonicalInexact: a number whose RFC 8785 form denotes another value
// is ErrInexactNumber, never rounded; equal values in other spellings are
// fine.
func TestCanonicalInexact(t *testing.T) {
	inexact := []string{
		"9007199254740993",
		"-9007199254740993",
		"9007199254740993.0",
		"18446744073709551615",
		"12345678901234567890",
		"295147905179352825856", // 2^68: a double, but written 295147905179352830000
		"1152921504606846976",   // 2^60
		"333333333.33333329",    // RFC 8785 §3.2.2's input: 17 digits no double has
		"0.1000000000000000000001",
		"1e400",
		"-1e400",
		"1e-400",
		"2.4e-324",
		"1e99999999999999999999999",
		`{"a":[1,{"b":9007199254740993}]}`,
	}
	for _, in := range inexact {
		if _, err := Canonical([]byte(in)); !errors.Is(err, ErrInexactNumber) {
			t.Errorf("Canonical(%s) error = %v, want ErrInexactNumber", in, err)
		}
		if _, err := Hash([]byte(in)); !errors.Is(err, ErrInexactNumber) {
			t.Errorf("Hash(%s) error = %v, want ErrInexactNumber", in, err)
		}
	}
	exact := map[string]string{
		"9007199254740992":      "9007199254740992",
		"-0":                    "0",
		"-0.0e-5":               "0",
		"0e99999999999999999":   "0",
		"1.0":                   "1",
		"100e-2":                "1",
		"0.1":                   "0.1",
		"0.30000000000000004":   "0.30000000000000004",
		"1E+2":                  "100",
		"295147905179352830000": "295147905179352830000",
		"5e-324":                "5e-324",
		"4.9e-324":              "", // rounds to 5e-324: inexact
		"00.5e0":                "", // not JSON
	}
	for in, want := range exact {
		got, err := Canonical([]byte(in))
		if want == "" {
			if err == nil {
				t.Errorf("Canonical(%s) = %s, want an error", in, got)
			}
			continue
		}
		if err != nil || string(got) != want {
			t.Errorf("Canonical(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
}

// TestCanonicalInvalid: anything that is not exactly one I-JSON value.
func TestCanonicalInvalid(t *testing.T) {
	for _, in := range []string{
		``, ` `, `{`, `{"a":1}}`, `1 2`, `{"a":1} {}`, `[1,]`, `{"a":1,"a":2}`,
		`{"a":{"b":1,"b":1}}`, `{"a":1,"\u0061":2}`, "\"\xff\"", `"\ud800"`,
		`NaN`, `Infinity`, `'a'`, `{a:1}`, `01`, `.5`, `1.`, `+1`, `"\x"`,
	} {
		got, err := Canonical([]byte(in))
		if err == nil {
			t.Errorf("Canonical(%q) = %s, want an error", in, got)
		}
		if errors.Is(err, ErrInexactNumber) {
			t.Errorf("Canonical(%q): got ErrInexactNumber for a syntax error", in)
		}
	}
}

// TestCanonicalDoesNotModifyInput guards against in-place canonicalization.
func TestCanonicalDoesNotModifyInput(t *testing.T) {
	in := []byte(`{ "b" : 1.0 , "a" : 2 }`)
	orig := string(in)
	if _, err := Canonical(in); err != nil {
		t.Fatal(err)
	}
	if string(in) != orig {
		t.Errorf("input modified: %s", in)
	}
}

func TestHash(t *testing.T) {
	tests := []struct{ in, want string }{
		// sha256 of the canonical text, checked with `printf %s '{}' | sha256sum`.
		{`{}`, "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"},
		{` { } `, "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"},
		{`{"b":2,"a":1}`, "sha256:43258cff783fe7036d8a43033f830adfc60ec037382473548ac742b888292777"},
		{`{"a":1.0,"b":2e0}`, "sha256:43258cff783fe7036d8a43033f830adfc60ec037382473548ac742b888292777"},
	}
	for _, tt := range tests {
		got, err := Hash([]byte(tt.in))
		if err != nil || got != tt.want {
			t.Errorf("Hash(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
		if !validHash(got) {
			t.Errorf("Hash(%s) = %s is not a valid hash", tt.in, got)
		}
	}
	if _, err := Hash([]byte(`{"a":1,"a":1}`)); err == nil {
		t.Error("Hash of duplicate names succeeded")
	}
}
