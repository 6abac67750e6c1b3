package evidence

import (
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
)

// ToolIntent is a tool's normalized metadata (evidence.md §4): what it may
// do, merged field by field over every source that declares the field,
// toward the more dangerous value ([Normalize]). Values are in the draft's
// vocabularies.
type ToolIntent struct {
	// DeclaredSideEffects: subset of [Effects], the union over the
	// sources that declare it; nil when unknown.
	DeclaredSideEffects []string `json:"declared_side_effects"`
	// SideEffect: one of [SideEffects], the most dangerous a source
	// declares; "destructive" when unknown (the MCP default for an
	// unannotated tool).
	SideEffect string `json:"side_effect"`
	// Externality: one of [Externalities], the widest a source declares;
	// "external" when unknown (the MCP openWorldHint default).
	Externality string `json:"externality"`
	// DataClasses: open vocabulary (internal, pii, secrets, financial,
	// source_code, ...), the union over the sources that declare it; nil
	// when unknown.
	DataClasses []string `json:"data_classes"`
	// RequiredScopes: the union over the sources that declare it; nil when
	// unknown.
	RequiredScopes []string `json:"required_scopes"`
	// Sources maps each of the five field names (the Field constants) to
	// the Source its value came from: the strongest source that declares
	// the value taken (for a list, the strongest source that declares the
	// field), [SourceUnknown] when none does.
	Sources map[string]string `json:"sources"`
	// Conflicts maps each field on which the sources disagree (see
	// [Normalize]) to the weaker side of the disagreement, the source
	// whose weight the field takes in [Confidence]. Nil when the sources
	// agree on every field; [ToolIntent.Warnings] names these fields.
	Conflicts map[string]string `json:"conflicts,omitempty"`

	// claims are the tool-level sources' claims, strongest first, kept so
	// that WithReceipt can merge a receipt over them.
	claims []claim
}

// The five normalized fields, as named in ToolIntent.Sources.
const (
	FieldDeclaredSideEffects = "declared_side_effects"
	FieldSideEffect          = "side_effect"
	FieldDataClasses         = "data_classes"
	FieldExternality         = "externality"
	FieldRequiredScopes      = "required_scopes"
)

// IntentFields are the five normalized fields in their fixed order.
var IntentFields = []string{FieldDeclaredSideEffects, FieldSideEffect, FieldDataClasses, FieldExternality, FieldRequiredScopes}

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

// IntentSources are the sources of a normalized field, strongest first. Do
// not modify.
var IntentSources = []string{SourceVerifiedReceipt, SourceUnsignedReceipt, SourceMeta, SourceAnnotation, SourceHeuristic, SourceUnknown}

// SourceWeights are the weights of [Confidence] per source. Do not modify.
var SourceWeights = map[string]float64{
	SourceVerifiedReceipt: 1.0,
	SourceUnsignedReceipt: 0.9,
	SourceMeta:            0.85,
	SourceAnnotation:      0.75,
	SourceHeuristic:       0.5,
	SourceUnknown:         0,
}

// WarningMetadataConflict prefixes the warning of a field on which the
// sources disagree: "metadata_conflict:side_effect" (evidence.md §4).
const WarningMetadataConflict = "metadata_conflict:"

// IntentInput is everything [Normalize] may draw on. Every field may be
// zero.
type IntentInput struct {
	// Receipt is the call's server receipt and ReceiptStatus its [Verify]
	// result. A receipt with status ok is a verified source; unsigned or
	// unknown an unsigned source; tampered or empty is ignored, as is a
	// synthesized receipt (issued_by "gateway"). Callers should pass nil
	// for a receipt with [Conflicts] (it may describe another call) or
	// account for them in [Confidence].
	Receipt       *ServerReceipt
	ReceiptStatus Status
	// Declaration is the tool's tools/list _meta declaration
	// ([FindToolDeclaration], [ParseDeclaration]).
	Declaration *ToolDeclaration
	// Tool is the tool's definition: annotations, name, description and
	// inputSchema for the weaker sources.
	Tool *mcp.Tool
}

