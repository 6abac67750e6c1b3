// Package toolmeta normalizes a tool's security metadata (evidence.md §4;
// docs/evidence.md, "Tool metadata normalization"): what each source
// claims of the five fields declared_side_effects, side_effect,
// data_classes, externality and required_scopes, merged toward the more
// dangerous value (choice of December 2026), with each field's source, the
// disagreements between sources (metadata_conflict:<field>) and the
// recomputable metadata_confidence.
//
// The package knows the sources' vocabulary and the weaker sources itself
// (MCP tool annotations, heuristics over a tool's name, description and
// inputSchema); the stronger ones (server receipts, tools/list _meta
// declarations) are parsed by package evidence and handed in as [Claim]s.
// Everything here is pure and never fails.
package toolmeta

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/go-json-experiment/json/jsontext"
	"golang.org/x/text/unicode/norm"

	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
)

// Vocabularies of the draft ("Proposed Minimal Vocabulary"), in the
// draft's order. Do not modify.
var (
	// Effects is the vocabulary of declared_side_effects.
	Effects = []string{"read", "write", "delete", "execute", "share", "export", "message", "network"}
	// SideEffects is the vocabulary of side_effect, least dangerous first.
	SideEffects = []string{mcp.SideEffectReadOnly, mcp.SideEffectMutating, mcp.SideEffectDestructive}
	// Externalities is the vocabulary of externality, narrowest first.
	Externalities = []string{"internal", "external", "third_party"}
)

// The five normalized fields, as named in Intent.Sources.
const (
	FieldDeclaredSideEffects = "declared_side_effects"
	FieldSideEffect          = "side_effect"
	FieldDataClasses         = "data_classes"
	FieldExternality         = "externality"
	FieldRequiredScopes      = "required_scopes"
)

// Fields are the five normalized fields in their fixed order. Do not
// modify.
var Fields = []string{FieldDeclaredSideEffects, FieldSideEffect, FieldDataClasses, FieldExternality, FieldRequiredScopes}

// Sources of a normalized field, strongest first, and their weight in
// [Confidence] (evidence.md §4).
const (
	SourceVerifiedReceipt = "verified_receipt" // 1.0: a receipt with status ok
	SourceUnsignedReceipt = "unsigned_receipt" // 0.9: status unsigned or unknown
	SourceMeta            = "meta"             // 0.85: tools/list _meta declaration
	SourceAnnotation      = "annotation"       // 0.75: MCP tool annotations
	SourceHeuristic       = "heuristic"        // 0.5: name, description, schema
	SourceUnknown         = "unknown"          // 0: nothing said; default value
)

// Sources are the sources of a normalized field, strongest first. Do not
// modify.
var Sources = []string{SourceVerifiedReceipt, SourceUnsignedReceipt, SourceMeta, SourceAnnotation, SourceHeuristic, SourceUnknown}

// Weights are the weights of [Confidence] per source. Do not modify.
var Weights = map[string]float64{
	SourceVerifiedReceipt: 1.0,
	SourceUnsignedReceipt: 0.9,
	SourceMeta:            0.85,
	SourceAnnotation:      0.75,
	SourceHeuristic:       0.5,
	SourceUnknown:         0,
}

// WarningConflict prefixes the warning of a field on which the sources
// disagree: "metadata_conflict:side_effect" (evidence.md §4).
const WarningConflict = "metadata_conflict:"

