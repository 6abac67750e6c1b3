package scan

import (
	"fmt"
	"strings"
)

// The phrase matcher of the injection and poisoning rules: a rule is a
// short sequence of word sets with bounded gaps, anchored at a keyword the
// prefilter found, and checked word by word in a window of the normalized
// view that ends at the end of the sentence. No regular expression runs
// over the whole string.
//
// A pattern is written as steps separated by spaces; a step is a set of
// alternatives separated by "|", where "+" joins consecutive words of one
// alternative ("system+prompt"), "?" is any one word, "'" is any one word
// right after a quotation mark or backtick, and a leading "*" ("**")
// marks an alternative that lowers the rule's confidence by one (two)
// levels. "~N" before a step allows up to N other words before it.

// phraseStep is one step of a pattern. byWord indexes its alternatives
// by their first word; wild lists those whose first word is "?" or "'".
type phraseStep struct {
	gap    int
	alts   []phraseAlt
	byWord map[string][]int
	wild   []int
	// quick[c-'a'] has bit n set when some alternative's first word
	// starts with letter c and has n bytes (n < 64): most words are
	// rejected without a map lookup.
	quick [27]uint64
}

// maxSteps is the most steps a pattern may have.
const maxSteps = 8

// phraseAlt is one alternative: consecutive words ("" is any word, "'"
// a quoted word) and how much it weakens the match.
type phraseAlt struct {
	words []string
	weak  int
}

type phrase struct {
	steps []phraseStep
}

// compilePhrase parses a pattern; it returns an error for a malformed one
// (a defect of the rule table, reported by New).
func compilePhrase(p string) (phrase, error) {
	var ph phrase
	gap := 0
	for _, f := range strings.Fields(p) {
		if strings.HasPrefix(f, "~") {
			if _, err := fmt.Sscanf(f, "~%d", &gap); err != nil {
				return phrase{}, fmt.Errorf("pattern %q: bad gap %q", p, f)
			}
			continue
		}
		st := phraseStep{gap: gap}
		gap = 0
		for _, a := range strings.Split(f, "|") {
			var alt phraseAlt
			for strings.HasPrefix(a, "*") {
				alt.weak++
				a = a[1:]
			}
			if a == "" {
				return phrase{}, fmt.Errorf("pattern %q: empty alternative", p)
			}
			for _, w := range strings.Split(a, "+") {
				if w == "?" {
					w = ""
				}
				alt.words = append(alt.words, w)
			}
			st.alts = append(st.alts, alt)
		}
		st.byWord = map[string][]int{}
		for i, a := range st.alts {
			if a.words[0] == "" || a.words[0] == "'" {
				st.wild = append(st.wild, i)
			} else {
				w := a.words[0]
				st.byWord[w] = append(st.byWord[w], i)
				if len(w) < 64 {
					st.quick[quickSlot(w[0])] |= 1 << len(w)
				}
			}
		}
		ph.steps = append(ph.steps, st)
	}
	if len(ph.steps) == 0 || ph.steps[0].gap != 0 {
		return phrase{}, fmt.Errorf("pattern %q: must start with a word step", p)
	}
	if len(ph.steps) > maxSteps {
		return phrase{}, fmt.Errorf("pattern %q: more than %d steps", p, maxSteps)
	}
	return ph, nil
}

// anchors are the prefilter's keywords of the pattern: each alternative
// of its first step, its words joined by one space (so a common first
// word such as "do" in "do not follow" is no keyword alone).
func (ph phrase) anchors() []string {
	var out []string
	for _, a := range ph.steps[0].alts {
		if a.words[0] != "" && a.words[0] != "'" {
			out = append(out, strings.Join(a.words, " "))
		}
	}
	return out
}

// phraseMatch is a match of a pattern in the view: its span, the view
// span of each step's words, and how weak it is.
type phraseMatch struct {
	start, end         int
	weak               int
	n                  int // steps
	stepStart, stepEnd [maxSteps]int
}

// match tries the pattern at view offset pos (the start of a word) and
// writes its strongest match (fewest weak alternatives, then the
// earliest) to m; it reports whether there is one and allocates
// nothing.
func (ph phrase) match(t string, pos int, m *phraseMatch) bool {
	st := matchState{out: m, best: -1}
	ph.matchStep(t, 0, pos, 0, &st)
	if st.best < 0 {
		return false
	}
	m.weak = st.best
	m.n = len(ph.steps)
	m.start = pos
	m.end = m.stepEnd[m.n-1]
	return true
}

// matchState is the search of one match: the current path's step spans,
// the best match so far (written to out), its weakness (-1: none yet).
type matchState struct {
	out                *phraseMatch
	stepStart, stepEnd [maxSteps]int
	best               int
	tries              int
}

func (ph phrase) matchStep(t string, k, pos, weak int, st *matchState) {
	if st.best >= 0 && weak >= st.best {
		return // no stronger match down this path
	}
	if k == len(ph.steps) {
		st.out.stepStart, st.out.stepEnd = st.stepStart, st.stepEnd
		st.best = weak
		return
	}
	step := &ph.steps[k]
	p := pos
	var buf [32]byte
	for g := 0; g <= step.gap; g++ {
		ws, we, ok := nextWord(t, p, k == 0)
		if !ok {
			return
		}
		if n := we - ws; n <= len(buf) && n < 64 && step.quick[quickSlot(lowerASCII(t[ws]))]&(1<<n) != 0 {
			for i := 0; i < n; i++ {
				buf[i] = lowerASCII(t[ws+i])
			}
			for _, i := range step.byWord[string(buf[:n])] {
				if !ph.try(t, k, i, ws, we, weak, st) {
					return
				}
			}
		}
		for _, i := range step.wild {
			if !ph.try(t, k, i, ws, we, weak, st) {
				return
			}
		}
		p = we
	}
}

