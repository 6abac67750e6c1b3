package pipeline

// ActionNames returns the decision vocabulary (evidence.md §5), least
// severe first: "allow", "monitor", "redact", "quarantine", "deny", as
// [Action.String] spells them. It is the one definition of the vocabulary:
// evidence.Actions and evidence.PolicyDecisions are derived from it, and
// policy's string constants are held to it by policy's tests. The slice is
// new on every call.
func ActionNames() []string { return append([]string(nil), actionNames[:]...) }
