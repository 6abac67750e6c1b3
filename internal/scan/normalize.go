package scan

import (
	"math/bits"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
	"unsafe"

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
//   - ASCII case is folded by the matchers: the keyword automaton and the
//     word comparisons of the rules fold it, so the view keeps it (the
//     lookalikes from the confusables table are lower case).
//
// NFKC would compose what the decomposition separates; the view removes
// the marks instead, because no ASCII phrase matches a composed accented
// letter. A text of printable ASCII, tab, LF and CR only is its own view
// (no allocation); in any other text, runs of such bytes are copied as
// they are and map back linearly.
type view struct {
	// text is the normalized text; orig the original.
	text, orig string
	// segs map view bytes back to the original (nil when text is orig):
	// segment k covers the view bytes from segs[k].v to segs[k+1].v.
	segs []viewSeg
	// hidden are the removed or decoded characters that hide text, in
	// original order.
	hidden []hiddenRune
	// b holds the buffers text, segs and hidden live in (nil on the fast
	// path); release returns them.
	b *viewBuilder
	// dropsASCII: some printable ASCII byte (or tab, LF, CR) of orig is
	// not in text (it was part of an escape sequence or a C1 control
	// string). When false, every run of such bytes of orig is in text
	// as it is, in order (what a keyword pass over text for the original
	// relies on: sharedKeywords).
	dropsASCII bool
}

// viewSeg is one segment of the view's map: view bytes from v on come
// from the original bytes from o on, one for one when olen < 0 (a run of
// plain ASCII and of characters kept as they are: a byte of a kept
// multi-byte character maps to the whole character), or all from the
// original span [o, o+olen) (one original character's view).
type viewSeg struct {
	v, o, olen int32
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
func plainASCII(s string) bool { return plainRun(s, 0) == len(s) }

// newView is the normalized view of s. When s is its own view (plain
// ASCII, or plain ASCII and characters the view keeps as they are) it is
// s itself, with no map and nothing to release; otherwise buildView
// builds it.
func newView(s string) view {
	i := ownPrefix(s)
	if i == len(s) {
		return view{text: s, orig: s}
	}
	return buildViewFrom(s, i)
}

// ownView reports whether buildView(s) would be s itself.
func ownView(s string) bool { return ownPrefix(s) == len(s) }

// ownPrefix is the length of the longest prefix of s that is its own
// view (whole characters): printable
// ASCII, tab, LF and CR, and characters of the Basic Multilingual Plane
// that buildView keeps as they are (foldKeep), and none of the
// characters it treats before that table (escapes, C1 controls, joiners,
// variation selectors; characters above the BMP are left to it). It
// reads s once and allocates nothing.
func ownPrefix(s string) int {
	for i := 0; i < len(s); {
		if j := plainRun(s, i); j > i {
			i = j
			continue
		}
		if s[i] < 0x80 {
			return i // ESC or another control character
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r < 0xa0 || r >= 0x10000 || r == 0x200c || r == 0x200d || (r >= 0xfe00 && r <= 0xfe0f) {
			return i
		}
		if r == utf8.RuneError && size == 1 {
			return i
		}
		bmpOnce.Do(initBMPFold)
		if bmpIdx[r] != foldKeep {
			return i
		}
		i += size
	}
	return len(s)
}

// buildView builds the normalized view of s and its map to s.
func buildView(s string) view {
	if plainASCII(s) {
		return view{text: s, orig: s}
	}
	return buildViewFrom(s, 0)
}

// buildViewFrom builds the view of s whose first from bytes are known to
// be their own view (ownPrefix): they are copied as one run.
func buildViewFrom(s string, from int) view {
	b := builderPool.Get().(*viewBuilder)
	if cap(b.buf) < len(s)+8 {
		b.buf = make([]byte, 0, len(s)+8)
	}
	if b.segs == nil {
		b.segs = make([]viewSeg, 0, 8+len(s)/32)
	}
	flag := false // inside an emoji tag sequence (after U+1F3F4)
	dropped := false
	if from > 0 {
		b.copyRun(s, 0, from)
	}
	for i := from; i < len(s); {
		c := s[i]
		if c < 0x80 {
			if j := plainRun(s, i); j > i {
				b.copyRun(s, i, j)
				flag = false
				i = j
				continue
			}
			switch {
			case c == 0x1b:
				i, dropped = skipEscape(s, i), true
				continue
			case c >= 0x7f || (c < 0x20 && c != '\t' && c != '\n' && c != '\r'):
				b.hide(i, 1, hiddenControl)
				i++
				continue
			}
			i++ // not reached: plainRun took every other ASCII byte
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		j := i + size
		if r == utf8.RuneError && size == 1 {
			b.addString("\ufffd", i, j)
			flag = false
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
					b.add(byte(r-0xe0000), i, j)
				}
				b.hide(i, size, hiddenTag)
			}
			i = j
			continue
		case r == 0x200c || r == 0x200d:
			// Joiners belong in emoji and in some scripts; between
			// two letters they hide a word break.
			if b.lastIsLetter() && j < len(s) {
				if n, _ := utf8.DecodeRuneInString(s[j:]); n < 0x80 && isAlnum(byte(n)) || unicode.IsLetter(n) {
					b.hide(i, size, hiddenInvisible)
				}
			}
			i = j
			continue
		case (r >= 0xfe00 && r <= 0xfe0f) || (r >= 0xe0100 && r <= 0xe01ef):
			i = j // variation selectors
			continue
		case r == 0x9b:
			i, dropped = skipCSI(s, j), true
			continue
		case r == 0x9d || r == 0x90 || r == 0x98 || r == 0x9e || r == 0x9f:
			i, dropped = skipString(s, j, j), true
			continue
		case r < 0xa0:
			b.hide(i, size, hiddenControl)
			i = j
			continue
		}
		flag = r == 0x1f3f4
		if r < 0x10000 {
			bmpOnce.Do(initBMPFold)
			switch k := bmpIdx[r]; k {
			case foldKeep:
				b.copyRun(s, i, j) // kept as it is: maps back byte for byte
			case foldDrop:
			case foldInvisible:
				b.hide(i, size, hiddenInvisible)
			case foldBidi:
				b.hide(i, size, hiddenBidi)
			default:
				b.addString(bmpOut[k-foldOut], i, j)
			}
			i = j
			continue
		}
		if k := invisibleKind(r); k != 0 {
			b.hide(i, size, k)
			i = j
			continue
		}
		b.foldRune(r, s[i:j], i, j)
		i = j
	}
	return view{text: unsafe.String(unsafe.SliceData(b.buf), len(b.buf)), orig: s, segs: b.segs, hidden: b.hidden, b: b, dropsASCII: dropped}
}

// builderPool holds the buffers of views released after a scan.
var builderPool = sync.Pool{New: func() any { return new(viewBuilder) }}

// release returns the view's buffers for reuse: the view (its text, map
// and hidden list) must not be used after. Buffers above 1 MiB are left to
// the collector.
func (v *view) release() {
	b := v.b
	if b == nil {
		return
	}
	*v = view{}
	if cap(b.buf) > 1<<20 || cap(b.segs) > 1<<17 {
		return
	}
	b.buf, b.segs, b.hidden = b.buf[:0], b.segs[:0], b.hidden[:0]
	builderPool.Put(b)
}

// lastIsLetter reports whether the view so far ends in a letter or digit.
func (b *viewBuilder) lastIsLetter() bool {
	if len(b.buf) == 0 {
		return false
	}
	r, _ := utf8.DecodeLastRune(b.buf)
	return r < 0x80 && isAlnum(byte(r)) || unicode.IsLetter(r)
}

// foldRune appends the view of the character r (encoded as enc), from
// the original span [i, j): its compatibility decomposition, folded.
func (b *viewBuilder) foldRune(r rune, enc string, i, j int) {
	if d := norm.NFKD.PropertiesString(enc).Decomposition(); d != nil {
		for k := 0; k < len(d); {
			dr, dn := utf8.DecodeRune(d[k:])
			b.fold(dr, d[k:k+dn], i, j)
			k += dn
		}
		return
	}
	b.fold(r, []byte(enc), i, j)
}

// The view of every character of the Basic Multilingual Plane, computed
// once (foldRune's result, interned): bmpIdx[r] is foldKeep (the
// character as it is), foldDrop, foldInvisible, foldBidi, or foldOut+k
// for bmpOut[k].
var (
	bmpOnce sync.Once
	bmpIdx  []uint16
	bmpOut  []string
)

const (
	foldKeep = iota
	foldDrop
	foldInvisible
	foldBidi
	foldOut
)

func initBMPFold() {
	bmpIdx = make([]uint16, 0x10000)
	seen := map[string]uint16{}
	for r := rune(0x80); r < 0x10000; r++ {
		if r >= 0xd800 && r <= 0xdfff {
			continue
		}
		switch invisibleKind(r) {
		case hiddenInvisible:
			bmpIdx[r] = foldInvisible
			continue
		case hiddenBidi:
			bmpIdx[r] = foldBidi
			continue
		}
		enc := string(r)
		var b viewBuilder
		b.foldRune(r, enc, 0, len(enc))
		out := string(b.buf)
		switch {
		case len(b.hidden) > 0 || out == "":
			bmpIdx[r] = foldDrop
		case out == enc:
			bmpIdx[r] = foldKeep
		default:
			k, ok := seen[out]
			if !ok {
				k = uint16(len(bmpOut))
				seen[out] = k
				bmpOut = append(bmpOut, out)
			}
			bmpIdx[r] = foldOut + k
		}
	}
}

// notPlain8 returns a mask with the high bit set in every byte of
// s[i:i+8] (little-endian) that is not plain: below 0x20 other than tab,
// LF and CR, or 0x7f and above. Each byte is tested on its own (t is
// below 0x80 in every byte, so no sum carries into the next), and the
// lowest set bit marks the first such byte.
func notPlain8(s string, i int) uint64 {
	x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
	const ones, highs, low7 = 0x0101010101010101, 0x8080808080808080, 0x7f7f7f7f7f7f7f7f
	t := x & low7
	above := (t + ones*0x01 | x) & highs   // 0x7f and above
	below := ^(t + ones*0x60) & ^x & highs // below 0x20
	if below == 0 {
		return above
	}
	// Bytes equal to tab, LF or CR (y is zero there: y+0x7f keeps its
	// high bit clear).
	y9, y10, y13 := t^(ones*'\t'), t^(ones*'\n'), t^(ones*'\r')
	ws := ^(y9 + low7) | ^(y10 + low7) | ^(y13 + low7)
	return above | below&^ws
}

// plainRun returns the end of the run of plain ASCII bytes (printable,
// tab, LF, CR) at s[i], eight bytes at a time.
func plainRun(s string, i int) int {
	for ; i+8 <= len(s); i += 8 {
		if m := notPlain8(s, i); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for i < len(s) {
		c := s[i]
		if c >= 0x7f || (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
			break
		}
		i++
	}
	return i
}

type viewBuilder struct {
	buf    []byte
	segs   []viewSeg
	hidden []hiddenRune
}

// copyRun appends s[i:j] as it is (plain ASCII, or a character the view
// keeps).
func (b *viewBuilder) copyRun(s string, i, j int) {
	v := int32(len(b.buf))
	b.buf = append(b.buf, s[i:j]...)
	if n := len(b.segs); n > 0 {
		l := b.segs[n-1]
		if l.olen < 0 && l.o+(v-l.v) == int32(i) {
			return // continues the last run
		}
	}
	b.segs = append(b.segs, viewSeg{v: v, o: int32(i), olen: -1})
}

// add appends view byte c, from the original span [i, j).
func (b *viewBuilder) add(c byte, i, j int) {
	b.mapTo(i, j)
	b.buf = append(b.buf, c)
}

func (b *viewBuilder) addString(s string, i, j int) {
	b.mapTo(i, j)
	b.buf = append(b.buf, s...)
}

// mapTo starts (or continues) the segment of the original span [i, j)
// at the current end of the view.
func (b *viewBuilder) mapTo(i, j int) {
	if n := len(b.segs); n > 0 {
		l := b.segs[n-1]
		if l.olen >= 0 && l.o == int32(i) {
			return
		}
	}
	b.segs = append(b.segs, viewSeg{v: int32(len(b.buf)), o: int32(i), olen: int32(j - i)})
}

func (b *viewBuilder) hide(i, size int, k hiddenKind) {
	b.hidden = append(b.hidden, hiddenRune{off: int32(i), size: uint8(size), kind: k})
}

// fold appends the view of one decomposed character r (encoded as enc)
// that came from the original span [i, j).
func (b *viewBuilder) fold(r rune, enc []byte, i, j int) {
	switch {
	case r < 0x80:
		b.add(byte(r), i, j)
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
		b.mapTo(i, j)
		b.buf = append(b.buf, enc...)
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

// at returns the original span of view byte i.
func (v *view) at(i int) (int, int) {
	if v.segs == nil {
		return i, i + 1
	}
	k := sort.Search(len(v.segs), func(k int) bool { return int(v.segs[k].v) > i }) - 1
	sg := v.segs[k]
	if sg.olen < 0 {
		o := int(sg.o) + i - int(sg.v)
		if v.orig[o] < 0x80 {
			return o, o + 1
		}
		for o > int(sg.o) && v.orig[o]&0xc0 == 0x80 {
			o--
		}
		_, n := utf8.DecodeRuneInString(v.orig[o:])
		return o, o + n
	}
	return int(sg.o), int(sg.o + sg.olen)
}

// span returns the original span of the view bytes [i, j) (j > i).
func (v *view) span(i, j int) (int, int) {
	s, _ := v.at(i)
	_, e := v.at(j - 1)
	return s, e
}

// hiddenRange returns the indices [lo, hi) of the hiding characters
// whose original offset lies in [i, j).
func (v *view) hiddenRange(i, j int) (int, int) {
	lo := sort.Search(len(v.hidden), func(k int) bool { return int(v.hidden[k].off) >= i })
	hi := sort.Search(len(v.hidden), func(k int) bool { return int(v.hidden[k].off) >= j })
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

// hiddenIn returns the hiding characters whose original offset lies in
// [i, j).
func (v *view) hiddenIn(i, j int) []hiddenRune {
	lo, hi := v.hiddenRange(i, j)
	return v.hidden[lo:hi]
}

// excerptMax is the longest excerpt, in characters.
const excerptMax = 60

// excerpt quotes s for a finding: whitespace runs become one space,
// backslash and every control, invisible, unassigned or private-use
// character is escaped (\u{...}), and a quote longer than excerptMax
// characters is cut with "...".
func excerpt(s string) string {
	var sb strings.Builder
	n, cut := 0, -1 // characters written; the length at excerptMax-3 characters
	space := false
	for _, r := range s {
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' {
			space = sb.Len() > 0
			continue
		}
		if space {
			if n+1 > excerptMax-3 && cut < 0 {
				cut = sb.Len()
			}
			sb.WriteByte(' ')
			n++
			space = false
		}
		w := 1
		var esc bool
		switch {
		case r == '\\':
			w = 2
		case r >= 0x20 && r < 0x7f:
		case r == utf8.RuneError, r < 0x20, r >= 0x7f && r < 0xa0, invisibleKind(r) != 0,
			r >= 0xe0000, !unicode.IsGraphic(r), unicode.Is(unicode.Co, r), unicode.IsSpace(r):
			esc = true
			w = 4 + len(hex32(uint32(r)))
		}
		if n+w > excerptMax-3 && cut < 0 {
			cut = sb.Len()
		}
		switch {
		case r == '\\':
			sb.WriteString(`\\`)
		case esc:
			sb.WriteString(`\u{`)
			sb.WriteString(strings.ToUpper(hex32(uint32(r))))
			sb.WriteByte('}')
		default:
			sb.WriteRune(r)
		}
		n += w
		if n > excerptMax {
			break
		}
	}
	out := sb.String()
	if n <= excerptMax {
		return out
	}
	return strings.TrimRight(out[:cut], " ") + "..."
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
