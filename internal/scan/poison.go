package scan

import "strings"

// The poisoning rules (ClassPoisoning; ModeToolDefinition only): a tool's
// name, title, description or schema text that tells the model to do
// something the user did not ask for. The injection rules run on
// definitions too (inject_rules.go); hiding characters in a definition
// are poisoning-invisible-characters (injectionFamily.hidden).

// sensitiveFiles are paths and names whose reading a tool description
// has no business asking for (High), and words for secrets in general
// (Medium).
var (
	sensitivePaths = []string{
		"~/.ssh", ".ssh/", "id_rsa", "id_ed25519", "id_ecdsa", "id_dsa", "authorized_keys", "known_hosts",
		"/etc/passwd", "/etc/shadow", "/etc/sudoers", ".aws/credentials", ".aws/config", ".netrc", ".npmrc",
		".pypirc", ".git-credentials", ".gitconfig", "mcp.json", "claude_desktop_config.json", ".cursor/",
		".kube/config", ".docker/config.json", ".bash_history", ".zsh_history", "wallet.dat", ".gnupg",
		"keychain", ".env", "/proc/self/environ", ".config/gh/hosts.yml",
	}
	sensitiveWords = []string{
		"credentials", "private key", "private keys", "api key", "api keys", "secret key", "secret keys",
		"access token", "access tokens", "passwords", "ssh key", "ssh keys", "environment variables", "config file",
		"configuration file", "conversation history", "chat history", "system prompt",
	}
	readVerbSet = wordSet(
		"read", "open", "cat", "load", "access", "include", "fetch", "get", "send", "upload", "attach", "provide",
		"pass", "retrieve", "grab", "collect", "extract", "copy", "look", "check", "print", "output", "show",
		"list", "append", "add", "embed", "insert", "put", "paste", "dump", "exfiltrate", "forward", "give",
	)
)

func poisoningRules() []*injRule {
	return []*injRule{
		{
			id: "poisoning-hidden-directive", class: ClassPoisoning, conf: High, modes: inDefinition,
			literals: []string{
				"<important>", "<system>", "<instructions>", "<instruction>", "<secret>", "<hidden>", "<admin>",
				"<override>", "<critical>", "<system_prompt>", "<sys>", "<note_to_ai>", "<ai_instructions>",
				"<assistant_instructions>", "[important]", "[system]", "[hidden]",
			},
			check:     checkDirectiveTag,
			noContext: true,
		},
		{
			id: "poisoning-conceal", class: ClassPoisoning, conf: High, modes: inDefinition,
			phrases: append(append([]string{}, concealPhrases...),
				"do+not|don't|dont|never ~0 mention|reveal|disclose|show|explain|describe ~2 this|these|that|it|the ~1 instructions|instruction|step|steps|note|behavior|behaviour|requirement",
			),
			check: checkConceal,
		},
		{
			id: "poisoning-sensitive-file", class: ClassPoisoning, conf: High, modes: inDefinition,
			literals: append(append([]string{}, sensitivePaths...), sensitiveWords...),
			check:    checkSensitiveFile,
		},
		{
			id: "poisoning-extra-argument", class: ClassPoisoning, conf: High, modes: inDefinition,
			phrases: []string{
				argVerbs + " ~5 " + strongArgData + " ~2 as|in|into|inside|via|within|through|to|under ~3 parameter|argument|field|param|arg|property|key|'",
				argVerbs + " ~5 content|contents|data|text|output|file|files|result|results|details|information ~2 as|in|into|inside|via|within|through|to|under ~3 " + hiddenParams,
			},
			check: checkExtraArgument,
		},
		{
			id: "poisoning-cross-tool", class: ClassPoisoning, conf: High, modes: inDefinition,
			phrases: []string{
				"when|whenever|before|after|if|once ~1 the|a|any ~0 ? ~0 tool|function|server ~0 is|are|gets|was|has+been ~0 used|called|invoked|run|executed|available|requested|triggered",
				"when|whenever|before|after|while ~0 using|calling|invoking|running|executing|sending ~1 the|a|any ~0 ? ~0 tool|function",
				"when|whenever|before|after|while ~0 using|calling|invoking|running|executing|sending ~0 ? ~0 tool|function",
				"*instead+of ~0 using|calling|invoking ~1 the ~0 ? ~0 tool|function",
				"**do+not|**don't|**dont|**never ~0 use|call|invoke ~2 other|any+other|the+other|another ~0 tool|tools|function|functions",
				"*this+tool|*this+function ~0 replaces|overrides|supersedes|shadows ~2 the ~0 ?",
			},
			pre:   preToolWord,
			check: checkCrossTool,
		},
		{
			// Emitted by injectionFamily.hidden for every run of hiding
			// characters in a definition.
			id: rulePoisonInvisible, class: ClassPoisoning, conf: Medium, modes: inDefinition, noContext: true,
		},
	}
}

