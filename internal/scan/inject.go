package scan

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// The injection and poisoning family (docs/scanning.md, "Prompt injection
// and tool poisoning"): phrase rules matched on the normalized view
// (normalize.go), each anchored at a keyword of one case-insensitive
// automaton (prefilter.go), so benign text costs one pass of the automaton
// plus the view's ASCII check.

// ruleModes says in which modes a rule runs.
type ruleModes uint8

const (
	inData       ruleModes = 1 << iota // ModeData
	inDefinition                       // ModeToolDefinition
	inBoth       = inData | inDefinition
)

// injRule is one injection or poisoning rule.
type injRule struct {
	id    string
	class Class
	// conf is the confidence of a full-strength match; weak alternatives
	// and context lower it.
	conf  Confidence
	modes ruleModes
	// phrases are word patterns (inject_match.go); literals are exact
	// keywords (lowercase) matched as they are.
	phrases  []string
	literals []string
	// pre, if set, is a cheap necessary condition on the view from a
	// phrase anchor's start (a destination for an exfiltration, the word
	// "tool" for a cross-tool instruction), tested before the phrase.
	pre func(t string, start int) bool
	// check refines a candidate (its span, its confidence) and returns
	// false to drop it.
	check func(c *injCtx, h *injHit) bool
	// noContext: quoting, code and prose about injection do not lower
	// it (markers that are suspicious wherever they appear).
	noContext bool
	// maskQuery: the excerpt shows URL query values as "***" (they may
	// carry the data being exfiltrated).
	maskQuery bool

	compiled []phrase
}

// injHit is a candidate finding in view offsets.
type injHit struct {
	rule       int
	start, end int
	conf       Confidence
	m          phraseMatch
	standalone bool // span already in original offsets (hidden-text runs)
	ostart     int
	oend       int
	excerpt    string
}

// injCtx is what a check sees.
type injCtx struct {
	v    *view
	mode ruleModes
	f    *injectionFamily
	// turns caches whether the text holds a "Human:" and an
	// "Assistant:" turn (bit 1: known; 2: human; 4: assistant).
	turns uint8
	// count is the number of candidates kept per rule (at most
	// maxPerRule).
	count [maxRules]uint16
	// commentTo and directiveTo are the ends of the last HTML comment body or hidden
	// directive examined: a keyword inside it is not examined again.
	commentTo, directiveTo int
}

// maxPerRule bounds the matches of one rule in one string (a string
// repeating one phrase thousands of times costs no more than 256 of them;
// the rule's later matches are not reported); maxRules bounds the rules.
const (
	maxPerRule = 256
	maxRules   = 32
)

// injectionFamily is the compiled family: one keyword automaton per mode.
type injectionFamily struct {
	rules []*injRule
	data  anchorSet
	def   anchorSet
	meta  *keywords
	byID  map[string]int
	// urgent and crossDir find the words of checkToolCall and
	// checkCrossTool in a sentence in one pass.
	urgent, crossDir *keywords
}

// anchorSet is the prefilter of one mode: its keywords and, per keyword,
// the rules and patterns anchored there.
type anchorSet struct {
	kw      *keywords
	words   []string
	entries [][]anchorRef
}

func (a *anchorSet) add(index map[string]int, w string, ref anchorRef) {
	k, ok := index[w]
	if !ok {
		k = len(a.words)
		index[w] = k
		a.words = append(a.words, w)
		a.entries = append(a.entries, nil)
	}
	a.entries[k] = append(a.entries[k], ref)
}

type anchorRef struct {
	rule, phrase int // phrase -1: a literal
}

// contextWords are the words near a match that mark prose about prompt
// injection (a security article, a detector's documentation, a quoted
// example) rather than an injection: they lower a match to Low.
var contextWords = []string{
	"prompt injection", "prompt-injection", "injection attack", "jailbreak", "attacker",
	"adversarial", "malicious", "such as", "for example", "e.g.", "for instance",
	"phrases like", "phrase like", "known as", "red team", "red-team", "classifier",
	"detector", "detects", "detection", "chat template", "prompt format", "tokenizer",
	"special token", "injection", "injections", "injected", "vulnerability", "vulnerabilities",
	"technique", "techniques", "owasp", "llm01", "threat model", "mitigation", "mitigations",
	"defense", "defence", "defenses", "defences",
}

