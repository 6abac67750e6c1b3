package scan

import (
	"sort"
	"strings"
)

// The injection rules (ClassInjection; ModeData and ModeToolDefinition).
// Patterns: inject_match.go. Confidence: an explicit override directive
// addressed to the model is High; a persona switch, a concealment or
// exfiltration instruction, a fake role marker Medium or High as noted;
// a weak alternative ("*") lowers a match by one level; quoting, code and
// prose about injection lower it to Low (injectionFamily.context).

// Word sets shared by patterns.
const (
	overrideVerbs = "ignore|ignoring|disregard|disregarding|forget|forgetting|override|overriding|bypass|discard|abandon|neglect|do+not+follow|don't+follow|dont+follow|stop+following|no+longer+follow|cease+following|do+not+obey|don't+obey|stop+obeying"
	priorWords    = "previous|previously|prior|above|earlier|preceding|foregoing|former|original|initial|old|existing|past|system|developer|your|*all|*any|**these|**those|**the|**other|**such"
	instrWords    = "instructions|instruction|prompt|prompts|directions|directives|directive|guidelines|guidance|rules|commands|orders|constraints|restrictions|programming|policies|safeguards|guardrails|training|context|messages|text|content|conversation"
	userWords     = "user|users|human|humans|operator|requester|requestor|customer|client"
)

func injectionRules() []*injRule {
	return []*injRule{
		{
			id: "injection-ignore-instructions", class: ClassInjection, conf: High, modes: inBoth,
			phrases: []string{
				overrideVerbs + " ~3 " + priorWords + " ~2 " + instrWords,
				overrideVerbs + " ~1 everything|*anything|*all ~2 above|before|previously|prior|earlier|said|told|written|so+far",
				overrideVerbs + " ~3 " + instrWords + " ~1 above|before|earlier|previously|so+far|you+were+given|you+received|you+have+been+given|you+were+told",
			},
			check: checkIgnore,
		},
		{
			id: "injection-new-role", class: ClassInjection, conf: High, modes: inBoth,
			phrases: []string{
				"you+are+now|you're+now|youre+now|from+now+on+you+are|from+now+on+you+will+be|you+will+now+be|you+will+now+act+as|henceforth+you+are ~2 dan|jailbroken|unrestricted|unfiltered|uncensored|unbound|unlimited|liberated|evil|rogue|no+longer|free+from|freed|developer+mode|god+mode|admin+mode|system",
				"you+are+now|you're+now|youre+now|from+now+on+you+are|you+will+now+be|you+will+now+act+as ~0 *a|*an|*the|*my ~2 *ai|*assistant|*model|*chatbot|*bot|*llm|*agent|*persona|*character|*hacker|*pirate",
				"from+now+on ~0 you ~0 will|must|shall|should ~0 *always|*only|*never|*ignore|*obey|*answer|*respond|*reply|*act",
				"act+as|acting+as|pretend+to+be|pretend+you+are|roleplay+as|role-play+as|behave+as|behave+like|impersonate ~2 *system|*the+system|*dan|*an+unrestricted|*an+unfiltered|*an+uncensored|*a+jailbroken|*jailbroken|*developer+mode|*an+ai+without|*an+ai+with+no",
				"enter|enable|activate|switch+to|switch+into|enter+into ~1 *dan+mode|*god+mode|*jailbreak+mode|*unrestricted+mode|*unfiltered+mode",
			},
		},
		{
			id: "injection-system-prompt", class: ClassInjection, conf: High, modes: inBoth,
			phrases: []string{
				"override|overwrite|replace|rewrite|change|modify|update ~1 *the|your|**a ~0 system+prompt|system+message|system+instructions|system+instruction|initial+instructions|core+instructions",
				combine("*new|*updated|*revised", "system+prompt|system+message|system+instructions|system+instruction"),
				"system+prompt|system+instructions ~0 override|overridden|updated|changed|replaced",
				"your ~0 new|real|actual|true|updated|revised ~0 instructions|rules|task|objective|goal|role|purpose|system+prompt|directive|mission",
			},
			literals: revealObjects,
			check:    checkReveal,
		},
		{
			id: "injection-role-marker", class: ClassInjection, conf: High, modes: inBoth,
			literals: []string{
				"<|im_start|>", "<|im_end|>", "<|system|>", "<|user|>", "<|assistant|>", "<|endoftext|>",
				"<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|tool_call|>",
				"<start_of_turn>", "<end_of_turn>", "[inst]", "[/inst]", "<<sys>>", "<</sys>>",
				"</tool_result>", "</tool_results>", "</function_results>", "</function_result>", "<function_results>",
				"</tool_output>", "</tool_response>", "<tool_response>", "</tool_use>", "</search_results>",
				"### system:", "### instruction:", "### instructions:", "### human:", "### assistant:", "### user:",
				"human:", "assistant:", "system:", "<system>", "</system>",
			},
			check: checkRoleMarker,
		},
		{
			id: "injection-conceal", class: ClassInjection, conf: Medium, modes: inData,
			phrases: concealPhrases, check: checkConceal,
		},
		{
			id: "injection-exfiltration", class: ClassInjection, conf: High, modes: inBoth,
			literals:  exfilDataWords(),
			check:     checkExfiltration,
			maskQuery: true,
		},
		{
			id: "injection-markdown-exfiltration", class: ClassInjection, conf: High, modes: inBoth,
			literals:  []string{"](http://", "](https://", "](//"},
			check:     checkMarkdownURL,
			maskQuery: true,
		},
		{
			id: "injection-tool-call", class: ClassInjection, conf: Medium, modes: inData,
			phrases: []string{
				combine("call|invoke|execute|trigger|run|use|launch", "the|a|your") + " ~0 ? ~0 tool|function|command",
				combine("call|invoke|execute|trigger|use", "the+tool|the+function|a+tool|a+function|tool|function") + " ~0 '",
			},
			check: checkToolCall,
		},
		{
			id: ruleHTMLComment, class: ClassInjection, conf: Medium, modes: inBoth,
			literals: []string{"<!--"},
			check:    checkHTMLComment,
		},
		{
			// Emitted by injectionFamily.hidden: hiding characters inside a
			// match, or tag-character text.
			id: ruleHiddenText, class: ClassInjection, conf: High, modes: inBoth, noContext: true,
		},
	}
}