const (
	argVerbs      = "pass|put|include|add|place|provide|insert|append|embed|encode|send|store|set|attach|copy|paste|fill|supply|write"
	strongArgData = "conversation|conversations|history|previous+messages|chat|messages|system+prompt|prompt|instructions|private+key|ssh|id_rsa|env|environment|*secret|*secrets|*credential|*credentials|*password|*passwords|*api+key|*api+keys|*token|*tokens|*keys"
	hiddenParams  = "sidenote|side_note|side-note|note|notes|metadata|meta|extra|hidden|comment|comments|annotation|annotations|debug|feedback|reasoning|context|remark|remarks|'sidenote'"
)

// checkDirectiveTag extends a hidden-directive tag to its closing tag (or
// the end of the sentence).
func checkDirectiveTag(c *injCtx, h *injHit) bool {
	t := c.v.text
	if h.start < c.directiveTo {
		return false // inside a directive found already
	}
	tag := strings.ToLower(t[h.start:h.end])
	if tag[0] == '<' {
		closing := "</" + tag[1:]
		limit := h.end + 2048
		if limit > len(t) {
			limit = len(t)
		}
		if i := indexFoldASCII(t[h.end:limit], closing); i >= 0 {
			h.end += i + len(closing)
			c.directiveTo = h.end
			return true
		}
	}
	h.end = sentenceEnd(t, h.end, 400)
	c.directiveTo = h.end
	return true
}

// checkSensitiveFile requires a reading verb before the path or word in
// its sentence; a word for secrets in general is Medium.
func checkSensitiveFile(c *injCtx, h *injHit) bool {
	t := c.v.text
	lit := strings.ToLower(t[h.start:h.end])
	isWord := false
	for _, w := range sensitiveWords {
		if w == lit {
			isWord = true
			break
		}
	}
	if isWord {
		if h.start > 0 && isWordChar(t[h.start-1]) || h.end < len(t) && isWordChar(t[h.end]) {
			return false
		}
		h.conf = Medium
	} else if lit == ".env" || lit == "keychain" || lit == "mcp.json" || lit == ".gnupg" {
		if h.start > 0 && (isAlnum(t[h.start-1]) || t[h.start-1] == '.' || t[h.start-1] == '_') || h.end < len(t) && isAlnum(t[h.end]) {
			return false
		}
	}
	s := sentenceStart(t, h.start, 200)
	before := t[s:h.start]
	verb := -1
	var buf [16]byte
	for p := 0; p < len(before) && verb < 0; {
		ws, we, ok := nextWord(before, p, true)
		if !ok {
			break
		}
		p = we
		if n := we - ws; n <= len(buf) {
			for i := 0; i < n; i++ {
				buf[i] = lowerASCII(before[ws+i])
			}
			if readVerbSet[string(buf[:n])] {
				verb = ws
			}
		}
	}
	if verb < 0 {
		return false
	}
	h.start = s + verb
	// The path token runs to the next space.
	for h.end < len(t) && t[h.end] != ' ' && t[h.end] != '\n' && t[h.end] != '\t' && t[h.end] != ')' && t[h.end] != '"' && t[h.end] != '\'' && t[h.end] != '`' && t[h.end] != ',' {
		h.end++
	}
	for h.end > h.start && t[h.end-1] == '.' {
		h.end--
	}
	return true
}

// crossDirectives are the words of an instruction about another tool's
// use that change what it does.
var crossDirectives = []string{
	"always", "must", "also", "add ", "include", "bcc", "cc ", "change", "replace", "redirect", "instead",
	"send", "set ", "first", "make sure", "ensure", "never", "do not", "don't", "copy", "forward", "append",
	"prepend", "override", "modify", "use ", "call ", "the recipient", "to the address",
}

// checkCrossTool drops references to the tool itself or to no tool in
// particular ("when this tool is used", "when a tool is called") and
// grades the rest: High with a directive that changes the other tool's
// behaviour in the sentence, Medium otherwise.
func checkCrossTool(c *injCtx, h *injHit) bool {
	t := c.v.text
	for k := 1; k < h.m.n; k++ {
		switch strings.ToLower(t[h.m.stepStart[k]:h.m.stepEnd[k]]) {
		case "tool", "function", "server":
		default:
			continue
		}
		switch strings.ToLower(t[h.m.stepStart[k-1]:h.m.stepEnd[k-1]]) {
		case "this", "that", "same", "current", "each", "every", "any", "which", "what", "a", "an", "the", "these",
			"those", "its", "my", "your", "our", "their", "it", "mcp", "one", "first", "next", "previous", "search":
			return false
		}
		break
	}
	if h.m.weak > 0 {
		return true
	}
	e := sentenceEnd(t, h.end, 300)
	if !c.f.crossDir.any(t[h.end:e]) {
		h.conf = Medium
	}
	return true
}

// checkExtraArgument extends the span over the closing quotation mark of
// a quoted parameter name.
func checkExtraArgument(c *injCtx, h *injHit) bool {
	t := c.v.text
	if h.end < len(t) && isQuote(t[h.end]) {
		h.end++
	}
	return true
}
