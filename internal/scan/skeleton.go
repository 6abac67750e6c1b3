package scan

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Skeleton returns the form of a tool name under which lookalikes compare
// equal (after UTS #39 §4 "Confusable Detection", restricted to
// lookalikes of ASCII): the name in NFKC, with invisible, bidirectional,
// control and tag characters removed, combining marks removed, every
// non-ASCII character that looks like printable ASCII replaced by it
// (Unicode's confusables data), ASCII letters lowercased and white space
// trimmed. ASCII characters other than letters are kept ("1" is not "l"):
// names differ in them on purpose.
//
// Two names with the same skeleton look the same to a reader: a policy
// that names a tool matches every tool whose skeleton equals the
// skeleton of the name it gives, and two tools of one tools/list result
// whose skeletons collide are flagged.
func Skeleton(name string) string {
	// In a name, tag characters and blank-looking letters (U+2800
	// BRAILLE PATTERN BLANK) are removed, not decoded: the view decodes
	// tags to ASCII for injection rules, which would turn
	// "write<TAG A>_file" into "writea_file", another name than the one
	// it imitates.
	name = strings.Map(func(r rune) rune {
		if r >= 0xe0000 && r <= 0xe007f || r == 0x2800 {
			return -1
		}
		return r
	}, name)
	v := newView(norm.NFKC.String(name))
	var b strings.Builder
	b.Grow(len(v.text))
	for i := 0; i < len(v.text); i++ {
		c := v.text[i]
		if c >= 0x80 {
			// Non-ASCII that is no lookalike: lowercased as it is.
			r, n := utf8.DecodeRuneInString(v.text[i:])
			b.WriteRune(unicode.ToLower(r))
			i += n - 1
			continue
		}
		b.WriteByte(lowerASCII(c))
	}
	return strings.TrimFunc(b.String(), unicode.IsSpace)
}

// NameLookalike returns the reasons a tool name is suspicious as a name:
// it holds invisible characters (zero-width, joiners, soft hyphen),
// bidirectional controls, tag characters or other control characters;
// letters outside ASCII that look like ASCII letters (confusables);
// letters of more than one script (Latin with Cyrillic, say); white space
// at its start or end. It returns nil for a clean name. The reasons are
// short fixed phrases, safe to log.
func NameLookalike(name string) []string {
	var reasons []string
	add := func(r string) {
		for _, x := range reasons {
			if x == r {
				return
			}
		}
		reasons = append(reasons, r)
	}
	if name != strings.TrimFunc(name, unicode.IsSpace) {
		add("leading or trailing white space")
	}
	scripts := map[string]bool{}
	for _, r := range name {
		switch {
		case r >= 0xe0000 && r <= 0xe007f:
			add("tag characters")
			continue
		case r == 0x200c || r == 0x200d || (r >= 0xfe00 && r <= 0xfe0f) || r == 0x2800:
			add("invisible characters")
			continue
		case r < 0x20 || (r >= 0x7f && r < 0xa0):
			add("control characters")
			continue
		}
		switch invisibleKind(r) {
		case hiddenInvisible:
			add("invisible characters")
			continue
		case hiddenBidi:
			add("bidirectional controls")
			continue
		}
		if r >= 0x80 {
			if _, ok := confusable(r); ok && unicode.IsLetter(r) {
				add("confusable non-ASCII letters")
			} else if unicode.IsLetter(r) {
				if d := norm.NFKD.String(string(r)); d != "" && d[0] < 0x80 && d != string(r) {
					add("compatibility or accented forms of ASCII letters")
				}
			}
		}
		if unicode.IsLetter(r) {
			if s := scriptOf(r); s != "" {
				scripts[s] = true
			}
		}
	}
	if len(scripts) > 1 {
		add("mixed scripts")
	}
	return reasons
}

// nameScripts are the scripts whose letters NameLookalike tells apart
// (the ones with letters confusable with Latin, and the common others;
// Han, kana and Hangul count as one, as Japanese and Korean mix them).
var nameScripts = []struct {
	name  string
	table *unicode.RangeTable
}{
	{"Latin", unicode.Latin}, {"Cyrillic", unicode.Cyrillic}, {"Greek", unicode.Greek},
	{"Armenian", unicode.Armenian}, {"Cherokee", unicode.Cherokee}, {"Coptic", unicode.Coptic},
	{"Georgian", unicode.Georgian}, {"Hebrew", unicode.Hebrew}, {"Arabic", unicode.Arabic},
	{"CJK", unicode.Han}, {"CJK", unicode.Hiragana}, {"CJK", unicode.Katakana},
	{"CJK", unicode.Hangul}, {"Devanagari", unicode.Devanagari}, {"Thai", unicode.Thai},
}

func scriptOf(r rune) string {
	for _, s := range nameScripts {
		if unicode.Is(s.table, r) {
			return s.name
		}
	}
	return ""
}

// SkeletonCollisions groups the names (of one tools/list result) whose
// skeletons are equal although the names differ: every group has two or
// more distinct names, in the order they first appear; groups are in the
// order of their first name. A name listed twice exactly is not a
// collision (that is a duplicate, for the caller to judge). It returns
// nil when no skeletons collide.
func SkeletonCollisions(names []string) [][]string {
	index := map[string]int{}
	var groups [][]string
	for _, n := range names {
		sk := Skeleton(n)
		k, ok := index[sk]
		if !ok {
			index[sk] = len(groups)
			groups = append(groups, []string{n})
			continue
		}
		dup := false
		for _, m := range groups[k] {
			if m == n {
				dup = true
				break
			}
		}
		if !dup {
			groups[k] = append(groups[k], n)
		}
	}
	var out [][]string
	for _, g := range groups {
		if len(g) > 1 {
			out = append(out, g)
		}
	}
	return out
}
