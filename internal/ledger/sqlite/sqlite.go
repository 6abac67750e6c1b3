// Package sqlite is the audit ledger's SQLite backend: a ledger.Store in
// one database file, through the pure-Go driver modernc.org/sqlite (WAL,
// synchronous=FULL, writers serialized by BEGIN IMMEDIATE and a flock),
// storing schema 2 (one row of leaves and one of tree hashes per committed
// batch) and migrating schema 1 on the first read-write open
// (docs/ledger.md, "Storage", "SQLite"). It passes internal/ledger/storetest.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger/internal/blocks"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver (pure Go)
)

// SQLite schema (version 2, see store.go). Table names carry a ledger_
// prefix so that the file may be shared with other data.
const sqliteSchema = `
CREATE TABLE IF NOT EXISTS ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ledger_blocks (start INTEGER PRIMARY KEY, count INTEGER NOT NULL, leaves BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS ledger_hash_blocks (start INTEGER PRIMARY KEY, hashes BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS ledger_checkpoints (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	size INTEGER NOT NULL,
	note BLOB NOT NULL,
	created TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS ledger_checkpoints_size ON ledger_checkpoints (size, id);
`

// sqliteTombstones are views with the names of the schema-1 tables that
// fail whenever they are used, naming the problem: a gatehouse from before
// schema 2 opening the ledger finds them instead of creating empty tables
// (CREATE TABLE IF NOT EXISTS sees the name taken) and appending a second
// chain beside the blocks; its reads and writes fail instead.
const sqliteTombstones = `
CREATE VIEW IF NOT EXISTS ledger_entries (seq, leaf) AS SELECT * FROM "` + blocks.TombstoneMessage + `";
CREATE VIEW IF NOT EXISTS ledger_hashes (idx, hash) AS SELECT * FROM "` + blocks.TombstoneMessage + `";
`

// sqliteBusyTimeout is how long a connection waits for another process's
// write lock (milliseconds).
const sqliteBusyTimeout = 10000

// Open opens the SQLite ledger file at path with the pure-Go driver
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
func Open(ctx context.Context, path string, readOnly bool) (ledger.Store, error) {
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
	if s.rw, s.ro, s.wlock, err = openRW(abs); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	return s, nil
}

// Files returns the files of the SQLite ledger at path: path itself
// and the files kept beside it, the write-ahead log, its shared-memory
// index, a rollback journal, and the writers' lock (Open). Give it a
// path with its symbolic links resolved: SQLite follows them and keeps its
// files beside the target.
func Files(path string) []string {
	return []string{path, path + "-wal", path + "-shm", path + "-journal", path + writerLockSuffix}
}

// writerLockSuffix names the writers' lock file beside the database.
const writerLockSuffix = "-lock"

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
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

