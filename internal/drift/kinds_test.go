package drift

import "testing"

// TestValidKind: every kind Compare reports on the draft's example is
// valid, and typos are not.
func TestValidKind(t *testing.T) {
	r := Compare(load(t, "publish_artifact_baseline.json"), load(t, "publish_artifact_current.json"), Options{})
	for _, c := range r.Changes {
		if !ValidKind(c.Kind) {
			t.Errorf("Compare reported %q, which ValidKind refuses", c.Kind)
		}
	}
	for _, k := range []string{"tool_added", "effect_added_share", "side_effect_escalated_to_destructive", "externality_changed_to_third_party", "scope_added_external_share", "data_class_added_pii"} {
		if !ValidKind(k) {
			t.Errorf("%q refused", k)
		}
	}
	for _, k := range []string{"externality_changed_to_externl", "effect_added_shares", "externality_changed_to_internal", "scope_added_", "scope_added_Repo", "tool_add", ""} {
		if ValidKind(k) {
			t.Errorf("%q accepted", k)
		}
	}
}
