package drift

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gatehouse-mcp/gatehouse/internal/evidence"
	"github.com/gatehouse-mcp/gatehouse/internal/jcs"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
)

// Warnings of a Result (display-safe, fixed sentences), in this order.
const (
	WarningCapability   = "tool capability drift detected"
	WarningExternal     = "external sharing added"
	WarningDestructive  = "destructive capability added"
	WarningDirective    = "instruction added to tool description"
	WarningSensitive    = "sensitive input field added"
	WarningContract     = "tool input contract changed"
	WarningDowngraded   = "tool security metadata downgraded"
	WarningRenamed      = "tool renamed"
	WarningDefinition   = "tool definition changed"
	WarningToolAdded    = "tool added"
	WarningToolRemoved  = "tool removed"
	annotationTitle     = "title"
	annotationReadOnly  = "readOnlyHint"
	annotationDestruct  = "destructiveHint"
	annotationIdempot   = "idempotentHint"
	annotationOpenWorld = "openWorldHint"
)

// sameRaw reports whether two raw JSON members are the same value: both
// absent, equal canonical forms, or (when either cannot be
// canonicalized) equal bytes.
func sameRaw(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	ca, errA := jcs.Canonical(a)
	cb, errB := jcs.Canonical(b)
	if errA != nil || errB != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca, cb)
}

// Compare classifies the drift of tool cur from its baseline base (the
// same tool name, or a rename the caller established), as docs/drift.md
// ("Classification") tabulates: every change with its kind, RFC 6901
// path, severity and display values, in Result.Changes order; Severity
// their maximum; Action o.Actions[Severity] (DefaultActions when nil or
// when it has no entry for Severity; "allow" for None); Warnings.
//
// Capability changes come from the normalized intent of each definition
// (evidence.ToolIntentOf), read once without the heuristics over name,
// description and inputSchema and once with them: a change only the
// second shows rests on heuristics (Heuristic true, capped at Moderate).
// Contract changes come from the inputSchema (schema.go). Compare never
// fails and never panics: a schema that is not strict JSON is compared
// as an opaque value (KindTypeChanged at its path when it differs), and a
// member that differs without a classified change (an equivalent spelling
// such as additionalProperties true and absent) is a Minor
// KindSchemaChanged, so that Canonical(base) != Canonical(cur) implies at
// least one change.
//
// Compare(base, base, o).Severity is None, and Hash(base) == Hash(cur)
// implies it.
func Compare(base, cur mcp.Tool, o Options) Result {
	var out []Change
	if base.Name != cur.Name {
		out = append(out, Change{Kind: KindToolRenamed, Path: "/name", Severity: Moderate, From: display(base.Name), To: display(cur.Name)})
	}
	caps, extShare := capabilityChanges(base, cur)
	out = append(out, caps...)
	schema := inputSchemaChanges(base.InputSchema, cur.InputSchema)
	if len(schema) == 0 && !sameRaw(base.InputSchema, cur.InputSchema) {
		schema = append(schema, Change{Kind: KindSchemaChanged, Path: "/inputSchema", Severity: Minor})
	}
	out = append(out, schema...)
	descPath := ""
	if base.Description != cur.Description {
		descPath = "/description"
		out = append(out, Change{Kind: KindDescriptionChanged, Path: descPath, Severity: Minor})
	}
	if o.Directives != nil {
		before := o.Directives(base)
		seen := map[string]bool{}
		for _, id := range o.Directives(cur) {
			if seen[id] || slices.Contains(before, id) {
				continue
			}
			seen[id] = true
			out = append(out, Change{Kind: KindDirectiveAdded, Path: descPath, Severity: High, To: display(id)})
		}
	}
	if base.Title != cur.Title {
		out = append(out, Change{Kind: KindTitleChanged, Path: "/title", Severity: Minor, From: display(base.Title), To: display(cur.Title)})
	}
	out = append(out, annotationChanges(base.Annotations, cur.Annotations)...)
	if !sameRaw(base.OutputSchema, cur.OutputSchema) {
		out = append(out, Change{Kind: KindOutputSchemaChanged, Path: "/outputSchema", Severity: Minor,
			From: presence(len(base.OutputSchema) > 0), To: presence(len(cur.OutputSchema) > 0)})
	}
	out = append(out, metaChanges(base.Meta, cur.Meta)...)
	return result(out, extShare, o)
}

// result completes a Result from its changes.
func result(cs []Change, extShare bool, o Options) Result {
	r := Result{Changes: cs}
	for _, c := range cs {
		r.Severity = max(r.Severity, c.Severity)
	}
	r.Action = o.action(r.Severity)
	r.Warnings = warnings(cs, extShare)
	return r
}