func newInjectionFamily() (family, error) {
	f := &injectionFamily{byID: map[string]int{}}
	f.rules = append(f.rules, injectionRules()...)
	f.rules = append(f.rules, poisoningRules()...)
	if len(f.rules) > maxRules {
		return nil, fmt.Errorf("scan: %d injection rules, at most %d", len(f.rules), maxRules)
	}
	dataIndex, defIndex := map[string]int{}, map[string]int{}
	add := func(r *injRule, w string, ref anchorRef) {
		if r.modes&inData != 0 {
			f.data.add(dataIndex, w, ref)
		}
		if r.modes&inDefinition != 0 {
			f.def.add(defIndex, w, ref)
		}
	}
	for ri, r := range f.rules {
		f.byID[r.id] = ri
		for pi, p := range r.phrases {
			ph, err := compilePhrase(p)
			if err != nil {
				return nil, fmt.Errorf("scan: rule %s: %w", r.id, err)
			}
			r.compiled = append(r.compiled, ph)
			for _, a := range ph.anchors() {
				add(r, a, anchorRef{ri, pi})
			}
		}
		for _, l := range r.literals {
			add(r, l, anchorRef{ri, -1})
		}
	}
	f.data.kw = newKeywords(f.data.words)
	f.def.kw = newKeywords(f.def.words)
	f.meta = newKeywords(contextWords)
	f.urgent = newKeywords(toolCallUrgent)
	f.crossDir = newKeywords(crossDirectives)
	for _, id := range []string{ruleHiddenText, rulePoisonInvisible, ruleHTMLComment} {
		if _, ok := f.byID[id]; !ok {
			return nil, fmt.Errorf("scan: rule %s missing", id)
		}
	}
	return f, nil
}

func (f *injectionFamily) scan(in Input, emit func(Finding)) {
	st := f.begin(in)
	st.as.kw.each(st.t, func(w, end int) bool {
		st.hit(w, end)
		return true
	})
	st.finish(emit)
}

// injScan is one scan's state.
type injScan struct {
	f    *injectionFamily
	as   *anchorSet
	v    view
	t    string // v.text
	c    injCtx
	hits []injHit
	cand injHit // one candidate, reused: checks take its address
}

// injScanPool holds released scan states (with their hits' capacity).
var injScanPool = sync.Pool{New: func() any { return new(injScan) }}

// begin builds the view of in.Text and the scan's state (from
// injScanPool); keywords of st.as are then matched on st.t.
func (f *injectionFamily) begin(in Input) *injScan {
	st := injScanPool.Get().(*injScan)
	*st = injScan{f: f, as: &f.data, hits: st.hits[:0]}
	mode := inData
	if in.Mode == ModeToolDefinition {
		mode, st.as = inDefinition, &f.def
	}
	st.v = newView(in.Text)
	st.t = st.v.text
	st.c = injCtx{v: &st.v, mode: mode, f: f}
	return st
}

// hit handles one hit of keyword w (an index into st.as.words) ending at
// end in the view; hits come in the order of keywords.each.
func (st *injScan) hit(w, end int) {
	f, c, t, as := st.f, &st.c, st.t, st.as
	start := end - len(as.words[w])
	wordStart := start == 0 || !isWordChar(t[start-1])
	for _, ref := range as.entries[w] {
		if ref.phrase >= 0 && !wordStart {
			continue
		}
		if c.count[ref.rule] >= maxPerRule {
			continue
		}
		r := f.rules[ref.rule]
		if ref.phrase >= 0 && r.pre != nil && !r.pre(t, start) {
			continue
		}
		h := &st.cand
		h.rule, h.start, h.end, h.conf, h.m.n = ref.rule, start, end, r.conf, 0
		if ref.phrase >= 0 {
			if !r.compiled[ref.phrase].match(t, start, &h.m) {
				continue
			}
			h.end, h.conf = h.m.end, lower(r.conf, h.m.weak)
		}
		if r.check != nil && !r.check(c, h) {
			continue
		}
		st.hits = append(st.hits, *h)
		c.count[ref.rule]++
	}
}

