// Package policy loads Gatehouse policies and evaluates them against tool
// calls (../../docs/policy.md; shared/spec/evidence.md §5).
//
// A policy is a YAML file: a name, a version, defaults, and an ordered list of
// rules. A rule selects tools by glob patterns on the tool name and by an
// optional condition written in CEL (https://cel.dev) over the principal, the
// server, the tool's normalized metadata (evidence.md §4), the call's
// arguments and its `_meta`. Rules run in file order; the first matching
// enforcing rule decides, and every matching shadow rule is reported next to
// the decision, in file order, without changing it.
//
// [Parse] and [Load] do all the work that can fail: YAML decoding with strict
// keys, validation, glob syntax checks and CEL compilation and type checking.
// The resulting [*Policy] is immutable; [Policy.Evaluate] is safe for
// concurrent use and depends only on its input, except that conditions that
// iterate run under a time budget (100 ms per call) and fail closed when it
// runs out.
package policy

import (
	"github.com/gatehouse-mcp/gatehouse/internal/scan"
	"github.com/google/cel-go/cel"
	"regexp"
	"strings"
)

// Action is what the gateway does with a tools/call (evidence.md §5).
type Action string

// Actions of the policy vocabulary (evidence.md §5). Every one is accepted
// in rules; defaults.action is allow, deny or monitor; scanning.actions
// take no quarantine (a finding in one call does not hold a tool).
const (
	// ActionAllow forwards the call.
	ActionAllow Action = "allow"
	// ActionDeny answers the call with a denial; it never reaches the server.
	ActionDeny Action = "deny"
	// ActionMonitor forwards the call and flags the decision for review.
	ActionMonitor Action = "monitor"
	// ActionRedact forwards the call with the scan's findings rewritten.
	ActionRedact Action = "redact"
	// ActionQuarantine holds the tool: this call and every later one are
	// answered by the gateway until a person releases it (gatehouse tools
	// release; docs/drift.md).
	ActionQuarantine Action = "quarantine"
)

// Mode says whether a rule's outcome is enforced (evidence.md §5, "shadow").
type Mode string

// Rule modes.
const (
	// ModeEnforce: the first matching enforce rule decides the call. It is
	// the default when a rule has no mode.
	ModeEnforce Mode = "enforce"
	// ModeShadow: the rule is evaluated and its would-have outcome reported
	// in [Decision.Shadows], but it never changes [Decision.Action]. As
	// defaults.mode ([Settings.Mode]) it puts the whole gateway in shadow
	// mode (docs/policy.md, "Shadow mode").
	ModeShadow Mode = "shadow"
)

// Values of [Settings] fields.
const (
	// UnknownToolFetch: before deciding a call to a tool it has not seen
	// listed, the gateway fetches the server's tools/list; a tool still not
	// listed is denied.
	UnknownToolFetch = "fetch"
	// UnknownToolDeny: a call to a tool the gateway has not seen listed is
	// denied without fetching tools/list.
	UnknownToolDeny = "deny"

	// DenyResponseError answers a denied call with a JSON-RPC error.
	DenyResponseError = "error"
	// DenyResponseToolResult answers a denied call with a successful
	// JSON-RPC response carrying a tool result with isError true, so that the
	// model sees the reason.
	DenyResponseToolResult = "tool_result"

	// OnLogFailureFailClosed: when the decision log cannot be written, an
	// enforcing policy denies the call.
	OnLogFailureFailClosed = "fail_closed"
	// OnLogFailureFailOpen: when the decision log cannot be written, the
	// decision is applied anyway.
	OnLogFailureFailOpen = "fail_open"
)

// Reason codes of a [Decision].
const (
	// ReasonCodeRule: an enforce rule matched.
	ReasonCodeRule = "rule"
	// ReasonCodeDefault: no enforce rule matched; defaults.action applied.
	ReasonCodeDefault = "default"
	// ReasonCodeConditionError: a rule's condition failed at run time (a
	// missing map key, a type mismatch, the time budget); the call is
	// denied.
	ReasonCodeConditionError = "condition_error"
)