// Intent is a tool's normalized metadata (evidence.md §4): what it may do,
// merged field by field over every source that claims the field, toward
// the more dangerous value ([Merge]). Values are in the draft's
// vocabularies.
type Intent struct {
	// DeclaredSideEffects: subset of [Effects], the union over the
	// sources that claim it; nil when unknown.
	DeclaredSideEffects []string `json:"declared_side_effects"`
	// SideEffect: one of [SideEffects], the most dangerous a source
	// claims; "destructive" when unknown (the MCP default for an
	// unannotated tool).
	SideEffect string `json:"side_effect"`
	// Externality: one of [Externalities], the widest a source claims;
	// "external" when unknown (the MCP openWorldHint default).
	Externality string `json:"externality"`
	// DataClasses: open vocabulary (internal, pii, secrets, financial,
	// source_code, ...), the union over the sources that claim it; nil
	// when unknown.
	DataClasses []string `json:"data_classes"`
	// RequiredScopes: the union over the sources that claim it; nil when
	// unknown.
	RequiredScopes []string `json:"required_scopes"`
	// Sources maps each of the five field names ([Fields]) to the source
	// its value came from: the strongest source that claims the value
	// taken (for a list, the strongest source that claims the list),
	// [SourceUnknown] when none does.
	Sources map[string]string `json:"sources"`
	// Conflicts maps each field on which the sources disagree (see
	// [Merge]) to the weaker side of the disagreement, the source whose
	// weight the field takes in [Confidence]. Nil when the sources agree
	// on every field; [Intent.Warnings] names these fields.
	Conflicts map[string]string `json:"conflicts,omitempty"`

	// claims are the claims merged, strongest first, kept so that With
	// can merge a stronger one over them.
	claims []claim
}

// Claim is what one source says of the five fields: a nil slice or an
// empty string claims nothing. Values outside the vocabularies of
// side_effect and externality are ignored (package evidence's parsers keep
// to them).
type Claim struct {
	// Source is one of [Sources].
	Source              string
	DeclaredSideEffects []string
	SideEffect          string
	DataClasses         []string
	Externality         string
	RequiredScopes      []string
}

// claim is a Claim as merge reads it: sides holds the source's
// side_effect values, its own and the one its effects imply
// (sideEffectOfEffects) when they differ. Its slices are the merge's own.
type claim struct {
	source          string
	effects         []string
	sides           []string
	classes, scopes []string
	ext             string
}

// internal copies c's slices and adds the side effect its effects imply.
func (c Claim) internal() claim {
	in := claim{source: c.Source, effects: slices.Clone(c.DeclaredSideEffects), classes: slices.Clone(c.DataClasses),
		ext: c.Externality, scopes: slices.Clone(c.RequiredScopes)}
	if c.SideEffect != "" {
		in.sides = append(in.sides, c.SideEffect)
	}
	if implied := sideEffectOfEffects(c.DeclaredSideEffects); implied != "" && implied != c.SideEffect {
		in.sides = append(in.sides, implied)
	}
	return in
}

// Merge returns the intent the claims give, strongest first (evidence.md
// §4). A claim that claims effects also claims the side_effect they imply
// (delete: destructive; write, execute, share, export, message: mutating;
// read, network: read_only) besides its own, if any, so that a source that
// says it writes is mutating even when its side_effect is absent or says
// read_only.
//
// The claims are merged toward the more dangerous value (choice of
// December 2026): side_effect is the most dangerous claimed (read_only <
// mutating < destructive), externality the widest (internal < external <
// third_party, the vocabulary's order), and declared_side_effects,
// data_classes and required_scopes the union of the claimed lists (the
// strongest source's items first, then each weaker source's new items, in
// its order). A field no source claims is unknown: side_effect
// "destructive" and externality "external" (the MCP defaults), the slices
// nil. Heuristics only raise what other sources claim: a side_effect or
// externality that only [SourceHeuristic] claims counts only when it is at
// least as dangerous as the unknown default (alone, "get_weather" is not
// read_only: the field stays unknown).
//
// A source disagrees on side_effect or externality when it claims another
// value than the one taken, and on a list when it names an item that no
// stronger source claiming the list names (a list is what a source knows
// the tool does at least; naming less is not a disagreement). Conflicts
// names, per field, the weaker side of the disagreement: the weakest
// source that disagrees, or the value's own source when that is weaker
// (for a list, the weakest source that named a new item). In [Confidence]
// the field weighs what that source weighs, and [Intent.Warnings] names
// the field.
//
// The result's slices and maps are its own.
func Merge(claims ...Claim) Intent {
	in := make([]claim, len(claims))
	for i, c := range claims {
		in[i] = c.internal()
	}
	return merge(in)
}

