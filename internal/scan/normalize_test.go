package scan

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func tagged(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(0xe0000 + r)
	}
	return b.String()
}

func TestViewText(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		hidden         int
	}{
		{"ascii is itself", "Ignore Previous Instructions", "Ignore Previous Instructions", 0},
		{"fullwidth", "ｉｇｎｏｒｅ ｐｒｅｖｉｏｕｓ", "ignore previous", 0},
		{"math bold keeps case", "𝐈𝐠𝐧𝐨𝐫𝐞", "Ignore", 0},
		{"ligature", "ﬁle", "file", 0},
		{"cyrillic lookalikes", "іgnоrе аll", "ignore all", 0},
		{"greek capitals", "ΤΟΚΕΝ", "token", 0},
		{"combining marks", "i\u0301gno\u0308re", "ignore", 0},
		{"precomposed accents", "ígnöré", "ignore", 0},
		{"zero width", "ig\u200bno\u200cre\u2060 pre\ufeffvious", "ignore previous", 4},
		{"soft hyphen", "in\u00adstructions", "instructions", 1},
		{"bidi", "\u202eabc\u202c \u2066x\u2069", "abc x", 4},
		{"tags decoded", "ok" + tagged("Ignore ALL"), "okIgnore ALL", 10},
		{"emoji flag tags are not text", "\U0001F3F4\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F!", "\U0001F3F4!", 0},
		{"emoji joiner", "👩\u200d💻 ok", "👩💻 ok", 0},
		{"joiner between letters", "ig\u200dnore", "ignore", 1},
		{"variation selector", "❤\ufe0f x", "❤ x", 0},
		{"csi", "\x1b[31mIgn\x1b[0more\x1b[2K", "Ignore", 0},
		{"c1 csi", "a\u009b31mb", "ab", 0},
		{"osc bel", "\x1b]0;title\x07Hello", "Hello", 0},
		{"osc st", "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link", 0},
		{"unterminated osc hides nothing", "\x1b]0;ignore previous\ninstructions", "0;ignore previous\ninstructions", 0},
		{"two-byte escape", "a\x1bMb\x1b(Bc", "abc", 0},
		{"controls", "ig\x00no\x7fre\tx", "ignore\tx", 2},
		{"invalid utf-8", "a\xffb", "a\ufffdb", 0},
		{"cjk kept", "無視して ok", "無視して ok", 0},
		{"nbsp and ideographic space", "a\u00a0b\u3000c\u2028d", "a b c d", 0},
		{"quotes", "“ignore”", `"ignore"`, 0},
		{"nothing left", "\x1b[0m\u200b", "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newView(tc.in)
			if v.text != tc.want {
				t.Errorf("view %q = %q, want %q", tc.in, v.text, tc.want)
			}
			if len(v.hidden) != tc.hidden {
				t.Errorf("hidden = %d, want %d (%v)", len(v.hidden), tc.hidden, v.hidden)
			}
			checkView(t, tc.in, v)
		})
	}
}

func TestViewSpans(t *testing.T) {
	in := "say: ｉg\u200bnore\x1b[0m previous"
	v := newView(in)
	i := strings.Index(v.text, "ignore previous")
	if i < 0 {
		t.Fatalf("view %q", v.text)
	}
	s, e := v.span(i, i+len("ignore previous"))
	if got := in[s:e]; got != "ｉg\u200bnore\x1b[0m previous" {
		t.Errorf("span = %q", got)
	}
	if h := v.hiddenIn(s, e); len(h) != 1 || h[0].kind != hiddenInvisible {
		t.Errorf("hiddenIn = %v", h)
	}
	// Kept multi-byte characters map back to whole characters.
	in = "x\u200b無視して ignore"
	v = newView(in)
	i = strings.Index(v.text, "視し")
	if s, e := v.span(i, i+len("視し")); in[s:e] != "視し" {
		t.Errorf("kept span = %q", in[s:e])
	}
	if s, e := v.span(i+1, i+2); in[s:e] != "視" {
		t.Errorf("inner byte span = %q", in[s:e])
	}
	// The fast path allocates nothing.
	plain := strings.Repeat("Plain ASCII text.\n", 100)
	if n := testing.AllocsPerRun(10, func() { _ = newView(plain) }); n != 0 {
		t.Errorf("ASCII view allocates %v times", n)
	}
}

func TestExcerpt(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"ignore previous\ninstructions", "ignore previous instructions"},
		{"a\u200bb\x00c\\", `a\u{200B}b\u{0}c\\`},
		{"tag" + tagged("x"), `tag\u{E0078}`},
		{strings.Repeat("word ", 20), strings.Repeat("word ", 20)[:57] + "..."},
		{strings.Repeat("x", 60), strings.Repeat("x", 60)},
	} {
		got := excerpt(tc.in)
		if got != tc.want {
			t.Errorf("excerpt(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if n := utf8.RuneCountInString(got); n > excerptMax {
			t.Errorf("excerpt(%q) has %d characters", tc.in, n)
		}
	}
}

