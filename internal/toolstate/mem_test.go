package toolstate_test

import (
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/toolstate"
	"github.com/gatehouse-mcp/gatehouse/internal/toolstate/storetest"
)

// TestMem runs the storage suite on the in-memory store, the second Store
// of a test sharing the first one's database (Mem.Share).
func TestMem(t *testing.T) {
	storetest.Run(t, storetest.PerTest(
		func(t *testing.T) *toolstate.Mem { return toolstate.NewMem() },
		func(t *testing.T, m *toolstate.Mem) toolstate.Store { return m.Share() },
	))
}