// OfTool returns the intent of a tool definition: decl (the claim of its
// _meta declaration, nil without one) merged with the claims of its
// annotations and heuristics ([ToolClaims]). A nil tool is one about
// which nothing is known.
func OfTool(decl *Claim, t *mcp.Tool) Intent {
	var claims []Claim
	if decl != nil {
		claims = append(claims, *decl)
	}
	return Merge(append(claims, ToolClaims(t)...)...)
}

// ToolClaims returns what a tool definition itself claims, strongest
// first: its annotations, when it sets at least one of readOnlyHint,
// destructiveHint and openWorldHint (absent hints take the MCP defaults:
// readOnlyHint false, destructiveHint true, openWorldHint true; side_effect
// read_only if readOnlyHint, else mutating if destructiveHint is false,
// else destructive; declared_side_effects [read], [write] or [write delete]
// accordingly; externality external if openWorldHint, else internal;
// nothing about data_classes and required_scopes), then heuristics over
// its name, description and inputSchema property names (the tables in
// docs/evidence.md: effects from name words, side_effect from the effects,
// externality "external" from network, share or message effects or
// web/e-mail words, data_classes from name and property words; never
// required_scopes or externality "internal"). Nil for a nil tool.
func ToolClaims(t *mcp.Tool) []Claim {
	if t == nil {
		return nil
	}
	var out []Claim
	a := t.Annotations
	if a.ReadOnlyHint != nil || a.DestructiveHint != nil || a.OpenWorldHint != nil {
		side := a.SideEffect()
		ext := "external"
		if a.OpenWorldHint != nil && !*a.OpenWorldHint {
			ext = "internal"
		}
		out = append(out, Claim{Source: SourceAnnotation, DeclaredSideEffects: effectsOfSideEffect(side), SideEffect: side, Externality: ext})
	}
	h := heuristics(t)
	return append(out, Claim{Source: SourceHeuristic, DeclaredSideEffects: h.effects, SideEffect: h.sideEffect,
		DataClasses: h.dataClasses, Externality: h.externality})
}

// With returns the intent [Merge] gives when claim c, stronger than every
// claim it was merged from (a receipt over a tool's intent), comes first.
// it is never modified.
//
// An intent not made by Merge (a literal) stands for one claim per source
// named in its Sources, with the values of the fields of that source.
func (it Intent) With(c Claim) Intent {
	return merge(append([]claim{c.internal()}, it.toolClaims()...))
}

// Warnings returns a "metadata_conflict:<field>" warning
// ([WarningConflict]) for each field in Conflicts, in [Fields] order; nil
// when there is none.
func (it Intent) Warnings() []string {
	var out []string
	for _, f := range Fields {
		if _, ok := it.Conflicts[f]; ok {
			out = append(out, WarningConflict+f)
		}
	}
	return out
}

// ConflictFields returns the fields in Conflicts, in [Fields] order; nil
// when there is none.
func (it Intent) ConflictFields() []string {
	var out []string
	for _, f := range Fields {
		if _, ok := it.Conflicts[f]; ok {
			out = append(out, f)
		}
	}
	return out
}

// toolClaims returns the claims it was merged from, or, for a literal
// intent, claims rebuilt from its fields and Sources.
func (it Intent) toolClaims() []claim {
	if it.claims != nil {
		return it.claims
	}
	var out []claim
	for _, s := range Sources {
		if s == SourceUnknown {
			continue
		}
		c := claim{source: s}
		found := false
		for _, f := range Fields {
			if it.Sources[f] != s {
				continue
			}
			found = true
			switch f {
			case FieldDeclaredSideEffects:
				c.effects = it.DeclaredSideEffects
			case FieldSideEffect:
				if it.SideEffect != "" {
					c.sides = []string{it.SideEffect}
				}
			case FieldDataClasses:
				c.classes = it.DataClasses
			case FieldExternality:
				c.ext = it.Externality
			case FieldRequiredScopes:
				c.scopes = it.RequiredScopes
			}
		}
		if found {
			out = append(out, c)
		}
	}
	return out
}

