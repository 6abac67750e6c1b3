package scan

import (
	"encoding/base64"
	"encoding/json"
	"hash/crc32"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Own secret rules (docs/scanning.md, "Secrets and personal data"):
// detectors gitleaks' rule set does not have, or has less precisely.
const (
	RulePEMPrivateKey     = "pem-private-key"     // -----BEGIN ... PRIVATE KEY----- .. -----END ...-----
	RuleOpenSSHPrivateKey = "openssh-private-key" // -----BEGIN OPENSSH PRIVATE KEY----- block
	RuleJWT               = "jwt"                 // header.payload.signature, header decodes to a JSON object with "alg"
	RuleURLCredentials    = "url-credentials"     // scheme://user:password@host, span: the password
	RuleHTTPBearer        = "http-bearer"         // Bearer <token>
	RuleHTTPBasic         = "http-basic"          // Basic <base64 of user:pass>
	RuleKeyedSecret       = "keyed-secret"        // the value of a secret-like member name, by entropy
)

// Own detectors' slots in secretFamily.kwRules (negative: not a gitleaks
// rule index).
const (
	ownPEM int32 = -1 - iota
	ownJWT
	ownURL
	ownBearer
	ownBasic
	ownPEMEnd
)

var ownKeywords = []struct {
	word string
	det  int32
}{
	{"-----begin", ownPEM},
	{"eyj", ownJWT},
	{"://", ownURL},
	{"bearer", ownBearer},
	{"basic", ownBasic},
	{"-----end", ownPEMEnd},
}

// secretFamily runs gitleaks' rules and the own secret detectors. One
// keyword automaton covers every rule's keywords; a rule's regex runs
// only on a bounded window around each hit that passes the rule's
// precheck (windows of one rule that overlap are merged), so the cost
// grows with hits, not with the length of the text.
type secretFamily struct {
	rules   []glRule
	global  allowlist
	kw      *keywords
	kwRules [][]int32 // per keyword: gitleaks rule indices, or own detectors (< 0)
	kwWide  [][]uint8 // per keyword, aligned with kwRules: wideNo, wideChecked or wideContext
	kwLen   []int
	pool    sync.Pool
}

// How a prefixed rule's regex is windowed at a keyword hit.
const (
	wideNo      uint8 = iota // the keyword is in the regex: the hit's token
	wideChecked              // the regex spells the keyword as an alternation ("(?:ghu|ghs)_"): 256 bytes each side, after the token precheck
	wideContext              // the keyword is the provider's name, not part of the match ("facebook"): 256 bytes each side, no precheck
)

type pendingWindow struct {
	ws, we int
	on     bool
	lastOp int // semi-generic rules: 1 + the operator offset last run
}

// secretScratch is one scan's state, pooled.
type secretScratch struct {
	pend    []pendingWindow // per gitleaks rule
	active  []int32
	touched []int32 // rules with lastOp set
	found   []Finding
	// pemSearched: BEGIN lines before it are not searched again.
	pemSearched int
	// lowBudget: how many more low-confidence candidates may run in
	// this string (lowBudgetFor).
	lowBudget int
	// text[runA:runB] has no whitespace (tokenAround's memory);
	// runStart: runA is where the token starts, not a 512-byte bound.
	runA, runB      int
	runOK, runStart bool
}

// lowBudgetFor is the number of low-confidence candidates (generic
// "key = value" hits that passed the operator precheck) whose regexes
// and allowlists run in one string of n bytes: 32 plus one per KiB.
// Beyond it, further generic candidates in that string are not reported
// (they only flag); this bounds adversarial text, made of nothing but
// such assignments, to linear time with a small constant.
func lowBudgetFor(n int) int { return 32 + n/1024 }

func newSecretFamily() (family, error) {
	rules, global, ruleWords, err := loadGitleaks()
	if err != nil {
		return nil, err
	}
	f := &secretFamily{rules: rules, global: global}
	index := map[string]int{}
	var words []string
	add := func(w string, slot int32, wide uint8) {
		lw := strings.ToLower(w)
		i, ok := index[lw]
		if !ok {
			i = len(words)
			index[lw] = i
			words = append(words, lw)
			f.kwRules = append(f.kwRules, nil)
			f.kwWide = append(f.kwWide, nil)
			f.kwLen = append(f.kwLen, len(lw))
		}
		if !slices.Contains(f.kwRules[i], slot) {
			f.kwRules[i] = append(f.kwRules[i], slot)
			f.kwWide[i] = append(f.kwWide[i], wide)
		}
	}
	for ri, ws := range ruleWords {
		for _, w := range ws {
			wide := wideNo
			if rules[ri].check == checkToken && !keywordInRegex(w, rules[ri].re.String()) {
				wide = wideChecked
				if isContextWord(w) {
					wide = wideContext
				}
			}
			add(w, int32(ri), wide)
		}
	}
	for _, o := range ownKeywords {
		add(o.word, o.det, wideNo)
	}
	f.kw = newKeywords(words)
	n := len(rules)
	f.pool.New = func() any { return &secretScratch{pend: make([]pendingWindow, n)} }
	return f, nil
}

func (f *secretFamily) scan(in Input, emit func(Finding)) {
	sc := f.begin(in.Text)
	f.kw.each(in.Text, func(w, end int) bool {
		f.hit(sc, in.Text, w, end)
		return true
	})
	f.finish(sc, in, emit)
}

// begin takes a scan's scratch state for text from the pool.
func (f *secretFamily) begin(text string) *secretScratch {
	sc := f.pool.Get().(*secretScratch)
	sc.lowBudget = lowBudgetFor(len(text))
	sc.runOK = false
	return sc
}

// hit handles one hit of keyword w (an index into f.kw's words) ending
// at end in text; hits come in the order of keywords.each.
func (f *secretFamily) hit(sc *secretScratch, text string, w, end int) {
	start := end - f.kwLen[w]
	op := -2 // assignFollows(text, end), computed once per hit
	for j, ri := range f.kwRules[w] {
		if ri < 0 {
			f.own(sc, text, ri, start, end)
			continue
		}
		r := &f.rules[ri]
		if r.check == checkAssign {
			if op == -2 {
				op = assignFollows(text, end)
			}
			if op >= 0 && sc.pend[ri].lastOp != op+1 {
				// Two keywords of one rule before one operator
				// ("api_key"): run it once.
				if sc.pend[ri].lastOp == 0 {
					sc.touched = append(sc.touched, ri)
				}
				sc.pend[ri].lastOp = op + 1
				f.runSplit(sc, text, r, start, op)
			}
			continue
		}
		var ws, we int
		wide := f.kwWide[w][j] != wideNo
		switch {
		case wide:
			ws, we = max(0, start-256), min(len(text), end+256)
		case r.check == checkToken:
			ws, we = sc.tokenAround(text, start, end)
		default:
			ws, we = max(0, start-r.back), min(len(text), end+r.fwd)
		}
		if f.kwWide[w][j] != wideContext && !r.passes(text, start, end, ws, we) {
			continue
		}
		if r.check == checkVault && end-start == 2 {
			// "s." and 24 letters or digits (the precheck): the
			// rule's regex adds only its word boundary before and
			// its terminator after, checked here without it.
			if (start == 0 || !isWordByte(text[start-1])) && vaultTerminated(text, end+24) {
				f.accept(sc, text, r, start, end+24, start, end+24)
			}
			continue
		}
		p := &sc.pend[ri]
		// Merge overlapping windows (for token windows: hits in one
		// token; the next token's window only shares context bytes).
		if p.on && (ws < p.we-1 || ws <= p.we && (r.check != checkToken || wide)) {
			p.we = max(p.we, we)
			continue
		}
		if p.on {
			f.runRule(sc, text, r, p.ws, p.we)
		} else {
			sc.active = append(sc.active, ri)
		}
		p.ws, p.we, p.on = ws, we, true
	}
}

// finish runs the pending windows and the keyed-secret detector, emits
// the findings and returns sc to the pool.
func (f *secretFamily) finish(sc *secretScratch, in Input, emit func(Finding)) {
	text := in.Text
	for _, ri := range sc.active {
		p := &sc.pend[ri]
		f.runRule(sc, text, &f.rules[ri], p.ws, p.we)
		p.on = false
	}
	sc.active = sc.active[:0]
	for _, ri := range sc.touched {
		sc.pend[ri].lastOp = 0
	}
	sc.touched = sc.touched[:0]
	if in.Key != "" && SecretLikeKey(in.Key) {
		keyedSecret(sc, text, in.Key)
	}
	emitFound(sc.found, text, emit)
	sc.pemSearched = 0
	clear(sc.found)
	sc.found = sc.found[:0]
	f.pool.Put(sc)
}

// emitFound sorts findings by position and drops a finding overlapping
// an earlier kept one of the same or higher confidence (a provider rule
// and the generic rule on one token, a JWT also seen as a bearer token),
// then emits with masked excerpts.
func emitFound(found []Finding, text string, emit func(Finding)) {
	if len(found) == 0 {
		return
	}
	slices.SortStableFunc(found, func(a, b Finding) int {
		if a.Start != b.Start {
			return a.Start - b.Start
		}
		if ra, rb := confRank(a.Confidence), confRank(b.Confidence); ra != rb {
			return rb - ra
		}
		return b.End - a.End
	})
	kept := found[:0]
	maxEnd := -1 // the greatest End among kept findings
	for _, f := range found {
		drop := false
		if f.Start < maxEnd {
			// Only now can f overlap a kept finding; look back over the
			// kept ones that end after f starts.
			for i := len(kept) - 1; i >= 0; i-- {
				k := &kept[i]
				if !(f.Start < k.End && k.Start < f.End) {
					continue
				}
				if confRank(k.Confidence) >= confRank(f.Confidence) {
					drop = true
					break
				}
				if f.Start <= k.Start && k.End <= f.End {
					// A higher-confidence finding covering a lower one
					// replaces it.
					*k = f
					maxEnd = max(maxEnd, f.End)
					drop = true
					break
				}
			}
		}
		if !drop {
			kept = append(kept, f)
			maxEnd = max(maxEnd, f.End)
		}
	}
	for _, f := range kept {
		f.Start, f.End = runeSpan(text, f.Start, f.End)
		f.Excerpt = mask(text[f.Start:f.End])
		emit(f)
	}
}

// snapWindow widens [ws, we) to rune boundaries and, by up to 32 bytes
// each side, to word boundaries, so that \b and leading context in a
// rule's regex see what they would in the whole text.
func snapWindow(text string, ws, we int) (int, int) {
	for lim := max(0, ws-32); ws > lim && (!utf8.RuneStart(text[ws]) || isWordByte(text[ws-1])); ws-- {
	}
	for ws > 0 && !utf8.RuneStart(text[ws]) {
		ws--
	}
	for lim := min(len(text), we+32); we < lim && (!utf8.RuneStart(text[we]) || isWordByte(text[we])); we++ {
	}
	for we < len(text) && !utf8.RuneStart(text[we]) {
		we++
	}
	return ws, we
}

// tokenAround is the whitespace-delimited token holding text[start:end]
// (at most 512 bytes each side), with one byte of context each side. It
// remembers the last run of non-space bytes it read (runA, runB), so
// that dense hits in one long token cost no re-reading.
func (sc *secretScratch) tokenAround(text string, start, end int) (int, int) {
	if !(sc.runOK && sc.runA <= start && start <= sc.runB && (sc.runStart || start-512 >= sc.runA)) {
		a := start
		for lim := max(0, start-512); a > lim && !isSpace(text[a-1]); a-- {
		}
		sc.runA, sc.runB, sc.runOK = a, start, true
		sc.runStart = a == 0 || isSpace(text[a-1])
	}
	ws := max(sc.runA, start-512)
	if end > sc.runB {
		sc.runB = end
	}
	for lim := min(len(text), end+512); sc.runB < lim && !isSpace(text[sc.runB]); sc.runB++ {
	}
	we := min(sc.runB, end+512)
	return max(0, ws-1), min(len(text), we+1)
}

// runSplit runs a semi-generic rule split at its operator: the name part
// from the start of the name token (at most 50 bytes before the keyword
// at start) to the operator at op, then the value part from op.
func (f *secretFamily) runSplit(sc *secretScratch, text string, r *glRule, start, op int) {
	if r.conf == Low {
		// A low-confidence (generic) candidate costs its two regexes and
		// its allowlists (generic-api-key's is one large regex, ~40 µs):
		// at most lowBudget of them per string.
		if sc.lowBudget <= 0 {
			return
		}
		sc.lowBudget--
	}
	ps := start
	for lim := max(0, start-50); ps > lim && (isWordByte(text[ps-1]) || text[ps-1] == '.' || text[ps-1] == '-'); ps-- {
	}
	if ruleRunHook != nil {
		ruleRunHook(r.id, op-ps)
	}
	pm := r.pre.FindStringSubmatchIndex(text[ps:op])
	if pm == nil {
		return
	}
	// The value part reads the operator, up to 8 quote, space or
	// operator bytes, a value (up to the next space, quote or ";") and a
	// terminator: bounding its input to that keeps the backtracker's
	// visited set small.
	ve := op
	for lim := min(len(text), op+9); ve < lim && strings.IndexByte("=>:|?,`'\" \t\r\n", text[ve]) >= 0; ve++ {
	}
	for lim := min(len(text), ve+200); ve < lim && !isSpace(text[ve]) && text[ve] != '"' && text[ve] != '\'' && text[ve] != '`' && text[ve] != ';'; ve++ {
	}
	w := text[op:min(len(text), ve+3)]
	if !r.sufCheck.may(w) {
		return
	}
	m := r.suf.FindStringSubmatchIndex(w)
	if m == nil {
		return
	}
	ss, se := -1, -1
	if g := r.secretGroup; g > 0 {
		if g > r.preGroups {
			g -= r.preGroups
			ss, se = m[2*g], m[2*g+1]
			if ss >= 0 {
				ss, se = ss+op, se+op
			}
		} else if pm[2*g] >= 0 {
			ss, se = pm[2*g]+ps, pm[2*g+1]+ps
		}
	} else {
		for g := 1; 2*g+1 < len(m); g++ {
			if m[2*g] >= 0 && m[2*g+1] > m[2*g] {
				ss, se = m[2*g]+op, m[2*g+1]+op
				break
			}
		}
		if ss < 0 {
			ss, se = ps, op+m[1]
		}
	}
	if ss < 0 || se <= ss {
		return
	}
	f.accept(sc, text, r, ss, se, ps, op+m[1])
}

// ruleRunHook, when set (tests), is told of every regex run.
var ruleRunHook func(rule string, window int)

func (f *secretFamily) runRule(sc *secretScratch, text string, r *glRule, ws, we int) {
	ws, we = snapWindow(text, ws, we)
	w := text[ws:we]
	if ruleRunHook != nil {
		ruleRunHook(r.id, we-ws)
	}
	for _, m := range r.re.FindAllStringSubmatchIndex(w, -1) {
		ss, se := m[0], m[1]
		if r.secretGroup > 0 {
			g := r.secretGroup
			if m[2*g] < 0 {
				continue
			}
			ss, se = m[2*g], m[2*g+1]
		} else {
			for g := 1; 2*g+1 < len(m); g++ {
				if m[2*g] >= 0 && m[2*g+1] > m[2*g] {
					ss, se = m[2*g], m[2*g+1]
					break
				}
			}
		}
		if se <= ss {
			continue
		}
		f.accept(sc, text, r, ws+ss, ws+se, ws+m[0], ws+m[1])
	}
}

// accept applies a rule's entropy threshold, the allowlists and the
// false-positive controls to a match text[ms:me] with secret
// text[ss:se], and records the finding.
func (f *secretFamily) accept(sc *secretScratch, text string, r *glRule, ss, se, ms, me int) {
	secret := text[ss:se]
	if r.entropy > 0 && shannon(secret) <= r.entropy {
		return
	}
	if isPlaceholder(secret) || r.generic && notSecretShape(secret) {
		return
	}
	match := text[ms:me]
	line := lineOf(text, ms, me)
	if f.global.allows(secret, match, line) {
		return
	}
	for i := range r.allow {
		if r.allow[i].allows(secret, match, line) {
			return
		}
	}
	conf := r.conf
	if r.githubSum && !githubChecksumOK(secret) {
		conf = Medium
	}
	if len(r.marks) > 0 && !containsAnyFold(secret, r.marks) {
		// Matched only near the provider's name, without the provider's
		// own prefix (sourcegraph-access-token's bare 40 hex digits near
		// "sourcegraph"): a git commit hash in a repository's listing is
		// that shape, so such a match is dropped when it is a known id or
		// digest shape, and only flags otherwise.
		if notSecretShape(secret) {
			return
		}
		conf = Medium
	}
	sc.found = append(sc.found, Finding{Rule: r.id, Class: ClassSecret, Confidence: conf, Start: ss, End: se})
}

// containsAnyFold reports whether s contains one of the lower-case words
// ws, ASCII case-insensitively.
func containsAnyFold(s string, ws []string) bool {
	for _, w := range ws {
		for i := 0; i+len(w) <= len(s); i++ {
			if strings.EqualFold(s[i:i+len(w)], w) {
				return true
			}
		}
	}
	return false
}

// own runs an own detector on a keyword hit text[start:end].
func (f *secretFamily) own(sc *secretScratch, text string, det int32, start, end int) {
	var fd Finding
	ok := false
	switch det {
	case ownPEM:
		if start < sc.pemSearched {
			// Inside a block already found, or before the end of a
			// failed search for an END line: searching again would make
			// repeated BEGIN lines quadratic.
			return
		}
		fd, ok = pemBlock(text, start)
		sc.pemSearched = min(len(text), start+64<<10)
		if ok {
			sc.pemSearched = fd.End
		}
	case ownPEMEnd:
		if start < sc.pemSearched {
			return // the END line of a block already found
		}
		fd, ok = pemTail(text, start)
	case ownJWT:
		fd, ok = jwtAt(text, start)
	case ownURL:
		fd, ok = urlCredentials(text, start)
	case ownBearer:
		fd, ok = bearerAt(text, start, end)
	case ownBasic:
		fd, ok = basicAt(text, start, end)
	}
	if ok {
		fd.Class = ClassSecret
		sc.found = append(sc.found, fd)
	}
}

// pemBlock matches a PEM or OpenSSH private key block starting at
// start: "-----BEGIN <label>-----", the label ending in "PRIVATE KEY"
// (or "PRIVATE KEY BLOCK"), a body of at least 64 base64 characters and
// the matching END line within 64 KiB. The span is the whole block; a
// block without its END line (a head of the file) is High too and spans
// the body.
func pemBlock(text string, start int) (Finding, bool) {
	label, rule, bodyStart, ok := keyLine(text, start, "-----BEGIN ")
	if !ok {
		return Finding{}, false
	}
	end := "-----END " + label + "-----"
	lim := min(len(text), bodyStart+64<<10)
	j := strings.Index(text[bodyStart:lim], end)
	bodyEnd := lim
	if j >= 0 {
		bodyEnd = bodyStart + j
	}
	n := 0
	k := bodyStart
	for ; k < bodyEnd; k++ {
		c := text[k]
		if isB64(c) {
			n++
		} else if j < 0 && !isSpace(c) && c != '\\' && c != ':' && c != ',' && c != '-' {
			break
		}
	}
	if n < 64 {
		return Finding{}, false
	}
	if j < 0 {
		// No END line (the first lines of a key file, read with a
		// head): key material all the same, high.
		return Finding{Rule: rule, Confidence: High, Start: bodyStart, End: k}, true
	}
	return Finding{Rule: rule, Confidence: High, Start: start, End: bodyEnd + len(end)}, true
}

// keyLine reads a private key's BEGIN or END line at start (intro is
// "-----BEGIN " or "-----END "): its label, which must end in "PRIVATE
// KEY" (or "PRIVATE KEY BLOCK"), the rule it is a finding of, and the
// offset after the line's closing "-----".
func keyLine(text string, start int, intro string) (label, rule string, end int, ok bool) {
	if !strings.HasPrefix(text[start:], intro) {
		return "", "", 0, false
	}
	rest := text[start+len(intro):]
	i := strings.Index(rest[:min(len(rest), 80)], "-----")
	if i < 0 {
		return "", "", 0, false
	}
	label = rest[:i]
	if !strings.HasSuffix(label, "PRIVATE KEY") && !strings.HasSuffix(label, "PRIVATE KEY BLOCK") {
		return "", "", 0, false
	}
	rule = RulePEMPrivateKey
	if label == "OPENSSH PRIVATE KEY" {
		rule = RuleOpenSSHPrivateKey
	}
	return label, rule, start + len(intro) + i + 5, true
}

// pemTail matches the end of a private key block whose BEGIN line is
// missing (the last lines of a key file, read with a tail): at least 64
// base64 characters, over lines, right before "-----END <label>-----" with
// a label ending in "PRIVATE KEY". The span is the body and the END line;
// it is high: key material, whatever part of it.
func pemTail(text string, start int) (Finding, bool) {
	_, rule, lineEnd, ok := keyLine(text, start, "-----END ")
	if !ok {
		return Finding{}, false
	}
	// Walk back line by line: the line right above END may be short,
	// every other body line is a full one (40 or more base64
	// characters; PEM writes 64, OpenSSH 70); a line that is not stops.
	n, k := 0, start
	for first := true; k > 0 && start-k < 64<<10; first = false {
		e := k
		for e > 0 && isSpace(text[e-1]) {
			e--
		}
		b := e
		for b > 0 && isB64(text[b-1]) {
			b--
		}
		if b == e || (b > 0 && !isSpace(text[b-1])) || (!first && e-b < 40) {
			break
		}
		n += e - b
		k = b
	}
	if n < 64 {
		return Finding{}, false
	}
	return Finding{Rule: rule, Confidence: High, Start: k, End: lineEnd}, true
}

func isB64(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '='
}

func isB64URL(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

func b64urlRun(text string, i int) int {
	for i < len(text) && isB64URL(text[i]) {
		i++
	}
	return i
}

// jwtAt matches a JWT (RFC 7519, JWS compact serialization RFC 7515 §7.1)
// starting at start: three base64url segments joined by dots, the header
// decoding to a JSON object with an "alg" member. Signed tokens are
// High, unsigned ("alg": "none", empty signature) Medium.
func jwtAt(text string, start int) (Finding, bool) {
	if start > 0 && (isB64URL(text[start-1]) || text[start-1] == '.') {
		return Finding{}, false
	}
	h := b64urlRun(text, start)
	if h-start < 10 || h >= len(text) || text[h] != '.' || h-start > 2048 {
		return Finding{}, false
	}
	p := b64urlRun(text, h+1)
	if p-h-1 < 2 || p >= len(text) || text[p] != '.' {
		return Finding{}, false
	}
	s := b64urlRun(text, p+1)
	var hdr map[string]any
	raw, err := base64.RawURLEncoding.DecodeString(text[start:h])
	if err != nil || json.Unmarshal(raw, &hdr) != nil {
		return Finding{}, false
	}
	if _, ok := hdr["alg"].(string); !ok {
		return Finding{}, false
	}
	conf := High
	if s-p-1 < 16 {
		conf = Medium
	}
	return Finding{Rule: RuleJWT, Confidence: conf, Start: start, End: s}, true
}

// urlCredentials matches scheme://user:password@host with "://" at
// start (RFC 3986 §3.2.1; the user may be empty, as in
// redis://:password@host); the span is the password.
func urlCredentials(text string, start int) (Finding, bool) {
	// Scheme: a letter, then letters, digits, "+", "-", ".".
	s := start
	for s > 0 && start-s < 32 {
		c := text[s-1]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.' {
			s--
			continue
		}
		break
	}
	if start-s < 2 {
		return Finding{}, false
	}
	u := start + 3
	colon, at := -1, -1
	for i := u; i < len(text) && i-u < 512; i++ {
		c := text[i]
		if c == '@' {
			at = i
			break
		}
		if c == ':' && colon < 0 {
			colon = i
		}
		if c == '/' || c == '?' || c == '#' || isSpace(c) || c == '"' || c == '\'' || c == '<' || c == '>' || c == '`' {
			break
		}
	}
	if colon < 0 || at < 0 || at-colon < 2 || at+1 >= len(text) {
		return Finding{}, false
	}
	if h := text[at+1]; !(isWordByte(h) || h == '[') {
		return Finding{}, false
	}
	pw := text[colon+1 : at]
	if isPlaceholder(pw) || isPasswordPlaceholder(pw) {
		return Finding{}, false
	}
	return Finding{Rule: RuleURLCredentials, Confidence: High, Start: colon + 1, End: at}, true
}

// authToken returns the token after an HTTP authentication scheme word
// text[start:end] ("Bearer", "Basic"): the word standing alone, then 1-4
// spaces or tabs, then token68 characters (RFC 9110 §11.2).
func authToken(text string, start, end int) (int, int, bool) {
	if start > 0 && isWordByte(text[start-1]) {
		return 0, 0, false
	}
	i := end
	for i < len(text) && i-end < 4 && (text[i] == ' ' || text[i] == '\t') {
		i++
	}
	if i == end {
		return 0, 0, false
	}
	j := i
	for j < len(text) && (isB64URL(text[j]) || text[j] == '.' || text[j] == '~' || text[j] == '+' || text[j] == '/') {
		j++
	}
	for j < len(text) && text[j] == '=' {
		j++
	}
	return i, j, true
}

// authorizationBefore reports whether "authorization" (any case) ends
// within 24 bytes before start.
func authorizationBefore(text string, start int) bool {
	w := text[max(0, start-40):start]
	return strings.Contains(strings.ToLower(w), "authorization")
}

// bearerAt matches a bearer token (RFC 6750 §2.1): at least 16 token68
// characters with a digit, not a placeholder. High after
// "Authorization", Medium elsewhere.
func bearerAt(text string, start, end int) (Finding, bool) {
	i, j, ok := authToken(text, start, end)
	if !ok || j-i < 16 {
		return Finding{}, false
	}
	tok := text[i:j]
	if !strings.ContainsAny(tok, "0123456789") || isPlaceholder(tok) || shannon(tok) < 3 {
		return Finding{}, false
	}
	conf := Medium
	if authorizationBefore(text, start) {
		conf = High
	}
	return Finding{Rule: RuleHTTPBearer, Confidence: conf, Start: i, End: j}, true
}

// basicAt matches Basic credentials (RFC 7617): base64 decoding to
// printable "user:password", both parts non-empty and the password not a
// placeholder.
func basicAt(text string, start, end int) (Finding, bool) {
	i, j, ok := authToken(text, start, end)
	if !ok || j-i < 8 || j-i > 1024 {
		return Finding{}, false
	}
	var buf [768]byte
	n, err := base64.StdEncoding.Decode(buf[:], []byte(text[i:j]))
	if err != nil {
		return Finding{}, false
	}
	d := buf[:n]
	c := -1
	for k, b := range d {
		if b < 0x20 || b > 0x7e {
			return Finding{}, false
		}
		if b == ':' && c < 0 {
			c = k
		}
	}
	if c <= 0 || c == len(d)-1 {
		return Finding{}, false
	}
	pw := string(d[c+1:])
	if isPlaceholder(pw) || isPasswordPlaceholder(pw) {
		return Finding{}, false
	}
	return Finding{Rule: RuleHTTPBasic, Confidence: High, Start: i, End: j}, true
}

// keyedSecret flags the value of a member whose name is secret-like
// (SecretLikeKey): a single token of 12 to 1024 bytes with Shannon
// entropy of at least 3.5 bits per byte and at least two of lower case,
// upper case and digits; or, under a password-like name, any
// non-placeholder value of 6 or more bytes. Medium confidence.
func keyedSecret(sc *secretScratch, text, key string) {
	s, e := 0, len(text)
	for s < e && isSpace(text[s]) {
		s++
	}
	for e > s && isSpace(text[e-1]) {
		e--
	}
	v := text[s:e]
	if len(v) < 6 || len(v) > 1024 || strings.ContainsAny(v, " \t\r\n") {
		return
	}
	if isPlaceholder(v) || isPasswordPlaceholder(v) || notSecretShape(v) {
		return
	}
	lk := strings.ToLower(key)
	passwordish := strings.Contains(lk, "password") || strings.Contains(lk, "passwd") || lk == "pwd" || strings.HasSuffix(lk, "_pwd")
	if !passwordish {
		if len(v) < 12 || shannon(v) < 3.5 || charClasses(v) < 2 || strings.Contains(v, "://") || v[0] == '/' {
			return
		}
	}
	conf := Medium
	if strongSecretKey(lk) && len(v) >= 16 && shannon(v) >= 4.0 && charClasses(v) >= 2 && !strings.Contains(v, "://") && v[0] != '/' {
		// A random-looking value under a name that says secret or
		// password (AWS_SECRET_ACCESS_KEY, client_secret, DB_PASSWORD) is
		// a credential, not an id: high, so the built-in policy redacts
		// it. Names that only say token or key stay medium (page tokens,
		// cache keys), as do short or low-entropy values.
		conf = High
	}
	sc.found = append(sc.found, Finding{Rule: RuleKeyedSecret, Class: ClassSecret, Confidence: conf, Start: s, End: e})
}

// strongSecretKey reports whether a lower-cased member name says secret
// or password outright (not token, key or auth alone).
func strongSecretKey(lk string) bool {
	for _, w := range []string{"secret", "password", "passwd", "passphrase", "private_key", "privatekey", "private-key"} {
		if strings.Contains(lk, w) {
			return true
		}
	}
	return false
}

func charClasses(s string) int {
	var lo, up, dg int
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z':
			lo = 1
		case 'A' <= c && c <= 'Z':
			up = 1
		case '0' <= c && c <= '9':
			dg = 1
		}
	}
	return lo + up + dg
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// githubChecksumOK checks GitHub's token checksum (ghp_, gho_, ghu_, ghs_,
// ghr_ followed by 36 base62 characters): the last 6 characters are the
// CRC32 (IEEE) of the 30 before them, in base62, zero-padded.
func githubChecksumOK(tok string) bool {
	i := strings.IndexByte(tok, '_')
	if i < 0 || len(tok)-i-1 != 36 {
		return false
	}
	body, sum := tok[i+1:len(tok)-6], tok[len(tok)-6:]
	return githubChecksum(body) == sum
}

