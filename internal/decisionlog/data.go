package decisionlog

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Decisions, i.e. the enforced action in [ToolDecision.Decision].
const (
	DecisionAllow   = "allow"
	DecisionDeny    = "deny"
	DecisionMonitor = "monitor"
)

// Strengths of a tool_call_id (request-receipts.md §7).
const (
	// StrengthStrong marks a tool_call_id the caller supplied in
	// params._meta under one of the configured strong keys.
	StrengthStrong = "strong"
	// StrengthWeak marks a derived tool_call_id (req_… or gen_…). Weak ids
	// repeat across sessions or cannot be reproduced: nothing may join on
	// them as a strong key.
	StrengthWeak = "weak"
)

// Values of [ToolDecision.ToolCallIDSource] for derived ids. For strong ids
// the source is the _meta key that held the id.
const (
	SourceJSONRPCID = "jsonrpc_id" // tool_call_id is "req_" + the JSON-RPC id
	SourceGenerated = "generated"  // tool_call_id is "gen_" + a random UUID
)

// Prefixes of derived tool_call_ids.
const (
	PrefixRequest   = "req_"
	PrefixGenerated = "gen_"
)

// DefaultStrongKeys are the params._meta keys whose non-empty string value
// is admitted as a strong tool_call_id when no keys are configured
// (request-receipts.md §7).
var DefaultStrongKeys = []string{"claudecode/toolUseId", "tool_call_id"}

// ToolDecision is the `data` of a [TypeToolDecision] event: the policy
// decision for one tools/call request (request-receipts.md §7).
type ToolDecision struct {
	// Tool is params.name of the request.
	Tool string `json:"tool"`
	// Decision is the enforced action: allow, deny or monitor.
	Decision string `json:"decision"`
	// ReasonCode is a stable machine-readable reason.
	ReasonCode string `json:"reason_code"`
	// Reason is a human-readable reason. It must not contain argument
	// values.
	Reason string `json:"reason"`
	// MatchedRule names the policy rule that decided, "" when none did.
	MatchedRule string `json:"matched_rule"`
	// PolicyName and PolicyVersion identify the policy in force.
	PolicyName    string `json:"policy_name"`
	PolicyVersion string `json:"policy_version"`
	// ShadowMode is true when the gateway ran in shadow mode (gatehouse
	// wrap --shadow, defaults.mode: shadow): no stage's verdict was
	// enforced, Decision is what was done (allow), and ShadowDecisions
	// say what would have been. Omitted when false.
	ShadowMode bool `json:"shadow_mode,omitempty"`
	// ShadowDecisions are the would-have decisions recorded beside the
	// enforced one, in the order the stages gave them: every matching
	// `mode: shadow` rule, and in shadow mode every stage's verdict.
	// Omitted when there is none. The gateway decision receipt carries the
	// same list under the same name (evidence.ShadowDecision).
	ShadowDecisions []ShadowDecision `json:"shadow_decisions,omitempty"`
	// RPCIDPresent reports whether the request had an `id` member.
	RPCIDPresent bool `json:"rpc_id_present"`
	// RPCID is the request's `id` token verbatim (a number keeps its
	// original text, never passing through float64); nil is written as
	// null, which is also what an absent id projects to.
	RPCID json.RawMessage `json:"rpc_id"`
	// ToolCallID, ToolCallIDStrength and ToolCallIDSource are the result
	// of [ToolCallID].
	ToolCallID         string `json:"tool_call_id"`
	ToolCallIDStrength string `json:"tool_call_id_strength"`
	ToolCallIDSource   string `json:"tool_call_id_source"`
	// PrincipalID, Role and ServerID identify the caller and the server
	// when known.
	PrincipalID string `json:"principal_id,omitempty"`
	Role        string `json:"role,omitempty"`
	ServerID    string `json:"server_id,omitempty"`
	// SideEffect is the tool's side effect summary (read_only, mutating
	// or destructive); ToolKnown reports whether the tool was listed by
	// the server.
	SideEffect string `json:"side_effect"`
	ToolKnown  bool   `json:"tool_known"`
	// Forwarded reports whether the call is forwarded to the server.
	Forwarded bool `json:"forwarded"`
	// ArgumentScanResult is the scan of params.arguments (the gateway
	// decision receipt's argument_scan_result: status, findings with rule,
	// class, confidence, path and a masked excerpt, the scan's action,
	// redaction records), as JSON; nil when no scan ran. It never holds a
	// matched value.
	ArgumentScanResult json.RawMessage `json:"argument_scan_result,omitempty"`
	// DriftResult is the tool's drift from its approved baseline (the
	// gateway decision receipt's drift_result: severity, action, changes;
	// docs/drift.md), as JSON; nil when the tool has not drifted.
	DriftResult json.RawMessage `json:"drift_result,omitempty"`
}

