package scan

import "testing"

func BenchmarkSecretLikeKey(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		SecretLikeKey("AWS_SECRET_ACCESS_KEY")
		SecretLikeKey("structuredContent")
	}
}
