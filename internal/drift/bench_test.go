package drift

import "testing"

// BenchmarkCompareDraft is the cost of classifying the draft's example.
func BenchmarkCompareDraft(b *testing.B) {
	base := load(b, "publish_artifact_baseline.json")
	cur := load(b, "publish_artifact_current.json")
	for b.Loop() {
		Compare(base, cur, Options{})
	}
}
