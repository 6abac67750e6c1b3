package drift

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gatehouse-mcp/gatehouse/internal/linesafe"
	"github.com/gatehouse-mcp/gatehouse/internal/scan"
	"github.com/gatehouse-mcp/gatehouse/internal/strictjson"
)

// The contract of a tool is its inputSchema (JSON Schema, 2020-12 as MCP
// revisions from 2025-06-18 say, earlier drafts alike for the keywords
// read here). Both schemas are decoded with strictjson (numbers as int64
// or float64, as RFC 8785 compares them) and walked together from the
// root: properties, required, type, the constraint keywords, items and
// additionalProperties are classified; any other keyword that differs is
// a schema_changed change at its pointer. A schema that is not strict
// JSON is compared as an opaque value.

// Keywords whose value bounds an instance from above or below: removing
// one, raising an upper bound or lowering a lower bound relaxes the
// contract.
var (
	upperBounds = []string{"maxLength", "maximum", "exclusiveMaximum", "maxItems", "maxProperties", "maxContains"}
	lowerBounds = []string{"minLength", "minimum", "exclusiveMinimum", "minItems", "minProperties", "minContains"}
	// Keywords that restrict instances and cannot be ordered: removing or
	// changing one relaxes, adding one tightens.
	restrictions = []string{"pattern", "format", "multipleOf", "const", "contentMediaType", "contentEncoding"}
	// Annotation keywords: no effect on what is accepted.
	annotationKeywords = []string{"$comment", "examples", "deprecated", "readOnly", "writeOnly", "$schema", "$id"}
)

// Words of a property name that make it sensitive (where data goes, what
// runs), besides the credential names scan.SecretLikeKey knows.
var sensitiveFieldWords = []string{
	"destination", "dest", "url", "urls", "uri", "webhook", "endpoint", "callback", "redirect", "recipient",
	"recipients", "email", "emails", "cc", "bcc", "host", "hostname", "command", "cmd", "exec", "shell", "script",
}

// SensitiveField reports whether a property named name likely carries a
// credential (scan.SecretLikeKey) or a destination or command: one of its
// words (split as toolmeta splits names: at non-letters and at case
// changes) is destination, url, webhook, recipient, email, command, exec,
// shell, host or a like word (docs/drift.md lists them), or its letters
// contain "webhook" or "callback".
func SensitiveField(name string) bool {
	if scan.SecretLikeKey(name) {
		return true
	}
	for _, w := range nameWords(name) {
		if slices.Contains(sensitiveFieldWords, w) {
			return true
		}
	}
	flat := strings.ToLower(name)
	return strings.Contains(flat, "webhook") || strings.Contains(flat, "callback")
}

// nameWords splits s into lowercase ASCII words at every non-letter and
// at lower-to-upper case changes ("webhookURL" -> webhook, url).
func nameWords(s string) []string {
	var out []string
	var cur []byte
	prevLower := false
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		isUpper, isLower := 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z'
		if !isUpper && !isLower {
			flush()
			prevLower = false
			continue
		}
		if isUpper && prevLower {
			flush()
		}
		cur = append(cur, c)
		prevLower = isLower
	}
	flush()
	return out
}

// schemaDiff collects the changes of one schema pair.
type schemaDiff struct {
	out []Change
}

func (d *schemaDiff) add(kind, path string, sev Severity, from, to string) {
	d.out = append(d.out, Change{Kind: kind, Path: path, Severity: sev, From: from, To: to})
}

// pointerToken escapes an RFC 6901 reference token.
func pointerToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// decodeSchema decodes raw strictly; ok is false when it is not strict
// JSON. An absent schema (nil) decodes as absent (v nil, ok true).
func decodeSchema(raw []byte) (v any, present, ok bool) {
	if len(raw) == 0 {
		return nil, false, true
	}
	if strictjson.Validate(raw) != nil {
		return nil, true, false
	}
	v, err := strictjson.Decode(raw)
	if err != nil {
		return nil, true, false
	}
	return v, true, true
}

