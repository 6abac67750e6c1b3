// Package inspect scans JSON documents with a scan.Scanner and redacts
// what it finds in their exact bytes (../../docs/scanning.md;
// shared/spec/evidence.md §8).
//
// Inspect walks a JSON value (a tools/call's params.arguments, a result,
// a notification's params, ...) and scans every string leaf after JSON
// decoding. JSON nested inside a string and base64, hex or
// percent-encoded values next to secret-like keys are decoded (bounded
// depth and size) and scanned too. Every finding carries the RFC 6901
// JSON pointer of the leaf it was found in.
//
// Redact rewrites the document's bytes: only the matched spans change,
// every other byte stays as it was, the same value is redacted everywhere
// it occurs in the document, and the result is still valid JSON.
package inspect

import "github.com/gatehouse-mcp/gatehouse/internal/scan"

// Finding is a scan.Finding in a document.
type Finding struct {
	scan.Finding
	// Path is the RFC 6901 JSON pointer of the string leaf (or, for an
	// object member's name, of the member) relative to the inspected
	// document's root: "/content/0/text".
	Path string
	// Encoding says how the value was reached inside the leaf: "" (the
	// string itself), "json" (JSON nested in the string, Path then ends at
	// the outer leaf), "base64", "hex" or "percent".
	Encoding string
}

// Redaction is one redaction record as the McpSecurityReceipt draft
// defines it (field, class, method, replacement).
type Redaction struct {
	// Field is the RFC 6901 JSON pointer of the leaf rewritten, prefixed by
	// the part of the message it belongs to by the caller.
	Field string `json:"field"`
	// Class is the finding's class ("secret", "pii", ...).
	Class string `json:"class"`
	// Method is how the value was found: "pattern" (a rule's pattern),
	// "entropy" (keyword plus entropy), "decoded" (inside an encoded or
	// nested value), "consistent" (the same value found elsewhere in the
	// document).
	Method string `json:"method"`
	// Replacement is the text that replaced the value: "[REDACTED_SECRET]",
	// "[REDACTED_PII]", ...
	Replacement string `json:"replacement"`
}
