package scan

import (
	_ "embed"
	"fmt"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"
)

// gitleaksTOML is gitleaks' default rule set (rules/README.md: source,
// commit, licence).
//
//go:embed rules/gitleaks.toml
var gitleaksTOML string

// The parts of the gitleaks configuration format this package reads.
type glConfig struct {
	Allowlist glAllowlist `toml:"allowlist"`
	Rules     []glRuleDef `toml:"rules"`
}

type glAllowlist struct {
	Description string   `toml:"description"`
	Condition   string   `toml:"condition"`
	RegexTarget string   `toml:"regexTarget"`
	Regexes     []string `toml:"regexes"`
	Stopwords   []string `toml:"stopwords"`
	Paths       []string `toml:"paths"`
}

type glRuleDef struct {
	ID          string        `toml:"id"`
	Description string        `toml:"description"`
	Regex       string        `toml:"regex"`
	Path        string        `toml:"path"`
	SecretGroup int           `toml:"secretGroup"`
	Entropy     float64       `toml:"entropy"`
	Keywords    []string      `toml:"keywords"`
	Allowlists  []glAllowlist `toml:"allowlists"`
}

// allowTarget is what an allowlist regex is matched against.
type allowTarget uint8

const (
	allowSecret allowTarget = iota // the secret (gitleaks' default)
	allowMatch                     // the whole regex match
	allowLine                      // the line holding the match
)

// allowlist is one compiled gitleaks allowlist: a finding is allowed
// (dropped) when one of the regexes matches the target, or the secret
// contains one of the stopwords (ASCII case-insensitive).
type allowlist struct {
	target allowTarget
	res    []*regexp.Regexp
	stop   *keywords
}

// precheck is a cheap test of a keyword hit's surroundings that runs
// before the rule's regular expression; it must never reject text the
// regex would match.
type precheck uint8

const (
	// checkNone: the regex runs on every hit.
	checkNone precheck = iota
	// checkAssign: a semi-generic "name = value" rule: within 64 bytes
	// after the keyword, past name characters, quotes and spaces, an
	// assignment operator, then a value of 8 or more bytes.
	checkAssign
	// checkToken: a prefixed token: 6 or more non-space bytes follow the
	// keyword.
	checkToken
	// checkCurl: curl's -u/--user or -H/--header is in the window.
	checkCurl
	// checkK8s: "kind:", spaces or tabs and an optional quote right
	// before the keyword "secret" (both alternatives of the rule need it).
	checkK8s
	// checkVault: after "s." 24 letters or digits and a non-word byte
	// (HashiCorp Vault's legacy service token); "hvs." passes.
	checkVault
)

// glRule is one compiled gitleaks rule.
type glRule struct {
	id          string
	re          *regexp.Regexp
	secretGroup int
	entropy     float64
	allow       []allowlist
	conf        Confidence
	check       precheck
	back, fwd   int // window around a keyword hit, in bytes
	githubSum   bool
	// generic: a "generic-*" rule, whose secrets get the known-shape
	// controls (notSecretShape); a provider's rule keeps its format even
	// when that is a UUID or hex (Heroku's keys are UUIDs).
	generic bool
	// A semi-generic rule split at its assignment operator: pre must
	// match the name part exactly (anchored at both ends), suf the
	// operator, value and terminator from the operator on (anchored at
	// its start); preGroups is the number of groups in pre.
	pre, suf  *regexp.Regexp
	preGroups int
	// sufCheck is a necessary condition for suf (valuecheck.go).
	sufCheck valueCheck
	// marks are the rule's keywords that its regex spells (lower case,
	// "sgp_") when it also has context keywords (the provider's name,
	// "sourcegraph"): a high-confidence match without a mark came only
	// from the context and is medium (accept).
	marks []string
}

// superseded are gitleaks rules this package replaces with its own,
// stricter detectors (secrets.go): the span of a private key block, and
// JWTs whose header is checked to decode.
var superseded = map[string]bool{
	"private-key": true,
	"jwt":         true,
	"jwt-base64":  true,
}

// lowConfidence are prefixed rules whose prefix is short or common
// enough that they only flag.
var lowConfidence = map[string]bool{
	"twilio-api-key": true, // "SK" and 32 hex digits
}

// semiGenericOp is the assignment part of gitleaks' generated
// "keyword ... = value" rules.
const semiGenericOp = `(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)`

// loadGitleaks compiles the embedded rule set: every rule's regex,
// keywords, secret group, entropy threshold and allowlists (regexes,
// regex target, stopwords; path and commit allowlists do not apply to a
// string on the wire), and the global allowlist. A rule that does not
// compile is an error naming the rule id.
func loadGitleaks() ([]glRule, allowlist, [][]string, error) {
	return loadGitleaksFrom(gitleaksTOML)
}