// Settings are the gateway behaviours a policy configures besides its rules,
// from the `defaults` block of the policy file. All fields are always set to
// one of their documented values.
//
// [Policy.Evaluate] does not consult Settings: the gateway does, around it.
type Settings struct {
	// UnknownTool is what to do with a tools/call for a tool the gateway has
	// not seen in a tools/list result: [UnknownToolFetch] ("fetch", the
	// default) or [UnknownToolDeny] ("deny").
	UnknownTool string
	// DenyResponse is how a denied call is answered: [DenyResponseError]
	// ("error", the default) or [DenyResponseToolResult] ("tool_result").
	DenyResponse string
	// OnLogFailure is what a failed decision-log write does to an enforcing
	// policy: [OnLogFailureFailClosed] ("fail_closed", the default) or
	// [OnLogFailureFailOpen] ("fail_open").
	OnLogFailure string
	// ReceiptsRequire is receipts.require, what a missing or unverified
	// server security receipt does to a call's response (evidence.md §2):
	// [ReceiptsNone] ("none", the default), [ReceiptsPresent] or
	// [ReceiptsVerified]. ReceiptsServers overrides it per server_id.
	ReceiptsRequire string
	ReceiptsServers map[string]string
	// Mode is defaults.mode: [ModeEnforce] ("enforce", the default) or
	// [ModeShadow] ("shadow": the gateway evaluates and records every
	// verdict of every stage and enforces none, as `gatehouse wrap
	// --shadow` does; docs/policy.md, "Shadow mode").
	Mode Mode
}

// receipts.require values (evidence.md §2; the table is in
// docs/evidence.md).
const (
	ReceiptsNone     = "none"
	ReceiptsPresent  = "present"
	ReceiptsVerified = "verified"
)

// ReceiptRequirement returns receipts.require for serverID: its entry in
// receipts.servers, else receipts.require.
func (s Settings) ReceiptRequirement(serverID string) string {
	if r, ok := s.ReceiptsServers[serverID]; ok {
		return r
	}
	return s.ReceiptsRequire
}

// Principal is who makes the call: CEL variable `principal`, a map with keys
// `id` and `role` (both strings, possibly empty).
type Principal struct {
	// ID is the actor reference (evidence.md §6 actor_ref_id).
	ID string `json:"id"`
	// Role is the gateway role or persona, e.g. "readonly_agent".
	Role string `json:"role"`
}

// Tool is the called tool as conditions see it, with its normalized
// metadata (evidence.md §4, §5): CEL variable `tool`, a map with keys
// `name` (string), `known` (bool), `title` (string), `description`
// (string), `annotations` (map), and the normalized fields
// `declared_side_effects` (list of strings), `side_effect` (string),
// `data_classes` (list), `externality` (string), `required_scopes` (list),
// `metadata_confidence` (double), `sources` (map from each of the five
// field names to its source) and `metadata_conflicts` (list of the field
// names on which the tool's metadata sources disagree). The gateway fills
// it from evidence.ToolIntentOf of the listed definition.
type Tool struct {
	// Name is the tool name from params.name.
	Name string `json:"name"`
	// Known is true when the gateway saw the tool in a tools/list result.
	Known bool `json:"known"`
	// Title and Description are the listed title and description; empty
	// when unknown.
	Title       string `json:"title"`
	Description string `json:"description"`
	// Annotations are the effective annotation hints, as returned by
	// mcp.Annotations.Map (spec defaults applied). Nil or empty when the tool
	// is unknown; a nil map is presented to conditions as an empty map.
	Annotations map[string]any `json:"annotations"`
	// DeclaredSideEffects is declared_side_effects, a subset of
	// toolmeta.Effects (read, write, delete, execute, share, export,
	// message, network); nil is presented as an empty list.
	DeclaredSideEffects []string `json:"declared_side_effects,omitempty"`
	// SideEffect is the normalized side_effect: "read_only", "mutating"
	// or "destructive". Empty is presented to conditions as
	// "destructive", the specification default for a tool about which
	// nothing is known.
	SideEffect string `json:"side_effect"`
	// DataClasses is data_classes (an open vocabulary: pii, secrets,
	// financial, source_code, ...); nil is presented as an empty list.
	DataClasses []string `json:"data_classes,omitempty"`
	// Externality is "internal", "external" or "third_party". Empty is
	// presented as "external", the openWorldHint default.
	Externality string `json:"externality,omitempty"`
	// RequiredScopes is required_scopes; nil is presented as an empty
	// list.
	RequiredScopes []string `json:"required_scopes,omitempty"`
	// MetadataConfidence is metadata_confidence in [0, 1]
	// (evidence.Confidence of the tool's intent, without a receipt).
	MetadataConfidence float64 `json:"metadata_confidence,omitempty"`
	// Sources maps each of the five field names (toolmeta.Fields)
	// to its source (toolmeta.Sources: verified_receipt,
	// unsigned_receipt, meta, annotation, heuristic, unknown). A field
	// missing from it is presented as "unknown".
	Sources map[string]string `json:"sources,omitempty"`
	// MetadataConflicts are the fields, in toolmeta.Fields order,
	// on which the metadata sources disagree (each a
	// metadata_conflict:<field> warning); nil is presented as an empty
	// list.
	MetadataConflicts []string `json:"metadata_conflicts,omitempty"`
	// Findings are the scan findings of the tool's definition as listed
	// (tools/list: name, title, description, schemas; docs/scanning.md):
	// poisoning, lookalike names, secrets. CEL key `findings`, a list of
	// maps (rule, class, confidence, path); nil is an empty list.
	Findings []Finding `json:"findings,omitempty"`
}