// Drift is the `data` of a [TypeDrift] event: a tools/list showed a
// tool whose definition is not its approved baseline (changed, added,
// renamed or removed; docs/drift.md), or a tool was held or released.
type Drift struct {
	// ServerID is the server; Tool the tool's name as listed (the
	// baseline's name for a removed tool).
	ServerID string `json:"server_id,omitempty"`
	Tool     string `json:"tool"`
	// Status is changed, added, renamed or removed.
	Status string `json:"status"`
	// RenamedFrom is the baseline's name of a renamed tool.
	RenamedFrom string `json:"renamed_from,omitempty"`
	// Severity, Action and Changes are the drift_result (Changes: the
	// change kinds that decided the severity); AllChanges every change.
	Severity   string        `json:"severity"`
	Action     string        `json:"action"`
	Changes    []string      `json:"changes"`
	AllChanges []DriftChange `json:"all_changes"`
	// DefinitionHash is the listed definition's hash, BaselineHash the
	// baseline's ("" when there is none); both "sha256:<hex>" of the
	// RFC 8785 canonical definition.
	DefinitionHash string `json:"definition_hash,omitempty"`
	BaselineHash   string `json:"baseline_hash,omitempty"`
	// Held reports whether the tool is quarantined after this listing;
	// MatchedRule and Reason say why when it is (a policy rule, or
	// "drift").
	Held        bool   `json:"held"`
	MatchedRule string `json:"matched_rule,omitempty"`
	Reason      string `json:"reason,omitempty"`
	// Method is the message that showed the listing: tools/list (the
	// client's or the gateway's own fetch).
	Method string `json:"method"`
	// ShadowMode is true in shadow mode when the tool would have been
	// held: ShadowDecisions then has the would-have quarantine (stage
	// drift) and Held is false.
	ShadowMode      bool             `json:"shadow_mode,omitempty"`
	ShadowDecisions []ShadowDecision `json:"shadow_decisions,omitempty"`
}

// DriftChange is one classified change of a [Drift] event.
type DriftChange struct {
	Kind     string `json:"kind"`
	Path     string `json:"path,omitempty"`
	Severity string `json:"severity"`
	From     string `json:"from,omitempty"`
	To       string `json:"to,omitempty"`
}

// Scanned is the `data` of a [TypeScanned] event: a message the gateway
// scanned had findings (docs/scanning.md). Written for a tools/call
// response, a server notification or request (notifications/progress,
// notifications/message, sampling/createMessage, elicitation/create) and
// the client's answer to a server request; a message without findings
// gets none.
type Scanned struct {
	// Method is the message's method, or, for a response, the method of
	// the request it answers ("tools/call", "sampling/createMessage").
	Method string `json:"method"`
	// Direction is "server_to_client" or "client_to_server".
	Direction string `json:"direction"`
	// Tool is the tool of a tools/call response, "" otherwise.
	Tool string `json:"tool,omitempty"`
	// DecisionEventID is the tools/call's decision event, "" otherwise.
	DecisionEventID string `json:"decision_event_id,omitempty"`
	// RPCIDPresent and RPCID are the message's id, or, for a response,
	// its request's (verbatim; null when absent).
	RPCIDPresent bool            `json:"rpc_id_present"`
	RPCID        json.RawMessage `json:"rpc_id"`
	// Action is what the gateway did with the message: allow (relayed
	// unchanged), monitor (relayed, flagged), redact (relayed with the
	// findings rewritten) or deny (withheld or dropped).
	Action string `json:"action"`
	// MatchedRule and Reason say why: a response rule, or the
	// scanning.actions entry ("scanning").
	MatchedRule string `json:"matched_rule"`
	Reason      string `json:"reason"`
	// ScanResult is the scan (status, findings, action, redaction
	// records), as JSON; never a matched value.
	ScanResult json.RawMessage `json:"scan_result"`
	// ShadowMode and ShadowDecisions are as in [ToolDecision]: in shadow
	// mode Action is what was done (allow: relayed unchanged) and the
	// would-have verdicts of the response filters and response rules are
	// in ShadowDecisions; outside it, matching shadow response rules are.
	ShadowMode      bool             `json:"shadow_mode,omitempty"`
	ShadowDecisions []ShadowDecision `json:"shadow_decisions,omitempty"`
	// PrincipalID, Role and ServerID identify the session.
	PrincipalID string `json:"principal_id,omitempty"`
	Role        string `json:"role,omitempty"`
	ServerID    string `json:"server_id,omitempty"`
}

