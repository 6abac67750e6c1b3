package toolstate

import "time"

// Payloads of the audit ledger entries that record tool states
// (docs/drift.md, "Review"; docs/ledger.md): a person's review (gatehouse
// tools approve, quarantine, release) and the gateway's own first-use
// baselines and holds. Members are the toolstate field names; each entry's
// record_id is an audit_event_id. They are encoded RFC 8785 by the writer.

// HoldRecord is a quarantine inside a ledger entry.
type HoldRecord struct {
	Hash          string   `json:"definition_hash,omitempty"`
	Automatic     bool     `json:"automatic"`
	Severity      string   `json:"severity,omitempty"`
	Changes       []string `json:"changes,omitempty"`
	QuarantinedBy string   `json:"quarantined_by"`
	Rule          string   `json:"matched_rule,omitempty"`
	Reason        string   `json:"reason"`
	QuarantinedAt string   `json:"quarantined_at"`
}

// HoldRecordOf is q as a HoldRecord, nil for nil.
func HoldRecordOf(q *Quarantine) *HoldRecord {
	if q == nil {
		return nil
	}
	return &HoldRecord{Hash: q.Hash, Automatic: q.Automatic, Severity: q.Severity, Changes: q.Changes,
		QuarantinedBy: q.By, Rule: q.Rule, Reason: q.Reason, QuarantinedAt: LedgerTime(q.At)}
}

// ApprovalRecord is the payload of a tool_approval entry.
type ApprovalRecord struct {
	ServerID string `json:"server_id"`
	Tool     string `json:"tool_name"`
	Hash     string `json:"definition_hash"`
	// PreviousHash and PreviousOrigin are the baseline replaced, absent
	// when the tool had none.
	PreviousHash   string `json:"previous_definition_hash,omitempty"`
	PreviousOrigin string `json:"previous_origin,omitempty"`
	// Severity and Changes are the drift of the approved definition from
	// the previous baseline, as the gateway observed it.
	Severity   string   `json:"severity,omitempty"`
	Changes    []string `json:"changes,omitempty"`
	ApprovedBy string   `json:"approved_by"`
	Reason     string   `json:"reason"`
	ApprovedAt string   `json:"approved_at"`
	// Released is the automatic quarantine the approval lifted.
	Released *HoldRecord `json:"released_quarantine,omitempty"`
}

// BaselineRecord is the payload of a tool_baseline entry: a baseline a
// gateway took on first use (Origin OriginFirstUse).
type BaselineRecord struct {
	ServerID   string `json:"server_id"`
	Tool       string `json:"tool_name"`
	Hash       string `json:"definition_hash"`
	Origin     string `json:"origin"`
	ApprovedBy string `json:"approved_by"`
	ApprovedAt string `json:"approved_at"`
}

// QuarantineRecord is the payload of a tool_quarantine entry: a hold a
// person placed (Automatic false) or the gateway did (Automatic true, with
// the drift and the rule that decided it).
type QuarantineRecord struct {
	ServerID string `json:"server_id"`
	Tool     string `json:"tool_name"`
	// Hash is the observed definition held; absent when none was
	// observed (the tool is held by name).
	Hash          string   `json:"definition_hash,omitempty"`
	Automatic     bool     `json:"automatic,omitempty"`
	Severity      string   `json:"severity,omitempty"`
	Changes       []string `json:"changes,omitempty"`
	Rule          string   `json:"matched_rule,omitempty"`
	QuarantinedBy string   `json:"quarantined_by"`
	Reason        string   `json:"reason"`
	QuarantinedAt string   `json:"quarantined_at"`
	// Replaced is the hold this one replaced.
	Replaced *HoldRecord `json:"replaced_quarantine,omitempty"`
}

// ReleaseRecord is the payload of a tool_release entry.
type ReleaseRecord struct {
	ServerID   string      `json:"server_id"`
	Tool       string      `json:"tool_name"`
	ReleasedBy string      `json:"released_by"`
	Reason     string      `json:"reason"`
	ReleasedAt string      `json:"released_at"`
	Released   *HoldRecord `json:"released_quarantine"`
}

// LedgerTime is t as the records write times: RFC 3339 in UTC with
// microseconds (TimeResolution).
func LedgerTime(t time.Time) string {
	return t.UTC().Truncate(TimeResolution).Format("2006-01-02T15:04:05.000000Z")
}