// inputSchemaChanges classifies the contract changes from schema a to b
// (raw inputSchema values; nil when absent), in pointer order.
func inputSchemaChanges(a, b []byte) []Change {
	const root = "/inputSchema"
	va, pa, oka := decodeSchema(a)
	vb, pb, okb := decodeSchema(b)
	d := &schemaDiff{}
	switch {
	case !oka || !okb:
		if string(a) != string(b) {
			d.add(KindTypeChanged, root, Moderate, kindName(va, pa, oka), kindName(vb, pb, okb))
		}
	default:
		if pa != pb {
			d.add(KindSchemaChanged, root, Moderate, presence(pa), presence(pb))
		}
		if !pa {
			va = map[string]any{}
		}
		if !pb {
			vb = map[string]any{}
		}
		d.schema(root, va, vb)
	}
	slices.SortStableFunc(d.out, func(x, y Change) int { return strings.Compare(x.Path, y.Path) })
	return d.out
}

func presence(p bool) string {
	if p {
		return "present"
	}
	return "absent"
}

// kindName is the display name of a decoded schema's JSON kind.
func kindName(v any, present, ok bool) string {
	switch {
	case !present:
		return "absent"
	case !ok:
		return "invalid JSON"
	}
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return "number"
}

// schema classifies the changes of the sub-schema pair a, b at path.
// A boolean schema true is the empty schema {}; false accepts nothing.
func (d *schemaDiff) schema(path string, a, b any) {
	if equal(a, b) {
		return
	}
	if a == true {
		a = map[string]any{}
	}
	if b == true {
		b = map[string]any{}
	}
	ma, oka := a.(map[string]any)
	mb, okb := b.(map[string]any)
	switch {
	case a == false:
		d.add(KindConstraintRelaxed, path, Moderate, "false", kindName(b, true, true))
		return
	case b == false:
		d.add(KindConstraintTightened, path, Minor, kindName(a, true, true), "false")
		return
	case !oka || !okb:
		d.add(KindTypeChanged, path, Moderate, kindName(a, true, true), kindName(b, true, true))
		return
	}
	keys := make([]string, 0, len(ma)+len(mb))
	for k := range ma {
		keys = append(keys, k)
	}
	for k := range mb {
		if _, ok := ma[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	propsDone := false
	for _, k := range keys {
		va, ina := ma[k]
		vb, inb := mb[k]
		at := path + "/" + pointerToken(k)
		switch {
		case k == "properties" || k == "required":
			if !propsDone {
				propsDone = true
				d.properties(path, ma, mb)
			}
			continue
		case equal(va, vb):
			continue
		}
		switch {
		case k == "type":
			d.add(KindTypeChanged, at, Moderate, typeName(va, ina), typeName(vb, inb))
		case k == "description":
			d.add(KindDescriptionChanged, at, Minor, "", "")
		case k == "title":
			d.add(KindTitleChanged, at, Minor, short(va, ina), short(vb, inb))
		case k == "enum":
			d.enum(at, va, ina, vb, inb)
		case slices.Contains(upperBounds, k):
			d.bound(at, va, ina, vb, inb, true)
		case slices.Contains(lowerBounds, k):
			d.bound(at, va, ina, vb, inb, false)
		case slices.Contains(restrictions, k):
			switch {
			case !inb || ina:
				d.add(KindConstraintRelaxed, at, Moderate, short(va, ina), short(vb, inb))
			default:
				d.add(KindConstraintTightened, at, Minor, short(va, ina), short(vb, inb))
			}
		case k == "uniqueItems":
			if va == true {
				d.add(KindConstraintRelaxed, at, Moderate, short(va, ina), short(vb, inb))
			} else if vb == true {
				d.add(KindConstraintTightened, at, Minor, short(va, ina), short(vb, inb))
			}
		case k == "additionalProperties" || k == "unevaluatedProperties" || k == "items" || k == "unevaluatedItems":
			// Absent is the empty schema (everything accepted).
			if !ina {
				va = true
			}
			if !inb {
				vb = true
			}
			if _, arr := va.([]any); arr {
				d.add(KindSchemaChanged, at, Moderate, short(va, ina), short(vb, inb))
				continue
			}
			if _, arr := vb.([]any); arr {
				d.add(KindSchemaChanged, at, Moderate, short(va, ina), short(vb, inb))
				continue
			}
			d.schema(at, va, vb)
		case slices.Contains(annotationKeywords, k):
			d.add(KindSchemaChanged, at, Minor, "", "")
		default:
			d.add(KindSchemaChanged, at, Moderate, "", "")
		}
	}
}

// properties classifies the changes of the properties and required
// members of the object schemas a and b at path: fields added, removed
// and renamed (one removed and one added with an identical sub-schema and
// requiredness, unambiguously), sensitive fields added, required added
// and removed, and the changes inside each property in both.
func (d *schemaDiff) properties(path string, a, b map[string]any) {
	pa, _ := a["properties"].(map[string]any)
	pb, _ := b["properties"].(map[string]any)
	ra, rb := stringSet(a["required"]), stringSet(b["required"])
	// A properties member that is not an object is compared opaquely;
	// required is still classified.
	va, ina := a["properties"]
	vb, inb := b["properties"]
	if (ina && pa == nil || inb && pb == nil) && !equal(va, vb) {
		d.add(KindTypeChanged, path+"/properties", Moderate, kindName(va, ina, true), kindName(vb, inb, true))
	}
	var removed, added []string
	for k := range pa {
		if _, ok := pb[k]; !ok {
			removed = append(removed, k)
		}
	}
	for k := range pb {
		if _, ok := pa[k]; !ok {
			added = append(added, k)
		}
	}
	sort.Strings(removed)
	sort.Strings(added)
	prop := func(k string) string { return path + "/properties/" + pointerToken(k) }
	renamed := map[string]string{} // added -> removed
	for _, r := range removed {
		var match []string
		for _, n := range added {
			if equal(pa[r], pb[n]) && ra[r] == rb[n] {
				match = append(match, n)
			}
		}
		if len(match) != 1 {
			continue
		}
		back := 0
		for _, o := range removed {
			if equal(pa[o], pb[match[0]]) && ra[o] == rb[match[0]] {
				back++
			}
		}
		if back == 1 {
			renamed[match[0]] = r
		}
	}
	for _, r := range removed {
		if !slices.Contains(mapValues(renamed), r) {
			d.add(KindFieldRemoved, prop(r), Moderate, display(r), "")
		}
	}
	for _, n := range added {
		old, isRename := renamed[n]
		if isRename {
			d.add(KindFieldRenamed, prop(n), Moderate, display(old), display(n))
			if SensitiveField(n) && !SensitiveField(old) {
				d.add(KindSensitiveFieldAdded, prop(n), High, "", display(n))
			}
			continue
		}
		switch {
		case SensitiveField(n):
			d.add(KindSensitiveFieldAdded, prop(n), High, "", display(n))
		case rb[n]:
			d.add(KindFieldAdded, prop(n), Moderate, "", display(n)+" (required)")
		default:
			d.add(KindFieldAdded, prop(n), Minor, "", display(n))
		}
	}
	// required: names that changed requiredness without being added,
	// removed or renamed.
	involved := func(k string) bool {
		_, inA := pa[k]
		_, inB := pb[k]
		_, ren := renamed[k]
		return inA != inB || ren || slices.Contains(mapValues(renamed), k)
	}
	for _, k := range sortedKeys(rb) {
		if !ra[k] && !involved(k) {
			d.add(KindRequiredAdded, path+"/required", Moderate, "", display(k))
		}
	}
	for _, k := range sortedKeys(ra) {
		if !rb[k] && !involved(k) {
			d.add(KindRequiredRemoved, path+"/required", Minor, display(k), "")
		}
	}
	if qa, qb := a["required"], b["required"]; !equal(qa, qb) && (qa != nil && !isStringArray(qa) || qb != nil && !isStringArray(qb)) {
		d.add(KindSchemaChanged, path+"/required", Moderate, "", "")
	}
	for _, k := range sortedKeys(pa) {
		if vb, ok := pb[k]; ok {
			d.schema(prop(k), pa[k], vb)
		}
	}
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// stringSet is the set of strings of a required array (other items and
// other values ignored).
func stringSet(v any) map[string]bool {
	arr, _ := v.([]any)
	out := make(map[string]bool, len(arr))
	for _, x := range arr {
		if s, ok := x.(string); ok {
			out[s] = true
		}
	}
	return out
}

func isStringArray(v any) bool {
	arr, ok := v.([]any)
	if !ok {
		return false
	}
	for _, x := range arr {
		if _, ok := x.(string); !ok {
			return false
		}
	}
	return true
}

// enum classifies a change of an enum: removed, or a value allowed that
// was not, relaxes; only values taken away tightens.
func (d *schemaDiff) enum(at string, va any, ina bool, vb any, inb bool) {
	ea, oka := va.([]any)
	eb, okb := vb.([]any)
	from, to := values(ea, oka, ina), values(eb, okb, inb)
	switch {
	case !inb:
		d.add(KindConstraintRelaxed, at, Moderate, from, to)
	case !ina:
		d.add(KindConstraintTightened, at, Minor, from, to)
	case !oka || !okb:
		d.add(KindSchemaChanged, at, Moderate, from, to)
	default:
		for _, x := range eb {
			if !slices.ContainsFunc(ea, func(y any) bool { return equal(x, y) }) {
				d.add(KindConstraintRelaxed, at, Moderate, from, to)
				return
			}
		}
		d.add(KindConstraintTightened, at, Minor, from, to)
	}
}

func values(arr []any, isArr, present bool) string {
	switch {
	case !present:
		return ""
	case !isArr:
		return "not an array"
	case len(arr) == 1:
		return "1 value"
	}
	return fmt.Sprintf("%d values", len(arr))
}

// bound classifies a change of a bound keyword: removed, or moved
// outward (up for an upper bound), relaxes; added or moved inward
// tightens. A bound that is not a number is compared opaquely.
func (d *schemaDiff) bound(at string, va any, ina bool, vb any, inb bool, upper bool) {
	fa, oka := number(va)
	fb, okb := number(vb)
	from, to := short(va, ina), short(vb, inb)
	switch {
	case !inb:
		d.add(KindConstraintRelaxed, at, Moderate, from, to)
	case !ina:
		d.add(KindConstraintTightened, at, Minor, from, to)
	case !oka || !okb:
		d.add(KindSchemaChanged, at, Moderate, from, to)
	case upper == (fb > fa):
		d.add(KindConstraintRelaxed, at, Moderate, from, to)
	default:
		d.add(KindConstraintTightened, at, Minor, from, to)
	}
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// typeName renders a type keyword: "string", "string|null"; "" when
// absent (any type).
func typeName(v any, present bool) string {
	if !present {
		return ""
	}
	switch t := v.(type) {
	case string:
		return display(t)
	case []any:
		var parts []string
		for _, x := range t {
			s, ok := x.(string)
			if !ok {
				return "invalid"
			}
			parts = append(parts, s)
		}
		return display(strings.Join(parts, "|"))
	}
	return "invalid"
}

// short renders a scalar keyword value for From/To: a number, a boolean,
// a string (display-safe, shortened); "" when absent, the kind for an
// object or array.
func short(v any, present bool) string {
	if !present {
		return ""
	}
	switch x := v.(type) {
	case string:
		return display(x)
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		if math.IsInf(x, 0) {
			return "out of range"
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	case nil:
		return "null"
	}
	return kindName(v, true, true)
}

// maxDisplay bounds the runes of a server string shown in From and To.
const maxDisplay = 80

// display returns s shortened to maxDisplay runes (with "…") and made
// safe for a terminal (linesafe.Text).
func display(s string) string {
	if utf8.RuneCountInString(s) > maxDisplay {
		n := 0
		for i := range s {
			if n == maxDisplay {
				s = s[:i] + "…"
				break
			}
			n++
		}
	}
	return linesafe.Text(s)
}

// equal reports whether two decoded JSON values are equal as RFC 8785
// compares them (numbers by value, objects by members).
func equal(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equal(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case int64:
		if y, ok := b.(int64); ok {
			return x == y
		}
		fa, _ := number(a)
		fb, ok := number(b)
		return ok && fa == fb
	case float64:
		fa, _ := number(a)
		fb, ok := number(b)
		return ok && fa == fb
	}
	return a == b
}
