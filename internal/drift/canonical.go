package drift

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gatehouse-mcp/gatehouse/internal/evidence"
	"github.com/gatehouse-mcp/gatehouse/internal/jcs"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/strictjson"
)

// SecurityMetaKeys are the _meta keys whose members belong to a tool's
// canonical definition (evidence.md §2 and §7): the tools/list declaration
// key (evidence.DeclarationKey) and the receipt keys evidence reads
// (evidence.DefaultReceiptKeys: "dev.gatehouse/security-receipt",
// "security", "interlock"). A _meta member belongs when its name is one of
// these or one of these followed by "." and a suffix (the legacy dotted
// shape, "interlock.side_effect"). Do not modify.
var SecurityMetaKeys = append([]string{evidence.DeclarationKey}, evidence.DefaultReceiptKeys...)

// ErrDefinition is wrapped by the errors of [Canonical], [Hash] and
// [Parse]: the definition (or one of its members) cannot be put in, or
// read back from, canonical form.
var ErrDefinition = errors.New("drift: tool definition")

// securityMember reports whether a _meta member named name is part of the
// canonical definition ([SecurityMetaKeys]).
func securityMember(name string) bool {
	for _, k := range SecurityMetaKeys {
		if name == k || strings.HasPrefix(name, k+".") && len(name) > len(k)+1 {
			return true
		}
	}
	return false
}

// securityMeta returns the members of the _meta object meta that are part
// of the canonical definition, in their order, with raw values. ok is
// false when meta is not a strict JSON object.
func securityMeta(meta []byte) (ms []strictjson.Member, ok bool) {
	all, err := strictjson.Object(meta)
	if err != nil {
		return nil, false
	}
	for _, m := range all {
		if securityMember(m.Name) {
			ms = append(ms, m)
		}
	}
	return ms, true
}

// definitionJSON returns the JSON object of the canonical definition's
// members, not yet canonical. withName false leaves the name out (the
// rename match of [CompareListing]).
func definitionJSON(t mcp.Tool, withName bool) ([]byte, error) {
	b := []byte{'{'}
	member := func(name string, v []byte) {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = jcs.AppendString(b, name)
		b = append(b, ':')
		b = append(b, v...)
	}
	if withName && t.Name != "" {
		member("name", jcs.AppendString(nil, t.Name))
	}
	if t.Title != "" {
		member("title", jcs.AppendString(nil, t.Title))
	}
	if t.Description != "" {
		member("description", jcs.AppendString(nil, t.Description))
	}
	if len(t.InputSchema) > 0 {
		if err := strictjson.Validate(t.InputSchema); err != nil {
			return nil, fmt.Errorf("%w: /inputSchema: %w", ErrDefinition, err)
		}
		member("inputSchema", t.InputSchema)
	}
	if len(t.OutputSchema) > 0 {
		if err := strictjson.Validate(t.OutputSchema); err != nil {
			return nil, fmt.Errorf("%w: /outputSchema: %w", ErrDefinition, err)
		}
		member("outputSchema", t.OutputSchema)
	}
	if a := annotationsJSON(t.Annotations); a != nil {
		member("annotations", a)
	}
	if len(t.Meta) > 0 {
		ms, ok := securityMeta(t.Meta)
		if !ok {
			return nil, fmt.Errorf("%w: /_meta: not a strict JSON object", ErrDefinition)
		}
		if len(ms) > 0 {
			m := []byte{'{'}
			for i, mm := range ms {
				if i > 0 {
					m = append(m, ',')
				}
				m = jcs.AppendString(m, mm.Name)
				m = append(m, ':')
				m = append(m, mm.Value...)
			}
			member("_meta", append(m, '}'))
		}
	}
	return append(b, '}'), nil
}

// annotationsJSON returns the annotations object as listed (absent hints
// left out, no defaults), nil when no member is set.
func annotationsJSON(a mcp.Annotations) []byte {
	b := []byte{'{'}
	member := func(name string, v []byte) {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = jcs.AppendString(b, name)
		b = append(b, ':')
		b = append(b, v...)
	}
	if a.Title != "" {
		member("title", jcs.AppendString(nil, a.Title))
	}
	hint := func(name string, p *bool) {
		if p == nil {
			return
		}
		if *p {
			member(name, []byte("true"))
		} else {
			member(name, []byte("false"))
		}
	}
	hint("readOnlyHint", a.ReadOnlyHint)
	hint("destructiveHint", a.DestructiveHint)
	hint("idempotentHint", a.IdempotentHint)
	hint("openWorldHint", a.OpenWorldHint)
	if len(b) == 1 {
		return nil
	}
	return append(b, '}')
}

// Canonical returns the canonical definition of t (evidence.md §7): an
// RFC 8785 JSON object of its name, title, description, inputSchema,
// outputSchema, annotations (as listed, not with defaults) and the
// security declarations of its _meta (the members [SecurityMetaKeys]
// names: "dev.gatehouse/security", "dev.gatehouse/security-receipt",
// "security", "interlock", and their dotted "key.*" forms), members
// absent from t (an empty string, a nil schema, no annotation set, no
// security member in _meta) left out. The error wraps [ErrDefinition] and
// says which member cannot be canonicalized: not strict JSON (invalid
// JSON or UTF-8, a duplicate member name) or a number beyond what RFC 8785
// carries exactly (wrapping jcs.ErrInexactNumber); it holds no value of t.
func Canonical(t mcp.Tool) ([]byte, error) {
	return canonical(t, true)
}

func canonical(t mcp.Tool, withName bool) ([]byte, error) {
	raw, err := definitionJSON(t, withName)
	if err != nil {
		return nil, err
	}
	c, err := jcs.Canonical(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDefinition, err)
	}
	return c, nil
}

// Hash returns "sha256:<hex>" of Canonical(t) (evidence.md §3), with
// Canonical's errors.
func Hash(t mcp.Tool) (string, error) {
	c, err := Canonical(t)
	if err != nil {
		return "", err
	}
	return jcs.HashBytes(c), nil
}

// Parse reads a canonical definition (Canonical's output, as stored in a
// baseline) back into an mcp.Tool with mcp.ParseTool's strictness:
// Canonical(Parse(c)) is c for every c that Canonical made. The error
// wraps [ErrDefinition] and the *mcp.ToolError of ParseTool (errors.As
// finds it), and holds no value of the definition.
func Parse(canonical []byte) (mcp.Tool, error) {
	t, err := mcp.ParseTool(canonical)
	if err != nil {
		return mcp.Tool{}, fmt.Errorf("%w: %w", ErrDefinition, err)
	}
	return t, nil
}