// ToolRefused is the `data` of a [TypeToolRefused] event: the tools/call
// of decision event DecisionEventID was not forwarded after all.
type ToolRefused struct {
	// DecisionEventID is the id of the call's tool decision event.
	DecisionEventID string `json:"decision_event_id"`
	// Tool, RPCIDPresent, RPCID and ToolCallID repeat the decision event's.
	Tool         string          `json:"tool"`
	RPCIDPresent bool            `json:"rpc_id_present"`
	RPCID        json.RawMessage `json:"rpc_id"`
	ToolCallID   string          `json:"tool_call_id"`
	// ReasonCode and Reason say why ("decision_not_recorded": the audit
	// ledger could not record the call's evidence).
	ReasonCode string `json:"reason_code"`
	Reason     string `json:"reason"`
	// Forwarded is always false.
	Forwarded bool `json:"forwarded"`
}

// ShadowDecision is one would-have decision: what a shadow rule, or a
// stage running in shadow, would have decided had it been enforced
// (evidence.md §5). It is recorded, never enforced.
type ShadowDecision struct {
	// Action is the would-have action: allow, monitor, redact,
	// quarantine or deny.
	Action string `json:"action"`
	// MatchedRule names the rule ("scanning" for the scanning block's
	// actions, unknown_tool, ... for the gateway's own stages).
	MatchedRule string `json:"matched_rule"`
	// Reason is human-readable; it never contains argument values.
	Reason string `json:"reason"`
	// Stage is the gateway stage that gave it (policy, scan,
	// unknown_tool, argument_name_case, evidence, ...).
	Stage string `json:"stage"`
}

// SessionStart is the `data` of the [TypeSessionStart] event, emitted once
// per proxy invocation before any other event (request-receipts.md §5).
type SessionStart struct {
	// GatehouseVersion is the version of the running binary.
	GatehouseVersion string `json:"gatehouse_version"`
	// PID is the gateway's process id.
	PID int `json:"pid"`
	// ServerCommand holds only argv[0] of the server command, never its
	// arguments (they may hold secrets); see [ServerCommand].
	ServerCommand []string `json:"server_command"`
	PolicyName    string   `json:"policy_name"`
	PolicyVersion string   `json:"policy_version"`
	// ShadowMode is true when the run is in shadow mode (--shadow,
	// defaults.mode: shadow): nothing it decides is enforced. Omitted
	// when false.
	ShadowMode bool `json:"shadow_mode,omitempty"`
	// Capture is set only when request receipts are on; it then carries
	// only the scope.
	Capture *Capture `json:"capture,omitempty"`
}

// SessionStop is the `data` of the [TypeSessionStop] event, emitted once at
// orderly shutdown (request-receipts.md §5). A run that was killed has none.
type SessionStop struct {
	// Reason says why the run ended, e.g. "client_eof", "server_exit",
	// "signal" or "receipts_path_taken".
	Reason string `json:"reason"`
	// ExitCode is the server's exit code when it is known.
	ExitCode *int `json:"exit_code,omitempty"`
	// Capture is set only when request receipts are on; it then carries
	// the scope, the state and the number of records written.
	Capture *Capture `json:"capture,omitempty"`
}

