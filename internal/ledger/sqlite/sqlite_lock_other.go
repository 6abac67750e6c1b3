//go:build !unix

package sqlite

// writerLock is a no-op where flock(2) is missing: SQLite's own write lock
// still serializes writers, without the fairness (see sqlite_lock_unix.go).
type writerLock struct{}

func openWriterLock(string) (*writerLock, error) { return &writerLock{}, nil }
func (*writerLock) lock() error                  { return nil }
func (*writerLock) unlock() error                { return nil }
func (*writerLock) close() error                 { return nil }
