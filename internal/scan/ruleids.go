package scan

import (
	"slices"
	"sync"

	"github.com/BurntSushi/toml"
)

// Rules of the findings about tool names that the gateway makes from a
// whole tools/list listing (scan.NameLookalike, scan.SkeletonCollisions),
// class ClassPoisoning, path /name.
const (
	// RuleLookalikeName: the name holds invisible, bidirectional, tag or
	// control characters, lookalike letters, mixed scripts or outer white
	// space (NameLookalike).
	RuleLookalikeName = "poisoning-lookalike-name"
	// RuleNameCollision: another tool of the listing has the same
	// skeleton under another name (SkeletonCollisions).
	RuleNameCollision = "poisoning-name-collision"
	// RuleLookalikePolicyName: the name is not one a policy gives but has
	// its skeleton: it imitates a tool the policy decides on.
	RuleLookalikePolicyName = "poisoning-lookalike-policy-name"
)

// RuleIDs returns every rule id a finding can carry, sorted: the
// embedded gitleaks rules, Gatehouse's own secret and personal-data
// rules, the injection and poisoning rules, and the tool-name rules. A
// policy checks its scanning.actions and scanning.suppress rule patterns
// against it, so that a misspelled id does not fail open. It does not
// compile the scanner (the gitleaks file is only decoded).
func RuleIDs() []string { return ruleIDs() }

var ruleIDs = sync.OnceValue(func() []string {
	ids := []string{
		RulePEMPrivateKey, RuleOpenSSHPrivateKey, RuleJWT, RuleURLCredentials, RuleHTTPBearer, RuleHTTPBasic, RuleKeyedSecret,
		RuleEmail, RulePhone, RuleCard, RuleUSSSN, RuleUKNINO, RuleESDNI, RuleNLBSN, RuleINAadhaar, RuleIBAN,
		ruleHiddenText, ruleHTMLComment, rulePoisonInvisible,
		RuleLookalikeName, RuleNameCollision, RuleLookalikePolicyName,
	}
	for _, r := range injectionRules() {
		ids = append(ids, r.id)
	}
	for _, r := range poisoningRules() {
		ids = append(ids, r.id)
	}
	var cfg glConfig
	if _, err := toml.Decode(gitleaksTOML, &cfg); err == nil {
		for _, d := range cfg.Rules {
			ids = append(ids, d.ID)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
})