// revealObjects are what an instruction to reveal the prompt names (the
// keywords of checkReveal).
var revealObjects = []string{
	"system prompt", "system message", "system instructions", "initial prompt", "hidden prompt",
	"hidden instructions", "developer message", "initial instructions", "original instructions",
	"your instructions", "your prompt", "your rules", "your guidelines",
}

var revealVerbs = wordSet("reveal", "print", "output", "repeat", "display", "dump", "leak", "disclose", "show", "recite",
	"share", "echo", "spell", "tell", "give", "write", "send", "paste", "list")

// checkReveal handles the reveal keywords of injection-system-prompt
// (its phrases pass): a revealing verb at most 4 words before the object
// in its sentence; Medium when the object is "your" (addressed to the
// model), Low otherwise ("show the system prompt" in an application's
// documentation).
func checkReveal(c *injCtx, h *injHit) bool {
	if h.m.n > 0 {
		return true
	}
	t := c.v.text
	if h.start > 0 && isWordChar(t[h.start-1]) || h.end < len(t) && isWordChar(t[h.end]) {
		return false
	}
	verb, between := verbBefore(t, h.start, 4, revealVerbs)
	if verb < 0 {
		return false
	}
	h.conf = Low
	obj := strings.ToLower(t[h.start:h.end])
	if strings.HasPrefix(obj, "your ") {
		h.conf = Medium
	}
	for _, w := range between {
		if w == "your" {
			h.conf = Medium
		}
	}
	h.start = verb
	return true
}

// concealPhrases are instructions to hide something from the user
// (injection-conceal in data, poisoning-hidden-directive in definitions).
var concealPhrases = []string{
	"do+not|don't|dont|never|must+not|should+not ~0 tell|inform|notify|alert|mention|reveal|disclose|show|warn|let ~4 the+" + strings.ReplaceAll(userWords, "|", "|the+") + "|your+user|the+end+user|" + userWords,
	"without|secretly|silently|quietly ~0 telling|informing|notifying|alerting|warning|asking|letting|mentioning ~2 the+" + strings.ReplaceAll(userWords, "|", "|the+") + "|them|anyone|" + userWords,
	concealModals + " ~0 know|see|notice|find+out|be+told|be+informed|learn|be+aware|discover",
	"keep|hide ~2 this|it|that|these|everything ~2 secret|hidden|confidential|private|from ~2 the+" + strings.ReplaceAll(userWords, "|", "|the+") + "|" + userWords,
	"hide|conceal ~2 this|it|that|these|everything ~0 from ~0 the+" + strings.ReplaceAll(userWords, "|", "|the+"),
}

