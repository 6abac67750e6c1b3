package evidence

import (
	"encoding/base64"
	"fmt"

	"github.com/gatehouse-mcp/gatehouse/internal/pipeline"
)

// GatewayDecisionReceipt is the gateway's own receipt for one tools/call
// decision (the draft's GatewayDecisionReceipt; evidence.md §6), and the
// payload of the one ledger entry that records it (evidence.md §9.1). Fields
// and JSON names are the draft's table in table order, then the four hashes
// of evidence.md §3, then Gatehouse's additions: server_receipt_status (the
// verification status the gateway computed for the referenced receipt,
// which the server receipt itself never gets rewritten to carry), phase,
// completes_decision_id, and the server receipt as received
// (server_receipt_base64, server_receipt_hash) or as synthesized
// (synthesized_receipt).
//
// One id, one record: every GatewayDecisionReceipt has its own
// gateway_decision_id. A call has a decision record (phase "decision",
// written before the call is forwarded or answered) and, when forwarded,
// an outcome record (phase "outcome", after the response) with a new
// gateway_decision_id whose completes_decision_id names the decision it
// completes. audit_event_id is the record_id of the ledger entry that
// holds the record: the entry is the audit event (docs/ledger.md,
// "Per-call records").
//
// Required members (gateway_decision_id, schema_version, issued_at,
// server_id, tool_name, action), metadata_confidence and shadow_mode are
// always written; the others are omitted when empty. [CanonicalJSON]
// encodes it in RFC 8785 form in one pass.
type GatewayDecisionReceipt struct {
	GatewayDecisionID  string       `json:"gateway_decision_id"` // [NewGatewayDecisionID]
	SchemaVersion      string       `json:"schema_version"`      // "0.1"
	IssuedAt           string       `json:"issued_at"`           // RFC 3339, [Timestamp]
	ServerReceiptID    string       `json:"server_receipt_id,omitempty"`
	GatewayID          string       `json:"gateway_id,omitempty"`
	ServerID           string       `json:"server_id"`
	ToolName           string       `json:"tool_name"`
	ActorRefID         string       `json:"actor_ref_id,omitempty"`
	Role               string       `json:"role,omitempty"`
	Action             string       `json:"action"` // allow, deny, monitor, quarantine or redact
	MatchedRule        string       `json:"matched_rule,omitempty"`
	Reason             string       `json:"reason,omitempty"`
	PolicyVersion      string       `json:"policy_version,omitempty"`
	MetadataConfidence float64      `json:"metadata_confidence"` // [Confidence], 0..1
	Warnings           []string     `json:"warnings,omitempty"`
	ArgumentScanResult *ScanResult  `json:"argument_scan_result,omitempty"`
	ResponseScanResult *ScanResult  `json:"response_scan_result,omitempty"`
	DriftResult        *DriftResult `json:"drift_result,omitempty"`
	ShadowMode         bool         `json:"shadow_mode"`
	// ShadowDecisions are the would-have decisions beside Action (every
	// matching `mode: shadow` rule; with shadow_mode true, every stage's
	// verdict, none enforced), named as in the decision event's
	// shadow_decisions. Gatehouse's addition to the draft's table.
	ShadowDecisions     []ShadowDecision `json:"shadow_decisions,omitempty"`
	AuditEventID        string           `json:"audit_event_id,omitempty"` // [NewAuditEventID]: the record_id of its ledger entry
	InputHash           string           `json:"input_hash,omitempty"`     // [InputHash] of params.arguments
	OutputHash          string           `json:"output_hash,omitempty"`    // [Hash] of the whole result
	ToolSchemaHash      string           `json:"tool_schema_hash,omitempty"`
	ToolDescriptionHash string           `json:"tool_description_hash,omitempty"`
	ServerReceiptStatus Status           `json:"server_receipt_status,omitempty"` // [Verify]

	// Phase is [PhaseDecision] or [PhaseOutcome].
	Phase string `json:"phase,omitempty"`
	// CompletesDecisionID is, on an outcome record, the
	// gateway_decision_id of the decision record it completes; empty on a
	// decision record.
	CompletesDecisionID string `json:"completes_decision_id,omitempty"`
	// DecisionEventID is, on a decision record, the id of the call's
	// gatehouse.tool.decision.v1 event in the decision log (as the scan
	// events' decision_event_id names it), so that the two records of
	// one decision can be joined; empty without a decision log and on an
	// outcome record.
	DecisionEventID string `json:"decision_event_id,omitempty"`
	// ServerReceiptBase64 is, on an outcome record, the server receipt
	// exactly as the server sent it (the bytes of its JSON value in the
	// result, standard padded base64, RFC 4648 §4), so that its signature
	// can be checked again offline; empty when the server sent none (or
	// one too large to keep, which a warning says).
	ServerReceiptBase64 string `json:"server_receipt_base64,omitempty"`
	// ServerReceiptHash is the [Hash] (RFC 8785 form) of the server
	// receipt of ServerReceiptBase64; empty when it has none or its JSON
	// cannot be hashed exactly (a warning says so).
	ServerReceiptHash string `json:"server_receipt_hash,omitempty"`
	// SynthesizedReceipt is, on an outcome record of a call whose server
	// sent no receipt, the receipt the gateway synthesized at the host
	// boundary ([Synthesize]); server_receipt_id names it.
	SynthesizedReceipt *ServerReceipt `json:"synthesized_receipt,omitempty"`
}