// finish emits the findings, releases the view and returns st to the
// pool: st must not be used after.
func (st *injScan) finish(emit func(Finding)) {
	defer st.release() // nothing of the view or the state outlives the scan: excerpts are copies
	f, c, hits := st.f, &st.c, st.hits
	if len(hits) == 0 && len(st.v.hidden) == 0 {
		return
	}
	hits = f.dedupe(hits)
	hits = f.context(c, hits)
	hits = f.hidden(c, hits)
	f.comments(hits)
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].rule != hits[j].rule {
			return hits[i].rule < hits[j].rule
		}
		return hits[i].ostart < hits[j].ostart
	})
	for _, h := range hits {
		r := f.rules[h.rule]
		emit(Finding{Rule: r.id, Class: r.class, Confidence: h.conf, Start: h.ostart, End: h.oend, Excerpt: h.excerpt})
	}
}

func (st *injScan) release() {
	st.v.release()
	hits := st.hits[:0]
	if cap(hits) > 1024 {
		hits = nil // a large slice is left to the collector
	}
	*st = injScan{hits: hits}
	injScanPool.Put(st)
}

// dedupe keeps, per rule, the first of overlapping hits (the earliest,
// then the longest), and fills in the original spans and excerpts.
func (f *injectionFamily) dedupe(hits []injHit) []injHit {
	sort.SliceStable(hits, func(i, j int) bool {
		a, b := hits[i], hits[j]
		if a.rule != b.rule {
			return a.rule < b.rule
		}
		if a.start != b.start {
			return a.start < b.start
		}
		return a.end > b.end
	})
	out := hits[:0]
	for _, h := range hits {
		if n := len(out); n > 0 && out[n-1].rule == h.rule && h.start < out[n-1].end {
			if confRank(h.conf) > confRank(out[n-1].conf) {
				out[n-1].conf = h.conf
			}
			continue
		}
		out = append(out, h)
	}
	return out
}

func confRank(c Confidence) int {
	switch c {
	case High:
		return 3
	case Medium:
		return 2
	case Low:
		return 1
	}
	return 0
}

// context lowers matches quoted, written as code or surrounded by prose
// about prompt injection to Low, and computes the original spans.
func (f *injectionFamily) context(c *injCtx, hits []injHit) []injHit {
	t := c.v.text
	for i := range hits {
		h := &hits[i]
		h.ostart, h.oend = c.v.span(h.start, h.end)
		r := f.rules[h.rule]
		if r.maskQuery {
			h.excerpt = excerpt(maskQueryValues(t[h.start:h.end]))
		} else {
			h.excerpt = excerpt(t[h.start:h.end])
		}
		if r.noContext || h.conf == Low {
			continue
		}
		if quotedSpan(t, h.start, h.end) || (h.m.n > 0 && (codeLike(t[h.start:h.end]) || codeLine(t, h.start, h.end))) || f.metaNear(t, h.start, h.end) {
			h.conf = Low
		}
	}
	return hits
}

// maskQueryValues replaces the value of every URL query parameter in s
// by "***".
func maskQueryValues(s string) string {
	q := strings.IndexByte(s, '?')
	if q < 0 {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:q+1])
	in := false
	for i := q + 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '=':
			b.WriteString("=***")
			in = true
		case c == '&' || c == ')' || c == ' ' || c == '#':
			in = false
			b.WriteByte(c)
		case !in:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// window returns the view from start, at most n bytes.
func window(t string, start, n int) string {
	if start+n < len(t) {
		return t[start : start+n]
	}
	return t[start:]
}

