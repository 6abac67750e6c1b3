package scan

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// The normalized view (docs/scanning.md, "Prompt injection and tool
// poisoning"; shared/spec/evidence.md §8): the text the injection and
// poisoning rules match, with everything that hides or disguises an ASCII
// phrase from a plain substring match taken out, and a map from every view
// byte back to the original bytes it came from, so that a finding's span is
// a span of Input.Text.
//
// Built rune by rune from the original:
//   - ANSI escape sequences (CSI "ESC [" ... final byte, the C1 CSI U+009B,
//     OSC/DCS/SOS/PM/APC strings ended by BEL or ST, and two-byte ESC
//     sequences) are removed;
//   - C0 controls other than tab, LF and CR, DEL and C1 controls are
//     removed (and recorded as hidden);
//   - zero-width and bidirectional controls (U+200B-U+200F, U+202A-U+202E,
//     U+2060-U+2064, U+2066-U+206F, U+FEFF, U+00AD, U+034F, U+061C,
//     U+180E, the Hangul fillers, ...) are removed and recorded as hidden;
//     variation selectors are removed silently (emoji use them);
//   - Unicode tag characters U+E0020-U+E007E are decoded to the ASCII
//     character they shadow (recorded as hidden), other tag characters
//     removed; the tags of an emoji flag sequence (after U+1F3F4) are
//     removed without being decoded or recorded;
//   - every other character takes its compatibility decomposition (NFKD,
//     the "K" of NFKC: fullwidth, mathematical, circled, ligature and
//     superscript forms become their ASCII letters), combining marks are
//     then removed (so "i" + U+0301 and "í" both read "i"), and a
//     character that still is not ASCII but looks like printable ASCII is
//     replaced by its lookalike from Unicode's confusables data
//     (normalize_confusables.go, UTS #39 §4);
//   - ASCII letters are folded to lower case.
//
// NFKC would compose what the decomposition separates; the view removes
// the marks instead, because no ASCII phrase matches a composed accented
// letter. A text of printable ASCII, tab, LF and CR only is its own view
// (no allocation): the rules match case-insensitively, so its case needs
// no folding.
type view struct {
	// text is the normalized text; orig the original.
	text, orig string
	// start[i] and end[i] are the original span of view byte i (nil when
	// text is orig). Both are non-decreasing and on the original's rune
	// boundaries.
	start, end []int32
	// hidden are the removed or decoded characters that hide text, in
	// original order.
	hidden []hiddenRune
}

// hiddenKind is why a character counts as hiding text.
type hiddenKind uint8

const (
	// hiddenInvisible: zero-width characters, joiners between letters,
	// word joiner, invisible operators, soft hyphen, fillers.
	hiddenInvisible hiddenKind = iota + 1
	// hiddenBidi: bidirectional embedding, override and isolate controls.
	hiddenBidi
	// hiddenTag: a Unicode tag character (decoded into the view).
	hiddenTag
	// hiddenControl: a C0 or C1 control character other than tab, LF,
	// CR and the escape sequences.
	hiddenControl
)

// hiddenRune is one hiding character: its original offset and size.
type hiddenRune struct {
	off  int32
	size uint8
	kind hiddenKind
}

// plainASCII reports whether s is its own view: printable ASCII, tab, LF
// and CR only.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x7f || (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
			return false
		}
	}
	return true
}