// Input is everything a policy may look at for one tools/call. The gateway
// builds it; [Policy.Evaluate] only reads it.
type Input struct {
	// Principal is CEL variable `principal`.
	Principal Principal `json:"principal"`
	// ServerID is the configured id of the upstream server: CEL variable
	// `server`, a map with key `id`.
	ServerID string `json:"server_id"`
	// Tool is CEL variable `tool`.
	Tool Tool `json:"tool"`
	// ToolView, when non-nil, is what conditions see as `tool` instead of
	// a view built from Tool for this call: the caller must have made it
	// with NewToolView(Tool) (the same values), once per tool definition.
	ToolView *ToolView `json:"-"`
	// Arguments is params.arguments decoded from JSON: CEL variable
	// `arguments`. Values are nil, bool, string, int64 (integral numbers
	// that fit), float64 (other numbers, including integers beyond int64),
	// []any and map[string]any; json.Number is also accepted and converted
	// the same way. Nil is presented as an empty map. Integers and floats
	// compare with each other numerically in conditions.
	Arguments map[string]any `json:"arguments"`
	// Meta is params._meta, decoded like Arguments: CEL variable `meta`. Nil
	// is presented as an empty map.
	Meta map[string]any `json:"meta"`
	// ArgumentScan is the scan of params.arguments (findings after
	// suppressions): CEL variable `argument_scan`, a map with keys
	// status ("pass", "fail", "not_run"), findings (list of maps: rule,
	// class, confidence, path) and classes (the findings' classes). Nil is
	// presented as status not_run.
	ArgumentScan *ScanView `json:"argument_scan,omitempty"`
	// ResponseScan is the scan of the response, read only by response
	// rules ([Policy.EvaluateResponse]): CEL variable `response_scan`,
	// shaped like argument_scan.
	ResponseScan *ScanView `json:"response_scan,omitempty"`
	// Drift is the tool's drift from its approved baseline: CEL variable
	// `drift` (docs/drift.md). Nil is presented as status unknown,
	// severity none.
	Drift *DriftView `json:"drift,omitempty"`
	// Receipt is what the gateway made of the server's security receipt
	// for this call: CEL variable `receipt`, read only by receipt rules
	// ([Policy.EvaluateReceipt]), on the response. Nil is presented as an
	// empty map.
	Receipt *Receipt `json:"receipt,omitempty"`
}

// Receipt is the CEL variable `receipt` of receipt rules: the status the
// gateway computed for the server's security receipt of the call and the
// number of its conflicts with the call (evidence.md §2: "receipt status is
// available to policy").
type Receipt struct {
	// Status is one of ReceiptStatuses: ok, unsigned, tampered, empty (no
	// receipt; the gateway synthesized one) or unknown.
	Status string `json:"status"`
	// Conflicts counts the receipt's disagreements with the call
	// (server_id, tool_name, tool_call_id, input_hash): 0 or more.
	Conflicts int `json:"conflicts"`
}

// ReceiptStatuses are the verification statuses receipt.status takes
// (evidence.md §2).
var ReceiptStatuses = []string{"ok", "unsigned", "tampered", "empty", "unknown"}