// claim is what one source says of the five fields: a nil slice or an
// empty string declares nothing. sides holds the source's side_effect
// values: its own and the one its effects imply (sideEffectOfEffects),
// when they differ.
type claim struct {
	source          string
	effects         []string
	sides           []string
	classes, scopes []string
	ext             string
}

// newClaim is the claim of a receipt or declaration (its slices copied):
// side_effect as declared, and also the one the declared effects imply, so that a source
// that says it writes is mutating even when its side_effect is absent or
// says read_only.
func newClaim(source string, effects []string, side string, classes []string, ext string, scopes []string) claim {
	c := claim{source: source, effects: slices.Clone(effects), classes: slices.Clone(classes), ext: ext, scopes: slices.Clone(scopes)}
	if side != "" {
		c.sides = append(c.sides, side)
	}
	if implied := sideEffectOfEffects(effects); implied != "" && implied != side {
		c.sides = append(c.sides, implied)
	}
	return c
}

// Normalize returns the tool's intent (evidence.md §4; docs/evidence.md,
// "Tool metadata normalization"). Each source makes a claim on some of
// the five fields:
//
//  1. the receipt, verified or unsigned (see [IntentInput]): a field present
//     and valid in it;
//  2. the declaration: likewise;
//  3. the annotations, when the tool sets at least one of readOnlyHint,
//     destructiveHint and openWorldHint; absent hints take the MCP defaults
//     (readOnlyHint false, destructiveHint true, openWorldHint true).
//     side_effect is read_only if readOnlyHint, else mutating if
//     destructiveHint is false, else destructive; declared_side_effects is
//     [read], [write] or [write delete] accordingly; externality is
//     external if openWorldHint, else internal. Annotations say nothing
//     about data_classes and required_scopes;
//  4. heuristics over the tool's name, description and inputSchema property
//     names (the tables in docs/evidence.md): effects from name words,
//     side_effect from the effects, externality "external" from network,
//     share or message effects or web/e-mail words, data_classes from
//     name and property words. They never give required_scopes or
//     externality "internal".
//
// A receipt or declaration that declares effects also claims the
// side_effect they imply (delete: destructive; write, execute, share,
// export, message: mutating; read, network: read_only) besides the one it
// declares, if any.
//
// The claims are merged toward the more dangerous value (choice of
// December 2026): side_effect is the most dangerous claimed (read_only <
// mutating < destructive), externality the widest (internal < external <
// third_party, the vocabulary's order), and declared_side_effects,
// data_classes and required_scopes the union of the claimed lists (the
// strongest source's items first, each in its source's order). A field no
// source claims is unknown: side_effect "destructive" and externality
// "external" (the MCP defaults), the slices nil.
//
// A source disagrees on side_effect or externality when it claims another
// value than the one taken, and on a list when it names an item that no
// stronger source claiming the list names (a list is what a source knows
// the tool does at least; naming less is not a disagreement). Conflicts
// names, per field, the weaker side of the disagreement: the weakest
// source that disagrees, or the value's own source when that is weaker
// (for a list, the weakest source that named a new item). In [Confidence]
// the field weighs what that source weighs, and [ToolIntent.Warnings]
// names the field.
//
// Slices are copies. Normalize is pure and never fails.
//
// Normalize(in) is Normalize(in without its receipt).WithReceipt(in.Receipt,
// in.ReceiptStatus): a caller may compute the part that depends only on the
// tool once per tool definition ([ToolIntent.WithReceipt], [ToolIntentOf]).
func Normalize(in IntentInput) ToolIntent {
	return normalizeTool(in.Declaration, in.Tool).WithReceipt(in.Receipt, in.ReceiptStatus)
}