// preDestination: a URL or an e-mail address within the next 300 bytes.
func preDestination(t string, start int) bool {
	w := window(t, start, 300)
	return strings.Contains(w, "://") || strings.IndexByte(w, '@') >= 0
}

// preToolWord: "tool", "function" or "server" (any case) within the next
// 160 bytes.
func preToolWord(t string, start int) bool {
	w := window(t, start, 160)
	for _, x := range [...]string{"tool", "Tool", "TOOL", "function", "Function", "FUNCTION", "server", "Server", "SERVER"} {
		if strings.Contains(w, x) {
			return true
		}
	}
	return false
}

// quotedSpan reports whether the view span [s, e) is quoted as a phrase:
// a quotation mark or backtick right before it and right after it (past
// closing punctuation).
func quotedSpan(t string, s, e int) bool {
	if s == 0 || !isQuote(t[s-1]) {
		return false
	}
	for e < len(t) && (t[e] == '.' || t[e] == ',' || t[e] == '!' || t[e] == '?') {
		e++
	}
	return e < len(t) && isQuote(t[e])
}

// codeLike reports whether a matched phrase is written as code: regular
// expression or string-escape syntax between its words.
func codeLike(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', ')', '[', ']', '{', '}', '\\', '^', '$', '*', '+':
			return true
		case '?', '|':
			if i+1 < len(s) {
				return true
			}
		}
	}
	return false
}

// codeLine reports whether the line holding the view span [s, e) is a
// line of code: at least three of "{}();=" outside the span.
func codeLine(t string, s, e int) bool {
	ls, le := s, e
	for ls > 0 && t[ls-1] != '\n' && s-ls < 400 {
		ls--
	}
	for le < len(t) && t[le] != '\n' && le-e < 400 {
		le++
	}
	n := 0
	for _, part := range [2]string{t[ls:s], t[e:le]} {
		for i := 0; i < len(part); i++ {
			switch part[i] {
			case '{', '}', '(', ')', ';', '=':
				n++
			}
		}
	}
	return n >= 3
}

// metaNear reports whether prose about prompt injection surrounds the
// view span [s, e).
func (f *injectionFamily) metaNear(t string, s, e int) bool {
	lo, hi := s-240, e+160
	if lo < 0 {
		lo = 0
	}
	if hi > len(t) {
		hi = len(t)
	}
	for lo > 0 && lo < len(t) && t[lo]&0xc0 == 0x80 {
		lo--
	}
	w := t[lo:hi]
	found := false
	f.meta.each(w, func(k, end int) bool {
		start := end - len(contextWords[k])
		if (start == 0 || metaBoundary(w[start-1])) && (end == len(w) || metaBoundary(w[end])) {
			found = true
			return false
		}
		return true
	})
	return found
}

// metaBoundary reports whether c may stand next to a context word (white
// space or prose punctuation, not the inside of an address or a name).
func metaBoundary(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', ';', ':', '(', ')', '"', '\'', '`', '!', '?':
		return true
	case '.':
		return true
	}
	return false
}

// Rule ids the family's passes use.
const (
	ruleHiddenText      = "injection-hidden-text"
	ruleHTMLComment     = "injection-html-comment"
	rulePoisonInvisible = "poisoning-invisible-characters"
)