// Decision is the outcome of [Policy.Evaluate] (evidence.md §5, §6: action,
// matched_rule, reason, policy_version, shadow_mode).
type Decision struct {
	// Action is the enforced action: the first matching enforce rule's, or
	// defaults.action, or deny on a condition error. A matching shadow rule
	// never changes it.
	Action Action `json:"action"`
	// Rule is the id of the enforce rule that decided, or "default" when
	// none matched.
	Rule string `json:"rule"`
	// Reason is the rule's reason, "no rule matched; default action", or
	// "condition of rule ID failed to evaluate". It never contains argument
	// values.
	Reason string `json:"reason"`
	// ReasonCode is [ReasonCodeRule], [ReasonCodeDefault] or
	// [ReasonCodeConditionError].
	ReasonCode string `json:"reason_code"`
	// Shadows are the matching shadow rules, every one of them, in file
	// order, wherever they stand relative to the deciding rule; nil when
	// no shadow rule matched. The gateway adds the would-have verdicts of
	// other stages when they run in shadow (gatehouse wrap --shadow), with
	// Stage set.
	Shadows []ShadowDecision `json:"shadows,omitempty"`
	// PolicyName and PolicyVersion identify the policy that decided.
	PolicyName    string `json:"policy_name"`
	PolicyVersion string `json:"policy_version"`
}

// ShadowDecision is what a shadow-mode rule would have decided had it been
// enforced (evidence.md §5). A shadow rule whose condition fails at run time
// counts as matching with Action deny and ReasonCode
// [ReasonCodeConditionError], because that is what enforcing it would do.
type ShadowDecision struct {
	// Action is the shadow rule's action (deny on a condition error).
	Action Action `json:"action"`
	// Rule is the shadow rule's id.
	Rule string `json:"rule"`
	// Reason is the shadow rule's reason, or "condition of rule ID failed
	// to evaluate".
	Reason string `json:"reason"`
	// ReasonCode is [ReasonCodeRule] or [ReasonCodeConditionError] (a
	// stage's own reason code for a verdict the gateway adds).
	ReasonCode string `json:"reason_code"`
	// Stage is the gateway stage that gave the would-have verdict
	// ("policy", "scan", "unknown_tool", ...); empty from Evaluate,
	// EvaluateResponse and EvaluateReceipt, whose caller knows it.
	Stage string `json:"stage,omitempty"`
}

// Policy is a compiled policy: validated, with its conditions compiled to CEL
// programs. It is immutable and safe for concurrent use. Build one with
// [Load], [Parse] or [Default]; the zero Policy is not usable (it has no
// default action).
type Policy struct {
	name, version string
	defaultAction Action
	settings      Settings
	rules         []rule
	lastShadow    [3]int // per phase, index of its last shadow rule, -1 if none
	// usesArguments is whether a condition may read `arguments`: when
	// not, the gateway need not decode them (Input.Arguments may be nil).
	usesArguments bool
	// scanning is the scanning block (DefaultScanning when absent).
	scanning Scanning
	// drift is the drift block (DefaultDrift when absent).
	drift Drift
	// perCall is whether a condition may read `meta` or runs a
	// comprehension (evaluated under a deadline); with usesArguments it
	// makes decisions depend on more than the principal, server and tool.
	perCall bool
}

// MentionsString reports whether the string literal v (in double or single
// quotes) appears in any rule's condition. The CLI uses it to warn about a
// --role that no rule names, a likely typo that would otherwise leave every
// role-based rule silently unmatched.
func (p *Policy) MentionsString(v string) bool {
	for _, r := range p.rules {
		if strings.Contains(r.src, `"`+v+`"`) || strings.Contains(r.src, `'`+v+`'`) {
			return true
		}
	}
	return false
}

// ReadsRole reports whether any rule's condition may read the principal's
// role: whether it mentions `principal` other than as principal.id (so
// principal.role, principal . role, principal["role"], principal.?role and
// the whole map all count). Only then can a --role that no rule names be a
// mistake worth a warning. It errs on the side of true (a mention inside a
// string literal counts).
func (p *Policy) ReadsRole() bool {
	for _, r := range p.rules {
		if principalWord.MatchString(principalID.ReplaceAllString(r.src, "")) {
			return true
		}
	}
	return false
}

var (
	principalWord = regexp.MustCompile(`\bprincipal\b`)
	principalID   = regexp.MustCompile(`\bprincipal\s*\.\s*id\b`)
)

// RuleCount returns the number of rules.
func (p *Policy) RuleCount() int { return len(p.rules) }

