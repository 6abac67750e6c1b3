package bench

import (
	"fmt"
	"os"
	"time"
)

// FsyncResult is the durability floor of the disk the gateways' audit
// ledgers are on, measured in the same run.
type FsyncResult struct {
	// Dir is the directory measured (where each gateway's temporary
	// XDG_STATE_HOME is made).
	Dir string
	// Dist is the latency of one 4 KiB write plus fdatasync(2), appended
	// to a fresh file (what a write-ahead log commit costs at least).
	Dist Dist
}

// MeasureFdatasync appends n 4 KiB blocks to a new file in dir, each
// followed by fdatasync(2) (fsync where fdatasync does not exist), and
// returns the distribution of one write plus sync, in wall-clock time.
// The file is removed. Errors are the file system's, wrapped.
func MeasureFdatasync(dir string, n int) (FsyncResult, error) {
	f, err := os.CreateTemp(dir, "gatehouse-bench-fsync-")
	if err != nil {
		return FsyncResult{}, fmt.Errorf("fdatasync floor: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	block := make([]byte, 4096)
	samples := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		block[0] = byte(i)
		t0 := time.Now()
		if _, err := f.Write(block); err != nil {
			return FsyncResult{}, fmt.Errorf("fdatasync floor: write: %w", err)
		}
		if err := fdatasync(f); err != nil {
			return FsyncResult{}, fmt.Errorf("fdatasync floor: %w", err)
		}
		samples = append(samples, time.Since(t0))
	}
	return FsyncResult{Dir: dir, Dist: Summarize(samples)}, nil
}