// action maps a severity to its action.
func (o Options) action(s Severity) string {
	if s == None {
		return ActionAllow
	}
	if a, ok := o.Actions[s]; ok && a != "" {
		return a
	}
	return DefaultActions()[s]
}

// warnings returns the Result warnings of cs.
func warnings(cs []Change, extShare bool) []string {
	if len(cs) == 0 {
		return nil
	}
	has := func(f func(Change) bool) bool { return slices.ContainsFunc(cs, f) }
	var out []string
	add := func(ok bool, w string) {
		if ok {
			out = append(out, w)
		}
	}
	add(has(func(c Change) bool { return c.Field != "" && c.Kind != KindMetadataDowngraded }), WarningCapability)
	add(extShare, WarningExternal)
	add(has(func(c Change) bool {
		return !c.Heuristic && c.Kind == KindSideEffectEscalated+mcp.SideEffectDestructive
	}), WarningDestructive)
	add(has(func(c Change) bool { return c.Kind == KindDirectiveAdded }), WarningDirective)
	add(has(func(c Change) bool { return c.Kind == KindSensitiveFieldAdded }), WarningSensitive)
	add(has(func(c Change) bool {
		return strings.HasPrefix(c.Path, "/inputSchema") && c.Kind != KindDescriptionChanged && c.Kind != KindTitleChanged
	}), WarningContract)
	add(has(func(c Change) bool { return c.Kind == KindMetadataDowngraded }), WarningDowngraded)
	add(has(func(c Change) bool { return c.Kind == KindToolRenamed }), WarningRenamed)
	add(has(func(c Change) bool { return c.Kind == KindToolAdded }), WarningToolAdded)
	add(has(func(c Change) bool { return c.Kind == KindToolRemoved }), WarningToolRemoved)
	if out == nil {
		out = []string{WarningDefinition}
	}
	return out
}

// annotationChanges returns an annotations_changed change per annotation
// member that differs (absent is "" in From and To).
func annotationChanges(a, b mcp.Annotations) []Change {
	var out []Change
	if a.Title != b.Title {
		out = append(out, Change{Kind: KindAnnotationsChanged, Path: "/annotations/" + annotationTitle, Severity: Minor,
			From: display(a.Title), To: display(b.Title)})
	}
	hint := func(name string, x, y *bool) {
		if (x == nil) == (y == nil) && (x == nil || *x == *y) {
			return
		}
		s := func(p *bool) string {
			if p == nil {
				return ""
			}
			return strconv.FormatBool(*p)
		}
		out = append(out, Change{Kind: KindAnnotationsChanged, Path: "/annotations/" + name, Severity: Minor, From: s(x), To: s(y)})
	}
	hint(annotationReadOnly, a.ReadOnlyHint, b.ReadOnlyHint)
	hint(annotationDestruct, a.DestructiveHint, b.DestructiveHint)
	hint(annotationIdempot, a.IdempotentHint, b.IdempotentHint)
	hint(annotationOpenWorld, a.OpenWorldHint, b.OpenWorldHint)
	return out
}