// merge merges claims, strongest first, as Normalize documents. The result
// keeps claims (which it does not copy: they are never modified).
func merge(claims []claim) Intent {
	it := Intent{Sources: make(map[string]string, len(Fields)), claims: claims}
	conflict := func(field, source string) {
		if it.Conflicts == nil {
			it.Conflicts = make(map[string]string, len(Fields))
		}
		it.Conflicts[field] = source
	}
	// The ordered fields: the highest rank wins, from the strongest
	// source that claims it; a claim of another value disagrees with it.
	ordered := func(field string, vocab []string, unknown string, values func(claim) []string) (string, string) {
		best, from := "", SourceUnknown
		decided := false // a source other than heuristics claims the field
		for _, c := range claims {
			for _, v := range values(c) {
				// The parsers keep to the vocabulary; a literal intent
				// may not (Index -1 never wins).
				r := slices.Index(vocab, v)
				if r < 0 {
					continue
				}
				decided = decided || c.source != SourceHeuristic
				if best == "" || r > slices.Index(vocab, best) {
					best, from = v, c.source
				}
			}
		}
		if best == "" || !decided && slices.Index(vocab, best) < slices.Index(vocab, unknown) {
			// Heuristics only raise what other sources claim: alone, a
			// guess from a name never makes a tool less dangerous than
			// knowing nothing does (get_weather without annotations
			// stays destructive).
			return unknown, SourceUnknown
		}
		dissent := ""
		for _, c := range claims {
			if slices.ContainsFunc(values(c), func(v string) bool { return v != best && slices.Contains(vocab, v) }) {
				dissent = c.source // the last is the weakest
			}
		}
		if dissent != "" {
			// The weaker side of the disagreement: the dissenter, or
			// the value's own source when that is weaker.
			if Weights[from] < Weights[dissent] {
				dissent = from
			}
			conflict(field, dissent)
		}
		return best, from
	}
	// The lists: the union; a source naming a new item after a stronger
	// source claimed the list disagrees with it.
	union := func(field string, values func(claim) []string) ([]string, string) {
		var out []string
		from, claimed := SourceUnknown, false
		for _, c := range claims {
			vs := values(c)
			if vs == nil {
				continue
			}
			if !claimed {
				out, from, claimed = make([]string, 0, len(vs)), c.source, true
			} else if slices.ContainsFunc(vs, func(v string) bool { return !slices.Contains(out, v) }) {
				conflict(field, c.source)
			}
			for _, v := range vs {
				if !slices.Contains(out, v) {
					out = append(out, v)
				}
			}
		}
		return out, from
	}
	var from string
	it.DeclaredSideEffects, from = union(FieldDeclaredSideEffects, func(c claim) []string { return c.effects })
	it.Sources[FieldDeclaredSideEffects] = from
	it.SideEffect, from = ordered(FieldSideEffect, SideEffects, mcp.SideEffectDestructive, func(c claim) []string { return c.sides })
	it.Sources[FieldSideEffect] = from
	it.DataClasses, from = union(FieldDataClasses, func(c claim) []string { return c.classes })
	it.Sources[FieldDataClasses] = from
	it.Externality, from = ordered(FieldExternality, Externalities, "external", func(c claim) []string {
		if c.ext == "" {
			return nil
		}
		return []string{c.ext}
	})
	it.Sources[FieldExternality] = from
	it.RequiredScopes, from = union(FieldRequiredScopes, func(c claim) []string { return c.scopes })
	it.Sources[FieldRequiredScopes] = from
	return it
}

// ConflictPenalty is what each receipt conflict subtracts in [Confidence].
const ConflictPenalty = 0.1

