package verify

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestEachLine: every line is handed over in order with its number, a
// long or truncated one with its problem and no bytes; ObjectMembers
// reads strict objects only.
func TestEachLine(t *testing.T) {
	type got struct {
		Num     int
		Text    string
		Problem string
	}
	for _, tc := range []struct {
		name string
		in   string
		want []got
	}{
		{"empty", "", nil},
		{"two lines", "a\nbb\n", []got{{1, "a", ""}, {2, "bb", ""}}},
		{"too long then fine", "0123456789\nok\n", []got{{1, "", "longer than 8 bytes"}, {2, "ok", ""}}},
		{"truncated last", "a\nno-lf", []got{{1, "a", ""}, {2, "", "no LF at the end of the file (truncated)"}}},
		{"empty lines", "\n\n", []got{{1, "", ""}, {2, "", ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out []got
			err := EachLine(strings.NewReader(tc.in), 8, func(l Line) error {
				out = append(out, got{l.Num, string(l.Bytes), l.Problem})
				return nil
			})
			if err != nil || !reflect.DeepEqual(out, tc.want) {
				t.Fatalf("EachLine = %+v, %v; want %+v", out, err, tc.want)
			}
		})
	}
	stop := errors.New("stop")
	if err := EachLine(strings.NewReader("a\nb\n"), 8, func(Line) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("EachLine returned %v, want the callback's error", err)
	}
	for in, want := range map[string]string{
		`{"a":1,"b":"x"}`: "",
		`{"a":1,"a":2}`:   "duplicate member name (strict JSON forbids it)",
		`[1]`:             "not a JSON object",
		`{"a":1} x`:       "data after the JSON value",
	} {
		var names []string
		err := ObjectMembers([]byte(in), func(n string, _ []byte) { names = append(names, n) })
		if (err == nil) != (want == "") || err != nil && err.Error() != want {
			t.Errorf("ObjectMembers(%s) = %v, want %q", in, err, want)
		}
		if want == "" && !reflect.DeepEqual(names, []string{"a", "b"}) {
			t.Errorf("ObjectMembers(%s) names %v", in, names)
		}
	}
}
