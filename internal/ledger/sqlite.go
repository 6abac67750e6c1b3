package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/tlog"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver (pure Go)
)

// SQLite schema. Table names carry a ledger_ prefix so that the file may be
// shared with other data.
const sqliteSchema = `
CREATE TABLE IF NOT EXISTS ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ledger_entries (seq INTEGER PRIMARY KEY, leaf BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS ledger_hashes (idx INTEGER PRIMARY KEY, hash BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS ledger_checkpoints (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	size INTEGER NOT NULL,
	note BLOB NOT NULL,
	created TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS ledger_checkpoints_size ON ledger_checkpoints (size, id);
`

// sqliteBusyTimeout is how long a connection waits for another process's
// write lock (milliseconds).
const sqliteBusyTimeout = 10000

// OpenSQLite opens the SQLite ledger file at path with the pure-Go driver
// modernc.org/sqlite.
//
// Read-write (readOnly false): the parent directory is created (0700) when
// missing and the file is created 0600; the database runs in WAL mode with
// synchronous=FULL, so a commit returns only after the WAL is fsynced.
// NORMAL would also survive SIGKILL of the process (the committed WAL frames
// are in the OS page cache, which the kernel writes out), but not an OS
// crash or power loss, which can drop the last transactions; because Append
// acknowledges only durable entries, FULL is used, and group commit pays its
// one fsync per batch rather than per entry. Writers in several processes
// are serialized by BEGIN IMMEDIATE (waiting up to 10 s for the lock), and
// take turns through a blocking flock(2) on path+"-lock" taken first: SQLite
// acquires its lock by polling, which lets a busy writer starve the others.
//
// Read-only: the file must exist and is opened with mode=ro; nothing is
// created or written.
func OpenSQLite(ctx context.Context, path string, readOnly bool) (Store, error) {
	if path == "" {
		return nil, errors.New("ledger: empty SQLite path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	s := &sqliteStore{path: abs, readOnly: readOnly}
	if readOnly {
		if _, err := os.Stat(abs); err != nil {
			return nil, fmt.Errorf("ledger: %w", err)
		}
		s.ro, err = sql.Open("sqlite", sqliteDSN(abs, "mode=ro", "_txlock=deferred"))
		if err != nil {
			return nil, fmt.Errorf("ledger: opening %s: %w", abs, err)
		}
		s.ro.SetMaxOpenConns(4)
		return s, nil
	}
	if err := createPrivate(abs); err != nil {
		return nil, err
	}
	if s.wlock, err = openWriterLock(abs + "-lock"); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	s.rw, err = sql.Open("sqlite", sqliteDSN(abs, "_journal_mode=WAL", "_synchronous=FULL", "_txlock=immediate"))
	if err != nil {
		s.wlock.close()
		return nil, fmt.Errorf("ledger: opening %s: %w", abs, err)
	}
	// One connection writes; the writer goroutine is the only user.
	s.rw.SetMaxOpenConns(1)
	s.ro, err = sql.Open("sqlite", sqliteDSN(abs, "_synchronous=FULL", "_query_only=1", "_txlock=deferred"))
	if err != nil {
		s.rw.Close()
		s.wlock.close()
		return nil, fmt.Errorf("ledger: opening %s: %w", abs, err)
	}
	s.ro.SetMaxOpenConns(4)
	return s, nil
}

// sqliteDSN builds a file: URI for path with the given query parameters.
func sqliteDSN(path string, params ...string) string {
	u := url.URL{Scheme: "file", Path: path, OmitHost: true}
	params = append(params, fmt.Sprintf("_busy_timeout=%d", sqliteBusyTimeout))
	return u.String() + "?" + strings.Join(params, "&")
}

// createPrivate creates path's directory (0700) and path itself (0600)
// when they do not exist yet. Existing ones keep their modes.
func createPrivate(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	return f.Close()
}

type sqliteStore struct {
	path     string
	readOnly bool
	rw       *sql.DB     // nil when read-only
	ro       *sql.DB     //
	wlock    *writerLock // path-lock, held around write transactions; nil when read-only

	// stmts holds the statements of write transactions, prepared once by
	// Init on rw (database/sql prepares them again by itself should the
	// connection be replaced): parsing the SQL of every statement again in
	// every batch cost as much as executing it. Set before the first
	// Update of the Ledger and read-only after; the mutex orders Init
	// against Close.
	stmtMu sync.Mutex
	stmts  map[string]*sql.Stmt
}

// sqliteWriteQueries are the statements prepared by Init.
func sqliteWriteQueries() []string {
	q := []string{sqliteSizeQuery, sqliteLeafQuery, sqliteLatestQuery, sqliteAddCheckpointQuery}
	for _, ins := range sqliteInsertQueries {
		q = append(q, ins[0], ins[1])
	}
	return q
}

// prepare prepares the write statements (rw must be idle: it has one
// connection).
func (s *sqliteStore) prepare(ctx context.Context) error {
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	if s.stmts != nil {
		return nil
	}
	m := make(map[string]*sql.Stmt)
	for _, q := range sqliteWriteQueries() {
		st, err := s.rw.PrepareContext(ctx, q)
		if err != nil {
			for _, st := range m {
				st.Close()
			}
			return err
		}
		m[q] = st
	}
	s.stmts = m
	return nil
}

func (s *sqliteStore) Init(ctx context.Context, proposed string) (string, error) {
	if s.readOnly || proposed == "" {
		var id string
		err := s.ro.QueryRowContext(ctx, `SELECT value FROM ledger_meta WHERE key = 'ledger_id'`).Scan(&id)
		if err != nil {
			if errors.Is(err, sql.ErrNoRows) || strings.Contains(err.Error(), "no such table") {
				return "", fmt.Errorf("%s is not a Gatehouse ledger (no ledger id)", s.path)
			}
			return "", fmt.Errorf("%s: %w", s.path, err)
		}
		return id, nil
	}
	if _, err := s.rw.ExecContext(ctx, sqliteSchema); err != nil {
		return "", fmt.Errorf("%s: creating schema: %w", s.path, err)
	}
	var id string
	err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
		t := tx.(*sqliteTx)
		err := t.tx.QueryRowContext(ctx, `SELECT value FROM ledger_meta WHERE key = 'ledger_id'`).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			id = proposed
			_, err = t.tx.ExecContext(ctx, `INSERT INTO ledger_meta (key, value) VALUES ('ledger_id', ?), ('schema', '1')`, proposed)
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("%s: %w", s.path, err)
	}
	if err := s.prepare(ctx); err != nil {
		return "", fmt.Errorf("%s: preparing statements: %w", s.path, err)
	}
	return id, nil
}

func (s *sqliteStore) Update(ctx context.Context, f func(context.Context, Tx) error) error {
	if s.readOnly {
		return fmt.Errorf("%s: store is read-only", s.path)
	}
	if err := s.wlock.lock(); err != nil {
		return fmt.Errorf("locking %s-lock: %w", s.path, err)
	}
	defer s.wlock.unlock()
	tx, err := s.rw.BeginTx(ctx, nil) // BEGIN IMMEDIATE (_txlock)
	if err != nil {
		return err
	}
	s.stmtMu.Lock()
	stmts := s.stmts
	s.stmtMu.Unlock()
	if err := f(ctx, &sqliteTx{tx: tx, stmts: stmts}); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (s *sqliteStore) Size(ctx context.Context) (int64, error) {
	return sqliteSize(ctx, s.ro)
}

type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func sqliteSize(ctx context.Context, q queryer) (int64, error) {
	var n int64
	err := q.QueryRowContext(ctx, `SELECT coalesce(max(seq) + 1, 0) FROM ledger_entries`).Scan(&n)
	return n, err
}

func (s *sqliteStore) Leaves(ctx context.Context, from, to int64, f func(int64, []byte) error) error {
	tx, err := s.ro.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT seq, leaf FROM ledger_entries WHERE seq >= ? AND seq < ? ORDER BY seq`, from, to)
	if err != nil {
		return err
	}
	defer rows.Close()
	var leaf sql.RawBytes
	var seq int64
	for rows.Next() {
		if err := rows.Scan(&seq, &leaf); err != nil {
			return err
		}
		if err := f(seq, leaf); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (s *sqliteStore) ReadHashes(ctx context.Context, indexes []int64) ([]tlog.Hash, error) {
	return sqliteReadHashes(ctx, s.ro, indexes)
}

// sqliteReadHashes reads hashes run by run: a run of consecutive indexes is
// one range query.
func sqliteReadHashes(ctx context.Context, q queryer, indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i := 0; i < len(indexes); {
		j := i + 1
		for j < len(indexes) && indexes[j] == indexes[j-1]+1 {
			j++
		}
		lo, hi := indexes[i], indexes[j-1]
		rows, err := q.QueryContext(ctx, `SELECT idx, hash FROM ledger_hashes WHERE idx >= ? AND idx <= ? ORDER BY idx`, lo, hi)
		if err != nil {
			return nil, err
		}
		k := i
		var idx int64
		var h sql.RawBytes
		for rows.Next() {
			if err := rows.Scan(&idx, &h); err != nil {
				rows.Close()
				return nil, err
			}
			if k >= j || idx != indexes[k] {
				break
			}
			if len(h) != tlog.HashSize {
				rows.Close()
				return nil, fmt.Errorf("%w: stored hash %d has %d bytes", ErrCorrupt, idx, len(h))
			}
			copy(out[k][:], h)
			k++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		if k != j {
			return nil, fmt.Errorf("%w: stored hash %d is missing", ErrCorrupt, indexes[k])
		}
		i = j
	}
	return out, nil
}

func (s *sqliteStore) Checkpoints(ctx context.Context) ([]StoredCheckpoint, error) {
	return sqliteCheckpoints(ctx, s.ro, `SELECT id, size, note, created FROM ledger_checkpoints ORDER BY size, id`)
}

func sqliteCheckpoints(ctx context.Context, q queryer, query string) ([]StoredCheckpoint, error) {
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []StoredCheckpoint
	for rows.Next() {
		var c StoredCheckpoint
		var created string
		if err := rows.Scan(&c.ID, &c.Size, &c.Note, &created); err != nil {
			return nil, err
		}
		c.Created, _ = time.Parse(time.RFC3339Nano, created)
		out = append(out, c)
	}
	return out, rows.Err()
}

func (s *sqliteStore) Close() error {
	var err error
	if s.rw != nil {
		s.stmtMu.Lock()
		for _, st := range s.stmts {
			st.Close()
		}
		s.stmts = nil
		s.stmtMu.Unlock()
		err = errors.Join(s.rw.Close(), s.wlock.close())
	}
	return errors.Join(err, s.ro.Close())
}

// sqliteTx is the Tx of an sqliteStore.
type sqliteTx struct {
	tx    *sql.Tx
	stmts map[string]*sql.Stmt // prepared statements; nil before Init
}

// exec runs query in the transaction, as its prepared statement when there
// is one.
func (t *sqliteTx) exec(ctx context.Context, query string, args ...any) error {
	var err error
	if st, ok := t.stmts[query]; ok {
		_, err = t.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	} else {
		_, err = t.tx.ExecContext(ctx, query, args...)
	}
	return err
}

// queryRow is exec for a query of one row.
func (t *sqliteTx) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if st, ok := t.stmts[query]; ok {
		return t.tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, query, args...)
}

const (
	sqliteSizeQuery   = `SELECT coalesce(max(seq) + 1, 0) FROM ledger_entries`
	sqliteLeafQuery   = `SELECT leaf FROM ledger_entries WHERE seq = ?`
	sqliteLatestQuery = `SELECT id, size, note, created FROM ledger_checkpoints ORDER BY size DESC, id DESC LIMIT 1`

	sqliteAddCheckpointQuery = `INSERT INTO ledger_checkpoints (size, note, created) VALUES (?, ?, ?)`
)

func (t *sqliteTx) Size(ctx context.Context) (int64, error) {
	var n int64
	err := t.queryRow(ctx, sqliteSizeQuery).Scan(&n)
	return n, err
}

func (t *sqliteTx) Leaf(ctx context.Context, seq int64) ([]byte, error) {
	var leaf []byte
	err := t.queryRow(ctx, sqliteLeafQuery, seq).Scan(&leaf)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: entry %d is missing", ErrCorrupt, seq)
	}
	return leaf, err
}

func (t *sqliteTx) ReadHashes(ctx context.Context, indexes []int64) ([]tlog.Hash, error) {
	return sqliteReadHashes(ctx, t.tx, indexes)
}

// sqliteMaxRows bounds the rows of one multi-row INSERT (2 parameters
// each, far below SQLite's 32766-parameter limit). A batch of n rows is
// inserted in chunks of power-of-two sizes (the binary digits of n, at most
// sqliteMaxRows each), so that a handful of cached statements serve every
// batch size.
const sqliteMaxRows = 256

// sqliteInsertQueries[k] are the INSERT statements of 1<<k rows into
// ledger_entries and ledger_hashes.
var sqliteInsertQueries = func() (q [9][2]string) {
	for k := range q {
		for j, prefix := range []string{`INSERT INTO ledger_entries (seq, leaf) VALUES `, `INSERT INTO ledger_hashes (idx, hash) VALUES `} {
			var b strings.Builder
			b.WriteString(prefix)
			for i := range 1 << k {
				if i > 0 {
					b.WriteString(",")
				}
				b.WriteString("(?,?)")
			}
			q[k][j] = b.String()
		}
	}
	return q
}()

func (t *sqliteTx) Append(ctx context.Context, start int64, leaves [][]byte, hashStart int64, hashes []tlog.Hash) error {
	args := make([]any, 0, 2*sqliteMaxRows)
	insert := func(table int, n int, arg func(i int) (int64, []byte)) error {
		for lo := 0; lo < n; {
			k := 8
			for 1<<k > n-lo {
				k--
			}
			hi := lo + 1<<k
			args = args[:0]
			for i := lo; i < hi; i++ {
				key, v := arg(i)
				args = append(args, key, v)
			}
			if err := t.exec(ctx, sqliteInsertQueries[k][table], args...); err != nil {
				return err
			}
			lo = hi
		}
		return nil
	}
	if err := insert(0, len(leaves), func(i int) (int64, []byte) {
		return start + int64(i), leaves[i]
	}); err != nil {
		return err
	}
	return insert(1, len(hashes), func(i int) (int64, []byte) {
		return hashStart + int64(i), hashes[i][:]
	})
}

func (t *sqliteTx) LatestCheckpoint(ctx context.Context) (StoredCheckpoint, bool, error) {
	var c StoredCheckpoint
	var created string
	err := t.queryRow(ctx, sqliteLatestQuery).Scan(&c.ID, &c.Size, &c.Note, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return StoredCheckpoint{}, false, nil
	}
	if err != nil {
		return StoredCheckpoint{}, false, err
	}
	c.Created, _ = time.Parse(time.RFC3339Nano, created)
	return c, true, nil
}

func (t *sqliteTx) AddCheckpoint(ctx context.Context, c StoredCheckpoint) error {
	return t.exec(ctx, sqliteAddCheckpointQuery, c.Size, c.Note, c.Created.UTC().Format(time.RFC3339Nano))
}