// newView builds the normalized view of s.
func newView(s string) view {
	if plainASCII(s) {
		return view{text: s, orig: s}
	}
	b := viewBuilder{
		buf:   make([]byte, 0, len(s)),
		start: make([]int32, 0, len(s)),
		end:   make([]int32, 0, len(s)),
	}
	prevLetter := false // the last character kept was a letter (for joiners)
	flag := false       // inside an emoji tag sequence (after U+1F3F4)
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x80 {
			switch {
			case c == 0x1b:
				i = skipEscape(s, i)
				continue
			case c >= 0x7f || (c < 0x20 && c != '\t' && c != '\n' && c != '\r'):
				b.hide(i, 1, hiddenControl)
				i++
				continue
			}
			b.add(lowerASCII(c), i, i+1)
			prevLetter = isWordByte(c)
			flag = false
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		j := i + size
		if r == utf8.RuneError && size == 1 {
			b.addString("\ufffd", i, j)
			prevLetter, flag = false, false
			i = j
			continue
		}
		switch {
		case r >= 0xe0000 && r <= 0xe007f:
			if flag {
				// An emoji flag sequence (England, Scotland, Wales):
				// not hidden text.
				if r == 0xe007f {
					flag = false
				}
			} else {
				if r >= 0xe0020 && r <= 0xe007e {
					b.add(lowerASCII(byte(r-0xe0000)), i, j)
				}
				b.hide(i, size, hiddenTag)
			}
			i = j
			continue
		case r == 0x200c || r == 0x200d:
			// Joiners belong in emoji and in some scripts; between
			// two letters they hide a word break.
			if prevLetter && j < len(s) {
				if n, _ := utf8.DecodeRuneInString(s[j:]); n < 0x80 && isWordByte(byte(n)) || unicode.IsLetter(n) {
					b.hide(i, size, hiddenInvisible)
				}
			}
			i = j
			continue
		case (r >= 0xfe00 && r <= 0xfe0f) || (r >= 0xe0100 && r <= 0xe01ef):
			i = j // variation selectors
			continue
		case r == 0x9b:
			i = skipCSI(s, j)
			continue
		case r == 0x9d || r == 0x90 || r == 0x98 || r == 0x9e || r == 0x9f:
			i = skipString(s, j, j)
			continue
		case r < 0xa0:
			b.hide(i, size, hiddenControl)
			i = j
			continue
		}
		if k := invisibleKind(r); k != 0 {
			b.hide(i, size, k)
			i = j
			continue
		}
		flag = r == 0x1f3f4
		n := len(b.buf)
		p := norm.NFKD.PropertiesString(s[i:])
		if d := p.Decomposition(); d != nil {
			for k := 0; k < len(d); {
				dr, dn := utf8.DecodeRune(d[k:])
				b.fold(dr, d[k:k+dn], i, j)
				k += dn
			}
		} else {
			b.fold(r, []byte(s[i:j]), i, j)
		}
		if len(b.buf) > n {
			last, _ := utf8.DecodeLastRune(b.buf)
			prevLetter = last < 0x80 && isWordByte(byte(last)) || unicode.IsLetter(last)
		}
		i = j
	}
	return view{text: string(b.buf), orig: s, start: b.start, end: b.end, hidden: b.hidden}
}

type viewBuilder struct {
	buf        []byte
	start, end []int32
	hidden     []hiddenRune
}

func (b *viewBuilder) add(c byte, i, j int) {
	b.buf = append(b.buf, c)
	b.start = append(b.start, int32(i))
	b.end = append(b.end, int32(j))
}

func (b *viewBuilder) addString(s string, i, j int) {
	for k := 0; k < len(s); k++ {
		b.add(s[k], i, j)
	}
}

func (b *viewBuilder) hide(i, size int, k hiddenKind) {
	b.hidden = append(b.hidden, hiddenRune{off: int32(i), size: uint8(size), kind: k})
}

// fold appends the view of one decomposed character r (encoded as enc)
// that came from the original span [i, j).
func (b *viewBuilder) fold(r rune, enc []byte, i, j int) {
	switch {
	case r < 0x80:
		b.add(lowerASCII(byte(r)), i, j)
	case unicode.In(r, unicode.Mn, unicode.Me):
		// combining marks: removed
	default:
		if s, ok := confusable(r); ok {
			b.addString(s, i, j)
			return
		}
		if k := invisibleKind(r); k != 0 {
			b.hide(i, j-i, k)
			return
		}
		for _, c := range enc {
			b.add(c, i, j)
		}
	}
}

// confusable returns the lowercase ASCII lookalike of the non-ASCII
// character r, if Unicode's confusables data has one.
func confusable(r rune) (string, bool) {
	if r < confusableFrom[0] || r > confusableFrom[len(confusableFrom)-1] {
		return "", false
	}
	k := sort.Search(len(confusableFrom), func(i int) bool { return confusableFrom[i] >= r })
	if k < len(confusableFrom) && confusableFrom[k] == r {
		return confusableTo[k], true
	}
	return "", false
}

// invisibleKind says whether r is an invisible or bidirectional control
// that the view removes (0 if not). Joiners, variation selectors and tag
// characters are handled by newView.
func invisibleKind(r rune) hiddenKind {
	switch {
	case r == 0x00ad, r == 0x034f, r == 0x115f, r == 0x1160, r == 0x17b4, r == 0x17b5,
		r >= 0x180b && r <= 0x180f, r == 0x200b, r == 0x200c, r == 0x200d,
		r >= 0x2060 && r <= 0x2064, r == 0x2065, r == 0x3164, r == 0xfeff, r == 0xffa0,
		r >= 0x1d173 && r <= 0x1d17a, r >= 0xfff0 && r <= 0xfff8:
		return hiddenInvisible
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e,
		r >= 0x2066 && r <= 0x206f:
		return hiddenBidi
	}
	return 0
}

