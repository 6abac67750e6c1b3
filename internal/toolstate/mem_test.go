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

// FuzzMem: any names, definition and text are kept exactly or refused
// with ErrInvalid (storetest.RoundTrip).
func FuzzMem(f *testing.F) {
	f.Add("srv", "read_file", []byte(`{"name":"read_file"}`), "why")
	f.Add(`s "q"`, "工具", []byte{0, 0xff}, "\u2028")
	f.Add("s", "t\x00", []byte(nil), "\xff")
	m := toolstate.NewMem()
	other := m.Share()
	f.Fuzz(func(t *testing.T, server, tool string, def []byte, text string) {
		storetest.RoundTrip(t, m, other, server, tool, def, text)
	})
}
