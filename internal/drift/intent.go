package drift

import (
	"slices"
	"strings"

	"github.com/gatehouse-mcp/gatehouse/internal/evidence"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/toolmeta"
)

// The intent of a definition is read twice (docs/drift.md, "Heuristic
// drift"): declared, from every source but the heuristics (the _meta
// declaration and the annotations, with the unknown defaults), and full,
// as the gateway's policy sees it (evidence.ToolIntentOf, heuristics over
// name, description and inputSchema included). A capability change of the
// declared intents is classified at its full severity; one that only the
// full intents show rests on heuristics and is capped at Moderate.

// intents returns the declared and the full intent of t.
func intents(t mcp.Tool) (declared, full toolmeta.Intent) {
	full = evidence.ToolIntentOf(&t)
	// Without name, description and inputSchema the heuristic claim
	// claims nothing: the merge is that of the other sources.
	bare := t
	bare.Name, bare.Description, bare.InputSchema = "", "", nil
	declared = evidence.ToolIntentOf(&bare)
	return declared, full
}

// Words that make a scope name critical (it reaches outside) or high (it
// administers, writes or deletes), matched against the scope's lowercase
// words (split at every byte outside [a-z0-9]).
var (
	criticalScopeWords = []string{"external", "share", "shared", "sharing", "publish", "public"}
	highScopeWords     = []string{"admin", "write", "delete", "exec", "execute", "manage", "owner", "root", "sudo", "all", "full"}
)

// Data classes whose addition is High (lowercase); any other is Moderate.
var sensitiveDataClasses = []string{"pii", "phi", "secret", "secrets", "credential", "credentials", "financial", "payment", "health"}

// scopeSeverity classifies an added scope.
func scopeSeverity(scope string) Severity {
	if strings.Contains(scope, "*") {
		return High
	}
	ws := strings.FieldsFunc(strings.ToLower(scope), func(r rune) bool {
		return !('a' <= r && r <= 'z' || '0' <= r && r <= '9')
	})
	sev := Moderate
	for _, w := range ws {
		if slices.Contains(criticalScopeWords, w) {
			return Critical
		}
		if slices.Contains(highScopeWords, w) {
			sev = High
		}
	}
	return sev
}

// effectSeverity classifies an added effect; ext is the current
// externality.
func effectSeverity(effect, ext string) Severity {
	switch effect {
	case "share":
		if ext != "internal" {
			return Critical
		}
		return High
	case "read":
		return Moderate
	}
	return High // write, delete, execute, export, message, network
}

// rank is v's index in vocab, -1 when absent.
func rank(vocab []string, v string) int { return slices.Index(vocab, v) }

// maxSuffix bounds the suffix of a kind taken from a server's string.
const maxSuffix = 64

// suffix maps s for a kind's suffix: every byte outside [a-z0-9] to '_'
// (external.share -> external_share), at most maxSuffix bytes.
func suffix(s string) string {
	if len(s) > maxSuffix {
		s = s[:maxSuffix]
	}
	b := []byte(s)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			b[i] = '_'
		}
	}
	return string(b)
}

// intentChanges returns the capability changes from intent a to intent b,
// in the order of Result.Changes (externality, effects, side effect, data
// classes, scopes).
func intentChanges(a, b toolmeta.Intent) []Change {
	var out []Change
	if ra, rb := rank(toolmeta.Externalities, a.Externality), rank(toolmeta.Externalities, b.Externality); rb > ra && rb > 0 {
		sev := High
		if a.Externality == "internal" || ra < 0 {
			sev = Critical
		}
		out = append(out, Change{Kind: KindExternalityChanged + b.Externality, Field: toolmeta.FieldExternality,
			Severity: sev, From: a.Externality, To: b.Externality})
	}
	for _, e := range toolmeta.Effects {
		if slices.Contains(b.DeclaredSideEffects, e) && !slices.Contains(a.DeclaredSideEffects, e) {
			out = append(out, Change{Kind: KindEffectAdded + e, Field: toolmeta.FieldDeclaredSideEffects,
				Severity: effectSeverity(e, b.Externality), To: e})
		}
	}
	if ra, rb := rank(toolmeta.SideEffects, a.SideEffect), rank(toolmeta.SideEffects, b.SideEffect); rb > ra && rb > 0 {
		sev := High
		if b.SideEffect == mcp.SideEffectDestructive {
			sev = Critical
		}
		out = append(out, Change{Kind: KindSideEffectEscalated + b.SideEffect, Field: toolmeta.FieldSideEffect,
			Severity: sev, From: a.SideEffect, To: b.SideEffect})
	}
	for _, c := range b.DataClasses {
		if slices.Contains(a.DataClasses, c) {
			continue
		}
		sev := Moderate
		if slices.Contains(sensitiveDataClasses, strings.ToLower(c)) {
			sev = High
		}
		out = append(out, Change{Kind: KindDataClassAdded + suffix(c), Field: toolmeta.FieldDataClasses,
			Severity: sev, To: display(c)})
	}
	for _, s := range b.RequiredScopes {
		if slices.Contains(a.RequiredScopes, s) {
			continue
		}
		out = append(out, Change{Kind: KindScopeAdded + suffix(s), Field: toolmeta.FieldRequiredScopes,
			Severity: scopeSeverity(s), To: display(s)})
	}
	return out
}

// capabilityChanges classifies the capability drift from base to cur: the
// changes of the declared intents at their severity, then those only the
// full intents show, marked Heuristic and capped at Moderate, then a
// metadata_downgraded change per field whose full-intent source weighs
// less than before (toolmeta.Weights). extShare is true when the declared
// intent of cur shares outside (a share effect, externality not
// internal) and that of base did not.
func capabilityChanges(base, cur mcp.Tool) (cs []Change, extShare bool) {
	da, fa := intents(base)
	db, fb := intents(cur)
	out := intentChanges(da, db)
	for _, c := range intentChanges(fa, fb) {
		if slices.ContainsFunc(out, func(d Change) bool { return d.Kind == c.Kind }) {
			continue
		}
		c.Heuristic = true
		c.Severity = min(c.Severity, Moderate)
		out = append(out, c)
	}
	// Keep the fixed field order: a heuristic change goes beside the
	// declared changes of its field.
	slices.SortStableFunc(out, func(x, y Change) int { return fieldOrder(x.Field) - fieldOrder(y.Field) })
	for _, f := range toolmeta.Fields {
		sa, sb := fa.Sources[f], fb.Sources[f]
		if toolmeta.Weights[sb] < toolmeta.Weights[sa] {
			out = append(out, Change{Kind: KindMetadataDowngraded, Field: f, Severity: Moderate, From: sa, To: sb})
		}
	}
	sharesOut := func(it toolmeta.Intent) bool {
		return slices.Contains(it.DeclaredSideEffects, "share") && it.Externality != "internal"
	}
	return out, sharesOut(db) && !sharesOut(da)
}

// fieldOrder is the position of an intent field in Result.Changes:
// externality, effects, side effect, data classes, scopes.
func fieldOrder(f string) int {
	switch f {
	case toolmeta.FieldExternality:
		return 0
	case toolmeta.FieldDeclaredSideEffects:
		return 1
	case toolmeta.FieldSideEffect:
		return 2
	case toolmeta.FieldDataClasses:
		return 3
	}
	return 4
}
