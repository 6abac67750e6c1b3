// Package drift compares MCP tool definitions with their approved
// baselines (shared/spec/evidence.md §7; docs/drift.md): the canonical
// definition and its hash, the classification of every change between two
// definitions of one tool and between two listings of one server, each
// change with a kind, a severity and an action.
//
// It is pure: no I/O, no clock, no state. The gateway (internal/gateway)
// calls it on every tools/list page and list_changed refresh; the review
// commands (gatehouse tools diff) call it to show a diff.
package drift

import (
	"slices"
	"strings"

	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/toolmeta"
)

// Severity orders drift results: None < Minor < Moderate < High < Critical
// (evidence.md §7).
type Severity uint8

// Severities.
const (
	// None: the definitions are the same (equal canonical hashes).
	None Severity = iota
	// Minor: a change that adds no capability (a description edit with no
	// directive, destination or capability; an optional field added).
	Minor
	// Moderate: a change of the contract that adds no capability the
	// normalized intent shows (a type changed, a field removed, a
	// constraint relaxed), and every change resting only on heuristic
	// metadata (capped here).
	Moderate
	// High: a capability added inside the tool's reach (a write, delete,
	// execute, export, message or network effect, a side effect escalated
	// to mutating, an administering or writing scope, a sensitive data
	// class or input field, a directive added to the description).
	High
	// Critical: the tool reaches outside (externality widened from
	// internal, a share effect with a reach other than internal, an
	// external or sharing scope) or becomes destructive.
	Critical
)

// String returns "none", "minor", "moderate", "high" or "critical".
func (s Severity) String() string {
	switch s {
	case Minor:
		return "minor"
	case Moderate:
		return "moderate"
	case High:
		return "high"
	case Critical:
		return "critical"
	}
	return "none"
}

// ParseSeverity is the inverse of [Severity.String]; ok is false for any
// other string.
func ParseSeverity(s string) (sev Severity, ok bool) {
	for v := None; v <= Critical; v++ {
		if v.String() == s {
			return v, true
		}
	}
	return None, false
}

// Change kinds (evidence.md §7). A kind with a suffix names what was added
// or escalated: effect_added_<effect>, data_class_added_<class>,
// scope_added_<scope> (the scope with every byte outside [a-z0-9] mapped
// to '_': external.share -> external_share), side_effect_escalated_to_<v>,
// externality_changed_to_<v>.
const (
	KindToolAdded           = "tool_added"
	KindToolRemoved         = "tool_removed"
	KindToolRenamed         = "tool_renamed"
	KindTitleChanged        = "title_changed"
	KindDescriptionChanged  = "description_changed"
	KindDirectiveAdded      = "description_directive_added"
	KindFieldAdded          = "field_added"
	KindFieldRemoved        = "field_removed"
	KindFieldRenamed        = "field_renamed"
	KindRequiredAdded       = "required_added"
	KindRequiredRemoved     = "required_removed"
	KindTypeChanged         = "type_changed"
	KindConstraintRelaxed   = "constraint_relaxed"
	KindConstraintTightened = "constraint_tightened"
	KindSensitiveFieldAdded = "sensitive_field_added"
	KindOutputSchemaChanged = "output_schema_changed"
	KindAnnotationsChanged  = "annotations_changed"
	KindMetadataDowngraded  = "metadata_downgraded"
	// KindSchemaChanged: an inputSchema keyword that none of the kinds
	// above covers (allOf, $ref, default, a non-numeric bound, ...) was
	// added, removed or changed; or the schema was added or removed as a
	// whole.
	KindSchemaChanged = "schema_changed"
	// KindMetaChanged: a security member of _meta ([SecurityMetaKeys])
	// was added, removed or changed (its effect on the intent, if any, is
	// classified by the intent kinds).
	KindMetaChanged         = "meta_changed"
	KindEffectAdded         = "effect_added_"             // + effect
	KindDataClassAdded      = "data_class_added_"         // + class
	KindScopeAdded          = "scope_added_"              // + scope
	KindSideEffectEscalated = "side_effect_escalated_to_" // + side_effect
	KindExternalityChanged  = "externality_changed_to_"   // + externality
)