// ToolIntentOf returns the intent of a listed tool definition without a
// receipt: [Normalize] of its _meta declaration ([FindToolDeclaration] and
// [ParseDeclaration] over tool.Meta; the valid fields of a declaration
// with problems count, one that is not an object does not) and of tool
// itself. A nil tool is an unknown one (every field unknown).
func ToolIntentOf(tool *mcp.Tool) ToolIntent {
	if tool == nil {
		return normalizeTool(nil, nil)
	}
	var decl *ToolDeclaration
	if len(tool.Meta) > 0 {
		obj := append(append([]byte(`{"_meta":`), tool.Meta...), '}')
		if raw, ok := FindToolDeclaration(obj); ok {
			if d, _, err := ParseDeclaration(raw); err == nil {
				decl = d
			}
		}
	}
	return normalizeTool(decl, tool)
}

// Warnings returns a "metadata_conflict:<field>" warning
// ([WarningMetadataConflict]) for each field in Conflicts, in
// [IntentFields] order; nil when there is none.
func (it ToolIntent) Warnings() []string {
	var out []string
	for _, f := range IntentFields {
		if _, ok := it.Conflicts[f]; ok {
			out = append(out, WarningMetadataConflict+f)
		}
	}
	return out
}

// receiptSource is the Source of receipt r with status, or "" when
// Normalize ignores it (nil, synthesized, tampered or empty).
func receiptSource(r *ServerReceipt, status Status) string {
	if r == nil || r.IssuedBy == IssuedByGateway {
		return ""
	}
	switch status {
	case StatusOK:
		return SourceVerifiedReceipt
	case StatusUnsigned, StatusUnknown:
		return SourceUnsignedReceipt
	}
	return ""
}

// WithReceipt returns the intent [Normalize] gives when receipt r with
// status is added to the input that gave it: r's claim, the strongest,
// merged with the tool-level claims as Normalize merges them. When
// Normalize ignores r (nil, synthesized by the gateway, status tampered or
// empty) the result is it itself, sharing its maps and slices; otherwise it
// is a new intent whose maps and slices are its own. it is never modified.
//
// An intent not made by Normalize (a literal) stands for one claim per
// source named in its Sources, with the values of the fields of that
// source.
func (it ToolIntent) WithReceipt(r *ServerReceipt, status Status) ToolIntent {
	source := receiptSource(r, status)
	if source == "" {
		return it
	}
	rc := newClaim(source, r.DeclaredSideEffects, r.SideEffect, r.DataClasses, r.Externality, r.RequiredScopes)
	return merge(append([]claim{rc}, it.toolClaims()...))
}

