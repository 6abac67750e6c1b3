package evidence

import "fmt"

// Requirement is a server's receipts.require setting (evidence.md §2):
// whether a missing or unverified server receipt is allowed, monitored or
// denied. The zero value "" behaves as [RequireNone].
type Requirement string

// The requirements.
const (
	RequireNone     Requirement = "none"
	RequirePresent  Requirement = "present"
	RequireVerified Requirement = "verified"
)

// ParseRequirement returns the Requirement named s ("" is none). Errors:
// any other value.
func ParseRequirement(s string) (Requirement, error) {
	switch q := Requirement(s); q {
	case "", RequireNone:
		return RequireNone, nil
	case RequirePresent, RequireVerified:
		return q, nil
	}
	return "", fmt.Errorf("evidence: receipts.require must be none, present or verified")
}

// Actions returned by [Requirement.Check].
const (
	ActionAllow   = "allow"
	ActionMonitor = "monitor"
	ActionDeny    = "deny"
)

// Check returns what the requirement q does with a receipt of status s:
// action is "allow", "monitor" (allow and flag) or "deny", and reason a
// fixed sentence naming the status and the requirement. The table
// (docs/evidence.md, "receipts.require"):
//
//	status     none   present  verified
//	ok         allow  allow    allow
//	unsigned   allow  monitor  deny
//	unknown    allow  monitor  deny
//	tampered   allow  deny     deny
//	empty      allow  deny     deny
//
// none never denies (the status still reaches the decision's warnings).
// present requires a receipt; one that cannot be verified (unsigned, no key,
// unknown algorithm) is monitored, and a signature that fails is denied,
// because a forged receipt is worse than none. verified requires ok.
// Fail closed: a requirement other than the three (and "") denies
// everything, and a status outside the vocabulary is denied unless q is
// none.
func (q Requirement) Check(s Status) (action, reason string) {
	switch q {
	case "", RequireNone:
		return ActionAllow, "receipts.require is none"
	case RequirePresent, RequireVerified:
	default:
		return ActionDeny, "receipts.require has an unknown value"
	}
	switch s {
	case StatusOK:
		return ActionAllow, "server receipt verified"
	case StatusUnsigned, StatusUnknown:
		if q == RequirePresent {
			return ActionMonitor, fmt.Sprintf("server receipt present but not verified (%s)", s)
		}
		return ActionDeny, fmt.Sprintf("server receipt not verified (%s) and receipts.require is verified", s)
	case StatusTampered:
		return ActionDeny, "server receipt signature does not verify (tampered)"
	case StatusEmpty:
		return ActionDeny, fmt.Sprintf("no server receipt and receipts.require is %s", q)
	}
	return ActionDeny, "server receipt status is not in the vocabulary"
}