// Change is one classified difference between a baseline and a current
// definition.
type Change struct {
	// Kind is one of the Kind constants (with its suffix where it has one).
	Kind string `json:"kind"`
	// Path is the RFC 6901 pointer into the canonical definition of what
	// changed ("/inputSchema/properties/destination",
	// "/description"); "" for a change of the normalized intent or of the
	// whole tool.
	Path string `json:"path,omitempty"`
	// Severity is this change's severity, after the heuristic cap.
	Severity Severity `json:"-"`
	// Field is the normalized intent field (toolmeta.Fields:
	// "externality", "declared_side_effects", ...) of a capability change
	// or of a metadata_downgraded change; "" for every other kind.
	Field string `json:"field,omitempty"`
	// Heuristic is true when the change rests only on heuristic metadata:
	// the full intents (heuristics over name, description and schema
	// included) show it and the declared intents (every other source) do
	// not (docs/drift.md, "Capability drift"). Its severity is capped at
	// Moderate.
	Heuristic bool `json:"heuristic,omitempty"`
	// From and To are short, display-safe renderings of the old and new
	// value ("read_only", "mutating"; a type name); "" when not useful.
	// Never a description's full text.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// Actions a drift severity maps to (the policy vocabulary's names).
const (
	ActionAllow      = "allow"
	ActionMonitor    = "monitor"
	ActionDeny       = "deny"
	ActionQuarantine = "quarantine"
)

// Actions maps each severity above None to an action. The zero value is
// not usable: start from [DefaultActions].
type Actions map[Severity]string

// DefaultActions: critical -> quarantine, high -> deny, moderate and minor
// -> monitor (evidence.md §7).
func DefaultActions() Actions {
	return Actions{Critical: ActionQuarantine, High: ActionDeny, Moderate: ActionMonitor, Minor: ActionMonitor}
}

// Result is the classification of one tool's drift: the evidence's
// drift_result (evidence.md §6) and the full list behind it.
type Result struct {
	// Severity is the highest change severity (None when nothing changed).
	Severity Severity
	// Action is Actions[Severity] ("allow" for None).
	Action string
	// Changes are every classified change, in a fixed order: tool-level
	// kinds, then the intent (externality, effects, side effect, data
	// classes, scopes, metadata), then the schema (in pointer order), then
	// the description (and its directives), title, annotations, output
	// schema and the security members of _meta.
	Changes []Change
	// Warnings are short, display-safe sentences for the decision's
	// warnings ("tool capability drift detected", "external sharing
	// added"); nil when nothing changed.
	Warnings []string
}

// Decisive returns the kinds of the changes at Result.Severity, in
// Changes order: the drift_result.changes of a decision (docs/drift.md:
// the changes that decided the severity; the full list is in the
// gatehouse.drift.v1 event and gatehouse tools diff).
func (r Result) Decisive() []string {
	var out []string
	for _, c := range r.Changes {
		if c.Severity == r.Severity && r.Severity != None {
			out = append(out, c.Kind)
		}
	}
	return out
}

// Options tune [Compare].
type Options struct {
	// Actions maps severities to actions; nil means DefaultActions.
	Actions Actions
	// Directives, when set, returns the ids of the poisoning findings in a
	// tool's description (the scanner's tool-poisoning rules): a rule
	// present in the current definition and absent from the baseline's
	// is a KindDirectiveAdded change, at least High. Nil: no directive is
	// ever found, and a description edit is Minor.
	Directives func(t mcp.Tool) []string
}

// Listing is the drift of a whole tools/list (every page) against the
// server's baselines.
type Listing struct {
	// Changed maps the name of each tool whose definition differs from
	// its baseline to its Result; a renamed tool is here under its new
	// name, compared with the baseline it replaces.
	Changed map[string]Result
	// Added are the tools listed with no baseline (and not a rename), in
	// listing order; Removed the baselines not listed, sorted.
	Added   []string
	Removed []string
	// Renamed maps a new name to the baseline name it replaces: a tool
	// with no baseline whose definition, name aside, has the same hash as
	// exactly one removed baseline.
	Renamed map[string]string
}

// fixedKinds are the change kinds without a suffix.
var fixedKinds = []string{KindToolAdded, KindToolRemoved, KindToolRenamed, KindTitleChanged, KindDescriptionChanged,
	KindDirectiveAdded, KindFieldAdded, KindFieldRemoved, KindFieldRenamed, KindRequiredAdded, KindRequiredRemoved,
	KindTypeChanged, KindConstraintRelaxed, KindConstraintTightened, KindSensitiveFieldAdded, KindOutputSchemaChanged,
	KindAnnotationsChanged, KindMetadataDowngraded, KindSchemaChanged, KindMetaChanged}

// ValidKind reports whether s is a change kind Compare or CompareListing
// can report: a fixed kind, effect_added_<effect>,
// side_effect_escalated_to_<side effect>, externality_changed_to_<widened
// externality>, or scope_added_ / data_class_added_ followed by one to 64
// bytes of [a-z0-9_] (the suffix mapping of a server's string). Policy
// uses it to refuse a condition testing a kind that can never occur
// ("externality_changed_to_externl" in drift.changes).
func ValidKind(s string) bool {
	if slices.Contains(fixedKinds, s) {
		return true
	}
	for prefix, vocab := range map[string][]string{
		KindEffectAdded:         toolmeta.Effects,
		KindSideEffectEscalated: {"mutating", "destructive"},
		KindExternalityChanged:  {"external", "third_party"},
	} {
		if rest, ok := strings.CutPrefix(s, prefix); ok {
			return slices.Contains(vocab, rest)
		}
	}
	for _, prefix := range []string{KindScopeAdded, KindDataClassAdded} {
		if rest, ok := strings.CutPrefix(s, prefix); ok {
			return len(rest) > 0 && len(rest) <= 64 && strings.Trim(rest, "abcdefghijklmnopqrstuvwxyz0123456789_") == ""
		}
	}
	return false
}
