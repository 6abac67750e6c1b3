package rows

import (
	"reflect"
	"testing"
)

// TestChanges: change lists round-trip through their stored form, none
// as "[]" and back as nil; a stored value that is not a JSON array of
// strings is an error.
func TestChanges(t *testing.T) {
	for _, c := range [][]string{nil, {}, {"effect_added_share"}, {`"q"`, "<&>", "\u2028", ""}} {
		s := EncodeChanges(c)
		got, err := DecodeChanges(s)
		if err != nil {
			t.Fatalf("DecodeChanges(%q): %v", s, err)
		}
		if len(c) == 0 {
			if s != "[]" || got != nil {
				t.Errorf("no changes: stored %q, read %#v", s, got)
			}
			continue
		}
		if !reflect.DeepEqual(got, c) {
			t.Errorf("%q: stored %q, read %q", c, s, got)
		}
	}
	for _, bad := range []string{"", "{}", `["a",1]`, "[", `"a"`} {
		if _, err := DecodeChanges(bad); err == nil {
			t.Errorf("DecodeChanges(%q): no error", bad)
		}
	}
}

// FuzzDecodeChanges: any stored text either fails to decode or decodes to
// a list that encodes and decodes to itself.
func FuzzDecodeChanges(f *testing.F) {
	f.Add(`["a","b"]`)
	f.Add(`[]`)
	f.Add(`null`)
	f.Fuzz(func(t *testing.T, s string) {
		c, err := DecodeChanges(s)
		if err != nil {
			return
		}
		again, err := DecodeChanges(EncodeChanges(c))
		if err != nil || !reflect.DeepEqual(again, c) {
			t.Fatalf("%q: decoded %q, again %q, %v", s, c, again, err)
		}
	})
}
