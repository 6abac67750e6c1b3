// Package mcp holds the Model Context Protocol vocabulary that the gateway
// needs to understand traffic it relays: method names, protocol revisions
// and their eras, `_meta` keys, and tool definitions with their annotations.
//
// It knows nothing of transports, policy or evidence. The method names and
// revisions are those of the MCP specification revisions 2024-11-05,
// 2025-03-26, 2025-06-18, 2025-11-25 and 2026-07-28.
package mcp

import "encoding/json"

// Method names used by the gateway (MCP specification, "Schema" page of each
// revision).
const (
	MethodInitialize        = "initialize"
	MethodInitialized       = "notifications/initialized"
	MethodPing              = "ping"
	MethodServerDiscover    = "server/discover"
	MethodToolsList         = "tools/list"
	MethodToolsCall         = "tools/call"
	MethodCancelled         = "notifications/cancelled"
	MethodProgress          = "notifications/progress"
	MethodToolsListChanged  = "notifications/tools/list_changed"
	MethodSamplingCreate    = "sampling/createMessage"
	MethodElicitationCreate = "elicitation/create"
	MethodRootsList         = "roots/list"
)

// Revision is an MCP protocol revision string such as "2025-06-18".
type Revision string

// Known protocol revisions, oldest first.
const (
	Revision20241105 Revision = "2024-11-05"
	Revision20250326 Revision = "2025-03-26"
	Revision20250618 Revision = "2025-06-18"
	Revision20251125 Revision = "2025-11-25"
	Revision20260728 Revision = "2026-07-28"
)

// MetaProtocolVersion is the `_meta` key under which a 2026-07-28 (stateless)
// request states its protocol revision (2026-07-28 "Versioning").
const MetaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// AllowsBatch reports whether JSON-RPC batches are part of revision r. Only
// 2025-03-26 has them: 2024-11-05 did not define them and 2025-06-18 removed
// them.
func (r Revision) AllowsBatch() bool { return r == Revision20250326 }

// Stateless reports whether r is a modern (per-request metadata, no
// initialize handshake) revision: 2026-07-28 and later.
func (r Revision) Stateless() bool { return r >= Revision20260728 }

// Side effect summaries of a tool (../shared/spec/evidence.md §4).
const (
	SideEffectReadOnly    = "read_only"
	SideEffectMutating    = "mutating"
	SideEffectDestructive = "destructive"
)

// Annotations are the MCP tool annotations (2025-03-26 and later, "Tools").
// They are untrusted hints. A nil pointer means the hint was absent, in which
// case the specification's default applies: readOnlyHint false,
// destructiveHint true, idempotentHint false, openWorldHint true.
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// SideEffect derives the side effect summary from the annotations with the
// specification defaults for absent hints: read_only when readOnlyHint is
// true; otherwise destructive unless destructiveHint is explicitly false, in
// which case mutating.
func (a Annotations) SideEffect() string {
	if a.ReadOnlyHint != nil && *a.ReadOnlyHint {
		return SideEffectReadOnly
	}
	if a.DestructiveHint != nil && !*a.DestructiveHint {
		return SideEffectMutating
	}
	return SideEffectDestructive
}

// Map returns the annotations as a map with every hint resolved to its
// effective value (defaults applied), for policy conditions.
func (a Annotations) Map() map[string]any {
	get := func(p *bool, def bool) bool {
		if p == nil {
			return def
		}
		return *p
	}
	return map[string]any{
		"title":           a.Title,
		"readOnlyHint":    get(a.ReadOnlyHint, false),
		"destructiveHint": get(a.DestructiveHint, true),
		"idempotentHint":  get(a.IdempotentHint, false),
		"openWorldHint":   get(a.OpenWorldHint, true),
	}
}

// Tool is a tool definition from a tools/list result ("Tools" page of each
// revision). Schemas are kept as raw JSON. The gateway decodes it with
// [ParseTool] (strict, case-sensitive), never with encoding/json, which
// would match member names case-insensitively; the json tags are for
// encoding.
type Tool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  Annotations     `json:"annotations"`
	// Meta is the tool's raw _meta object (security declarations live
	// there, evidence.md §2), nil when absent.
	Meta json.RawMessage `json:"_meta,omitempty"`
}