// UsesArguments reports whether any condition of the policy may read the
// `arguments` variable. When it is false, Evaluate never looks at
// Input.Arguments, and a caller may leave it nil instead of decoding a
// large argument object.
func (p *Policy) UsesArguments() bool { return p.usesArguments }

// DependsOnlyOnTool reports whether Evaluate's decision is a function of
// Input.Principal, Input.ServerID and Input.Tool alone: no condition
// mentions `arguments` or `meta`, and none contains a comprehension (whose
// deadline could make the same input decide differently under load). A
// caller may then reuse one decision for every call of the same tool
// definition by the same principal on the same server.
func (p *Policy) DependsOnlyOnTool() bool { return !p.usesArguments && !p.perCall }

// rule is one compiled rule.
type rule struct {
	id    string
	line  int
	tools []glob // nil: every tool
	// toolSkeletons are the patterns' skeletons (scan.Skeleton of each),
	// matched against a called name's skeleton.
	toolSkeletons []glob
	prg           cel.Program // nil: no condition
	loops         bool        // prg has comprehensions: evaluate under evalBudget
	action        Action
	reason        string
	mode          Mode
	// condErr is the fixed reason used when the condition fails.
	condErr string
	// src is the condition's source text, "" when none.
	src string
	// phase is when the rule is evaluated: on the request (Evaluate), on
	// the response's scan (the condition reads `response_scan`;
	// EvaluateResponse) or on the server's receipt (the condition reads
	// `receipt`; EvaluateReceipt).
	phase phase
}

// Default returns the built-in policy used when none is configured: name
// "builtin-default", version "1", defaults.action allow, unknown_tool fetch,
// deny_response error, on_log_failure fail_closed, no rules.
func Default() *Policy {
	return &Policy{
		name:          "builtin-default",
		version:       "1",
		defaultAction: ActionAllow,
		settings:      defaultSettings,
		scanning:      DefaultScanning(),
		drift:         DefaultDrift(),
		lastShadow:    noShadows,
	}
}

var defaultSettings = Settings{
	UnknownTool:     UnknownToolFetch,
	DenyResponse:    DenyResponseError,
	OnLogFailure:    OnLogFailureFailClosed,
	ReceiptsRequire: ReceiptsNone,
	Mode:            ModeEnforce,
}

// noShadows is lastShadow of a policy without shadow rules.
var noShadows = [3]int{-1, -1, -1}

// Name returns the policy's name field.
func (p *Policy) Name() string { return p.name }

// Version returns the policy's version field, recorded as policy_version in
// every decision (evidence.md §5).
func (p *Policy) Version() string { return p.version }

// DefaultAction returns defaults.action: the action when no enforce rule
// matches.
func (p *Policy) DefaultAction() Action { return p.defaultAction }

// Settings returns the policy's defaults other than the default action.
func (p *Policy) Settings() Settings { return p.settings }

const defaultReason = "no rule matched; default action"

// Evaluate decides the call described by in (evidence.md §5). Rules are tried
// in file order; a rule matches when one of its tool patterns matches
// in.Tool.Name (or it has none) and its condition is true (or it has none).
// The first matching enforce rule decides. If none matches, defaults.action
// applies with Rule "default". A condition that fails at run time denies the
// call with ReasonCode "condition_error" (fail closed). Every matching
// shadow rule is reported in Decision.Shadows, in file order.
//
// A nil in is treated as a zero Input. Evaluate does not modify in, does not
// retain it, and is safe for concurrent use.
func (p *Policy) Evaluate(in *Input) Decision {
	d, decided := p.evaluate(in, phaseRequest)
	if !decided {
		d.Action, d.Rule, d.Reason, d.ReasonCode = p.defaultAction, "default", defaultReason, ReasonCodeDefault
	}
	return d
}

// phase is when a rule is evaluated.
type phase uint8

const (
	phaseRequest  phase = iota // before forwarding: Evaluate
	phaseResponse              // on the response's scan: EvaluateResponse
	phaseReceipt               // on the server's receipt: EvaluateReceipt
)

