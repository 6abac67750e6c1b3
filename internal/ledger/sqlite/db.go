package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
)

// DB is a SQLite database file opened read-write as [Open] opens the
// ledger's (WAL, synchronous=FULL, the file 0600 and its directory 0700,
// writers taking turns through the flock on path+"-lock"), for other data
// kept in the ledger's file: the tool-state store
// (internal/toolstate/sqlite) writes through it, so that its writers and
// the ledger's, in any process, neither starve nor are starved.
type DB struct {
	// Path is the absolute path of the file.
	Path string
	// RO is the pool of read connections (query_only, deferred
	// transactions).
	RO *sql.DB

	rw    *sql.DB // one connection, BEGIN IMMEDIATE; used by Write only
	mu    sync.Mutex
	wlock *writerLock
}

// OpenDB opens the SQLite file at path read-write, creating it and its
// directory as Open does. The error says what failed (the path, the
// directory, the lock file, the driver).
func OpenDB(path string) (*DB, error) {
	if path == "" {
		return nil, errors.New("empty SQLite path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	rw, ro, wlock, err := openRW(abs)
	if err != nil {
		return nil, err
	}
	return &DB{Path: abs, RO: ro, rw: rw, wlock: wlock}, nil
}

// openRW creates abs (0600) and its directory (0700) when missing and
// opens its writers' lock, its write connection and its read pool.
func openRW(abs string) (rw, ro *sql.DB, wlock *writerLock, err error) {
	if err := createPrivate(abs); err != nil {
		return nil, nil, nil, err
	}
	if wlock, err = openWriterLock(abs + writerLockSuffix); err != nil {
		return nil, nil, nil, err // an *fs.PathError, naming the file
	}
	rw, err = sql.Open("sqlite", sqliteDSN(abs, "_journal_mode=WAL", "_synchronous=FULL", "_txlock=immediate"))
	if err != nil {
		wlock.close()
		return nil, nil, nil, fmt.Errorf("opening %s: %w", abs, err)
	}
	// One connection writes.
	rw.SetMaxOpenConns(1)
	ro, err = sql.Open("sqlite", sqliteDSN(abs, "_synchronous=FULL", "_query_only=1", "_txlock=deferred"))
	if err != nil {
		rw.Close()
		wlock.close()
		return nil, nil, nil, fmt.Errorf("opening %s: %w", abs, err)
	}
	ro.SetMaxOpenConns(4)
	return rw, ro, wlock, nil
}

// Write runs f in one write transaction (BEGIN IMMEDIATE) holding the
// writers' lock, committing when f returns nil and rolling back otherwise.
// Writes of one DB are serialized.
func (d *DB) Write(ctx context.Context, f func(context.Context, *sql.Tx) error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.wlock.lock(); err != nil {
		return fmt.Errorf("locking %s-lock: %w", d.Path, err)
	}
	defer d.wlock.unlock()
	tx, err := d.rw.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("beginning a write transaction on %s: %w", d.Path, err)
	}
	if err := f(ctx, tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("committing to %s: %w", d.Path, err)
	}
	return nil
}

// Close closes the connections and the lock file, after the write in
// progress, if any.
func (d *DB) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return errors.Join(d.rw.Close(), d.RO.Close(), d.wlock.close())
}