// loadGitleaksFrom compiles a rule set in gitleaks' format (see
// loadGitleaks).
func loadGitleaksFrom(src string) ([]glRule, allowlist, [][]string, error) {
	var cfg glConfig
	if _, err := toml.Decode(src, &cfg); err != nil {
		return nil, allowlist{}, nil, fmt.Errorf("scan: gitleaks rules: %w", err)
	}
	global, err := compileAllowlist(cfg.Allowlist)
	if err != nil {
		return nil, allowlist{}, nil, fmt.Errorf("scan: gitleaks global allowlist: %w", err)
	}
	var rules []glRule
	var kws [][]string
	for _, d := range cfg.Rules {
		if d.Regex == "" {
			// Path-only rules (a file name, e.g. pkcs12-file) say
			// nothing about a string's content.
			continue
		}
		if superseded[d.ID] {
			continue
		}
		re, err := regexp.Compile(d.Regex)
		if err != nil {
			return nil, allowlist{}, nil, fmt.Errorf("scan: gitleaks rule %q: %w", d.ID, err)
		}
		if d.SecretGroup < 0 || d.SecretGroup > re.NumSubexp() {
			return nil, allowlist{}, nil, fmt.Errorf("scan: gitleaks rule %q: secretGroup %d out of range (%d groups)", d.ID, d.SecretGroup, re.NumSubexp())
		}
		words := d.Keywords
		if len(words) == 0 {
			// A rule without keywords would have to run on every
			// string: use its literal prefix as keyword, or refuse it.
			p, _ := re.LiteralPrefix()
			if len(p) < 3 {
				return nil, allowlist{}, nil, fmt.Errorf("scan: gitleaks rule %q: no keywords and no literal prefix to use as one", d.ID)
			}
			words = []string{p}
		}
		r := glRule{id: d.ID, re: re, secretGroup: d.SecretGroup, entropy: d.Entropy, back: 64, fwd: 400, generic: strings.HasPrefix(d.ID, "generic")}
		for _, a := range d.Allowlists {
			if strings.EqualFold(a.Condition, "AND") && len(a.Paths) > 0 {
				// Needs a path to match as well: never applies here.
				continue
			}
			al, err := compileAllowlist(a)
			if err != nil {
				return nil, allowlist{}, nil, fmt.Errorf("scan: gitleaks rule %q allowlist: %w", d.ID, err)
			}
			r.allow = append(r.allow, al)
		}
		switch {
		case strings.HasPrefix(d.ID, "generic"):
			r.conf = Low
		case strings.Contains(d.Regex, semiGenericOp):
			r.conf = Medium
		case lowConfidence[d.ID]:
			r.conf = Low
		default:
			r.conf = High
		}
		switch {
		case strings.HasPrefix(d.ID, "curl-"):
			r.check = checkCurl
			r.fwd = 600
		case d.ID == "kubernetes-secret-yaml":
			r.check, r.back, r.fwd = checkK8s, 400, 600
		case strings.Contains(d.Regex, semiGenericOp):
			r.check, r.fwd = checkAssign, 240
			if err := r.split(d.Regex); err != nil {
				return nil, allowlist{}, nil, fmt.Errorf("scan: gitleaks rule %q: %w", d.ID, err)
			}
		case d.ID == "vault-service-token":
			r.check = checkVault
		case d.ID == "freemius-secret-key" || d.ID == "nuget-config-password":
			r.check = checkNone
		default:
			r.check = checkToken
		}
		if r.check == checkToken && r.conf == High {
			context := true
			var marks []string
			hasContext := false
			for _, w := range words {
				if keywordInRegex(w, d.Regex) || !isContextWord(w) {
					context = false
				}
				if keywordInRegex(w, d.Regex) {
					marks = append(marks, strings.ToLower(w))
				} else if isContextWord(w) {
					hasContext = true
				}
			}
			if hasContext && len(marks) > 0 {
				r.marks = marks
			}
			if context {
				// Every keyword only says "this provider is mentioned"
				// (facebook-access-token: "facebook" near 15 digits, a
				// "|" and a token): no fixed prefix of its own, it only
				// flags.
				r.conf = Medium
			}
		}
		switch d.ID {
		case "github-pat", "github-oauth", "github-app-token", "github-refresh-token":
			r.githubSum = true
		}
		rules = append(rules, r)
		kws = append(kws, words)
	}
	return rules, global, kws, nil
}