// Confidence returns the metadata_confidence of intent (evidence.md §4):
// the mean over the five fields of each field's weight, minus
// [ConflictPenalty] per receipt conflict (evidence.md §2; negative counts
// are 0), clamped to [0, 1] and rounded to two decimals. A field's weight
// is the [Weights] of its source, or of the source its Conflicts entry
// names when that weighs less (a missing or unrecognized source weighs
// 0). For example all five from a verified receipt with one conflict
// gives 0.9; side_effect and externality from annotations and the rest
// unknown gives 0.3; all five from a declaration except side_effect,
// where the annotations disagree, gives 0.83.
func Confidence(intent Intent, conflicts int) float64 {
	sum := 0.0
	for _, f := range Fields {
		w := Weights[intent.Sources[f]]
		if s, ok := intent.Conflicts[f]; ok {
			w = math.Min(w, Weights[s])
		}
		sum += w
	}
	c := sum / float64(len(Fields))
	if conflicts > 0 {
		c -= ConflictPenalty * float64(conflicts)
	}
	c = math.Max(0, math.Min(1, c))
	return math.Round(c*100) / 100
}

// effectsOfSideEffect is the declared_side_effects implied by a side_effect.
func effectsOfSideEffect(side string) []string {
	switch side {
	case mcp.SideEffectReadOnly:
		return []string{"read"}
	case mcp.SideEffectMutating:
		return []string{"write"}
	}
	return []string{"write", "delete"}
}

// sideEffectOfEffects is the side_effect that declared effects imply:
// destructive with delete; else mutating with write, execute, share,
// export or message; else read_only with read or network; "" otherwise
// (no effects, or none of the vocabulary).
func sideEffectOfEffects(effects []string) string {
	has := func(e string) bool { return slices.Contains(effects, e) }
	switch {
	case has("delete"):
		return mcp.SideEffectDestructive
	case has("write") || has("execute") || has("share") || has("export") || has("message"):
		return mcp.SideEffectMutating
	case has("read") || has("network"):
		return mcp.SideEffectReadOnly
	}
	return ""
}

// Heuristic word tables (docs/evidence.md lists them). Words are matched
// against the lowercase words of the tool name (split at non-letters and
// digits and at lower-to-upper case changes).
var effectWords = map[string][]string{
	"read":    {"get", "list", "read", "search", "find", "query", "describe", "show", "view", "lookup", "count", "stat", "cat", "ls", "inspect", "check", "status", "info"},
	"write":   {"write", "create", "update", "set", "put", "patch", "edit", "modify", "insert", "add", "save", "move", "rename", "apply", "upload", "commit", "push", "merge", "deploy", "append", "replace", "store", "mkdir"},
	"delete":  {"delete", "remove", "rm", "drop", "destroy", "purge", "truncate", "wipe", "erase", "unlink", "revoke", "uninstall", "kill", "terminate"},
	"execute": {"exec", "execute", "run", "eval", "shell", "command", "cmd", "spawn", "invoke", "script"},
	"share":   {"share", "publish", "invite", "grant"},
	"export":  {"export", "download", "dump", "backup"},
	"message": {"send", "email", "mail", "message", "notify", "post", "reply", "sms", "chat"},
	"network": {"fetch", "http", "https", "url", "web", "browse", "curl", "webhook", "crawl", "scrape", "download"},
}

// externalWords in the name or description make a tool external.
var externalWords = []string{"http", "https", "url", "urls", "internet", "web", "website", "email", "slack", "webhook", "online", "remote"}

// dataClassWords are substrings of a name or inputSchema property name with
// its separators removed and lowercased, per data class, in output order.
var dataClassWords = []struct {
	class string
	words []string
}{
	{"pii", []string{"email", "phone", "ssn", "birth", "passport", "firstname", "lastname", "fullname", "address"}},
	{"secrets", []string{"password", "passwd", "secret", "apikey", "token", "credential", "privatekey"}},
	{"financial", []string{"creditcard", "cardnumber", "iban", "payment", "invoice", "salary", "billing", "bank"}},
	{"source_code", []string{"repo", "patch", "diff", "commit", "branch", "pullrequest", "sourcecode"}},
}