type sqliteStore struct {
	path     string
	readOnly bool
	rw       *sql.DB     // nil when read-only
	ro       *sql.DB     //
	wlock    *writerLock // path-lock, held around write transactions; nil when read-only

	// legacy is set by Init when the file is in the schema-1 layout (one
	// row per entry and per hash) and the store may not migrate it (opened
	// read-only, or Init without a proposed id): the reads then use that
	// layout.
	legacy atomic.Bool

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
	return []string{sqliteEndsQuery, sqliteBlockAtQuery, sqliteHashAtQuery, sqliteHashRangeQuery,
		sqliteAppendBlockQuery, sqliteAppendHashesQuery, sqliteLatestQuery, sqliteAddCheckpointQuery}
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

// Init of a read-write store with a proposed id creates the schema, records
// the id and the schema version, and migrates a schema-1 file to blocks,
// all in one write transaction; otherwise it only reads the id, in either
// layout.
func (s *sqliteStore) Init(ctx context.Context, proposed string) (string, error) {
	if s.readOnly || proposed == "" {
		return s.initRead(ctx)
	}
	var id string
	err := s.Update(ctx, func(ctx context.Context, tx ledger.Tx) error {
		var err error
		id, err = sqliteInitTx(ctx, tx.(*sqliteTx).tx, proposed, s.path)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("%s: %w", s.path, err)
	}
	s.legacy.Store(false)
	if err := s.prepare(ctx); err != nil {
		return "", fmt.Errorf("%s: preparing statements: %w", s.path, err)
	}
	return id, nil
}

// sqliteTables returns the type ("table", "view") of each of the named
// schema objects that exists.
func sqliteTables(ctx context.Context, q queryer) (map[string]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT name, type FROM sqlite_master WHERE name IN ('ledger_meta', 'ledger_blocks', 'ledger_entries')`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			return nil, err
		}
		out[name] = typ
	}
	return out, rows.Err()
}

// initRead is Init without writing: the ledger id, and the layout.
func (s *sqliteStore) initRead(ctx context.Context) (string, error) {
	tables, err := sqliteTables(ctx, s.ro)
	if err != nil {
		return "", fmt.Errorf("%s: %w", s.path, err)
	}
	if tables["ledger_meta"] != "table" {
		return "", fmt.Errorf("%s is not a Gatehouse ledger (no ledger id)", s.path)
	}
	legacy := tables["ledger_entries"] == "table"
	if legacy && tables["ledger_blocks"] == "table" {
		return "", fmt.Errorf("%s holds the ledger in both layouts (ledger_entries and ledger_blocks tables): a gatehouse from before schema 2 wrote to it after it was migrated; see docs/ledger.md", s.path)
	}
	var id string
	err = s.ro.QueryRowContext(ctx, `SELECT value FROM ledger_meta WHERE key = 'ledger_id'`).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("%s is not a Gatehouse ledger (no ledger id)", s.path)
	} else if err != nil {
		return "", fmt.Errorf("%s: %w", s.path, err)
	}
	if err := blocks.CheckSchemaVersion(sqliteSchemaVersion(ctx, s.ro)); err != nil {
		return "", fmt.Errorf("%s: %w", s.path, err)
	}
	s.legacy.Store(legacy)
	return id, nil
}

// sqliteSchemaVersion returns the "schema" value of ledger_meta ("" when
// there is none).
func sqliteSchemaVersion(ctx context.Context, q queryer) (string, error) {
	var v string
	err := q.QueryRowContext(ctx, `SELECT value FROM ledger_meta WHERE key = 'schema'`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return v, err
}

// sqliteInitTx is Init's write transaction.
func sqliteInitTx(ctx context.Context, tx *sql.Tx, proposed, path string) (string, error) {
	tables, err := sqliteTables(ctx, tx)
	if err != nil {
		return "", err
	}
	if _, err := tx.ExecContext(ctx, sqliteSchema); err != nil {
		return "", fmt.Errorf("creating schema: %w", err)
	}
	var id string
	err = tx.QueryRowContext(ctx, `SELECT value FROM ledger_meta WHERE key = 'ledger_id'`).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		id = proposed
		_, err = tx.ExecContext(ctx, `INSERT INTO ledger_meta (key, value) VALUES ('ledger_id', ?), ('schema', ?)`, proposed, strconv.Itoa(blocks.SchemaVersion))
	}
	if err != nil {
		return "", err
	}
	if err := blocks.CheckSchemaVersion(sqliteSchemaVersion(ctx, tx)); err != nil {
		return "", err
	}
	if tables["ledger_entries"] == "table" {
		if err := sqliteMigrate(ctx, tx); err != nil {
			return "", fmt.Errorf("migrating the ledger from schema 1 (a row per entry) to schema 2 (blocks): %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, sqliteTombstones); err != nil {
		return "", fmt.Errorf("creating schema: %w", err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO ledger_meta (key, value) VALUES ('schema', ?1) ON CONFLICT (key) DO UPDATE SET value = ?1 WHERE value <> ?1`, strconv.Itoa(blocks.SchemaVersion))
	return id, err
}

// sqliteMigrate copies the schema-1 tables into blocks (runs of
// consecutive seqs or indexes, up to migrateBlockEntries entries or
// migrateBlockHashes hashes each) and drops them, inside Init's
// transaction. The bytes are copied unchanged, so the ledger verifies after
// as before; a leaf with a line feed or a hash that is not 32 bytes cannot
// be stored as a block, and fails the migration (and Init).
func sqliteMigrate(ctx context.Context, tx *sql.Tx) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM (SELECT 1 FROM ledger_blocks LIMIT 1)) + (SELECT count(*) FROM (SELECT 1 FROM ledger_hash_blocks LIMIT 1))`).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return errors.New("both ledger_entries and ledger_blocks hold entries: a gatehouse from before schema 2 wrote to the ledger after it was migrated; see docs/ledger.md")
	}
	page := func(query string) func(after int64) ([]blocks.LegacyRow, error) {
		return func(after int64) ([]blocks.LegacyRow, error) {
			rows, err := tx.QueryContext(ctx, query, after)
			if err != nil {
				return nil, err
			}
			defer rows.Close()
			var out []blocks.LegacyRow
			for rows.Next() {
				var r blocks.LegacyRow
				if err := rows.Scan(&r.Key, &r.Val); err != nil {
					return nil, err
				}
				out = append(out, r)
			}
			return out, rows.Err()
		}
	}
	if _, err := blocks.Regroup(page(`SELECT seq, leaf FROM ledger_entries WHERE seq > ? ORDER BY seq LIMIT 4096`), blocks.MigrateBlockEntries, func(start int64, leaves [][]byte) error {
		b, err := blocks.LegacyLeafBlock(start, leaves)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO ledger_blocks (start, count, leaves) VALUES (?, ?, ?)`, start, len(leaves), b)
		return err
	}); err != nil {
		return err
	}
	if _, err := blocks.Regroup(page(`SELECT idx, hash FROM ledger_hashes WHERE idx > ? ORDER BY idx LIMIT 16384`), blocks.MigrateBlockHashes, func(start int64, hashes [][]byte) error {
		b, err := blocks.JoinHashes(start, hashes)
		if err != nil {
			return fmt.Errorf("%w; the ledger was altered: check it with `gatehouse ledger verify` (which reads it as it is) and move it aside to start a new ledger", err)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO ledger_hash_blocks (start, hashes) VALUES (?, ?)`, start, b)
		return err
	}); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DROP TABLE ledger_entries; DROP TABLE ledger_hashes;`)
	return err
}

func (s *sqliteStore) Update(ctx context.Context, f func(context.Context, ledger.Tx) error) error {
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
	q := sqliteSizeQuery
	if s.legacy.Load() {
		q = sqliteLegacySizeQuery
	}
	var n int64
	err := s.ro.QueryRowContext(ctx, q).Scan(&n)
	return n, err
}

// queryer is what *sql.DB, *sql.Tx and *sqliteTx have in common.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (s *sqliteStore) Leaves(ctx context.Context, from, to int64, f func(int64, []byte) error) error {
	tx, err := s.ro.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if s.legacy.Load() {
		return sqliteLegacyLeaves(ctx, tx, from, to, f)
	}
	rows, err := tx.QueryContext(ctx, sqliteLeafRangeQuery, from, to)
	if err != nil {
		return err
	}
	defer rows.Close()
	st := blocks.LeafStream{From: from, To: to, F: f}
	for rows.Next() {
		var b blocks.LeafBlock
		if err := rows.Scan(&b.Start, &b.Count, &b.Leaves); err != nil {
			return err
		}
		if err := st.Add(b); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return st.End()
}

func (s *sqliteStore) ReadHashes(ctx context.Context, indexes []int64) ([]tlog.Hash, error) {
	if s.legacy.Load() {
		return sqliteLegacyReadHashes(ctx, s.ro, indexes)
	}
	return sqliteReadHashes(ctx, s.ro, indexes)
}

// sqliteReadHashes reads the hashes of each run of at least hashRunMin
// consecutive indexes (verification reads whole chunks) as the blocks
// holding the run, in one range query, and other indexes one by one, each
// the 32 bytes of its block.
func sqliteReadHashes(ctx context.Context, q queryer, indexes []int64) ([]tlog.Hash, error) {
	l := blocks.NewHashLookup(indexes)
	for _, r := range l.Runs() {
		i, j := r[0], r[1]
		if j-i < blocks.HashRunMin {
			for k := i; k < j; k++ {
				var start int64
				var h []byte
				err := q.QueryRowContext(ctx, sqliteHashAtQuery, l.Sorted[k]).Scan(&start, &h)
				if errors.Is(err, sql.ErrNoRows) {
					continue
				} else if err != nil {
					return nil, err
				}
				l.Set(k, h)
			}
			continue
		}
		rows, err := q.QueryContext(ctx, sqliteHashRangeQuery, l.Sorted[i], l.Sorted[j-1])
		if err != nil {
			return nil, err
		}
		var hbs []blocks.HashBlock
		for rows.Next() {
			var b blocks.HashBlock
			if err := rows.Scan(&b.Start, &b.Hashes); err != nil {
				rows.Close()
				return nil, err
			}
			hbs = append(hbs, b)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		l.Fill(i, j, hbs)
	}
	return l.Result(indexes)
}

func (s *sqliteStore) Checkpoints(ctx context.Context) ([]ledger.StoredCheckpoint, error) {
	return sqliteCheckpoints(ctx, s.ro, `SELECT id, size, note, created FROM ledger_checkpoints ORDER BY size, id`)
}

func sqliteCheckpoints(ctx context.Context, q queryer, query string) ([]ledger.StoredCheckpoint, error) {
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ledger.StoredCheckpoint
	for rows.Next() {
		var c ledger.StoredCheckpoint
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

	// ends caches where the blocks and the hash blocks end: read once per
	// transaction (by Size, which the writer calls first, or by the first
	// Append) and advanced by Append. The transaction is exclusive, so
	// nobody else moves them. Append checks against it, so that a plain
	// INSERT serves: an INSERT ... SELECT with a condition on the same
	// table first copies the row, blob and all, into a temporary table.
	ends struct {
		valid           bool
		entries, hashes int64
	}
}

// ExecContext runs query in the transaction, as its prepared statement
// when there is one.
func (t *sqliteTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st, ok := t.stmts[query]; ok {
		return t.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, query, args...)
}

// QueryContext is ExecContext for a query.
func (t *sqliteTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st, ok := t.stmts[query]; ok {
		return t.tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, query, args...)
}

// QueryRowContext is ExecContext for a query of one row.
func (t *sqliteTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st, ok := t.stmts[query]; ok {
		return t.tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, query, args...)
}

const (
	// sqliteSizeQuery is the end of the last block: one seek.
	sqliteSizeQuery = `SELECT coalesce((SELECT start + count FROM ledger_blocks ORDER BY start DESC LIMIT 1), 0)`
	// sqliteEndsQuery is the end of the last block and of the last hash
	// block: two seeks.
	sqliteEndsQuery = `SELECT coalesce((SELECT start + count FROM ledger_blocks ORDER BY start DESC LIMIT 1), 0),
		coalesce((SELECT start + length(hashes) / 32 FROM ledger_hash_blocks ORDER BY start DESC LIMIT 1), 0)`
	// sqliteBlockAtQuery is the block holding entry ?1.
	sqliteBlockAtQuery = `SELECT start, count, leaves FROM ledger_blocks WHERE start <= ?1 ORDER BY start DESC LIMIT 1`
	// sqliteLeafRangeQuery is the blocks holding entries ?1 <= seq < ?2.
	sqliteLeafRangeQuery = `SELECT start, count, leaves FROM ledger_blocks
		WHERE start >= coalesce((SELECT start FROM ledger_blocks WHERE start <= ?1 ORDER BY start DESC LIMIT 1), ?1) AND start < ?2
		ORDER BY start`
	// sqliteHashAtQuery is the 32 bytes of hash ?1 (fewer if its block
	// is short).
	sqliteHashAtQuery = `SELECT start, substr(hashes, (?1 - start) * 32 + 1, 32) FROM ledger_hash_blocks WHERE start <= ?1 ORDER BY start DESC LIMIT 1`
	// sqliteHashRangeQuery is the hash blocks holding ?1 <= idx <= ?2.
	sqliteHashRangeQuery = `SELECT start, hashes FROM ledger_hash_blocks
		WHERE start >= coalesce((SELECT start FROM ledger_hash_blocks WHERE start <= ?1 ORDER BY start DESC LIMIT 1), ?1) AND start <= ?2
		ORDER BY start`
	sqliteAppendBlockQuery  = `INSERT INTO ledger_blocks (start, count, leaves) VALUES (?, ?, ?)`
	sqliteAppendHashesQuery = `INSERT INTO ledger_hash_blocks (start, hashes) VALUES (?, ?)`

	sqliteLatestQuery        = `SELECT id, size, note, created FROM ledger_checkpoints ORDER BY size DESC, id DESC LIMIT 1`
	sqliteAddCheckpointQuery = `INSERT INTO ledger_checkpoints (size, note, created) VALUES (?, ?, ?)`
)

// loadEnds fills t.ends unless it is filled.
func (t *sqliteTx) loadEnds(ctx context.Context) error {
	if t.ends.valid {
		return nil
	}
	err := t.QueryRowContext(ctx, sqliteEndsQuery).Scan(&t.ends.entries, &t.ends.hashes)
	t.ends.valid = err == nil
	return err
}

func (t *sqliteTx) Size(ctx context.Context) (int64, error) {
	if err := t.loadEnds(ctx); err != nil {
		return 0, err
	}
	return t.ends.entries, nil
}

func (t *sqliteTx) Leaf(ctx context.Context, seq int64) ([]byte, error) {
	var b blocks.LeafBlock
	err := t.QueryRowContext(ctx, sqliteBlockAtQuery, seq).Scan(&b.Start, &b.Count, &b.Leaves)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	var leaf []byte
	blocks.BlockLeaves(b.Start, b.Count, b.Leaves, seq, seq+1, func(_ int64, l []byte) error {
		leaf = l
		return nil
	})
	if leaf == nil {
		return nil, fmt.Errorf("%w: entry %d is missing", ledger.ErrCorrupt, seq)
	}
	return leaf, nil
}

func (t *sqliteTx) ReadHashes(ctx context.Context, indexes []int64) ([]tlog.Hash, error) {
	return sqliteReadHashes(ctx, t, indexes)
}

// Append writes one block of leaves and one of hashes, each a single row,
// after checking that they start where the stored ones end.
func (t *sqliteTx) Append(ctx context.Context, start int64, leaves [][]byte, hashStart int64, hashes []tlog.Hash) error {
	if err := t.loadEnds(ctx); err != nil {
		return err
	}
	if len(leaves) > 0 && start != t.ends.entries {
		return fmt.Errorf("appending entries at %d, but the stored ones end at %d", start, t.ends.entries)
	}
	if len(hashes) > 0 && hashStart != t.ends.hashes {
		return fmt.Errorf("appending hashes at %d, but the stored ones end at %d", hashStart, t.ends.hashes)
	}
	if len(leaves) > 0 {
		b, err := blocks.EncodeLeafBlock(leaves)
		if err != nil {
			return fmt.Errorf("%w: entries from %d: %v", ledger.ErrInvalid, start, err)
		}
		if _, err := t.ExecContext(ctx, sqliteAppendBlockQuery, start, len(leaves), b); err != nil {
			return err
		}
	}
	if len(hashes) > 0 {
		if _, err := t.ExecContext(ctx, sqliteAppendHashesQuery, hashStart, blocks.HashBytes(hashes)); err != nil {
			return err
		}
	}
	t.ends.entries += int64(len(leaves))
	t.ends.hashes += int64(len(hashes))
	return nil
}

func (t *sqliteTx) LatestCheckpoint(ctx context.Context) (ledger.StoredCheckpoint, bool, error) {
	var c ledger.StoredCheckpoint
	var created string
	err := t.QueryRowContext(ctx, sqliteLatestQuery).Scan(&c.ID, &c.Size, &c.Note, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.StoredCheckpoint{}, false, nil
	}
	if err != nil {
		return ledger.StoredCheckpoint{}, false, err
	}
	c.Created, _ = time.Parse(time.RFC3339Nano, created)
	return c, true, nil
}

func (t *sqliteTx) AddCheckpoint(ctx context.Context, c ledger.StoredCheckpoint) error {
	_, err := t.ExecContext(ctx, sqliteAddCheckpointQuery, c.Size, c.Note, c.Created.UTC().Format(time.RFC3339Nano))
	return err
}

// Schema 1 (read-only stores, before migration): one row per entry in
// ledger_entries(seq, leaf) and per hash in ledger_hashes(idx, hash).

const sqliteLegacySizeQuery = `SELECT coalesce(max(seq) + 1, 0) FROM ledger_entries`

func sqliteLegacyLeaves(ctx context.Context, tx *sql.Tx, from, to int64, f func(int64, []byte) error) error {
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

// sqliteLegacyReadHashes reads hashes run by run: a run of consecutive
// indexes is one range query.
func sqliteLegacyReadHashes(ctx context.Context, q queryer, indexes []int64) ([]tlog.Hash, error) {
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
				return nil, fmt.Errorf("%w: stored hash %d has %d bytes", ledger.ErrCorrupt, idx, len(h))
			}
			copy(out[k][:], h)
			k++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		if k != j {
			return nil, fmt.Errorf("%w: stored hash %d is missing", ledger.ErrCorrupt, indexes[k])
		}
		i = j
	}
	return out, nil
}