// toolClaims returns the claims it was merged from, or, for a literal
// intent, claims rebuilt from its fields and Sources.
func (it ToolIntent) toolClaims() []claim {
	if it.claims != nil {
		return it.claims
	}
	var out []claim
	for _, s := range IntentSources {
		if s == SourceUnknown {
			continue
		}
		c := claim{source: s}
		found := false
		for _, f := range IntentFields {
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

// normalizeTool is Normalize without a receipt: the declaration, the
// annotations and the heuristics.
func normalizeTool(decl *ToolDeclaration, tool *mcp.Tool) ToolIntent {
	claims := make([]claim, 0, 3)
	if d := decl; d != nil {
		claims = append(claims, newClaim(SourceMeta, d.DeclaredSideEffects, d.SideEffect, d.DataClasses, d.Externality, d.RequiredScopes))
	}
	if t := tool; t != nil {
		a := t.Annotations
		if a.ReadOnlyHint != nil || a.DestructiveHint != nil || a.OpenWorldHint != nil {
			side := a.SideEffect()
			ext := "external"
			if a.OpenWorldHint != nil && !*a.OpenWorldHint {
				ext = "internal"
			}
			claims = append(claims, claim{source: SourceAnnotation, effects: effectsOfSideEffect(side), sides: []string{side}, ext: ext})
		}
		h := heuristics(t)
		hc := claim{source: SourceHeuristic, effects: h.effects, classes: h.dataClasses, ext: h.externality}
		if h.sideEffect != "" {
			hc.sides = []string{h.sideEffect}
		}
		claims = append(claims, hc)
	}
	return merge(claims)
}

// merge merges claims, strongest first, as Normalize documents. The result
// keeps claims (which it does not copy: they are never modified).
func merge(claims []claim) ToolIntent {
	it := ToolIntent{Sources: make(map[string]string, len(IntentFields)), claims: claims}
	conflict := func(field, source string) {
		if it.Conflicts == nil {
			it.Conflicts = make(map[string]string, len(IntentFields))
		}
		it.Conflicts[field] = source
	}
	// The ordered fields: the highest rank wins, from the strongest
	// source that claims it; a claim of another value disagrees with it.
	ordered := func(field string, vocab []string, values func(claim) []string) (string, string) {
		best, from := "", SourceUnknown
		for _, c := range claims {
			for _, v := range values(c) {
				// The parsers keep to the vocabulary; a literal intent
				// may not (Index -1 never wins).
				if r := slices.Index(vocab, v); r >= 0 && (best == "" || r > slices.Index(vocab, best)) {
					best, from = v, c.source
				}
			}
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
			if SourceWeights[from] < SourceWeights[dissent] {
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
	it.SideEffect, from = ordered(FieldSideEffect, SideEffects, func(c claim) []string { return c.sides })
	it.Sources[FieldSideEffect] = from
	it.DataClasses, from = union(FieldDataClasses, func(c claim) []string { return c.classes })
	it.Sources[FieldDataClasses] = from
	it.Externality, from = ordered(FieldExternality, Externalities, func(c claim) []string {
		if c.ext == "" {
			return nil
		}
		return []string{c.ext}
	})
	it.Sources[FieldExternality] = from
	it.RequiredScopes, from = union(FieldRequiredScopes, func(c claim) []string { return c.scopes })
	it.Sources[FieldRequiredScopes] = from
	if it.SideEffect == "" {
		it.SideEffect = mcp.SideEffectDestructive
	}
	if it.Externality == "" {
		it.Externality = "external"
	}
	return it
}

// ConflictPenalty is what each receipt conflict subtracts in [Confidence].
const ConflictPenalty = 0.1

// Confidence returns the metadata_confidence of intent (evidence.md §4):
// the mean over the five fields of each field's weight, minus
// [ConflictPenalty] per receipt conflict (negative counts are 0), clamped
// to [0, 1] and rounded to two decimals. A field's weight is the
// [SourceWeights] of its source, or of the source its Conflicts entry
// names when that weighs less (a missing or unrecognized source weighs
// 0). For example all five from a verified receipt with one conflict
// gives 0.9; side_effect and externality from annotations and the rest
// unknown gives 0.3; all five from a declaration except side_effect,
// where the annotations disagree, gives 0.83.
func Confidence(intent ToolIntent, conflicts int) float64 {
	sum := 0.0
	for _, f := range IntentFields {
		w := SourceWeights[intent.Sources[f]]
		if s, ok := intent.Conflicts[f]; ok {
			w = math.Min(w, SourceWeights[s])
		}
		sum += w
	}
	c := sum / float64(len(IntentFields))
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

// flatten lowercases s and drops everything but letters and digits
// ("API_Key" -> "apikey").
func flatten(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// schemaProperties returns the top-level property names of a JSON Schema's
// "properties" object, or nil.
func schemaProperties(schema []byte) []string {
	if schema == nil {
		return nil
	}
	ms, err := objectMembers(schema)
	if err != nil {
		return nil
	}
	for _, m := range ms {
		if m.name == "properties" && m.value.Kind() == '{' {
			props, _ := objectMembers(m.value)
			out := make([]string, len(props))
			for i, p := range props {
				out[i] = p.name
			}
			return out
		}
	}
	return nil
}