// quickSlot is the quick-reject slot of a word's first (lowercase) byte.
func quickSlot(c byte) int {
	if c >= 'a' && c <= 'z' {
		return int(c - 'a')
	}
	return 26
}

// try matches alternative i of step k at the view word [ws, we) and the
// rest of the pattern after it; it returns false to stop (a full-strength
// match found, or the work bound reached).
func (ph phrase) try(t string, k, i, ws, we, weak int, st *matchState) bool {
	st.tries++
	if st.tries > 4096 {
		return false
	}
	a := &ph.steps[k].alts[i]
	if e, ok := matchAlt(t, ws, we, a.words); ok {
		st.stepStart[k] = ws
		st.stepEnd[k] = e
		ph.matchStep(t, k+1, e, weak+a.weak, st)
	}
	return st.best != 0
}

// matchAlt matches consecutive words at the view word [ws, we).
func matchAlt(t string, ws, we int, words []string) (int, bool) {
	p := ws
	for i, w := range words {
		var s, e int
		if i == 0 {
			s, e = ws, we
		} else {
			var ok bool
			if s, e, ok = nextWord(t, p, false); !ok {
				return 0, false
			}
		}
		switch w {
		case "":
		case "'":
			if s == 0 || !isQuote(t[s-1]) {
				return 0, false
			}
		default:
			if !equalFoldASCII(t[s:e], w) {
				return 0, false
			}
		}
		p = e
	}
	return p, true
}

// nextWord returns the next word at or after p in t: a run of ASCII
// letters, digits, "_" and non-ASCII bytes, with "'" or "-" inside. Unless
// first, it does not cross a sentence end ('.', '!', '?' or ';' before
// white space, or a blank line) and skips at most 40 bytes of
// separators.
func nextWord(t string, p int, first bool) (int, int, bool) {
	i := p
	for i < len(t) && !isWordChar(t[i]) {
		if !first {
			switch c := t[i]; c {
			case '.', '!', '?', ';':
				if i+1 >= len(t) || t[i+1] == ' ' || t[i+1] == '\n' || t[i+1] == '\t' || t[i+1] == '\r' {
					return 0, 0, false
				}
			case '\n':
				if i+1 < len(t) && (t[i+1] == '\n' || (t[i+1] == '\r' && i+2 < len(t) && t[i+2] == '\n')) {
					return 0, 0, false
				}
			}
			if i-p > 40 {
				return 0, 0, false
			}
		}
		i++
	}
	if i >= len(t) {
		return 0, 0, false
	}
	s := i
	for i < len(t) {
		c := t[i]
		if isWordChar(c) {
			i++
			continue
		}
		if (c == '\'' || c == '-') && i+1 < len(t) && isWordChar(t[i+1]) && i > s {
			i++
			continue
		}
		break
	}
	return s, i, true
}

func isWordChar(c byte) bool {
	return isAlnum(c) || c == '_' || c >= 0x80
}

func isQuote(c byte) bool {
	return c == '"' || c == '\'' || c == '`'
}

// equalFoldASCII reports whether s equals the lowercase word w, folding
// ASCII case in s.
func equalFoldASCII(s, w string) bool {
	if len(s) != len(w) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if lowerASCII(s[i]) != w[i] {
			return false
		}
	}
	return true
}

// indexFoldASCII returns the index of the lowercase needle in s, folding
// ASCII case in s, or -1.
func indexFoldASCII(s, needle string) int {
	n := len(needle)
	if n == 0 {
		return 0
	}
	c0 := needle[0]
	for i := 0; i+n <= len(s); i++ {
		if lowerASCII(s[i]) != c0 {
			continue
		}
		if equalFoldASCII(s[i:i+n], needle) {
			return i
		}
	}
	return -1
}

// sentenceEnd returns the offset of the end of the sentence that holds
// view offset p, looking at most max bytes ahead.
func sentenceEnd(t string, p, max int) int {
	end := p + max
	if end > len(t) {
		end = len(t)
	}
	for i := p; i < end; i++ {
		switch t[i] {
		case '.', '!', '?', ';':
			if i+1 >= len(t) || t[i+1] == ' ' || t[i+1] == '\n' {
				return i + 1
			}
		case '\n':
			if i+1 < len(t) && t[i+1] == '\n' {
				return i
			}
		}
	}
	return end
}

// sentenceStart returns the offset of the start of the sentence that holds
// view offset p, looking at most max bytes back.
func sentenceStart(t string, p, max int) int {
	lo := p - max
	if lo < 0 {
		lo = 0
	}
	for i := p - 1; i >= lo; i-- {
		switch t[i] {
		case '.', '!', '?', ';':
			if i+1 < len(t) && (t[i+1] == ' ' || t[i+1] == '\n') {
				return i + 1
			}
		case '\n':
			if i > 0 && t[i-1] == '\n' {
				return i + 1
			}
		}
	}
	return lo
}

// lower lowers a confidence by n levels (not below Low).
func lower(c Confidence, n int) Confidence {
	for ; n > 0; n-- {
		switch c {
		case High:
			c = Medium
		case Medium:
			c = Low
		}
	}
	return c
}
