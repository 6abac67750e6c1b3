package scan

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSkeleton(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"read_file", "read_file"},
		{"Read_File", "read_file"},
		{"read_file ", "read_file"},
		{"\tread_file", "read_file"},
		{"read\u200b_file", "read_file"},
		{"read_file\u2060", "read_file"},
		{"rеad_file", "read_file"}, // Cyrillic е
		{"ｒｅａｄ_ｆｉｌｅ", "read_file"}, // fullwidth
		{"réad_file", "read_file"},
		{"read_fi\u0301le", "read_file"},
		{"\u202eread_file", "read_file"},
		{"read_file" + tagged("x"), "read_file"}, // tags are invisible: removed, not decoded
		{"ΤΟΚΕΝ", "token"},
	} {
		if got := Skeleton(tc.a); got != tc.b {
			t.Errorf("Skeleton(%q) = %q, want %q", tc.a, got, tc.b)
		}
	}
	for _, tc := range []struct{ a, b string }{
		{"read_file", "read_files"},
		{"tool1", "tooll"}, // ASCII other than letters is kept
		{"search", "research"},
		{"検索", "検査"},
	} {
		if Skeleton(tc.a) == Skeleton(tc.b) {
			t.Errorf("Skeleton(%q) == Skeleton(%q) = %q", tc.a, tc.b, Skeleton(tc.a))
		}
	}
}

func TestNameLookalike(t *testing.T) {
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"read_file", nil},
		{"get-weather.v2", nil},
		{"検索ツール", nil},
		{"read_file ", []string{"leading or trailing white space"}},
		{"read\u200bfile", []string{"invisible characters"}},
		{"read\u202efile", []string{"bidirectional controls"}},
		{"read" + tagged("x"), []string{"tag characters"}},
		{"rеad_file", []string{"confusable non-ASCII letters", "mixed scripts"}},
		{"ｒｅａｄ", []string{"compatibility or accented forms of ASCII letters"}},
		{"read\x00", []string{"control characters"}},
	} {
		if got := NameLookalike(tc.name); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("NameLookalike(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestSkeletonCollisions(t *testing.T) {
	got := SkeletonCollisions([]string{"read_file", "write_file", "rеad_file", "read_file", "Write_File ", "search"})
	want := [][]string{{"read_file", "rеad_file"}, {"write_file", "Write_File "}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SkeletonCollisions = %q, want %q", got, want)
	}
	if got := SkeletonCollisions([]string{"a", "b", "a"}); got != nil {
		t.Errorf("no collision: %q", got)
	}
}

func FuzzSkeleton(f *testing.F) {
	for _, s := range []string{"read_file", "rеad_file ", "ｒｅａｄ", "a\u200bb", "x" + tagged("y"), "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		sk := Skeleton(name)
		if !utf8.ValidString(sk) && utf8.ValidString(name) {
			t.Fatalf("Skeleton(%q) = %q is not UTF-8", name, sk)
		}
		for _, r := range sk {
			if invisibleKind(r) != 0 || (r >= 0xe0000 && r <= 0xe007f) || r == 0x1b {
				t.Fatalf("Skeleton(%q) = %q keeps %U", name, sk, r)
			}
		}
		if strings.TrimSpace(sk) != sk {
			t.Fatalf("Skeleton(%q) = %q not trimmed", name, sk)
		}
		_ = NameLookalike(name)
	})
}
