//go:build unix

package sqlite

import (
	"errors"
	"os"
	"syscall"
)

// writerLock is an exclusive flock(2) on a file beside the database, taken
// around every write transaction. SQLite's own write lock is acquired by
// polling (its busy handler sleeps 1 ms, 2 ms, ... up to 100 ms between
// attempts), so a process that writes continuously can starve another for
// the whole busy timeout. A writer blocked in flock is woken as soon as the
// lock is released, which gives the processes sharing one file turns.
type writerLock struct{ f *os.File }

func openWriterLock(path string) (*writerLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	return &writerLock{f: f}, nil
}

func (l *writerLock) lock() error {
	for {
		err := syscall.Flock(int(l.f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

func (l *writerLock) unlock() error { return syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN) }

func (l *writerLock) close() error { return l.f.Close() }
