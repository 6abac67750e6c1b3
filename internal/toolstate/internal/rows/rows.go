// Package rows holds what the SQL backends of toolstate share: assembling
// tool states from the rows of the three tables, and the encoding of the
// change lists.
package rows

import (
	"encoding/json"
	"fmt"

	"github.com/gatehouse-mcp/gatehouse/internal/toolstate"
)

// Collect returns the states of every tool that has a baseline, an
// observation or a quarantine among the given rows, sorted as
// toolstate.Store.Tools returns them.
func Collect(bs []toolstate.Baseline, os []toolstate.Observation, qs []toolstate.Quarantine) []toolstate.ToolState {
	type key struct{ server, tool string }
	m := map[key]*toolstate.ToolState{}
	get := func(server, tool string) *toolstate.ToolState {
		k := key{server, tool}
		s, ok := m[k]
		if !ok {
			s = &toolstate.ToolState{ServerID: server, Tool: tool}
			m[k] = s
		}
		return s
	}
	for i := range bs {
		get(bs[i].ServerID, bs[i].Tool).Baseline = &bs[i]
	}
	for i := range os {
		get(os[i].ServerID, os[i].Tool).Observed = &os[i]
	}
	for i := range qs {
		get(qs[i].ServerID, qs[i].Tool).Quarantine = &qs[i]
	}
	out := make([]toolstate.ToolState, 0, len(m))
	for _, s := range m {
		out = append(out, *s)
	}
	toolstate.SortStates(out)
	return out
}

// EncodeChanges returns changes as a JSON array ("[]" for none).
func EncodeChanges(changes []string) string {
	if len(changes) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(changes) // strings only: cannot fail
	return string(b)
}

// DecodeChanges is the inverse of EncodeChanges: nil for "[]".
func DecodeChanges(s string) ([]string, error) {
	var out []string
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("stored change list: %w", err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}