// Capture states in a stop event (request-receipts.md §5).
const (
	CaptureComplete   = "complete"
	CaptureIncomplete = "incomplete"
)

// Capture is the request-receipts part of a session event. In a start event
// only Scope is set; in a stop event all three are (Records is a pointer so
// that a count of 0 is still written).
type Capture struct {
	// Scope is the receipts' scope: a random UUID made once per proxy
	// invocation.
	Scope string `json:"scope"`
	// State is "complete" or "incomplete" (stop event only).
	State string `json:"state,omitempty"`
	// Records is the number of receipts written (stop event only).
	Records *int `json:"records,omitempty"`
}

// ServerCommand returns the part of a server command line that may be
// logged: a one-element slice holding argv[0], or an empty slice when argv
// is empty. Arguments are never returned: they may hold secrets.
func ServerCommand(argv []string) []string {
	if len(argv) == 0 {
		return []string{}
	}
	return []string{argv[0]}
}

// ToolCallID derives the tool_call_id of a tools/call request
// (request-receipts.md §7) from its params._meta object (nil when absent or
// not an object), the configured strong keys (nil means
// [DefaultStrongKeys]; an empty non-nil slice admits no strong key), and the
// request's JSON-RPC id (whether the member is present, and its raw token).
//
//   - strong: the first key of strongKeys, in order, whose value in meta is
//     a non-empty string that does not start with "req_" or "gen_". The id
//     is that string, the source the key. A caller-supplied value that
//     starts with "req_" or "gen_" looks like a derived id and is never
//     admitted as a strong key (seed: "req_/gen_ IDs remain ineligible as
//     strong keys"); the next key is tried and then the derived forms.
//   - weak "req_<id>", source "jsonrpc_id": when the id is a JSON string
//     (its decoded value) or a JSON number (its token text verbatim).
//   - weak "gen_<uuid v4>", source "generated": when the id is absent,
//     null, or anything else (an object, array, boolean or undecodable
//     token is not a valid JSON-RPC id).
func ToolCallID(meta map[string]any, strongKeys []string, rpcIDPresent bool, rpcIDRaw []byte) (id, strength, source string) {
	if strongKeys == nil {
		strongKeys = DefaultStrongKeys
	}
	for _, k := range strongKeys {
		s, ok := meta[k].(string)
		if !ok || s == "" || strings.HasPrefix(s, PrefixRequest) || strings.HasPrefix(s, PrefixGenerated) {
			continue
		}
		return s, StrengthStrong, k
	}
	if rpcIDPresent {
		raw := strings.TrimSpace(string(rpcIDRaw))
		switch {
		case strings.HasPrefix(raw, `"`):
			if s, ok := plainString(raw); ok {
				return PrefixRequest + s, StrengthWeak, SourceJSONRPCID
			}
			var s string
			if err := json.Unmarshal([]byte(raw), &s); err == nil {
				return PrefixRequest + s, StrengthWeak, SourceJSONRPCID
			}
		case raw != "" && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9'):
			if plainInteger(raw) {
				return PrefixRequest + raw, StrengthWeak, SourceJSONRPCID
			}
			var n json.Number
			if err := json.Unmarshal([]byte(raw), &n); err == nil {
				return PrefixRequest + raw, StrengthWeak, SourceJSONRPCID
			}
		}
	}
	return PrefixGenerated + uuid.NewString(), StrengthWeak, SourceGenerated
}

// plainString returns the value of the JSON string token raw when it needs
// no decoding (no escape, no control character, valid UTF-8): what
// json.Unmarshal would return, without its cost.
func plainString(raw string) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	v := raw[1 : len(raw)-1]
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c == '"' || c == '\\' {
			return "", false
		}
	}
	return v, utf8.ValidString(v)
}

// plainInteger reports whether raw is a JSON integer without fraction or
// exponent (RFC 8259 §6: -?(0|[1-9][0-9]*)).
func plainInteger(raw string) bool {
	d := strings.TrimPrefix(raw, "-")
	if d == "" || d[0] == '0' && len(d) > 1 {
		return false
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return false
		}
	}
	return true
}