type heuristic struct {
	effects     []string
	sideEffect  string
	externality string
	dataClasses []string
}

// heuristics applies the word tables to a tool definition.
func heuristics(t *mcp.Tool) heuristic {
	var h heuristic
	nameWords := words(t.Name)
	for _, e := range Effects {
		for _, w := range nameWords {
			if slices.Contains(effectWords[e], w) {
				h.effects = append(h.effects, e)
				break
			}
		}
	}
	has := func(e string) bool { return slices.Contains(h.effects, e) }
	h.sideEffect = sideEffectOfEffects(h.effects)
	if has("share") || has("message") || has("network") {
		h.externality = "external"
	} else {
		for _, w := range slices.Concat(nameWords, words(t.Description)) {
			if slices.Contains(externalWords, w) {
				h.externality = "external"
				break
			}
		}
	}
	names := append([]string{t.Name}, schemaProperties(t.InputSchema)...)
	for _, dc := range dataClassWords {
	names:
		for _, n := range names {
			flat := flatten(n)
			for _, w := range dc.words {
				if strings.Contains(flat, w) {
					h.dataClasses = append(h.dataClasses, dc.class)
					break names
				}
			}
		}
	}
	return h
}

// words splits s into lowercase words at non-letters, at lower-to-upper case
// changes and before the last capital of a run followed by a lower-case
// letter ("deleteFile" -> delete, file; "get_url2" -> get, url;
// "HTTPFetch" -> http, fetch).
func words(s string) []string {
	s = shown(s)
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	prevLower := false
	for _, r := range s {
		if !unicode.IsLetter(r) {
			flush()
			prevLower = false
			continue
		}
		if unicode.IsUpper(r) && prevLower {
			flush()
		}
		// "HTTPFetch": the upper-case letter before a lower-case one
		// starts a new word.
		if n := len(cur); unicode.IsLower(r) && n >= 2 && unicode.IsUpper(cur[n-1]) && unicode.IsUpper(cur[n-2]) {
			last := cur[n-1]
			cur = cur[:n-1]
			flush()
			cur = append(cur, last)
		}
		cur = append(cur, r)
		prevLower = unicode.IsLower(r)
	}
	flush()
	return out
}

// shown is s as it reads: compatibility forms folded (NFKC: fullwidth
// "ｄｅｌｅｔｅ" is "delete") and format characters dropped (a zero-width
// space, joiner or soft hyphen inside "de\u200blete" shows nothing), so that
// an invisible character or a wide form does not hide a word from the
// tables.
func shown(s string) string {
	s = norm.NFKC.String(s)
	if !strings.ContainsFunc(s, func(r rune) bool { return unicode.Is(unicode.Cf, r) }) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, s)
}

// flatten lowercases s and drops everything but letters and digits
// ("API_Key" -> "apikey").
func flatten(s string) string {
	var b strings.Builder
	for _, r := range shown(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// schemaProperties returns the top-level property names of a JSON Schema's
// "properties" object, in order, or nil when schema is not a strict JSON
// object (RFC 8259, valid UTF-8, no duplicate member names) with a
// "properties" object.
func schemaProperties(schema []byte) []string {
	if len(schema) == 0 || !jsontext.Value(schema).IsValid() {
		return nil
	}
	d := jsontext.NewDecoder(bytes.NewReader(schema))
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil
	}
	for d.PeekKind() == '"' {
		tok, err := d.ReadToken()
		if err != nil {
			return nil
		}
		name := tok.String() // before the next call voids tok
		if name != "properties" || d.PeekKind() != '{' {
			if d.SkipValue() != nil {
				return nil
			}
			continue
		}
		_, _ = d.ReadToken() // the opening brace
		out := []string{}
		for d.PeekKind() == '"' {
			tok, err := d.ReadToken()
			if err != nil {
				return nil
			}
			out = append(out, tok.String())
			if d.SkipValue() != nil {
				return nil
			}
		}
		return out
	}
	return nil
}