// Actions is the gateway's action vocabulary (the draft's "Actions"), least
// severe first: pipeline.ActionNames, its one definition.
var Actions = pipeline.ActionNames()

// Scan statuses of a [ScanResult].
const (
	ScanPass   = "pass"
	ScanFail   = "fail"
	ScanNotRun = "not_run"
)

// ReasonHeldBeforeForwarding is the response_scan_result reason of a call
// that the gateway denied or held, so that no response exists.
const ReasonHeldBeforeForwarding = "gateway-mediated tool call held before upstream forwarding"

// ScanResult summarizes an argument or response scan (evidence.md §6, §8;
// docs/scanning.md). It never carries matched values: a finding has a
// rule id, a class, a confidence, an RFC 6901 path and a masked excerpt.
type ScanResult struct {
	// Status is pass (scanned, no finding), fail (findings) or not_run
	// (Reason says why).
	Status       string   `json:"status"`
	Reason       string   `json:"reason,omitempty"`
	ArgumentKeys []string `json:"argument_keys,omitempty"`
	// Findings are what the scan found, after the policy's suppressions.
	Findings []ScanFinding `json:"findings,omitempty"`
	// Action is the scan's own verdict (the most severe action of its
	// findings): allow, monitor, redact or deny.
	Action string `json:"action,omitempty"`
	// Redactions are the draft's redaction records of what was rewritten
	// in the forwarded bytes (field: the RFC 6901 path, prefixed by the
	// part of the message; class; method; replacement).
	Redactions []Redaction `json:"redactions,omitempty"`
}

// ScanFinding is one finding of a [ScanResult].
type ScanFinding struct {
	Rule       string `json:"rule"`
	Class      string `json:"class"`
	Confidence string `json:"confidence"`
	// Path is the RFC 6901 pointer of the value, prefixed by the part of
	// the message it is in ("/arguments/token", "/result/content/0/text").
	Path string `json:"path"`
	// Excerpt is masked (a few leading characters and the length of a
	// secret; a short quote of an injection phrase).
	Excerpt string `json:"excerpt,omitempty"`
	// Action is what the policy made of the finding.
	Action string `json:"action"`
}

// HeldResponseScan returns the response_scan_result of a call that was
// denied or held before forwarding: status not_run with
// [ReasonHeldBeforeForwarding].
func HeldResponseScan() *ScanResult {
	return &ScanResult{Status: ScanNotRun, Reason: ReasonHeldBeforeForwarding}
}

// ShadowDecision is one would-have decision of a [GatewayDecisionReceipt]
// (evidence.md §5, shadow): evaluated and recorded, not enforced. The
// members are those of the decision event's shadow_decisions
// (docs/decision-log.md).
type ShadowDecision struct {
	// Action is the would-have action (allow, monitor, redact,
	// quarantine, deny).
	Action string `json:"action"`
	// MatchedRule names the rule or the stage's own rule (scanning,
	// unknown_tool, receipts.require, ...).
	MatchedRule string `json:"matched_rule"`
	// Reason is human-readable, never an argument value.
	Reason string `json:"reason"`
	// Stage is the stage that gave it (policy, scan, unknown_tool,
	// evidence, ...).
	Stage string `json:"stage"`
}

// DriftResult is a baseline drift result (evidence.md §6, §7).
type DriftResult struct {
	Severity string   `json:"severity"` // minor, moderate, high or critical
	Action   string   `json:"action"`
	Changes  []string `json:"changes"`
}

// Record phases (evidence.md §2, "Emission timing"; §9.1).
const (
	// PhaseDecision: the decision record, durable before the call is
	// forwarded or answered.
	PhaseDecision = "decision"
	// PhaseOutcome: the outcome record, after the server's response,
	// carrying the server receipt and the response scan; durable before
	// the response reaches the client.
	PhaseOutcome = "outcome"
)

// ReceiptBytes returns the server receipt an outcome record d carries
// exactly as the server sent it (ServerReceiptBase64 decoded), nil when it
// carries none. The error says that the member is not standard base64.
func (d *GatewayDecisionReceipt) ReceiptBytes() ([]byte, error) {
	if d.ServerReceiptBase64 == "" {
		return nil, nil
	}
	b, err := base64.StdEncoding.DecodeString(d.ServerReceiptBase64)
	if err != nil {
		return nil, fmt.Errorf("evidence: server_receipt_base64 of %s: %w", d.GatewayDecisionID, err)
	}
	return b, nil
}