// hidden raises a match that hiding characters interleave (or that tag
// characters spell) to High and adds a finding for those characters; it
// also flags tag-character text that matched no rule (data) and every
// hiding character of a tool definition.
func (f *injectionFamily) hidden(c *injCtx, hits []injHit) []injHit {
	v := c.v
	if len(v.hidden) == 0 {
		return hits
	}
	hid := f.byID[ruleHiddenText]
	covered := make([]bool, len(v.hidden))
	n := len(hits)
	for i := 0; i < n; i++ {
		h := &hits[i]
		if f.rules[h.rule].class != ClassInjection && f.rules[h.rule].class != ClassPoisoning {
			continue
		}
		lo, hi := v.hiddenRange(h.ostart, h.oend)
		hs := v.hidden[lo:hi]
		var first, last int = -1, -1
		for _, x := range hs {
			if x.kind == hiddenBidi {
				continue
			}
			if first < 0 {
				first = int(x.off)
			}
			last = int(x.off) + int(x.size)
		}
		if first < 0 {
			continue
		}
		h.conf = High
		for k := lo; k < hi; k++ {
			covered[k] = true
		}
		hits = append(hits, injHit{
			rule: hid, conf: High, standalone: true, ostart: first, oend: last,
			excerpt: excerpt(strconv.Itoa(len(hs)) + " hidden: " + v.text[h.start:h.end]),
		})
	}
	// Tag-character text outside any match.
	for _, run := range hiddenRuns(v.hidden) {
		tags, done := 0, true
		for k := run[0]; k < run[1]; k++ {
			if v.hidden[k].kind == hiddenTag {
				tags++
			}
			if !covered[k] {
				done = false
			}
		}
		s := int(v.hidden[run[0]].off)
		e := int(v.hidden[run[1]-1].off) + int(v.hidden[run[1]-1].size)
		if c.mode == inDefinition {
			conf := Medium
			if tags > 0 {
				conf = High
			}
			hits = append(hits, injHit{
				rule: f.byID[rulePoisonInvisible], conf: conf, standalone: true, ostart: s, oend: e,
				excerpt: excerpt(hiddenSummary(v, run)),
			})
			continue
		}
		if done || tags < 4 {
			continue
		}
		hits = append(hits, injHit{
			rule: hid, conf: Medium, standalone: true, ostart: s, oend: e,
			excerpt: excerpt(hiddenSummary(v, run)),
		})
	}
	return hits
}

// hiddenRuns groups the hiding characters into runs of adjacent ones
// ([first, last) indices into v.hidden); more than 16 runs become one.
func hiddenRuns(h []hiddenRune) [][2]int {
	var runs [][2]int
	for k := 0; k < len(h); {
		j := k + 1
		for j < len(h) && int(h[j].off) == int(h[j-1].off)+int(h[j-1].size) {
			j++
		}
		runs = append(runs, [2]int{k, j})
		k = j
	}
	if len(runs) > 16 {
		return [][2]int{{0, len(h)}}
	}
	return runs
}

// hiddenSummary describes a run of hiding characters without writing
// them: their number and kinds, and the text tag characters spell.
func hiddenSummary(v *view, run [2]int) string {
	var tags []byte
	kinds := map[hiddenKind]bool{}
	for k := run[0]; k < run[1]; k++ {
		x := v.hidden[k]
		kinds[x.kind] = true
		if x.kind == hiddenTag {
			r := decodeRuneAt(v.orig, int(x.off))
			if r >= 0xe0020 && r <= 0xe007e {
				tags = append(tags, byte(r-0xe0000))
			}
		}
	}
	s := strconv.Itoa(run[1]-run[0]) + " hidden"
	for _, k := range []struct {
		k hiddenKind
		n string
	}{{hiddenInvisible, " invisible"}, {hiddenBidi, " bidi"}, {hiddenTag, " tag"}, {hiddenControl, " control"}} {
		if kinds[k.k] {
			s += k.n
		}
	}
	if len(tags) > 0 {
		s += ": " + string(tags)
	}
	return s
}

func decodeRuneAt(s string, i int) rune {
	for _, r := range s[i:] {
		return r
	}
	return 0
}

// comments raises an HTML comment that holds another match to High.
func (f *injectionFamily) comments(hits []injHit) {
	com := f.byID[ruleHTMLComment]
	for i := range hits {
		if hits[i].rule != com {
			continue
		}
		for j := range hits {
			if j != i && !hits[j].standalone && hits[j].rule != com && hits[j].ostart >= hits[i].ostart && hits[j].oend <= hits[i].oend {
				hits[i].conf = High
				break
			}
		}
	}
}