// skipEscape returns the offset after the escape sequence that starts
// with the ESC at s[i]. A string sequence (OSC, DCS, ...) whose body is
// not printable or has no terminator within 4 KiB loses only its
// introducer: the model reads the raw text, so nothing after it is hidden
// from the rules.
func skipEscape(s string, i int) int {
	j := i + 1
	if j >= len(s) {
		return j
	}
	switch c := s[j]; {
	case c == '[':
		return skipCSI(s, j+1)
	case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
		return skipString(s, j+1, j+1)
	case c >= 0x20 && c <= 0x2f:
		for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2f {
			j++
		}
		if j < len(s) && s[j] >= 0x30 && s[j] <= 0x7e {
			j++
		}
		return j
	case c >= 0x30 && c <= 0x7e:
		return j + 1
	}
	return j
}

// skipCSI returns the offset after a control sequence's parameters,
// intermediates and final byte starting at s[j].
func skipCSI(s string, j int) int {
	for j < len(s) && s[j] >= 0x30 && s[j] <= 0x3f {
		j++
	}
	for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2f {
		j++
	}
	if j < len(s) && s[j] >= 0x40 && s[j] <= 0x7e {
		j++
	}
	return j
}

// skipString returns the offset after a control string's body starting at
// s[j] and its terminator (BEL, ESC \ or the C1 ST); if the string is not
// terminated within 4 KiB of printable bytes, it returns fallback.
func skipString(s string, j, fallback int) int {
	for k := j; k < len(s) && k-j < 4096; k++ {
		switch c := s[k]; {
		case c == 0x07:
			return k + 1
		case c == 0x1b:
			if k+1 < len(s) && s[k+1] == '\\' {
				return k + 2
			}
			return fallback
		case c == 0xc2 && k+1 < len(s) && s[k+1] == 0x9c:
			return k + 2
		case c < 0x20 || c == 0x7f:
			return fallback
		}
	}
	return fallback
}

// isWordByte reports whether c is an ASCII letter or digit.
func isWordByte(c byte) bool {
	return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// span returns the original span of the view bytes [i, j) (j > i).
func (v *view) span(i, j int) (int, int) {
	if v.start == nil {
		return i, j
	}
	return int(v.start[i]), int(v.end[j-1])
}

// hiddenIn returns the hiding characters whose original offset lies in
// [i, j).
func (v *view) hiddenIn(i, j int) []hiddenRune {
	if len(v.hidden) == 0 {
		return nil
	}
	lo := sort.Search(len(v.hidden), func(k int) bool { return int(v.hidden[k].off) >= i })
	hi := lo
	for hi < len(v.hidden) && int(v.hidden[hi].off) < j {
		hi++
	}
	return v.hidden[lo:hi]
}

// excerptMax is the longest excerpt, in characters.
const excerptMax = 60

// excerpt quotes s for a finding: whitespace runs become one space,
// backslash and every control, invisible, unassigned or private-use
// character is escaped (\u{...}), and a quote longer than excerptMax
// characters is cut with "...".
func excerpt(s string) string {
	var pieces []string
	n := 0
	space := false
	for _, r := range s {
		var piece string
		switch {
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			if space || len(pieces) == 0 {
				continue
			}
			space = true
			pieces = append(pieces, " ")
			n++
			continue
		case r == '\\':
			piece = `\\`
		case r >= 0x20 && r < 0x7f:
			piece = string(r)
		case r == utf8.RuneError, r < 0x20, r >= 0x7f && r < 0xa0, invisibleKind(r) != 0,
			r >= 0xe0000, !unicode.IsGraphic(r), unicode.Is(unicode.Co, r), unicode.IsSpace(r):
			piece = `\u{` + strings.ToUpper(hex32(uint32(r))) + `}`
		default:
			piece = string(r)
		}
		space = false
		pieces = append(pieces, piece)
		n += utf8.RuneCountInString(piece)
		if n > 4*excerptMax {
			break
		}
	}
	for len(pieces) > 0 && pieces[len(pieces)-1] == " " {
		pieces = pieces[:len(pieces)-1]
		n--
	}
	if n <= excerptMax {
		return strings.Join(pieces, "")
	}
	var sb strings.Builder
	m := 0
	for _, p := range pieces {
		w := utf8.RuneCountInString(p)
		if m+w > excerptMax-3 {
			break
		}
		sb.WriteString(p)
		m += w
	}
	return strings.TrimRight(sb.String(), " ") + "..."
}

func hex32(x uint32) string {
	const digits = "0123456789abcdef"
	var b [8]byte
	i := len(b)
	for {
		i--
		b[i] = digits[x&0xf]
		x >>= 4
		if x == 0 {
			break
		}
	}
	return string(b[i:])
}
