package scan

import (
	"testing"

	"github.com/gatehouse-mcp/gatehouse/bench"
)

// benchBenignText is the gateway benchmark's benign result text
// (bench.BenignText: prose, code, log lines, ids and digests cycled), so
// that this package's figures compare with make bench's scan phase.
func benchBenignText(n int) []byte { return bench.BenignText(n) }

// BenchmarkScanBenchBenignText4KiB scans bench.BenignText(4096) with
// every family on.
func BenchmarkScanBenchBenignText4KiB(b *testing.B) {
	benchScanText(b, Options{}, string(benchBenignText(4096)))
}
