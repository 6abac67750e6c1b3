package toolstate

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// SeverityNone is the severity of an observation equal to its baseline
// (drift.None.String()); [Store.Approve] sets it on the observation it
// approves.
const SeverityNone = "none"

// ErrInvalid: a value a Store refuses to record (an empty server id or
// tool name, a hash that is not the SHA-256 of the definition, an unknown
// origin, a text field that is not UTF-8 or holds NUL, which PostgreSQL
// cannot store). Nothing is written.
var ErrInvalid = errors.New("toolstate: invalid value")

// DefinitionHash returns "sha256:<hex>" of def: the hash drift.Hash gives
// the tool whose canonical definition def is (evidence.md §3). Stores
// refuse a baseline or observation whose Hash is not DefinitionHash of its
// Definition.
func DefinitionHash(def []byte) string {
	sum := sha256.Sum256(def)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// TimeResolution is the precision Stores keep times to (PostgreSQL's
// timestamptz holds microseconds): times are stored in UTC, truncated to
// it, by every backend alike.
const TimeResolution = time.Microsecond

// storedTime is t as a Store keeps it: now when t is zero, in UTC,
// truncated to TimeResolution.
func storedTime(t, now time.Time) time.Time {
	if t.IsZero() {
		t = now
	}
	return t.UTC().Truncate(TimeResolution)
}

func checkName(serverID, tool string) error {
	switch {
	case serverID == "":
		return fmt.Errorf("%w: empty server id", ErrInvalid)
	case tool == "":
		return fmt.Errorf("%w: empty tool name (server %q)", ErrInvalid, serverID)
	}
	return checkText(serverID, tool, serverID, tool)
}

// checkText refuses strings every backend cannot keep exactly: PostgreSQL
// text holds valid UTF-8 without NUL.
func checkText(serverID, tool string, texts ...string) error {
	for _, s := range texts {
		if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
			return fmt.Errorf("%w: tool %q of server %q: a text field is not UTF-8 without NUL", ErrInvalid, tool, serverID)
		}
	}
	return nil
}

func checkDefinition(serverID, tool, hash string, def []byte) error {
	if len(def) == 0 {
		return fmt.Errorf("%w: tool %q of server %q: empty definition", ErrInvalid, tool, serverID)
	}
	if got := DefinitionHash(def); hash != got {
		return fmt.Errorf("%w: tool %q of server %q: definition_hash %q is not the hash of the definition (%s)", ErrInvalid, tool, serverID, hash, got)
	}
	return nil
}

// PrepareFirstUse checks b for [Store.FirstUse] and returns it as a Store
// records it: Origin OriginFirstUse when empty, At now when zero, times as
// [TimeResolution] says, Definition copied. Errors wrap ErrInvalid. For
// backends; callers of a Store need not call it.
func PrepareFirstUse(b Baseline, now time.Time) (Baseline, error) {
	if err := checkName(b.ServerID, b.Tool); err != nil {
		return Baseline{}, err
	}
	if err := checkDefinition(b.ServerID, b.Tool, b.Hash, b.Definition); err != nil {
		return Baseline{}, err
	}
	if err := checkText(b.ServerID, b.Tool, b.By, b.Reason); err != nil {
		return Baseline{}, err
	}
	if b.Origin == "" {
		b.Origin = OriginFirstUse
	}
	if b.Origin != OriginFirstUse && b.Origin != OriginApproval {
		return Baseline{}, fmt.Errorf("%w: tool %q of server %q: origin %q (want %q or %q)", ErrInvalid, b.Tool, b.ServerID, b.Origin, OriginFirstUse, OriginApproval)
	}
	b.At = storedTime(b.At, now)
	return b.clone(), nil
}