// concealModals open "the user must not know" (the user word before
// them is checked by checkConceal: anchoring on every user word and modal
// pair would bloat the keyword automaton).
const concealModals = "must+not|should+not|shouldn't|mustn't|must+never|should+never|cannot|can't|may+not|needs+not|does+not+need+to|doesn't+need+to|is+not+to|isn't+to"

// checkConceal requires the user word before a match that starts with a
// modal ("must not know") and starts the span there.
func checkConceal(c *injCtx, h *injHit) bool {
	t := c.v.text
	first := strings.ToLower(t[h.m.stepStart[0]:h.m.stepEnd[0]])
	modal := false
	for _, m := range strings.Split(concealModals, "|") {
		if strings.ReplaceAll(m, "+", " ") == first {
			modal = true
			break
		}
	}
	if !modal {
		return true
	}
	i := h.start
	for i > 0 && !isWordChar(t[i-1]) && h.start-i < 4 {
		i--
	}
	j := i
	for j > 0 && isWordChar(t[j-1]) {
		j--
	}
	if j == i {
		return false
	}
	w := strings.ToLower(t[j:i])
	for _, u := range strings.Split(userWords, "|") {
		if w == u {
			h.start = j
			return true
		}
	}
	return false
}

// checkIgnore lowers a weak qualifier followed by a place ("ignore any
// instructions in the retrieved pages", a defensive statement) to Low.
func checkIgnore(c *injCtx, h *injHit) bool {
	if h.m.weak == 0 {
		return true
	}
	t := c.v.text
	if s, e, ok := nextWord(t, h.end, false); ok {
		switch strings.ToLower(t[s:e]) {
		case "in", "from", "found", "contained", "within", "inside", "embedded", "that", "which", "you", "on":
			h.conf = Low
		}
	}
	return true
}

// checkRoleMarker grades the chat-role and tool-boundary markers: the
// special tokens and tool-result boundaries are High, [INST]/<<SYS>> and
// "### System:" style headers Medium; bare "Human:"/"Assistant:"/
// "System:" count only at the start of a line after a blank line (a
// transcript turn), Medium, and need the other role's turn in the text.
func checkRoleMarker(c *injCtx, h *injHit) bool {
	t := c.v.text
	lit := strings.ToLower(t[h.start:h.end])
	lineStart := func() bool {
		i := h.start
		for i > 0 && (t[i-1] == ' ' || t[i-1] == '\t') {
			i--
		}
		return i == 0 || t[i-1] == '\n'
	}
	switch {
	case strings.HasPrefix(lit, "<|"), strings.HasPrefix(lit, "</"), strings.HasPrefix(lit, "<function"), strings.HasPrefix(lit, "<tool"),
		strings.HasPrefix(lit, "<start_of_turn"), strings.HasPrefix(lit, "<end_of_turn"):
		h.conf = High
	case strings.HasPrefix(lit, "###"):
		if !lineStart() {
			return false
		}
		h.conf = Medium
	case lit == "human:" || lit == "assistant:" || lit == "system:":
		if h.start > 0 && isWordChar(t[h.start-1]) || !lineStart() {
			return false
		}
		i := h.start
		for i > 0 && (t[i-1] == ' ' || t[i-1] == '\t') {
			i--
		}
		if i < 2 || t[i-1] != '\n' || t[i-2] != '\n' && !(t[i-2] == '\r' && i >= 3 && t[i-3] == '\n') {
			return false // a turn starts after a blank line
		}
		if c.turns == 0 {
			c.turns = 1
			if indexFoldASCII(t, "\nhuman:") >= 0 {
				c.turns |= 2
			}
			if indexFoldASCII(t, "\nassistant:") >= 0 {
				c.turns |= 4
			}
		}
		switch lit {
		case "human:":
			if c.turns&4 == 0 {
				return false
			}
		case "assistant:":
			if c.turns&2 == 0 {
				return false
			}
		default:
			if c.turns&6 == 0 {
				return false
			}
		}
		h.conf = Medium
	default:
		h.conf = Medium
	}
	return true
}

