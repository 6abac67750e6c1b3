package jcs

import (
	"crypto/sha256"
	"math"
	"runtime"
	"strings"
	"testing"
)

// The 4 MiB memory test, against the pre-commit behaviour (never split).
func TestZZOldBehaviourMemory(t *testing.T) {
	big := `{"data":"` + strings.Repeat("x", 4<<20) + `"}`
	in := []byte(`{"content":[{"type":"text","text":"ok"}],"structuredContent":` + big + `}`)
	for _, sm := range []int{math.MaxInt, splitMinBytes} {
		h := sha256.New()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if err := writeCanonical(h, in, sm); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		t.Logf("splitMin=%d allocated %d bytes", sm, after.TotalAlloc-before.TotalAlloc)
	}
}
