package gateway

import (
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/drift"
	"github.com/gatehouse-mcp/gatehouse/internal/evidence"
	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
)

// ResponseVerdict is what the response filters decided about a
// forwarded call's response: Action (monitor, redact, deny), the rule that
// decided and why.
type ResponseVerdict struct {
	Action       policy.Action
	Rule, Reason string
}

// CodeWithheld answers a tools/call whose response the gateway withheld
// (for example a server receipt that does not meet receipts.require).
const CodeWithheld = -32082

// Evidence receives every tools/call decision and the outcome of every
// forwarded call; package audit implements it with server receipts,
// gateway decision receipts and the audit ledger (evidence.md §1).
//
// The session's evidence stage (stage_evidence.go) calls it, as the last
// of the chain's recorders. Decided runs on the client relay goroutine
// after the decision event was written. It records (queues) the decision's evidence and returns a wait
// function; the gateway forwards or answers the call only after wait
// returns nil, on a goroutine of its own, so that the client relay can go
// on reading (and the evidence of concurrent calls shares durable writes).
// A non-nil error from wait means the evidence could not be recorded: an
// allowed call is then refused unless the policy says on_log_failure:
// fail_open.
//
// Responded runs on the server relay goroutine with the server's response
// to a forwarded call. It returns a wait function; the response is relayed
// after wait returns, or replaced by a CodeWithheld error carrying reason
// when wait reports withhold. Implementations must be safe for concurrent
// use; every wait function is called exactly once.
type Evidence interface {
	Decided(c *Call) (wait func() error)
	Responded(c *Call, resp *jsonrpc.Message) (wait func() (withhold bool, reason string))
}

// Call is one tools/call as the evidence recorder sees it. Byte slices are
// only valid during the Decided call that receives them.
type Call struct {
	// Name is the tool name from params.name.
	Name string
	// Tool is the tool's definition as listed; zero when the gateway has
	// not seen it listed. Known is false also when the listing went stale
	// (notifications/tools/list_changed and no fresh list).
	Tool  mcp.Tool
	Known bool
	// Intent is the tool's normalized metadata without a receipt
	// (evidence.md §4; evidence.ToolIntentOf of Tool, or of nothing when
	// Known is false), as the policy saw it and the decision event
	// recorded it. It is computed once per catalogued definition and
	// shared: read only.
	Intent evidence.ToolIntent
	// ServerID and Principal are the run's configuration.
	ServerID  string
	Principal policy.Principal
	// ID is the JSON-RPC id (absent for a tools/call notification).
	ID jsonrpc.ID
	// Arguments and Meta are the raw params.arguments and params._meta,
	// nil when absent.
	Arguments []byte
	Meta      []byte
	// ToolCallID and its strength come from the decision (request-receipts
	// §7).
	ToolCallID, ToolCallIDStrength string
	// Decision is the policy decision; Forwarded whether the call goes to
	// the server.
	Decision  policy.Decision
	Forwarded bool
	// DecisionEventID is the id of the decision-log event, "" without a
	// decision log.
	DecisionEventID string
	// Received is when the gateway read the request.
	Received time.Time
	// ArgumentScan is the scan of the arguments (findings, the scan's
	// action, redaction records), nil when no scanner is configured.
	ArgumentScan *evidence.ScanResult
	// SecretNames are argument names in which the scan found something
	// (unescaped): the decision record must not list them in
	// argument_keys as they are.
	SecretNames map[string]bool
	// ResponseScan is the scan of the response, set before Responded; nil
	// when no scanner is configured. ResponseVerdict is the response's
	// verdict when it is not allow (a redaction, a withheld response):
	// the outcome's action.
	// DriftResult is the tool's drift from its approved baseline (the
	// decision receipt's drift_result, docs/drift.md), nil when it has
	// not drifted.
	DriftResult *evidence.DriftResult
	// DriftWarnings are the drift's display-safe warnings for the
	// decision receipt ("tool capability drift detected", ...), nil when
	// the tool has not drifted.
	DriftWarnings   []string
	ResponseScan    *evidence.ScanResult
	ResponseVerdict *ResponseVerdict
	// ResponseShadows are the would-have verdicts on the response (set
	// before Responded): matching shadow response rules, and in shadow
	// mode the response filters' verdicts, none enforced.
	ResponseShadows []policy.ShadowDecision
	// ShadowMode is whether the session runs in shadow mode (Config.Shadow):
	// the Evidence then enforces none of its own checks either
	// (receipts.require, receipt rules): it records them as would-have
	// decisions and withholds nothing.
	ShadowMode bool
	// State belongs to the Evidence implementation (hashes computed in
	// Decided, ids to link the outcome to).
	State any

	// facts are the catalogue's facts of Tool, nil for a Call made
	// elsewhere (PolicyTool then computes them).
	facts *toolFacts
}

