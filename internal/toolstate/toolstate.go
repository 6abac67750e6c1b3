// Package toolstate keeps what the gateway knows of each server's tools
// between runs and between gateways (shared/spec/evidence.md §7;
// docs/drift.md): the approved baseline of every tool (its canonical
// definition, bound to its hash, with who approved it and why), the
// definition last observed, and whether the tool is quarantined.
//
// A [Store] lives in the same database as the audit ledger (the --state
// SQLite file or PostgreSQL URL, tables of its own), so that two gateways
// sharing PostgreSQL see the same baselines and quarantines. Every backend
// runs the suite in internal/toolstate/storetest: [NewMem] (in memory),
// internal/toolstate/sqlite and internal/toolstate/postgres.
//
// Stores check what they are given before writing (ErrInvalid): a
// definition's Hash must be [DefinitionHash] of it, names and text fields
// valid UTF-8 without NUL; times are kept in UTC to the microsecond
// ([TimeResolution]). Definitions are never logged nor put in errors.
package toolstate

import (
	"context"
	"errors"
	"time"
)

// Origins of a baseline.
const (
	// OriginFirstUse: taken by a gateway the first time it saw the tool
	// (--baseline first-use).
	OriginFirstUse = "first_use"
	// OriginApproval: set by a person (gatehouse tools approve).
	OriginApproval = "approval"
)

// Baseline is the approved definition of one tool of one server.
type Baseline struct {
	ServerID string `json:"server_id"`
	Tool     string `json:"tool"`
	// Hash is "sha256:<hex>" of Definition (drift.Hash).
	Hash string `json:"definition_hash"`
	// Definition is the canonical definition (drift.Canonical), RFC 8785.
	Definition []byte `json:"-"`
	// Origin is OriginFirstUse or OriginApproval.
	Origin string `json:"origin"`
	// By is who approved: a person's name for an approval, the gateway's
	// id for a first use. Reason is why (free text, may be empty).
	By     string    `json:"approved_by"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"approved_at"`
}

// Observation is the definition of one tool as a gateway last saw it in a
// complete tools/list, with its classified drift from the baseline.
type Observation struct {
	ServerID string `json:"server_id"`
	Tool     string `json:"tool"`
	// Hash and Definition as in Baseline; empty when Removed.
	Hash       string `json:"definition_hash,omitempty"`
	Definition []byte `json:"-"`
	// Removed is true when the tool has a baseline and was not in the
	// listing.
	Removed bool `json:"removed,omitempty"`
	// Severity is the drift severity against the baseline ("none",
	// "minor", ..., "critical"; drift.Severity.String), Changes its
	// change kinds (every one, in drift.Result order).
	Severity string   `json:"severity"`
	Changes  []string `json:"changes,omitempty"`
	// By is the gateway that observed it; At when.
	By string    `json:"observed_by"`
	At time.Time `json:"observed_at"`
}

// Quarantine is a hold on one tool: no call reaches it until a person
// releases it (evidence.md §5).
type Quarantine struct {
	ServerID string `json:"server_id"`
	Tool     string `json:"tool"`
	// Hash is the definition held ("" for a tool quarantined by name,
	// whatever its definition).
	Hash string `json:"definition_hash,omitempty"`
	// Automatic is true for a quarantine the gateway placed because of
	// drift, false for one a person placed (gatehouse tools quarantine).
	Automatic bool `json:"automatic"`
	// Severity and Changes are the drift that caused an automatic
	// quarantine (as in Observation).
	Severity string   `json:"severity,omitempty"`
	Changes  []string `json:"changes,omitempty"`
	By       string   `json:"quarantined_by"`
	// Rule is the policy rule (or "drift", the drift block's action) that
	// placed an automatic hold; "" for a hold a person placed.
	Rule   string    `json:"matched_rule,omitempty"`
	Reason string    `json:"reason"`
	At     time.Time `json:"quarantined_at"`
}

// Statuses of a tool ([ToolState.Status]).
const (
	StatusApproved    = "approved"    // observed definition == baseline
	StatusChanged     = "changed"     // observed definition differs from the baseline
	StatusNew         = "new"         // observed, no baseline
	StatusRemoved     = "removed"     // baseline, not in the last listing
	StatusQuarantined = "quarantined" // held, whatever else holds
)

