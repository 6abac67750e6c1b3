package evidence

import (
	"bytes"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// ReceiptKey is the result._meta key where Gatehouse looks first for a
// server receipt (evidence.md §2).
const ReceiptKey = "dev.gatehouse/security-receipt"

// DeclarationKey is the tools/list tool._meta key of a tool declaration
// (evidence.md §2).
const DeclarationKey = "dev.gatehouse/security"

// DefaultReceiptKeys are the result._meta keys [Find] tries, in order: the
// Gatehouse key, then the legacy shapes seen in the wild. Do not modify;
// pass a copy to change the order.
var DefaultReceiptKeys = []string{ReceiptKey, "security", "interlock"}

// Find looks for a server receipt in result, the JSON value of a tools/call
// response's "result" member (evidence.md §2). For each key of keys in
// order, it returns the first that matches in result._meta:
//
//   - a member named key whose value is an object: raw is that object's
//     bytes (aliasing result);
//   - otherwise, members named key + "." + suffix (the legacy dotted shape,
//     for example "interlock.receipt_id"): raw is a new object of those
//     members in their order, named by their suffix, with their raw values.
//     Members with an empty suffix are ignored.
//
// A member named key whose value is not an object is not a receipt and is
// skipped (a legacy key such as "security" may mean something else).
// found is false when result is not a strict JSON object (see [Parse]), has
// no object _meta, or no key matches; raw and key are then nil and "".
// Cost: one strict parse of result, or a search for its bytes `"_meta"`
// and `\u` when neither is there: a member named _meta is written with one
// or the other (no other escape yields its characters), so without both
// there is no receipt to find.
func Find(result []byte, keys []string) (raw []byte, key string, found bool) {
	if !bytes.Contains(result, []byte(`"_meta"`)) && !bytes.Contains(result, []byte(`\u`)) {
		return nil, "", false
	}
	return find(result, keys)
}

// find is Find without the search that skips the parse.
func find(result []byte, keys []string) (raw []byte, key string, found bool) {
	meta, ok := metaMembers(result)
	if !ok {
		return nil, "", false
	}
	for _, k := range keys {
		for _, m := range meta {
			if m.name == k && m.value.Kind() == '{' {
				return m.value, k, true
			}
		}
		if obj := dotted(meta, k); obj != nil {
			return obj, k, true
		}
	}
	return nil, "", false
}

// FindToolDeclaration returns the tool declaration of a tools/list tool
// entry: the object at tool._meta["dev.gatehouse/security"] ([DeclarationKey];
// evidence.md §2), to be read with [ParseDeclaration]. found is false when
// tool is not a strict JSON object, has no object _meta, or the member is
// absent or not an object. raw aliases tool.
func FindToolDeclaration(tool []byte) (raw []byte, found bool) {
	meta, ok := metaMembers(tool)
	if !ok {
		return nil, false
	}
	for _, m := range meta {
		if m.name == DeclarationKey && m.value.Kind() == '{' {
			return m.value, true
		}
	}
	return nil, false
}

// FindToolReceipt returns the tool-level server receipt of a tools/list tool
// entry (evidence.md §2): the declaration object [FindToolDeclaration]
// finds, when it is a full McpSecurityReceipt, that is when it has a
// member named receipt_id (of any value; [Parse] then validates it). Such
// a receipt was issued before any call, so a decision made before
// forwarding can reference it as server_receipt_id. found is false when
// there is no declaration or it has no receipt_id. raw aliases tool and is
// the exact bytes of the object.
func FindToolReceipt(tool []byte) (raw []byte, found bool) {
	raw, ok := FindToolDeclaration(tool)
	if !ok {
		return nil, false
	}
	ms, err := objectMembers(raw)
	if err != nil {
		return nil, false
	}
	for _, m := range ms {
		if m.name == "receipt_id" {
			return raw, true
		}
	}
	return nil, false
}

// WithoutReceipt returns result with the receipt that [Find] found at key
// removed from _meta (the member key, or every member key + "." + suffix),
// and _meta itself removed when nothing else is left in it. Other members
// keep their order and raw values; the output is compact. This is what a
// server's output_hash covers, since the receipt cannot hash itself:
// output_hash = Hash(WithoutReceipt(result, key)). A result without _meta
// or without the receipt is returned compacted. Errors: result is not a
// strict JSON object (wrapping [ErrNotObject] for a non-object).
func WithoutReceipt(result []byte, key string) ([]byte, error) {
	ms, err := objectMembers(result)
	if err != nil {
		return nil, err
	}
	var out jsontext.Value = []byte{'{'}
	for _, m := range ms {
		v := m.value
		if m.name == "_meta" && v.Kind() == '{' {
			meta, _ := objectMembers(v)
			var kept []member
			for _, mm := range meta {
				if mm.name == key || strings.HasPrefix(mm.name, key+".") {
					continue
				}
				kept = append(kept, mm)
			}
			if len(kept) == 0 {
				continue
			}
			v = appendObject(nil, kept)
		}
		out = appendMember(out, m.name, v)
	}
	out = append(out, '}')
	if err := out.Compact(); err != nil {
		return nil, err
	}
	return out, nil
}

// metaMembers returns the members of obj._meta.
func metaMembers(obj []byte) ([]member, bool) {
	ms, err := objectMembers(obj)
	if err != nil {
		return nil, false
	}
	for _, m := range ms {
		if m.name == "_meta" {
			if m.value.Kind() != '{' {
				return nil, false
			}
			meta, _ := objectMembers(m.value)
			return meta, true
		}
	}
	return nil, false
}

// dotted reassembles the members named prefix + "." + suffix into an
// object, or returns nil when there are none.
func dotted(meta []member, prefix string) []byte {
	var ms []member
	for _, m := range meta {
		if suffix, ok := strings.CutPrefix(m.name, prefix+"."); ok && suffix != "" {
			ms = append(ms, member{name: suffix, value: m.value})
		}
	}
	if ms == nil {
		return nil
	}
	return appendObject(nil, ms)
}

// appendObject appends the object of members ms to b.
func appendObject(b []byte, ms []member) []byte {
	b = append(b, '{')
	for _, m := range ms {
		b = appendMember(b, m.name, m.value)
	}
	return append(b, '}')
}

// appendMember appends `"name":value`, preceded by a comma unless b ends
// with an opening brace.
func appendMember(b []byte, name string, v []byte) []byte {
	if len(b) > 0 && b[len(b)-1] != '{' {
		b = append(b, ',')
	}
	b, _ = jsontext.AppendQuote(b, name) // names come from valid JSON
	b = append(b, ':')
	return append(b, v...)
}

// quoteJSON returns s as a JSON string.
func quoteJSON(s string) ([]byte, error) {
	return jsontext.AppendQuote(nil, s)
}
