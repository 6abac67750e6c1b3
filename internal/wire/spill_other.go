//go:build !linux

package wire

// newMapSpill has no mapping to offer on this platform: long lines are
// spilled to the Go heap.
func newMapSpill(limit int) spill { return nil }
