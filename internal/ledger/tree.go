package ledger

import (
	"context"
	"fmt"
	"math/bits"

	"golang.org/x/mod/sumdb/tlog"
)

// frontier returns the storage indexes of the roots of the maximal complete
// subtrees of a tree of size n, one per set bit of n (at most 63). They are
// exactly the hashes tlog.TreeHash(n) reads, and the only earlier hashes
// tlog.StoredHashes(n, ...) reads: keeping them is enough to extend the
// tree and to compute its root.
func frontier(n int64) []int64 {
	var idx []int64
	for level := 62; level >= 0; level-- {
		if n>>level&1 == 1 {
			idx = append(idx, tlog.StoredHashIndex(level, n>>level-1))
		}
	}
	return idx
}

// pruneToFrontier returns a map holding only the hashes of m that are in
// frontier(n).
func pruneToFrontier(m map[int64]tlog.Hash, n int64) map[int64]tlog.Hash {
	out := make(map[int64]tlog.Hash, bits.OnesCount64(uint64(n)))
	for _, x := range frontier(n) {
		if h, ok := m[x]; ok {
			out[x] = h
		}
	}
	return out
}

// mapHashReader serves hashes from m and falls back to tx for the others.
type mapHashReader struct {
	ctx context.Context
	m   map[int64]tlog.Hash
	tx  Tx
}

func (r *mapHashReader) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	var missing []int64
	for i, x := range indexes {
		h, ok := r.m[x]
		if !ok {
			missing = append(missing, x)
			continue
		}
		out[i] = h
	}
	if len(missing) == 0 {
		return out, nil
	}
	if r.tx == nil {
		return nil, fmt.Errorf("ledger: hash %d not available", missing[0])
	}
	got, err := r.tx.ReadHashes(r.ctx, missing)
	if err != nil {
		return nil, err
	}
	j := 0
	for i, x := range indexes {
		if _, ok := r.m[x]; !ok {
			out[i] = got[j]
			j++
		}
	}
	return out, nil
}

// storeHashReader adapts s.ReadHashes to tlog.HashReader.
func storeHashReader(ctx context.Context, s Store) tlog.HashReader {
	return tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		return s.ReadHashes(ctx, idx)
	})
}