// exfilData are the data an exfiltration sends, with how much each
// weakens the match (0: High; 1: Medium, as API documentation sends keys
// and tokens to its own endpoints). Common words ("data", "file",
// "output") are no anchors: they would be keyword hits everywhere.
var exfilData = map[string]int{
	"secret": 0, "secrets": 0, "credential": 0, "credentials": 0, "password": 0, "passwords": 0,
	"passphrase": 0, "private key": 0, "private keys": 0, "ssh key": 0, "ssh keys": 0, "id_rsa": 0,
	"env": 0, "environment variables": 0, "env vars": 0, "conversation": 0, "conversations": 0,
	"chat history": 0, "conversation history": 0, "chat log": 0, "chat logs": 0,
	"previous messages": 0, "system prompt": 0,
	"api key": 1, "api keys": 1, "apikey": 1, "apikeys": 1, "access key": 1, "access keys": 1,
	"token": 1, "tokens": 1, "cookie": 1, "cookies": 1, "session": 1, "sessions": 1, "messages": 1,
	"contents": 1, "history": 1,
}

func exfilDataWords() []string {
	out := make([]string, 0, len(exfilData))
	for w := range exfilData {
		out = append(out, w)
	}
	sort.Strings(out)
	return out
}

// exfilVerbs send data somewhere; one must stand at most 7 words before the
// data in its sentence.
var exfilVerbs = wordSet("send", "post", "forward", "upload", "transmit", "exfiltrate", "leak", "email", "e-mail", "mail",
	"submit", "copy", "paste", "append", "attach", "deliver", "share", "relay", "report", "include", "encode", "embed", "put", "add")

// verbBefore returns the view offset of the word of set that stands at
// most n words before view offset p in its sentence (-1 if none), and the
// words between it and p.
func verbBefore(t string, p, n int, set map[string]bool) (int, []string) {
	var between []string
	var buf [16]byte
	for k := 0; k < n; k++ {
		s, e, ok := prevWord(t, p)
		if !ok {
			return -1, nil
		}
		if w := e - s; w <= len(buf) {
			for i := 0; i < w; i++ {
				buf[i] = lowerASCII(t[s+i])
			}
			if set[string(buf[:w])] {
				return s, between
			}
			between = append(between, string(buf[:w]))
		}
		p = s
	}
	return -1, nil
}

// prevWord returns the word that ends before view offset p, not crossing
// a sentence end or more than 40 bytes of separators.
func prevWord(t string, p int) (int, int, bool) {
	i := p
	for i > 0 && !isWordChar(t[i-1]) {
		switch t[i-1] {
		case '.', '!', '?', ';':
			if i < len(t) && (t[i] == ' ' || t[i] == '\n' || t[i] == '\t') {
				return 0, 0, false
			}
		case '\n':
			if i >= 2 && t[i-2] == '\n' {
				return 0, 0, false
			}
		}
		if p-i > 40 {
			return 0, 0, false
		}
		i--
	}
	if i == 0 {
		return 0, 0, false
	}
	e := i
	for i > 0 && (isWordChar(t[i-1]) || ((t[i-1] == '\'' || t[i-1] == '-') && i >= 2 && isWordChar(t[i-2]) && i < e)) {
		i--
	}
	return i, e, true
}

// exfilPrepositions lead from the data to its destination.
var exfilPrepositions = []string{" to ", " at ", " into ", " via ", " using ", " in ", " as "}