func githubChecksum(body string) string {
	c := crc32.ChecksumIEEE([]byte(body))
	var out [6]byte
	for k := 5; k >= 0; k-- {
		out[k] = base62[c%62]
		c /= 62
	}
	return string(out[:])
}

// lineOf is the line holding text[s:e], at most 256 bytes each side
// (the bound keeps line allowlists linear on text without newlines).
func lineOf(text string, s, e int) string {
	ls := max(0, s-256)
	if i := strings.LastIndexByte(text[ls:s], '\n'); i >= 0 {
		ls += i + 1
	}
	le := min(len(text), e+256)
	if i := strings.IndexByte(text[e:le], '\n'); i >= 0 {
		le = e + i
	}
	return text[ls:le]
}

// vaultTerminated reports whether text[i:] starts with what ends a
// gitleaks token ([\x60'"\s;], a literal \n or \r, or the end).
func vaultTerminated(text string, i int) bool {
	if i >= len(text) {
		return true
	}
	switch c := text[i]; {
	case c == '`' || c == '\'' || c == '"' || c == ';' || isSpace(c):
		return true
	case c == '\\':
		return i+1 < len(text) && (text[i+1] == 'n' || text[i+1] == 'r')
	}
	return false
}

// runeSpan widens [s, e) to UTF-8 boundaries (a span next to invalid
// UTF-8, where a continuation byte stands alone, takes it in), so a
// redaction never splits a character.
func runeSpan(text string, s, e int) (int, int) {
	for s > 0 && !utf8.RuneStart(text[s]) {
		s--
	}
	for e < len(text) && !utf8.RuneStart(text[e]) {
		e++
	}
	return s, e
}
