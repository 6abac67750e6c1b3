package evidence

// GatewayDecisionReceipt is the gateway's own receipt for one tools/call
// decision (the draft's GatewayDecisionReceipt; evidence.md §6). Fields and
// JSON names are the draft's table in table order, then the four hashes of
// evidence.md §3 and server_receipt_status (an addition: the verification
// status the gateway computed for the referenced receipt, which the server
// receipt itself never gets rewritten to carry). It references the server
// receipt by server_receipt_id and never copies or rewrites it. Required
// members (gateway_decision_id, schema_version, issued_at, server_id,
// tool_name, action), metadata_confidence and shadow_mode are always
// written; the others are omitted when empty.
type GatewayDecisionReceipt struct {
	GatewayDecisionID   string       `json:"gateway_decision_id"` // [NewGatewayDecisionID]
	SchemaVersion       string       `json:"schema_version"`      // "0.1"
	IssuedAt            string       `json:"issued_at"`           // RFC 3339, [Timestamp]
	ServerReceiptID     string       `json:"server_receipt_id,omitempty"`
	GatewayID           string       `json:"gateway_id,omitempty"`
	ServerID            string       `json:"server_id"`
	ToolName            string       `json:"tool_name"`
	ActorRefID          string       `json:"actor_ref_id,omitempty"`
	Role                string       `json:"role,omitempty"`
	Action              string       `json:"action"` // allow, deny, monitor, quarantine or redact
	MatchedRule         string       `json:"matched_rule,omitempty"`
	Reason              string       `json:"reason,omitempty"`
	PolicyVersion       string       `json:"policy_version,omitempty"`
	MetadataConfidence  float64      `json:"metadata_confidence"` // [Confidence], 0..1
	Warnings            []string     `json:"warnings,omitempty"`
	ArgumentScanResult  *ScanResult  `json:"argument_scan_result,omitempty"`
	ResponseScanResult  *ScanResult  `json:"response_scan_result,omitempty"`
	DriftResult         *DriftResult `json:"drift_result,omitempty"`
	ShadowMode          bool         `json:"shadow_mode"`
	AuditEventID        string       `json:"audit_event_id,omitempty"` // [NewAuditEventID]
	InputHash           string       `json:"input_hash,omitempty"`     // [InputHash] of params.arguments
	OutputHash          string       `json:"output_hash,omitempty"`    // [Hash] of the whole result
	ToolSchemaHash      string       `json:"tool_schema_hash,omitempty"`
	ToolDescriptionHash string       `json:"tool_description_hash,omitempty"`
	ServerReceiptStatus Status       `json:"server_receipt_status,omitempty"` // [Verify]
}

// Gateway actions (the draft's "Actions" vocabulary).
var Actions = []string{"allow", "deny", "monitor", "redact", "quarantine"}

// Scan statuses of a [ScanResult].
const (
	ScanPass   = "pass"
	ScanFail   = "fail"
	ScanNotRun = "not_run"
)

// ReasonHeldBeforeForwarding is the response_scan_result reason of a call
// that the gateway denied or held, so that no response exists.
const ReasonHeldBeforeForwarding = "gateway-mediated tool call held before upstream forwarding"

// ScanResult summarizes an argument or response scan (evidence.md §6, §8).
// It never carries matched values.
type ScanResult struct {
	Status       string   `json:"status"` // pass, fail or not_run
	Reason       string   `json:"reason,omitempty"`
	ArgumentKeys []string `json:"argument_keys,omitempty"`
	Findings     int      `json:"findings,omitempty"` // number of findings
}

// HeldResponseScan returns the response_scan_result of a call that was
// denied or held before forwarding: status not_run with
// [ReasonHeldBeforeForwarding].
func HeldResponseScan() *ScanResult {
	return &ScanResult{Status: ScanNotRun, Reason: ReasonHeldBeforeForwarding}
}

// DriftResult is a baseline drift result (evidence.md §6, §7).
type DriftResult struct {
	Severity string   `json:"severity"` // minor, moderate, high or critical
	Action   string   `json:"action"`
	Changes  []string `json:"changes"`
}

// Audit event phases (evidence.md §2, "Emission timing").
const (
	// PhaseDecision: written before the call is forwarded or answered.
	PhaseDecision = "decision"
	// PhaseOutcome: written after the server's response, carrying the
	// server receipt reference and the response scan.
	PhaseOutcome = "outcome"
)

// AuditEvent is the payload of one audit ledger entry about a tools/call
// (evidence.md §1, §9). It carries the three lineage ids as top-level
// members so that the ledger can be searched by any of them, walking
// server_receipt_id -> gateway_decision_id -> audit_event_id and back;
// the ledger's filters read exactly the members tool_name, server_id,
// action, server_receipt_id, gateway_decision_id and audit_event_id.
//
// A call has a decision event and, when forwarded, an outcome event; both
// carry the same gateway_decision_id and distinct audit_event_ids, and the
// decision receipt of each phase names that phase's event (see
// [GatewayDecisionReceipt.Event]). The event references the records it
// links and never copies them (spec §6): GatewayDecisionHash and
// ServerReceiptHash are the "sha256:" hashes ([Hash], RFC 8785 form) of the
// decision receipt and of the server receipt exactly as they are stored
// beside it, so that an exported event alone pins both records (see
// [AuditEvent.Link]).
type AuditEvent struct {
	AuditEventID        string `json:"audit_event_id"`
	Phase               string `json:"phase"` // decision or outcome
	IssuedAt            string `json:"issued_at"`
	GatewayDecisionID   string `json:"gateway_decision_id"`
	GatewayDecisionHash string `json:"gateway_decision_hash,omitempty"`
	ServerReceiptID     string `json:"server_receipt_id,omitempty"`
	ServerReceiptHash   string `json:"server_receipt_hash,omitempty"`
	ServerID            string `json:"server_id"`
	ToolName            string `json:"tool_name"`
	Action              string `json:"action"`
	ShadowMode          bool   `json:"shadow_mode"`
	VerificationStatus  Status `json:"verification_status,omitempty"` // of the server receipt
}

// Event returns a new audit event of phase for the decision d, linking the
// three ids: it first sets d.AuditEventID to a new [NewAuditEventID], so
// that d, encoded after this call, names the event. The event's issued_at
// is d's. The hashes are left for [AuditEvent.Link], once d is encoded. Not
// safe for concurrent use on one d.
func (d *GatewayDecisionReceipt) Event(phase string) AuditEvent {
	d.AuditEventID = NewAuditEventID()
	return AuditEvent{
		AuditEventID:       d.AuditEventID,
		Phase:              phase,
		IssuedAt:           d.IssuedAt,
		GatewayDecisionID:  d.GatewayDecisionID,
		ServerReceiptID:    d.ServerReceiptID,
		ServerID:           d.ServerID,
		ToolName:           d.ToolName,
		Action:             d.Action,
		ShadowMode:         d.ShadowMode,
		VerificationStatus: d.ServerReceiptStatus,
	}
}

// Link sets the event's hashes of the records it links: decision is the
// canonical JSON (RFC 8785) of the gateway decision receipt as stored, and
// serverReceipt that of the server receipt as stored, or nil when the
// phase has none. For canonical input the hash is [Hash]'s, computed
// without a second canonicalization pass; passing anything else breaks
// the link an auditor checks.
func (e *AuditEvent) Link(decision, serverReceipt []byte) {
	e.GatewayDecisionHash = hashBytes(decision)
	e.ServerReceiptHash = ""
	if serverReceipt != nil {
		e.ServerReceiptHash = hashBytes(serverReceipt)
	}
}
