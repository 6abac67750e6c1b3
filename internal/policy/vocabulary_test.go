package policy

import (
	"slices"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/pipeline"
)

// TestActionVocabulary holds policy's string Action constants to the one
// definition of the vocabulary, pipeline.ActionNames: policy keeps its own
// type (its values are the strings a policy file holds and a decision
// records), but not its own list.
func TestActionVocabulary(t *testing.T) {
	consts := []Action{ActionAllow, ActionMonitor, ActionRedact, ActionQuarantine, ActionDeny}
	var got []string
	for _, a := range consts {
		got = append(got, string(a))
	}
	if want := pipeline.ActionNames(); !slices.Equal(got, want) {
		t.Fatalf("policy actions %q, pipeline vocabulary %q", got, want)
	}
}