// checkExfiltration requires a destination (a URL or an e-mail address,
// after "to", "at", "into", "via", "using", "in" or "as") in the rest of
// the sentence; the span ends after it.
func checkExfiltration(c *injCtx, h *injHit) bool {
	t := c.v.text
	if h.start > 0 && isWordChar(t[h.start-1]) || h.end < len(t) && isWordChar(t[h.end]) {
		return false // inside a word
	}
	if !preDestination(t, h.end) {
		return false
	}
	weak := exfilData[strings.ToLower(t[h.start:h.end])]
	verb, _ := verbBefore(t, h.start, 7, exfilVerbs)
	if verb < 0 {
		return false
	}
	h.start = verb
	h.conf = lower(High, weak)
	end := sentenceEnd(t, h.end, 240)
	rest := t[h.end:end]
	dest := strings.Index(rest, "://")
	if dest >= 0 {
		for dest > 0 && isAlnum(rest[dest-1]) {
			dest-- // the scheme
		}
	}
	for from := 0; ; {
		i := strings.IndexByte(rest[from:], '@')
		if i < 0 {
			break
		}
		i += from
		if mailAddressAt(rest, i) {
			for i > 0 && (isAlnum(rest[i-1]) || rest[i-1] == '.' || rest[i-1] == '_' || rest[i-1] == '-' || rest[i-1] == '+') {
				i--
			}
			if dest < 0 || i < dest {
				dest = i
			}
			break
		}
		from = i + 1
	}
	if dest < 0 {
		return false
	}
	lead := " " + rest[:dest] + " "
	found := false
	for _, w := range exfilPrepositions {
		if indexFoldASCII(lead, w) >= 0 {
			found = true
			break
		}
	}
	if !found {
		return false
	}
	// The span ends after the destination's first token.
	e := h.end + dest
	for e < end && t[e] != ' ' && t[e] != '\n' && t[e] != '\t' && t[e] != ')' && t[e] != '"' && t[e] != '\'' {
		e++
	}
	for e > h.end && (t[e-1] == '.' || t[e-1] == ',') {
		e--
	}
	h.end = e
	return true
}

// mailAddressAt reports whether s[i] is the '@' of an e-mail address.
func mailAddressAt(s string, i int) bool {
	if i == 0 || i+1 >= len(s) || !isAlnum(s[i-1]) && s[i-1] != '.' && s[i-1] != '_' {
		return false
	}
	j := i + 1
	dot := false
	for j < len(s) && (isAlnum(s[j]) || s[j] == '-' || s[j] == '.') {
		if s[j] == '.' && j+1 < len(s) && isAlnum(s[j+1]) {
			dot = true
		}
		j++
	}
	return dot
}

// markdownDataParams are query parameter names that carry data.
var markdownDataParams = []string{"data", "d", "q", "secret", "secrets", "token", "key", "apikey", "api_key", "password", "pass", "pwd", "history", "chat", "conversation", "conv", "prompt", "content", "info", "msg", "message", "messages", "text", "payload", "exfil", "leak", "env", "cookie", "session", "ssn", "email", "user", "memory", "context"}