// PolicyTool returns the call's tool as policy conditions see it (CEL
// variable `tool`): name, title, description and annotations of the listed
// definition, and its normalized metadata (evidence.md §4: Intent) when
// Known (an unknown tool's otherwise: destructive, external, nothing
// declared).
func (c *Call) PolicyTool() policy.Tool {
	if c.facts != nil {
		return c.facts.policyTool(c.Name)
	}
	return policyTool(c.Name, c.Tool, c.Known)
}

// policyTool is the CEL variable `tool` of a call to name whose listed
// definition is tool (zero unless known), computed afresh.
func policyTool(name string, tool mcp.Tool, known bool) policy.Tool {
	return factsOf(tool, known).policyTool(name)
}

// toolFacts is what the gateway derives from one listed tool definition
// when it is catalogued (catalog.upsert, catalog.replace), not per call:
// its normalized intent (evidence.md §4, evidence.ToolIntentOf) and the
// policy's view of it. Read-only once made; its maps and slices are shared
// by every call of that definition (CEL never writes to them).
type toolFacts struct {
	intent evidence.ToolIntent
	tool   policy.Tool // everything but Name
	// name and view are the listed name and policy's view of tool by
	// that name; nil view for unknownFacts, whose name is each call's.
	name string
	view *policy.ToolView
	// hash is drift.Hash of the definition ("" when it cannot be
	// canonicalized): the drift stage checks that the drift tracker
	// compared this definition, not an earlier one of the name.
	hash string
}

// newToolFacts returns the facts of a listed definition, with the
// findings of its scan (nil without a scanner).
func newToolFacts(t mcp.Tool, findings []policy.Finding) *toolFacts {
	it := evidence.ToolIntentOf(&t)
	f := &toolFacts{intent: it, tool: policy.Tool{
		Known: true, Title: t.Title, Description: t.Description, Annotations: t.Annotations.Map(),
		DeclaredSideEffects: it.DeclaredSideEffects, SideEffect: it.SideEffect, DataClasses: it.DataClasses,
		Externality: it.Externality, RequiredScopes: it.RequiredScopes, MetadataConfidence: evidence.Confidence(it, 0),
		Sources: it.Sources, MetadataConflicts: it.ConflictFields(), Findings: findings,
	}}
	f.name, f.view = t.Name, policy.NewToolView(f.policyTool(t.Name))
	f.hash, _ = drift.Hash(t)
	return f
}

// viewFor returns the policy view of a call to name, nil when name is not
// the name the view was made with (the Input then builds its own).
func (f *toolFacts) viewFor(name string) *policy.ToolView {
	if f.view == nil || f.name != name {
		return nil
	}
	return f.view
}

// unknownFacts are the facts of a tool the gateway has not seen listed
// (or whose listing went stale): every field unknown, side_effect
// destructive, externality external (evidence.md §4).
var unknownFacts = func() *toolFacts {
	it := evidence.ToolIntentOf(nil)
	return &toolFacts{intent: it, tool: policy.Tool{
		SideEffect: it.SideEffect, Externality: it.Externality, Sources: it.Sources,
	}}
}()

// factsOf is newToolFacts(tool), or unknownFacts when !known.
func factsOf(tool mcp.Tool, known bool) *toolFacts {
	if !known {
		return unknownFacts
	}
	return newToolFacts(tool, nil)
}

// policyTool is the policy's view of a call to name of this definition.
func (f *toolFacts) policyTool(name string) policy.Tool {
	t := f.tool
	t.Name = name
	return t
}