// ToolState is everything the store holds about one tool.
type ToolState struct {
	ServerID   string
	Tool       string
	Baseline   *Baseline
	Observed   *Observation
	Quarantine *Quarantine
}

// Status returns the tool's status: StatusQuarantined when held, else
// StatusRemoved, StatusNew, StatusChanged or StatusApproved.
func (s ToolState) Status() string {
	switch {
	case s.Quarantine != nil:
		return StatusQuarantined
	case s.Observed != nil && s.Observed.Removed:
		return StatusRemoved
	case s.Baseline == nil:
		return StatusNew
	case s.Observed != nil && s.Observed.Hash != s.Baseline.Hash:
		return StatusChanged
	}
	return StatusApproved
}

// Approval asks [Store.Approve] to make the observed definition with hash
// ExpectHash the tool's baseline.
type Approval struct {
	ServerID, Tool string
	// ExpectHash is the hash of the definition the approver was shown
	// (gatehouse tools diff prints it). Approve refuses with ErrChanged
	// when the tool's last observed definition has another hash.
	ExpectHash string
	By, Reason string
	At         time.Time
}

// Approved is what [Store.Approve] did, read in its transaction: the
// baseline now in force, the one it replaced (nil when there was none) and
// the automatic hold it lifted (nil when none was lifted). Two approvals
// racing on one tool each see only what they replaced themselves.
type Approved struct {
	Baseline
	Previous *Baseline
	Released *Quarantine
}

// Errors callers branch on.
var (
	// ErrChanged: the observed definition is not the one the approval
	// names (it changed again since it was shown).
	ErrChanged = errors.New("toolstate: the tool's definition changed since it was shown")
	// ErrNotFound: no state for that server and tool.
	ErrNotFound = errors.New("toolstate: no such tool")
	// ErrNotQuarantined: Release of a tool not held.
	ErrNotQuarantined = errors.New("toolstate: the tool is not quarantined")
	// ErrClosed: a call after Close.
	ErrClosed = errors.New("toolstate: store closed")
)

// Store persists tool states. All methods are safe for concurrent use, and
// several Stores (in one process or several) may share one database: each
// method is one transaction.
type Store interface {
	// Tools returns the state of every tool of serverID ("" for every
	// server), sorted by server then tool name.
	Tools(ctx context.Context, serverID string) ([]ToolState, error)
	// Tool returns one tool's state, ErrNotFound when the store holds
	// nothing about it.
	Tool(ctx context.Context, serverID, tool string) (ToolState, error)
	// FirstUse records b as the baseline unless the tool has one already;
	// it returns the baseline in force afterwards and whether it was b
	// (two gateways racing: exactly one wins, both get the winner's). An
	// empty Origin is OriginFirstUse; b is checked as PrepareFirstUse
	// says (ErrInvalid).
	FirstUse(ctx context.Context, b Baseline) (Baseline, bool, error)
	// Observe records the observations of one complete listing (one per
	// tool, the removed ones included), replacing earlier observations of
	// those tools, all or none (ErrInvalid: PrepareObservations).
	Observe(ctx context.Context, obs []Observation) error
	// Approve makes the observed definition the baseline (Origin
	// OriginApproval), with ErrChanged when its hash is not ExpectHash and
	// ErrNotFound when nothing is observed (or the tool was removed from
	// the last listing). It sets the observation's Severity to
	// SeverityNone and its Changes to nil (it is the baseline now), and
	// releases an automatic quarantine; a quarantine a person placed
	// stays.
	Approve(ctx context.Context, a Approval) (Approved, error)
	// Hold places q, replacing a hold already there, except that an
	// automatic q (a gateway's) never replaces a hold a person placed:
	// that one stays, unchanged, and Hold returns nil.
	Hold(ctx context.Context, q Quarantine) error
	// Release lifts the hold on a tool, ErrNotQuarantined when there is
	// none; it returns the hold lifted.
	Release(ctx context.Context, serverID, tool string) (Quarantine, error)
	// Version is a counter that grows with every change any Store made to
	// the database: a gateway polls it to learn of approvals and holds
	// made elsewhere. A refused write, or a FirstUse that lost, leaves it.
	Version(ctx context.Context) (int64, error)
	// Close releases the store. Calls after Close return ErrClosed
	// (Close itself returns nil again).
	Close() error
}
