package inspect

import (
	"fmt"
	"strings"
	"testing"
)

// testSkeleton folds case, removes zero-width spaces and trims: a
// stand-in for scan.Skeleton.
func testSkeleton(s string) string {
	return strings.TrimSpace(strings.ToLower(strings.ReplaceAll(s, "\u200b", "")))
}

func TestNameCollisions(t *testing.T) {
	tests := []struct {
		names []string
		want  string
	}{
		{[]string{"read_file", "write_file"}, "[]"},
		{[]string{"read_file", "Read_File", "write", "read_file ", "re\u200bad_file"}, "[[0 1] [0 3] [0 4] [1 3] [1 4] [3 4]]"},
		{[]string{"a", "a", "A"}, "[[0 2] [1 2]]"},
		{nil, "[]"},
	}
	for _, tc := range tests {
		if got := fmt.Sprint(NameCollisions(tc.names, testSkeleton)); got != tc.want {
			t.Errorf("NameCollisions(%q) = %s; want %s", tc.names, got, tc.want)
		}
	}
}
