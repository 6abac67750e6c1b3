package inspect

import "slices"

// NameCollisions returns the pairs [i, j] (i < j, sorted) of names, the
// tool names of one tools/list listing, that are not equal but have the
// same skeleton: names a reader cannot tell apart, so that a policy naming
// one could be bypassed by the other (issue 12). skeleton is the folding,
// scan.Skeleton in the gateway (NFKC, invisible characters removed,
// confusables folded, case folded, trimmed); it is a parameter so this
// package does not depend on its branch. Equal names are a duplicate, not
// a lookalike, and are not returned.
func NameCollisions(names []string, skeleton func(string) string) [][2]int {
	groups := make(map[string][]int, len(names))
	for i, n := range names {
		k := skeleton(n)
		groups[k] = append(groups[k], i)
	}
	var pairs [][2]int
	for _, g := range groups {
		for a := 0; a < len(g); a++ {
			for b := a + 1; b < len(g); b++ {
				if names[g[a]] != names[g[b]] {
					pairs = append(pairs, [2]int{g[a], g[b]})
				}
			}
		}
	}
	slices.SortFunc(pairs, func(x, y [2]int) int {
		if x[0] != y[0] {
			return x[0] - y[0]
		}
		return x[1] - y[1]
	})
	return pairs
}
