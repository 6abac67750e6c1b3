package evidence

import (
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
)

// ToolIntent is a tool's normalized metadata (evidence.md §4): what it may
// do, taken field by field from the strongest source available
// ([Normalize]). Values are in the draft's vocabularies; slices are in
// vocabulary order for derived values, in the source's order otherwise.
type ToolIntent struct {
	// DeclaredSideEffects: subset of [Effects]; nil when unknown.
	DeclaredSideEffects []string `json:"declared_side_effects"`
	// SideEffect: one of [SideEffects]; "destructive" when unknown (the MCP
	// default for an unannotated tool).
	SideEffect string `json:"side_effect"`
	// Externality: one of [Externalities]; "external" when unknown (the
	// MCP openWorldHint default).
	Externality string `json:"externality"`
	// DataClasses: open vocabulary (internal, pii, secrets, financial,
	// source_code, ...); nil when unknown.
	DataClasses []string `json:"data_classes"`
	// RequiredScopes: nil when unknown.
	RequiredScopes []string `json:"required_scopes"`
	// Sources maps each of the five field names (the Field constants) to
	// the Source it came from.
	Sources map[string]string `json:"sources"`
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

// SourceWeights are the weights of [Confidence] per source. Do not modify.
var SourceWeights = map[string]float64{
	SourceVerifiedReceipt: 1.0,
	SourceUnsignedReceipt: 0.9,
	SourceMeta:            0.85,
	SourceAnnotation:      0.75,
	SourceHeuristic:       0.5,
	SourceUnknown:         0,
}

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

// Normalize returns the tool's intent, each of the five fields from the
// first source that provides it (evidence.md §4; docs/evidence.md, "Tool
// metadata normalization"):
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
//     externality "internal";
//  5. otherwise the field is unknown: side_effect "destructive" and
//     externality "external" (the MCP defaults), the slices nil.
//
// Slices are copies. Normalize is pure and never fails.
//
// The receipt only ever overrides fields, so Normalize(in) is
// Normalize(in without its receipt).WithReceipt(in.Receipt,
// in.ReceiptStatus): a caller may compute the part that depends only on the
// tool once per tool definition ([ToolIntent.WithReceipt]).
func Normalize(in IntentInput) ToolIntent {
	return normalizeTool(in.Declaration, in.Tool).WithReceipt(in.Receipt, in.ReceiptStatus)
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
// status is added to the input that gave it: each field r provides (a
// slice present, a string non-empty) from r with source verified_receipt
// or unsigned_receipt, every other field and its source as in it. When
// Normalize ignores r (nil, synthesized by the gateway, status tampered or
// empty) the result is it itself, sharing its Sources map and slices;
// otherwise it is a new intent whose map and slices are copies. it is never
// modified.
func (it ToolIntent) WithReceipt(r *ServerReceipt, status Status) ToolIntent {
	source := receiptSource(r, status)
	if source == "" {
		return it
	}
	out := ToolIntent{
		DeclaredSideEffects: slices.Clone(it.DeclaredSideEffects),
		SideEffect:          it.SideEffect,
		Externality:         it.Externality,
		DataClasses:         slices.Clone(it.DataClasses),
		RequiredScopes:      slices.Clone(it.RequiredScopes),
		Sources:             make(map[string]string, len(IntentFields)),
	}
	for k, v := range it.Sources {
		out.Sources[k] = v
	}
	if r.DeclaredSideEffects != nil {
		out.DeclaredSideEffects, out.Sources[FieldDeclaredSideEffects] = slices.Clone(r.DeclaredSideEffects), source
	}
	if r.SideEffect != "" {
		out.SideEffect, out.Sources[FieldSideEffect] = r.SideEffect, source
	}
	if r.DataClasses != nil {
		out.DataClasses, out.Sources[FieldDataClasses] = slices.Clone(r.DataClasses), source
	}
	if r.Externality != "" {
		out.Externality, out.Sources[FieldExternality] = r.Externality, source
	}
	if r.RequiredScopes != nil {
		out.RequiredScopes, out.Sources[FieldRequiredScopes] = slices.Clone(r.RequiredScopes), source
	}
	return out
}

// normalizeTool is Normalize without a receipt: sources 2 to 5.
func normalizeTool(decl *ToolDeclaration, tool *mcp.Tool) ToolIntent {
	it := ToolIntent{Sources: make(map[string]string, len(IntentFields))}
	set := func(field, source string) bool {
		if _, done := it.Sources[field]; done {
			return false
		}
		it.Sources[field] = source
		return true
	}
	fromIntent := func(source string, effects []string, side string, classes []string, ext string, scopes []string) {
		if effects != nil && set(FieldDeclaredSideEffects, source) {
			it.DeclaredSideEffects = slices.Clone(effects)
		}
		if side != "" && set(FieldSideEffect, source) {
			it.SideEffect = side
		}
		if classes != nil && set(FieldDataClasses, source) {
			it.DataClasses = slices.Clone(classes)
		}
		if ext != "" && set(FieldExternality, source) {
			it.Externality = ext
		}
		if scopes != nil && set(FieldRequiredScopes, source) {
			it.RequiredScopes = slices.Clone(scopes)
		}
	}

	if d := decl; d != nil {
		fromIntent(SourceMeta, d.DeclaredSideEffects, d.SideEffect, d.DataClasses, d.Externality, d.RequiredScopes)
	}
	if t := tool; t != nil {
		a := t.Annotations
		if a.ReadOnlyHint != nil || a.DestructiveHint != nil || a.OpenWorldHint != nil {
			side := a.SideEffect()
			ext := "external"
			if a.OpenWorldHint != nil && !*a.OpenWorldHint {
				ext = "internal"
			}
			fromIntent(SourceAnnotation, effectsOfSideEffect(side), side, nil, ext, nil)
		}
		h := heuristics(t)
		fromIntent(SourceHeuristic, h.effects, h.sideEffect, h.dataClasses, h.externality, nil)
	}
	if set(FieldDeclaredSideEffects, SourceUnknown) {
		it.DeclaredSideEffects = nil
	}
	if set(FieldSideEffect, SourceUnknown) {
		it.SideEffect = mcp.SideEffectDestructive
	}
	if set(FieldDataClasses, SourceUnknown) {
		it.DataClasses = nil
	}
	if set(FieldExternality, SourceUnknown) {
		it.Externality = "external"
	}
	if set(FieldRequiredScopes, SourceUnknown) {
		it.RequiredScopes = nil
	}
	return it
}

// ConflictPenalty is what each receipt conflict subtracts in [Confidence].
const ConflictPenalty = 0.1

// Confidence returns the metadata_confidence of intent (evidence.md §4):
// the mean over the five fields of [SourceWeights] of each field's source
// (a missing or unrecognized source weighs 0), minus [ConflictPenalty] per
// conflict (negative counts are 0), clamped to [0, 1] and rounded to two
// decimals. For example all five from a verified receipt with one conflict
// gives 0.9; side_effect and externality from annotations and the rest
// unknown gives 0.3.
func Confidence(intent ToolIntent, conflicts int) float64 {
	sum := 0.0
	for _, f := range IntentFields {
		sum += SourceWeights[intent.Sources[f]]
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
	switch {
	case has("delete"):
		h.sideEffect = mcp.SideEffectDestructive
	case has("write") || has("execute") || has("share") || has("export") || has("message"):
		h.sideEffect = mcp.SideEffectMutating
	case has("read") || has("network"):
		h.sideEffect = mcp.SideEffectReadOnly
	}
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