// split compiles a semi-generic rule's two halves (see glRule.pre). A
// leading "(?i)" applies to both.
func (r *glRule) split(src string) error {
	i := strings.Index(src, semiGenericOp)
	flags := ""
	body := src
	if strings.HasPrefix(src, "(?i)") {
		flags, body, i = "(?i)", src[4:], i-4
	}
	pre, err := regexp.Compile(flags + `\A(?:` + body[:i] + `)\z`)
	if err != nil {
		return fmt.Errorf("name part: %w", err)
	}
	suf, err := regexp.Compile(flags + `\A(?:` + body[i:] + `)`)
	if err != nil {
		return fmt.Errorf("value part: %w", err)
	}
	if pre.NumSubexp()+suf.NumSubexp() != r.re.NumSubexp() {
		return fmt.Errorf("split changes the group count")
	}
	r.pre, r.suf, r.preGroups = pre, suf, pre.NumSubexp()
	r.sufCheck = newValueCheck(flags, body[i:])
	return nil
}

// keywordInRegex reports whether keyword w occurs literally in the
// regex source (ASCII case folded, backslashes removed): the keyword is
// then part of the match, and of the whitespace-delimited token around
// it. A keyword that does not (a provider's name as context, or a prefix
// the regex spells as an alternation like "(?:ghu|ghs)_") gets a wide
// window instead of its token.
func keywordInRegex(w, src string) bool {
	return strings.Contains(strings.ToLower(strings.ReplaceAll(src, `\`, "")), strings.ToLower(w))
}

// isContextWord: a keyword of 5 or more letters only (a provider's
// name such as "facebook"), as opposed to a token prefix ("ghu_", "xoxb").
func isContextWord(w string) bool {
	if len(w) < 5 {
		return false
	}
	for i := 0; i < len(w); i++ {
		if c := w[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

func compileAllowlist(a glAllowlist) (allowlist, error) {
	var al allowlist
	switch a.RegexTarget {
	case "", "secret":
		al.target = allowSecret
	case "match":
		al.target = allowMatch
	case "line":
		al.target = allowLine
	default:
		return al, fmt.Errorf("unknown regexTarget %q", a.RegexTarget)
	}
	for _, s := range a.Regexes {
		re, err := regexp.Compile(s)
		if err != nil {
			return al, err
		}
		al.res = append(al.res, re)
	}
	if len(a.Stopwords) > 0 {
		al.stop = newKeywords(a.Stopwords)
	}
	return al, nil
}

// allows reports whether the allowlist drops a finding.
func (a *allowlist) allows(secret, match, line string) bool {
	t := secret
	switch a.target {
	case allowMatch:
		t = match
	case allowLine:
		t = line
	}
	for _, re := range a.res {
		if re.MatchString(t) {
			return true
		}
	}
	return a.stop != nil && a.stop.any(secret)
}

// passes runs the rule's precheck on a keyword hit text[start:end] and
// the window text[ws:we].
func (r *glRule) passes(text string, start, end, ws, we int) bool {
	switch r.check {
	case checkAssign:
		return assignFollows(text, end) >= 0
	case checkToken:
		n := 0
		for i := end; i < len(text) && n < 6; i++ {
			if isSpace(text[i]) {
				break
			}
			n++
		}
		return n >= 6
	case checkCurl:
		w := text[ws:we]
		return strings.Contains(w, "-u") || strings.Contains(w, "--user") || strings.Contains(w, "-H") || strings.Contains(w, "--header")
	case checkK8s:
		i := start
		for i > 0 && start-i < 16 && (text[i-1] == ' ' || text[i-1] == '\t' || text[i-1] == '"' || text[i-1] == '\'') {
			i--
		}
		return i >= 5 && strings.EqualFold(text[i-5:i], "kind:")
	case checkVault:
		if end-start != 2 {
			return true // "hvs."
		}
		if end+24 > len(text) || end+24 < len(text) && isWordByte(text[end+24]) {
			return false
		}
		for i := end; i < end+24; i++ {
			if !isAlnum(text[i]) {
				return false
			}
		}
		return true
	}
	return true
}

// assignFollows returns the offset of the assignment operator when,
// after a keyword ending at end, the text has (within 64 bytes) name
// characters, quotes or spaces, then an assignment operator, then up to 8
// quote, space or operator bytes and a value of at least 8 bytes; -1
// otherwise.
func assignFollows(text string, end int) int {
	i, lim := end, min(len(text), end+64)
	for i < lim && (isWordByte(text[i]) || text[i] == '.' || text[i] == '-' || text[i] == '\'' || text[i] == '"' || isSpace(text[i])) {
		i++
	}
	if i >= lim {
		return -1
	}
	switch text[i] {
	case '=', '>', ':', '|', '?', ',':
	default:
		return -1
	}
	op := i
	lim = min(len(text), i+8)
	for i < lim && strings.IndexByte("=>:|?,`'\" \t\r\n", text[i]) >= 0 {
		i++
	}
	n := 0
	for ; i < len(text) && n < 8; i++ {
		c := text[i]
		if isSpace(c) || c == '"' || c == '\'' || c == '`' || c == ';' {
			break
		}
		n++
	}
	if n < 8 {
		return -1
	}
	return op
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}