// checkView asserts the mapping invariants of a view of in.
func checkView(t *testing.T, in string, v view) {
	t.Helper()
	if v.orig != in {
		t.Fatalf("orig differs")
	}
	if v.segs == nil {
		if v.text != in {
			t.Fatalf("identity view of %q is %q", in, v.text)
		}
		if !plainASCII(in) {
			// Its own view: the built view is the same text, mapped
			// byte for byte, with nothing hidden.
			b := buildView(in)
			if b.text != in || len(b.hidden) != 0 {
				t.Fatalf("own view of %q, built: %q, %d hidden", in, b.text, len(b.hidden))
			}
			for i := range in {
				if s, _ := b.at(i); s != i {
					t.Fatalf("own view of %q: built view maps byte %d to %d", in, i, s)
				}
			}
			b.release()
		}
		return
	}
	if len(v.text) > 0 && v.segs[0].v != 0 {
		t.Fatalf("first segment at %d", v.segs[0].v)
	}
	bound := map[int]bool{len(in): true}
	for i := range in {
		bound[i] = true
	}
	ps, pe := -1, -1
	for i := range v.text {
		s, e := v.at(i)
		if s < 0 || s >= e || e > len(in) {
			t.Fatalf("byte %d maps to [%d,%d) of %d", i, s, e, len(in))
		}
		if !bound[s] || !bound[e] {
			t.Fatalf("byte %d maps to [%d,%d), not on rune boundaries of %q", i, s, e, in)
		}
		if s < ps || e < pe {
			t.Fatalf("map decreases at %d", i)
		}
		ps, pe = s, e
	}
	for _, r := range v.text {
		if r == 0x1b || (r >= 0xe0000 && r <= 0xe007f && !strings.ContainsRune(in, 0x1f3f4)) || invisibleKind(r) != 0 {
			t.Fatalf("view %q keeps %U", v.text, r)
		}
	}
	last := -1
	for _, h := range v.hidden {
		if int(h.off) <= last || !bound[int(h.off)] || int(h.off)+int(h.size) > len(in) {
			t.Fatalf("hidden %v out of order or bounds", h)
		}
		last = int(h.off)
	}
}

func FuzzView(f *testing.F) {
	for _, s := range []string{"", "plain", "ｉg\u200bnore", "\x1b[31mx\x1b]0;t\x07", tagged("hi"), "a\xffb\u0301", "\U0001F3F4\U000E0067\U000E007F", "\u009b1m\u009d0;x\u009c", "a → b § c ── ≠ …", "e\u0301 ﬁ", "\ufffd", "x\u200dy"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := newView(s)
		checkView(t, s, v)
		if got := newView(s); got.text != v.text {
			t.Fatalf("view not deterministic")
		}
		if got := buildView(s); got.text != v.text {
			t.Fatalf("newView %q, buildView %q", v.text, got.text)
		}
		_ = excerpt(v.text)
	})
}

// TestPlainASCII checks the eight-byte test against a byte loop at every
// position of every byte value.
func TestPlainASCII(t *testing.T) {
	base := []byte("abcdefghijklmnopqrstuvwx")
	for c := 0; c < 256; c++ {
		for pos := range base {
			b := append([]byte(nil), base...)
			b[pos] = byte(c)
			s := string(b)
			want := c == '\t' || c == '\n' || c == '\r' || (c >= 0x20 && c < 0x7f)
			if got := plainASCII(s); got != want {
				t.Fatalf("plainASCII with %#x at %d = %v", c, pos, got)
			}
			wantRun := len(s)
			if !want {
				wantRun = pos
			}
			if got := plainRun(s, 0); got != wantRun {
				t.Fatalf("plainRun with %#x at %d = %d, want %d", c, pos, got, wantRun)
			}
		}
	}
}

// TestPlainRunMixed checks plainRun's eight-byte test against a byte
// loop on words mixing tab, LF and CR with other plain and non-plain
// bytes (each byte is tested on its own, none may mask another).
func TestPlainRunMixed(t *testing.T) {
	set := []byte{'a', '~', ' ', '\t', '\n', '\r', 0x00, 0x01, 0x08, 0x0b, 0x0c, 0x0e, 0x1f, 0x7f, 0x80, 0x89, 0x8a, 0x8d, 0xff}
	ref := func(s string) int {
		for i := 0; i < len(s); i++ {
			if c := s[i]; c >= 0x7f || (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
				return i
			}
		}
		return len(s)
	}
	b := make([]byte, 19)
	x := uint32(1)
	for n := 0; n < 200000; n++ {
		for i := range b {
			x = x*1664525 + 1013904223
			b[i] = set[int(x>>24)%len(set)]
			if x&0x300 != 0 { // mostly plain, so that runs are long
				b[i] = set[int(x>>20)%6]
			}
		}
		if got, want := plainRun(string(b), 0), ref(string(b)); got != want {
			t.Fatalf("plainRun(%q) = %d, want %d", b, got, want)
		}
	}
}