// evaluate runs the rules of phase ph in file order: the first matching
// enforce rule decides (deny on a condition error; decided true), every
// matching shadow rule goes into Shadows. Once decided, it stops after the
// phase's last shadow rule.
func (p *Policy) evaluate(in *Input, ph phase) (d Decision, decided bool) {
	if in == nil {
		in = &Input{}
	}
	d = Decision{PolicyName: p.name, PolicyVersion: p.version}
	var act *activation
	for i := range p.rules {
		if decided && i > p.lastShadow[ph] {
			break
		}
		r := &p.rules[i]
		if r.phase != ph {
			continue // a response or receipt rule is decided on the response
		}
		shadow := r.mode == ModeShadow
		if !shadow && decided {
			continue
		}
		if !r.matchTool(in.Tool.Name) {
			continue
		}
		ok := true // condition evaluated without error
		if r.prg != nil {
			if act == nil {
				act = newActivation(in)
			}
			var match bool
			match, ok = r.eval(act)
			if ok && !match {
				continue
			}
		}
		action, reason, code := r.action, r.reason, ReasonCodeRule
		if !ok {
			action, reason, code = ActionDeny, r.condErr, ReasonCodeConditionError
		}
		if shadow {
			d.Shadows = append(d.Shadows, ShadowDecision{Action: action, Rule: r.id, Reason: reason, ReasonCode: code})
			continue
		}
		d.Action, d.Rule, d.Reason, d.ReasonCode = action, r.id, reason, code
		decided = true
	}
	if act != nil {
		act.close()
	}
	return d, decided
}

// HasReceiptRules reports whether any rule reads `receipt` (a receipt
// rule): such a policy needs the audit ledger, which is where receipts are
// read and verified.
func (p *Policy) HasReceiptRules() bool { return p.hasPhase(phaseReceipt) }

// HasResponseRules reports whether any rule reads `response_scan` (a
// response rule, decided by EvaluateResponse once the response is
// scanned).
func (p *Policy) HasResponseRules() bool { return p.hasPhase(phaseResponse) }

func (p *Policy) hasPhase(ph phase) bool {
	for i := range p.rules {
		if p.rules[i].phase == ph {
			return true
		}
	}
	return false
}

// EvaluateResponse decides a forwarded call again once its response is
// scanned: only response rules (those reading `response_scan`), in file
// order, with in.ResponseScan set (in.Arguments and in.Meta unused: a
// response rule cannot read them). Every matching shadow response rule is
// reported in Shadows. matched is false when no enforce response rule
// matched; the request's decision then stands.
func (p *Policy) EvaluateResponse(in *Input) (d Decision, matched bool) {
	return p.evaluate(in, phaseResponse)
}

// EvaluateReceipt decides a forwarded call again when its response and
// receipt are in: only receipt rules, in file order, with in.Receipt set
// (and in.Arguments and in.Meta unused: a receipt rule cannot read them).
// The first matching enforce receipt rule decides (deny on a condition
// error), every matching shadow one is reported in Shadows; matched is
// false when no enforce receipt rule matched, and the request's decision
// then stands.
func (p *Policy) EvaluateReceipt(in *Input) (d Decision, matched bool) {
	return p.evaluate(in, phaseReceipt)
}

// matchTool reports whether the rule's tool patterns select name: a
// pattern matches the name itself, or the name's lookalike skeleton
// (scan.Skeleton: invisible characters removed, homoglyphs folded to
// ASCII, lowercased, trimmed) matches the pattern's, so that a lookalike
// of a tool a rule names ("dеlete_repo" with a Cyrillic е, "Delete_Repo",
// "delete_repo ") is decided as that tool (docs/scanning.md, "Lookalike
// tool names").
func (r *rule) matchTool(name string) bool {
	if r.tools == nil {
		return true
	}
	for _, g := range r.tools {
		if g.match(name) {
			return true
		}
	}
	sk := skeletonOf(name)
	if sk == name {
		return false
	}
	for _, g := range r.toolSkeletons {
		if g.match(sk) {
			return true
		}
	}
	return false
}

// skeletonOf is scan.Skeleton(name), computed only for a name that is
// not plainly its own skeleton (lowercase ASCII letters, digits, '_',
// '-', '.', '/').
func skeletonOf(name string) string {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.' || c == '/') {
			return scan.Skeleton(name)
		}
	}
	return name
}

// ToolNames returns the tool names the rules' patterns give literally
// (patterns without wildcards), in rule order, without repeats: the names
// whose lookalikes a listing is checked for.
func (p *Policy) ToolNames() []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range p.rules {
		for _, g := range r.tools {
			if g.kind == globLiteral && !seen[g.pattern] {
				seen[g.pattern] = true
				out = append(out, g.pattern)
			}
		}
	}
	return out
}