// PrepareObservations checks obs for [Store.Observe] and returns them as a
// Store records them: a removed observation has no Hash and no
// Definition, any other one a Hash of its Definition; Severity
// SeverityNone when empty; At now when zero; slices copied. Two
// observations of one tool are refused. Errors wrap ErrInvalid. For
// backends.
func PrepareObservations(obs []Observation, now time.Time) ([]Observation, error) {
	out := make([]Observation, 0, len(obs))
	seen := make(map[[2]string]bool, len(obs))
	for _, o := range obs {
		if err := checkName(o.ServerID, o.Tool); err != nil {
			return nil, err
		}
		k := [2]string{o.ServerID, o.Tool}
		if seen[k] {
			return nil, fmt.Errorf("%w: tool %q of server %q observed twice in one listing", ErrInvalid, o.Tool, o.ServerID)
		}
		seen[k] = true
		if o.Removed {
			if o.Hash != "" || len(o.Definition) > 0 {
				return nil, fmt.Errorf("%w: tool %q of server %q: a removed tool has no definition", ErrInvalid, o.Tool, o.ServerID)
			}
		} else if err := checkDefinition(o.ServerID, o.Tool, o.Hash, o.Definition); err != nil {
			return nil, err
		}
		if o.Severity == "" {
			o.Severity = SeverityNone
		}
		if err := checkText(o.ServerID, o.Tool, append([]string{o.Severity, o.By}, o.Changes...)...); err != nil {
			return nil, err
		}
		o.At = storedTime(o.At, now)
		o = o.clone()
		if len(o.Changes) == 0 {
			o.Changes = nil
		}
		if len(o.Definition) == 0 {
			o.Definition = nil
		}
		out = append(out, o)
	}
	return out, nil
}

// PrepareApproval checks a for [Store.Approve] (a server id and a tool
// name) and sets At to now when zero, as [TimeResolution] says. Errors
// wrap ErrInvalid. For backends.
func PrepareApproval(a Approval, now time.Time) (Approval, error) {
	if err := checkName(a.ServerID, a.Tool); err != nil {
		return Approval{}, err
	}
	if err := checkText(a.ServerID, a.Tool, a.ExpectHash, a.By, a.Reason); err != nil {
		return Approval{}, err
	}
	a.At = storedTime(a.At, now)
	return a, nil
}

// ApprovedBaseline returns the baseline a makes of observed, the tool's
// last observation (nil when there is none), for [Store.Approve]:
// ErrNotFound when nothing is observed or the tool was removed from the
// last listing, ErrChanged when observed's hash is not a.ExpectHash. For
// backends.
func ApprovedBaseline(a Approval, observed *Observation) (Baseline, error) {
	switch {
	case observed == nil:
		return Baseline{}, fmt.Errorf("approving tool %q of server %q: nothing observed: %w", a.Tool, a.ServerID, ErrNotFound)
	case observed.Removed:
		return Baseline{}, fmt.Errorf("approving tool %q of server %q: the tool is not in the last listing: %w", a.Tool, a.ServerID, ErrNotFound)
	case observed.Hash != a.ExpectHash:
		return Baseline{}, fmt.Errorf("approving tool %q of server %q: shown %s, now %s: %w", a.Tool, a.ServerID, a.ExpectHash, observed.Hash, ErrChanged)
	}
	return Baseline{
		ServerID:   a.ServerID,
		Tool:       a.Tool,
		Hash:       observed.Hash,
		Definition: append([]byte(nil), observed.Definition...),
		Origin:     OriginApproval,
		By:         a.By,
		Reason:     a.Reason,
		At:         a.At,
	}, nil
}

// PrepareHold checks q for [Store.Hold] and returns it as a Store records
// it: At now when zero, as [TimeResolution] says, Changes copied (nil when
// empty). Errors wrap ErrInvalid. For backends.
func PrepareHold(q Quarantine, now time.Time) (Quarantine, error) {
	if err := checkName(q.ServerID, q.Tool); err != nil {
		return Quarantine{}, err
	}
	if err := checkText(q.ServerID, q.Tool, append([]string{q.Hash, q.Severity, q.By, q.Rule, q.Reason}, q.Changes...)...); err != nil {
		return Quarantine{}, err
	}
	q.At = storedTime(q.At, now)
	q = q.clone()
	if len(q.Changes) == 0 {
		q.Changes = nil
	}
	return q, nil
}