// checkMarkdownURL flags a markdown image or link whose URL carries data
// in its query string: a template ("{...}", "[...]", "<...>", "$VAR")
// is High for an image and Medium for a link; a data-named parameter of
// an image is Medium. Images load without a click, so they leak on
// render.
func checkMarkdownURL(c *injCtx, h *injHit) bool {
	t := c.v.text
	// The URL runs to the closing parenthesis.
	us := h.start + 2
	ue := us
	for ue < len(t) && ue-us < 2048 && t[ue] != ')' && t[ue] != ' ' && t[ue] != '\n' {
		ue++
	}
	url := t[us:ue]
	q := strings.IndexByte(url, '?')
	if q < 0 {
		return false
	}
	query := url[q+1:]
	// The label starts at the '[' that opens it.
	ls := -1
	for i := h.start - 1; i >= 0 && h.start-i < 512; i-- {
		if t[i] == '[' {
			ls = i
			break
		}
		if t[i] == '\n' || t[i] == ']' {
			break
		}
	}
	if ls < 0 {
		return false
	}
	image := ls > 0 && t[ls-1] == '!'
	template := strings.ContainsAny(query, "{}[]<>$") || indexFoldASCII(query, "%7b") >= 0 || indexFoldASCII(query, "%3c") >= 0
	named := false
	for rest := query; rest != ""; {
		kv := rest
		if i := strings.IndexByte(rest, '&'); i >= 0 {
			kv, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		k, val, ok := strings.Cut(kv, "=")
		if !ok || val == "" {
			continue
		}
		for _, p := range markdownDataParams {
			if equalFoldASCII(k, p) {
				named = true
			}
		}
	}
	switch {
	case image && template:
		h.conf = High
	case template || (image && named):
		h.conf = Medium
	default:
		return false
	}
	h.start = ls
	if image {
		h.start = ls - 1
	}
	h.end = ue
	if ue < len(t) && t[ue] == ')' {
		h.end = ue + 1
	}
	return true
}

// toolCallUrgent are words that make an instruction to call a tool
// pressing or covert (Medium); without one it is Low.
var toolCallUrgent = []string{
	"immediately", "right now", "right away", "first", "before answering", "before responding", "before replying",
	"before you answer", "before you respond", "without asking", "without confirmation", "without telling",
	"without informing", "silently", "secretly", "automatically", "always", "~/", ".ssh", "id_rsa", ".env",
	"passwd", "credential", "secret", "token", "api key", "password", "private key",
}

// checkToolCall keeps an instruction to call a tool only when the tool
// is named like one (an identifier with "_", "-" or a quoted or
// backticked name: "use the search tool" in documentation is ordinary),
// and Medium only when it is pressing or covert or touches secrets in the
// same sentence.
func checkToolCall(c *injCtx, h *injHit) bool {
	t := c.v.text
	named := false
	for k := 0; k < h.m.n; k++ {
		w := t[h.m.stepStart[k]:h.m.stepEnd[k]]
		if strings.ContainsAny(w, "_-") || (h.m.stepStart[k] > 0 && isQuote(t[h.m.stepStart[k]-1])) {
			named = true
		}
	}
	if !named {
		return false
	}
	e := sentenceEnd(t, h.end, 240)
	s := sentenceStart(t, h.start, 120)
	if !c.f.urgent.any(t[s:e]) {
		h.conf = Low
	}
	return true
}

// commentAddressees and commentDirectives mark an HTML comment written
// to the model (words of the comment, lowercase; a directive may be two
// words).
var (
	commentAddressees = wordSet("ai", "assistant", "model", "agent", "llm", "claude", "gpt", "chatgpt", "copilot", "gemini", "chatbot", "bot")
	commentDirectives = wordSet("ignore", "must", "always", "never", "instead", "send", "call", "execute", "run", "reveal", "tell", "include", "append", "forward", "instructions", "don't", "do not", "you are", "your task")
)

func wordSet(words ...string) map[string]bool {
	m := map[string]bool{}
	for _, w := range words {
		m[w] = true
	}
	return m
}

// checkHTMLComment flags an HTML comment addressed to the model with a
// directive in it (Medium; High when another rule matched inside it,
// injectionFamily.comments). The span is the whole comment.
func checkHTMLComment(c *injCtx, h *injHit) bool {
	t := c.v.text
	if h.start < c.commentTo {
		return false // inside a comment examined already
	}
	limit := h.end + 8192
	if limit > len(t) {
		limit = len(t)
	}
	e := strings.Index(t[h.end:limit], "-->")
	if e < 0 {
		e = limit
	} else {
		e = h.end + e + 3
	}
	body := t[h.end:e]
	c.commentTo = e
	addressed, directive := false, false
	var buf, prev [16]byte
	pn := 0
	for p := 0; p < len(body) && !(addressed && directive); {
		ws, we, ok := nextWord(body, p, true)
		if !ok {
			break
		}
		p = we
		n := we - ws
		if n > len(buf) {
			pn = 0
			continue
		}
		for i := 0; i < n; i++ {
			buf[i] = lowerASCII(body[ws+i])
		}
		w := buf[:n]
		if commentAddressees[string(w)] {
			addressed = true
		}
		if commentDirectives[string(w)] {
			directive = true
		}
		if pn > 0 && pn+1+n <= 40 {
			var two [40]byte
			k := copy(two[:], prev[:pn])
			two[k] = ' '
			k++
			k += copy(two[k:], w)
			if commentDirectives[string(two[:k])] {
				directive = true
			}
		}
		pn = copy(prev[:], w)
	}
	if !addressed || !directive {
		return false
	}
	h.end = e
	return true
}

// combine joins every alternative of a with every alternative of b into
// one alternative of consecutive words ("a1+b1|a1+b2|...").
func combine(a, b string) string {
	var out []string
	for _, x := range strings.Split(a, "|") {
		for _, y := range strings.Split(b, "|") {
			out = append(out, x+"+"+y)
		}
	}
	return strings.Join(out, "|")
}
