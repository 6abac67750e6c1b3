package pipeline

import (
	"slices"
	"testing"
)

func TestActionNames(t *testing.T) {
	names := ActionNames()
	if !slices.Equal(names, []string{"allow", "monitor", "redact", "quarantine", "deny"}) {
		t.Fatalf("ActionNames = %q", names)
	}
	for i, n := range names {
		if a, err := ParseAction(n); err != nil || int(a) != i || a.String() != n {
			t.Errorf("ParseAction(%q) = %v, %v", n, a, err)
		}
	}
	names[0] = "changed"
	if ActionNames()[0] != "allow" {
		t.Error("ActionNames returned the package's own array")
	}
}