// metaChanges returns a meta_changed change per security member of _meta
// ([SecurityMetaKeys]) added, removed or changed, in name order; one for
// the whole _meta when either side is not a strict JSON object and they
// differ.
func metaChanges(a, b []byte) []Change {
	ma, oka := securityMeta(a)
	mb, okb := securityMeta(b)
	if len(a) == 0 {
		oka = true
	}
	if len(b) == 0 {
		okb = true
	}
	if !oka || !okb {
		if !bytes.Equal(a, b) {
			return []Change{{Kind: KindMetaChanged, Path: "/_meta", Severity: Minor}}
		}
		return nil
	}
	va, vb := map[string][]byte{}, map[string][]byte{}
	for _, m := range ma {
		va[m.Name] = m.Value
	}
	for _, m := range mb {
		vb[m.Name] = m.Value
	}
	names := sortedKeys(va)
	for n := range vb {
		if _, ok := va[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var out []Change
	for _, n := range names {
		x, inA := va[n]
		y, inB := vb[n]
		if inA && inB && sameRaw(x, y) {
			continue
		}
		c := Change{Kind: KindMetaChanged, Path: "/_meta/" + pointerToken(n), Severity: Minor}
		if inA != inB {
			c.From, c.To = presence(inA), presence(inB)
		}
		out = append(out, c)
	}
	return out
}

// AddedTool returns the Result of a listed tool that has no baseline and
// is not a rename: one KindToolAdded change (Moderate; To its name),
// with the action o gives Moderate.
func AddedTool(t mcp.Tool, o Options) Result {
	return result([]Change{{Kind: KindToolAdded, Severity: Moderate, To: display(t.Name)}}, false, o)
}

// RemovedTool returns the Result of a baseline that the listing no longer
// has: one KindToolRemoved change (Minor; From its name).
func RemovedTool(name string, o Options) Result {
	return result([]Change{{Kind: KindToolRemoved, Severity: Minor, From: display(name)}}, false, o)
}

// Severity returns the highest severity of the listing: of every Changed
// result, Moderate when a tool was added (AddedTool), Minor when one was
// removed (RemovedTool); None when nothing changed.
func (l Listing) Severity() Severity {
	s := None
	for _, r := range l.Changed {
		s = max(s, r.Severity)
	}
	if len(l.Added) > 0 {
		s = max(s, Moderate)
	}
	if len(l.Removed) > 0 {
		s = max(s, Minor)
	}
	return s
}

// CompareListing classifies a whole listing (every page, in order)
// against the baselines (name -> definition):
//
//   - a listed tool with a baseline of its name whose hash differs is in
//     Changed with Compare(baseline, tool, o) (a definition that cannot be
//     hashed is compared all the same); when a name is listed twice, the
//     more severe result is kept;
//   - a listed tool with no baseline of its name is a rename when its
//     definition, name aside, has the hash of exactly one baseline not
//     listed, and that baseline matches no other such tool: Renamed maps
//     the new name to the old, and Changed holds its Compare (a
//     KindToolRenamed change, so its severity and action are there);
//   - any other listed tool without a baseline is in Added (listing
//     order, each name once; AddedTool gives its Result), and every
//     baseline neither listed nor renamed in Removed (sorted;
//     RemovedTool).
//
// Maps are nil when empty. The result is deterministic for a given input.
func CompareListing(baselines map[string]mcp.Tool, listed []mcp.Tool, o Options) Listing {
	var l Listing
	seen := map[string]bool{}
	var fresh []mcp.Tool
	for _, t := range listed {
		base, ok := baselines[t.Name]
		if !ok {
			if !seen[t.Name] {
				fresh = append(fresh, t)
			}
			seen[t.Name] = true
			continue
		}
		seen[t.Name] = true
		hb, errB := Hash(base)
		hc, errC := Hash(t)
		if errB == nil && errC == nil && hb == hc {
			continue
		}
		r := Compare(base, t, o)
		if r.Severity == None {
			continue
		}
		if prev, dup := l.Changed[t.Name]; dup && prev.Severity >= r.Severity {
			continue
		}
		if l.Changed == nil {
			l.Changed = map[string]Result{}
		}
		l.Changed[t.Name] = r
	}
	var gone []string
	for name := range baselines {
		if !seen[name] {
			gone = append(gone, name)
		}
	}
	sort.Strings(gone)
	// Rename candidates: hashes name aside.
	nameless := func(t mcp.Tool) string {
		if !distinctive(t) {
			// Two bare definitions ({"inputSchema":{"type":"object"}})
			// are alike by chance, not by a rename.
			return ""
		}
		c, err := canonical(t, false)
		if err != nil {
			return ""
		}
		return jcs.HashBytes(c)
	}
	goneHash := make(map[string][]string, len(gone)) // hash -> removed names
	for _, name := range gone {
		if h := nameless(baselines[name]); h != "" {
			goneHash[h] = append(goneHash[h], name)
		}
	}
	freshHash := make([]string, len(fresh))
	freshCount := map[string]int{}
	for i, t := range fresh {
		freshHash[i] = nameless(t)
		freshCount[freshHash[i]]++
	}
	renamedFrom := map[string]bool{}
	for i, t := range fresh {
		h := freshHash[i]
		if h != "" && len(goneHash[h]) == 1 && freshCount[h] == 1 {
			old := goneHash[h][0]
			if l.Renamed == nil {
				l.Renamed = map[string]string{}
			}
			l.Renamed[t.Name] = old
			renamedFrom[old] = true
			if l.Changed == nil {
				l.Changed = map[string]Result{}
			}
			l.Changed[t.Name] = Compare(baselines[old], t, o)
			continue
		}
		l.Added = append(l.Added, t.Name)
	}
	for _, name := range gone {
		if !renamedFrom[name] {
			l.Removed = append(l.Removed, name)
		}
	}
	return l
}

// DriftResult returns r as a decision's drift_result (evidence.md §6):
// its severity's name, its action and its Decisive kinds; nil when r is
// None (a decision without drift has no drift_result).
func (r Result) DriftResult() *evidence.DriftResult {
	if r.Severity == None {
		return nil
	}
	return &evidence.DriftResult{Severity: r.Severity.String(), Action: r.Action, Changes: r.Decisive()}
}

// distinctive reports whether t's definition, name aside, says enough to
// tell a rename from a coincidence: a description, or an inputSchema with
// at least one property.
func distinctive(t mcp.Tool) bool {
	if t.Description != "" {
		return true
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	return json.Unmarshal(t.InputSchema, &s) == nil && len(s.Properties) > 0
}
