package policy

import (
	"maps"

	"gopkg.in/yaml.v3"
)

// Values of [Drift] fields (docs/drift.md).
const (
	// BaselineFirstUse: a tool with no baseline gets one the first time the
	// gateway sees it listed (trust on first use).
	BaselineFirstUse = "first_use"
	// BaselineRequire: only a person approves baselines (gatehouse tools
	// approve); a call to a tool never approved is denied.
	BaselineRequire = "require"

	// ListingMark: a quarantined tool stays in the tools/list the client
	// sees, its description prefixed with a notice.
	ListingMark = "mark"
	// ListingHide: a quarantined tool is left out of the tools/list the
	// client sees.
	ListingHide = "hide"
)

// DriftSeverities are the drift severities, least severe first (drift
// package's Severity names).
var DriftSeverities = []string{"none", "minor", "moderate", "high", "critical"}

// DriftStatuses are the values of the CEL variable drift.status: none
// (the definition is its baseline), changed, added (no baseline: a new
// tool), renamed (the definition of a removed baseline under a new name)
// and unknown (the tool is not listed, or nothing is known yet).
var DriftStatuses = []string{"none", "changed", "added", "renamed", "unknown"}

// Drift is the policy's drift block (docs/drift.md; evidence.md §7): how
// baselines are taken and what drift from them does.
type Drift struct {
	// Baseline is BaselineFirstUse (the default) or BaselineRequire.
	Baseline string
	// Actions maps each severity above none ("minor", "moderate",
	// "high", "critical") to an action: allow, monitor, deny or
	// quarantine. Defaults: critical quarantine, high deny, moderate and
	// minor monitor (evidence.md §7).
	Actions map[string]Action
	// Added is the action for a tool listed with no baseline on a server
	// that has baselines (a tool added since): default monitor. Under
	// BaselineRequire such a tool is denied whatever Added says.
	Added Action
	// Renamed is the action for a renamed tool (the definition of a
	// removed baseline under a new name): default quarantine.
	Renamed Action
	// Listing is ListingMark (the default) or ListingHide: what the
	// client's tools/list shows of a quarantined tool.
	Listing string
	// HideDenied leaves out of the client's tools/list the tools the
	// policy denies to the caller whatever the arguments (only for a
	// policy whose decisions depend on the tool alone,
	// Policy.DependsOnlyOnTool); default false.
	HideDenied bool
}

// DefaultDrift is the drift block of a policy without one.
func DefaultDrift() Drift {
	return Drift{
		Baseline: BaselineFirstUse,
		Actions:  map[string]Action{"minor": ActionMonitor, "moderate": ActionMonitor, "high": ActionDeny, "critical": ActionQuarantine},
		Added:    ActionMonitor,
		Renamed:  ActionQuarantine,
		Listing:  ListingMark,
	}
}

// Drift returns the policy's drift block (DefaultDrift when it has none).
func (p *Policy) Drift() Drift {
	d := p.drift
	d.Actions = maps.Clone(p.drift.Actions)
	return d
}

// DriftView is the CEL variable `drift` of a tools/call: the tool's drift
// from its approved baseline as the gateway classified it (docs/drift.md).
type DriftView struct {
	// Status is one of DriftStatuses.
	Status string `json:"status"`
	// Severity is one of DriftSeverities.
	Severity string `json:"severity"`
	// Action is the drift block's action for Severity (allow for none).
	Action string `json:"action"`
	// Changes are the change kinds that decided the severity
	// (drift_result.changes); AllChanges every classified change kind.
	Changes    []string `json:"changes"`
	AllChanges []string `json:"all_changes"`
}

// driftMap is the CEL value of v; nil is status unknown, severity none.
func driftMap(v *DriftView) map[string]any {
	if v == nil {
		return map[string]any{"status": "unknown", "severity": "none", "action": "allow", "changes": []string{}, "all_changes": []string{}}
	}
	return map[string]any{"status": v.Status, "severity": v.Severity, "action": v.Action,
		"changes": listOrEmpty(v.Changes), "all_changes": listOrEmpty(v.AllChanges)}
}

// driftBlock reads the drift block.
func (p *parser) driftBlock(n *yaml.Node, pol *Policy) {
	const where = "drift: "
	if n.Kind != yaml.MappingNode {
		p.errorf(n.Line, "", "drift must be a mapping, got %s", kindName(n))
		return
	}
	f := p.fields(n, "", where, "baseline", "actions", "added", "renamed", "listing", "hide_denied")
	if e, ok := f["baseline"]; ok {
		if e.val.Kind == yaml.ScalarNode && e.val.Value == "first-use" {
			// The spelling of wrap --baseline's help before this one.
			e.val.Value = BaselineFirstUse
		}
		if s, ok := p.enum(e, "", where, BaselineFirstUse, BaselineRequire); ok {
			pol.drift.Baseline = s
		}
	}
	if e, ok := f["listing"]; ok {
		if s, ok := p.enum(e, "", where, ListingMark, ListingHide); ok {
			pol.drift.Listing = s
		}
	}
	if e, ok := f["hide_denied"]; ok {
		if e.val.Kind != yaml.ScalarNode || e.val.ShortTag() != "!!bool" {
			p.errorf(e.val.Line, "", "%shide_denied must be true or false, got %s", where, kindName(e.val))
		} else {
			pol.drift.HideDenied = e.val.Value == "true"
		}
	}
	driftAction := func(e entry, w string) (Action, bool) {
		a, ok := p.action(e, "", w)
		if ok && a == ActionRedact {
			p.errorf(e.val.Line, "", "%saction redact rewrites findings; drift has none (want allow, monitor, deny or quarantine)", w)
			return "", false
		}
		return a, ok
	}
	for _, k := range []string{"added", "renamed"} {
		if e, ok := f[k]; ok {
			if a, ok := driftAction(e, where); ok {
				if k == "added" {
					pol.drift.Added = a
				} else {
					pol.drift.Renamed = a
				}
			}
		}
	}
	e, ok := f["actions"]
	if !ok || isNull(e.val) {
		return
	}
	if e.val.Kind != yaml.MappingNode {
		p.errorf(e.val.Line, "", "%sactions must be a mapping of severity to action, got %s", where, kindName(e.val))
		return
	}
	af := p.fields(e.val, "", where+"actions: ", DriftSeverities[1:]...)
	for _, sev := range DriftSeverities[1:] {
		if e, ok := af[sev]; ok {
			if a, ok := driftAction(e, where+"actions: "); ok {
				pol.drift.Actions[sev] = a
			}
		}
	}
}
