package evidence

import (
	"strings"
	"testing"
)

// TestRequirementTable checks the whole table of Requirement.Check, as
// documented in docs/evidence.md.
func TestRequirementTable(t *testing.T) {
	statuses := []Status{StatusOK, StatusUnsigned, StatusUnknown, StatusTampered, StatusEmpty, Status("bogus")}
	table := map[Requirement][]string{
		//                 ok       unsigned   unknown    tampered  empty   bogus
		RequireNone:     {"allow", "allow", "allow", "allow", "allow", "allow"},
		"":              {"allow", "allow", "allow", "allow", "allow", "allow"},
		RequirePresent:  {"allow", "monitor", "monitor", "deny", "deny", "deny"},
		RequireVerified: {"allow", "deny", "deny", "deny", "deny", "deny"},
		"always":        {"deny", "deny", "deny", "deny", "deny", "deny"},
	}
	for q, row := range table {
		for i, s := range statuses {
			action, reason := q.Check(s)
			if action != row[i] {
				t.Errorf("Requirement(%q).Check(%s) = %s, want %s", q, s, action, row[i])
			}
			if reason == "" {
				t.Errorf("Requirement(%q).Check(%s): empty reason", q, s)
			}
		}
	}
	if _, reason := RequirePresent.Check(StatusUnsigned); !strings.Contains(reason, "unsigned") {
		t.Errorf("reason %q does not name the status", reason)
	}
}

func TestParseRequirement(t *testing.T) {
	for in, want := range map[string]Requirement{"": RequireNone, "none": RequireNone, "present": RequirePresent, "verified": RequireVerified} {
		if got, err := ParseRequirement(in); err != nil || got != want {
			t.Errorf("ParseRequirement(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"Verified", "required", "true", " none"} {
		if _, err := ParseRequirement(in); err == nil {
			t.Errorf("ParseRequirement(%q) succeeded", in)
		}
	}
}
