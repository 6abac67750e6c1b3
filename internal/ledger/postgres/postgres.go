// Package postgres is the audit ledger's PostgreSQL backend: a ledger.Store
// in one database that several gateway replicas append to concurrently
// with one linear chain (a lock row serializes the writers), through pgx,
// storing schema 2 blocks and migrating schema 1 on the first read-write
// open (docs/ledger.md, "Storage", "PostgreSQL"). It passes
// internal/ledger/storetest.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger/internal/blocks"
)

// PostgreSQL schema (version 2, see store.go), created in the first schema
// of the connection's search_path by Init, under an advisory lock so that
// replicas starting together do not race.
const postgresSchema = `
CREATE TABLE IF NOT EXISTS ledger_meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE IF NOT EXISTS ledger_blocks (start bigint PRIMARY KEY, count bigint NOT NULL, leaves bytea NOT NULL);
CREATE TABLE IF NOT EXISTS ledger_hash_blocks (start bigint PRIMARY KEY, hashes bytea NOT NULL);
CREATE TABLE IF NOT EXISTS ledger_checkpoints (
	id bigserial PRIMARY KEY,
	size bigint NOT NULL,
	note bytea NOT NULL,
	created timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS ledger_checkpoints_size ON ledger_checkpoints (size, id);
`

// postgresNewTables is run once, when Init creates ledger_hash_blocks:
// hashes are incompressible, so they are stored out of line uncompressed,
// which also lets substring() read one hash without the whole block.
const postgresNewTables = `ALTER TABLE ledger_hash_blocks ALTER COLUMN hashes SET STORAGE EXTERNAL`

// postgresTombstones are views with the names of the schema-1 tables that
// fail whenever they are read (and cannot be inserted into), naming the
// problem: a gatehouse from before schema 2 finds them instead of creating
// empty tables and appending a second chain beside the blocks (see
// sqliteTombstones).
const postgresTombstones = `
CREATE OR REPLACE FUNCTION ledger_schema_1_gone() RETURNS TABLE (seq bigint, leaf bytea) LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION '` + blocks.TombstoneMessage + `'; END $$;
CREATE OR REPLACE VIEW ledger_entries AS SELECT seq, leaf FROM ledger_schema_1_gone();
CREATE OR REPLACE VIEW ledger_hashes AS SELECT seq AS idx, leaf AS hash FROM ledger_schema_1_gone();
`

// Open opens the PostgreSQL ledger at dsn (a postgres:// URL; any
// libpq parameter pgx understands, search_path included, may be given) with
// a pgx connection pool.
//
// Every connection runs with synchronous_commit=on whatever the server's
// default, so a commit returns only after its WAL record is flushed: an
// acknowledged append survives a crash of the server. Writers in any number
// of processes are serialized by a row lock (SELECT ... FOR UPDATE on the
// ledger_id row of ledger_meta) taken first in every Update, so that replicas
// appending concurrently keep one linear chain.
//
// Read-only: connections run with default_transaction_read_only=on and no
// schema is created.
func Open(ctx context.Context, dsn string, readOnly bool) (ledger.Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("ledger: parsing PostgreSQL DSN: %w", err)
	}
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	if readOnly {
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	if cfg.MaxConns < 4 {
		cfg.MaxConns = 4
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("ledger: connecting to PostgreSQL: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ledger: connecting to PostgreSQL: %w", err)
	}
	return &pgStore{pool: pool, readOnly: readOnly}, nil
}

type pgStore struct {
	pool     *pgxpool.Pool
	readOnly bool
	// legacy: as in sqliteStore.
	legacy atomic.Bool
}

// pgLayout tells which tables exist: ledger_meta and ledger_blocks as
// tables, and ledger_entries as a table (schema 1) or a view (the
// tombstone).
type pgLayout struct {
	meta, blocks bool
	entries      string // pg_class.relkind: "r" table, "v" view, "" none
}

func pgReadLayout(ctx context.Context, q pgQuerier) (pgLayout, error) {
	var l pgLayout
	err := q.QueryRow(ctx, `SELECT to_regclass('ledger_meta') IS NOT NULL, to_regclass('ledger_blocks') IS NOT NULL,
		coalesce((SELECT relkind::text FROM pg_class WHERE oid = to_regclass('ledger_entries')), '')`).Scan(&l.meta, &l.blocks, &l.entries)
	return l, err
}

// Init of a read-write store with a proposed id creates the schema, records
// the id and the schema version, and migrates a schema-1 database to
// blocks, all in one transaction that holds the lock row (so no replica
// appends meanwhile); otherwise it only reads the id, in either layout.
func (s *pgStore) Init(ctx context.Context, proposed string) (string, error) {
	if s.readOnly || proposed == "" {
		return s.initRead(ctx)
	}
	var id string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(8462731001)`); err != nil { // the ledger schema lock
			return fmt.Errorf("taking the schema lock: %w", err)
		}
		l, err := pgReadLayout(ctx, tx)
		if err != nil {
			return err
		}
		if l.meta {
			// Queue on the lock row first, as every writer does, before
			// any statement below can lock what a writer holding it
			// waits for (the deadlock of several processes opening one
			// ledger while others append).
			var held string
			if err := tx.QueryRow(ctx, `SELECT value FROM ledger_meta WHERE key = 'ledger_id' FOR UPDATE`).Scan(&held); err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("taking the ledger lock: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, postgresSchema); err != nil {
			return fmt.Errorf("creating schema: %w", err)
		}
		if !l.blocks {
			if _, err := tx.Exec(ctx, postgresNewTables); err != nil {
				return fmt.Errorf("creating schema: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO ledger_meta (key, value) VALUES ('ledger_id', $1), ('schema', $2) ON CONFLICT (key) DO NOTHING`, proposed, strconv.Itoa(blocks.SchemaVersion)); err != nil {
			return err
		}
		// The lock row: a replica of any version appending now waits.
		if err := tx.QueryRow(ctx, `SELECT value FROM ledger_meta WHERE key = 'ledger_id' FOR UPDATE`).Scan(&id); err != nil {
			return err
		}
		if err := blocks.CheckSchemaVersion(pgSchemaVersion(ctx, tx)); err != nil {
			return err
		}
		if l.entries == "r" {
			if err := pgMigrate(ctx, tx); err != nil {
				return fmt.Errorf("migrating the ledger from schema 1 (a row per entry) to schema 2 (blocks): %w", err)
			}
		}
		if l.entries != "v" {
			if _, err := tx.Exec(ctx, postgresTombstones); err != nil {
				return fmt.Errorf("creating schema: %w", err)
			}
		}
		_, err = tx.Exec(ctx, `UPDATE ledger_meta SET value = $1 WHERE key = 'schema' AND value <> $1`, strconv.Itoa(blocks.SchemaVersion))
		return err
	})
	if err != nil {
		return "", err
	}
	s.legacy.Store(false)
	return id, nil
}

// initRead is Init without writing: the ledger id, and the layout.
func (s *pgStore) initRead(ctx context.Context) (string, error) {
	l, err := pgReadLayout(ctx, s.pool)
	if err != nil {
		return "", err
	}
	if !l.meta {
		return "", errors.New("not a Gatehouse ledger (no ledger_meta table)")
	}
	if l.entries == "r" && l.blocks {
		return "", errors.New("the database holds the ledger in both layouts (ledger_entries and ledger_blocks tables): a gatehouse from before schema 2 wrote to it after it was migrated; see docs/ledger.md")
	}
	var id string
	if err := s.pool.QueryRow(ctx, `SELECT value FROM ledger_meta WHERE key = 'ledger_id'`).Scan(&id); err != nil {
		return "", fmt.Errorf("not a Gatehouse ledger: %w", err)
	}
	if err := blocks.CheckSchemaVersion(pgSchemaVersion(ctx, s.pool)); err != nil {
		return "", err
	}
	s.legacy.Store(l.entries == "r")
	return id, nil
}

// pgSchemaVersion is sqliteSchemaVersion.
func pgSchemaVersion(ctx context.Context, q pgQuerier) (string, error) {
	var v string
	err := q.QueryRow(ctx, `SELECT value FROM ledger_meta WHERE key = 'schema'`).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return v, err
}

// pgMigrate is sqliteMigrate.
func pgMigrate(ctx context.Context, tx pgx.Tx) error {
	var used bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM ledger_blocks) OR EXISTS (SELECT 1 FROM ledger_hash_blocks)`).Scan(&used); err != nil {
		return err
	}
	if used {
		return errors.New("both ledger_entries and ledger_blocks hold entries: a gatehouse from before schema 2 wrote to the ledger after it was migrated; see docs/ledger.md")
	}
	page := func(query string) func(after int64) ([]blocks.LegacyRow, error) {
		return func(after int64) ([]blocks.LegacyRow, error) {
			rows, err := tx.Query(ctx, query, after)
			if err != nil {
				return nil, err
			}
			var out []blocks.LegacyRow
			var r blocks.LegacyRow
			_, err = pgx.ForEachRow(rows, []any{&r.Key, &r.Val}, func() error {
				out = append(out, blocks.LegacyRow{Key: r.Key, Val: r.Val})
				r.Val = nil
				return nil
			})
			return out, err
		}
	}
	if _, err := blocks.Regroup(page(`SELECT seq, leaf FROM ledger_entries WHERE seq > $1 ORDER BY seq LIMIT 4096`), blocks.MigrateBlockEntries, func(start int64, leaves [][]byte) error {
		b, err := blocks.LegacyLeafBlock(start, leaves)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO ledger_blocks (start, count, leaves) VALUES ($1, $2, $3)`, start, len(leaves), b)
		return err
	}); err != nil {
		return err
	}
	if _, err := blocks.Regroup(page(`SELECT idx, hash FROM ledger_hashes WHERE idx > $1 ORDER BY idx LIMIT 16384`), blocks.MigrateBlockHashes, func(start int64, hashes [][]byte) error {
		b, err := blocks.JoinHashes(start, hashes)
		if err != nil {
			return fmt.Errorf("%w; the ledger was altered: check it with `gatehouse ledger verify` (which reads it as it is) and move it aside to start a new ledger", err)
		}
		_, err = tx.Exec(ctx, `INSERT INTO ledger_hash_blocks (start, hashes) VALUES ($1, $2)`, start, b)
		return err
	}); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `DROP TABLE ledger_entries, ledger_hashes`)
	return err
}

func (s *pgStore) Update(ctx context.Context, f func(context.Context, ledger.Tx) error) error {
	if s.readOnly {
		return errors.New("store is read-only")
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// The lock row: every writer of every replica queues here. Statements
	// after it (READ COMMITTED) see everything committed before the lock
	// was granted.
	var id string
	if err := tx.QueryRow(ctx, `SELECT value FROM ledger_meta WHERE key = 'ledger_id' FOR UPDATE`).Scan(&id); err != nil {
		return fmt.Errorf("taking the ledger lock: %w", err)
	}
	if err := f(ctx, &pgTx{tx: tx}); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// pgQuerier is what pgxpool.Pool and pgx.Tx have in common here.
type pgQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

const (
	// pgSizeQuery is the end of the last block: one index probe.
	pgSizeQuery = `SELECT coalesce((SELECT start + count FROM ledger_blocks ORDER BY start DESC LIMIT 1), 0)`
	// pgHashEndQuery is the end of the last hash block.
	pgHashEndQuery = `SELECT coalesce((SELECT start + octet_length(hashes) / 32 FROM ledger_hash_blocks ORDER BY start DESC LIMIT 1), 0)`
	// pgLeafRangeQuery is the blocks holding entries $1 <= seq < $2.
	pgLeafRangeQuery = `SELECT start, count, leaves FROM ledger_blocks
		WHERE start >= coalesce((SELECT start FROM ledger_blocks WHERE start <= $1 ORDER BY start DESC LIMIT 1), $1) AND start < $2
		ORDER BY start`
	// pgHashPointsQuery is the 32 bytes of each hash of $1 (fewer if its
	// block is short, NULL if there is none).
	pgHashPointsQuery = `SELECT x, (SELECT substring(b.hashes FROM ((x - b.start) * 32 + 1)::integer FOR 32) FROM ledger_hash_blocks b
		WHERE b.start <= x ORDER BY b.start DESC LIMIT 1) FROM unnest($1::bigint[]) AS x`
	// pgHashRangeQuery is the hash blocks holding $1 <= idx <= $2.
	pgHashRangeQuery = `SELECT start, hashes FROM ledger_hash_blocks
		WHERE start >= coalesce((SELECT start FROM ledger_hash_blocks WHERE start <= $1 ORDER BY start DESC LIMIT 1), $1) AND start <= $2
		ORDER BY start`
	// pgAppendBlockQuery inserts a block only where the ledger ends.
	pgAppendBlockQuery = `INSERT INTO ledger_blocks (start, count, leaves) SELECT $1, $2, $3
		WHERE $1 = coalesce((SELECT start + count FROM ledger_blocks ORDER BY start DESC LIMIT 1), 0)`
	// pgAppendHashesQuery inserts a hash block only where the stored
	// hashes end.
	pgAppendHashesQuery = `INSERT INTO ledger_hash_blocks (start, hashes) SELECT $1, $2
		WHERE $1 = coalesce((SELECT start + octet_length(hashes) / 32 FROM ledger_hash_blocks ORDER BY start DESC LIMIT 1), 0)`
)

func pgSize(ctx context.Context, q pgQuerier, legacy bool) (int64, error) {
	query := pgSizeQuery
	if legacy {
		query = `SELECT coalesce(max(seq) + 1, 0) FROM ledger_entries`
	}
	var n int64
	err := q.QueryRow(ctx, query).Scan(&n)
	return n, err
}

func (s *pgStore) Size(ctx context.Context) (int64, error) {
	return pgSize(ctx, s.pool, s.legacy.Load())
}

func (s *pgStore) Leaves(ctx context.Context, from, to int64, f func(int64, []byte) error) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if s.legacy.Load() {
		return pgLegacyLeaves(ctx, tx, from, to, f)
	}
	rows, err := tx.Query(ctx, pgLeafRangeQuery, from, to)
	if err != nil {
		return err
	}
	st := blocks.LeafStream{From: from, To: to, F: f}
	var b blocks.LeafBlock
	if _, err := pgx.ForEachRow(rows, []any{&b.Start, &b.Count, &b.Leaves}, func() error {
		err := st.Add(b)
		b.Leaves = nil // st holds on to it
		return err
	}); err != nil {
		return err
	}
	return st.End()
}

func (s *pgStore) ReadHashes(ctx context.Context, indexes []int64) ([]tlog.Hash, error) {
	if s.legacy.Load() {
		return pgLegacyReadHashes(ctx, s.pool, indexes)
	}
	return pgReadHashes(ctx, s.pool, indexes)
}

// pgReadHashes reads, in one round trip, the blocks holding each run of at
// least hashRunMin consecutive indexes (verification reads whole chunks),
// one range query per run, and the other indexes in one query, 32 bytes
// each.
func pgReadHashes(ctx context.Context, q pgQuerier, indexes []int64) ([]tlog.Hash, error) {
	l := blocks.NewHashLookup(indexes)
	var b pgx.Batch
	var points []int64
	for _, r := range l.Runs() {
		i, j := r[0], r[1]
		if j-i < blocks.HashRunMin {
			points = append(points, l.Sorted[i:j]...)
			continue
		}
		b.Queue(pgHashRangeQuery, l.Sorted[i], l.Sorted[j-1]).Query(func(rows pgx.Rows) error {
			var hbs []blocks.HashBlock
			var hb blocks.HashBlock
			_, err := pgx.ForEachRow(rows, []any{&hb.Start, &hb.Hashes}, func() error {
				hbs = append(hbs, hb)
				hb.Hashes = nil
				return nil
			})
			l.Fill(i, j, hbs)
			return err
		})
	}
	if len(points) > 0 {
		b.Queue(pgHashPointsQuery, points).Query(func(rows pgx.Rows) error {
			var x int64
			var h []byte
			_, err := pgx.ForEachRow(rows, []any{&x, &h}, func() error {
				if k, ok := slices.BinarySearch(l.Sorted, x); ok {
					l.Set(k, h)
				}
				return nil
			})
			return err
		})
	}
	if b.Len() == 0 {
		return l.Result(indexes)
	}
	if err := q.SendBatch(ctx, &b).Close(); err != nil {
		return nil, err
	}
	return l.Result(indexes)
}

func (s *pgStore) Checkpoints(ctx context.Context) ([]ledger.StoredCheckpoint, error) {
	return pgCheckpoints(ctx, s.pool, `SELECT id, size, note, created FROM ledger_checkpoints ORDER BY size, id`)
}

func pgCheckpoints(ctx context.Context, q pgQuerier, query string) ([]ledger.StoredCheckpoint, error) {
	rows, err := q.Query(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ledger.StoredCheckpoint
	for rows.Next() {
		var c ledger.StoredCheckpoint
		if err := rows.Scan(&c.ID, &c.Size, &c.Note, &c.Created); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

func (s *pgStore) Close() error {
	s.pool.Close()
	return nil
}

// pgTx is the Tx of a pgStore.
type pgTx struct{ tx pgx.Tx }

func (t *pgTx) Size(ctx context.Context) (int64, error) { return pgSize(ctx, t.tx, false) }

func (t *pgTx) Leaf(ctx context.Context, seq int64) ([]byte, error) {
	var b blocks.LeafBlock
	err := t.tx.QueryRow(ctx, `SELECT start, count, leaves FROM ledger_blocks WHERE start <= $1 ORDER BY start DESC LIMIT 1`, seq).Scan(&b.Start, &b.Count, &b.Leaves)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
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

func (t *pgTx) ReadHashes(ctx context.Context, indexes []int64) ([]tlog.Hash, error) {
	return pgReadHashes(ctx, t.tx, indexes)
}

// Append writes one block of leaves and one of hashes, each a single row
// inserted only where the ledger (or the stored hashes) end, both in one
// round trip.
func (t *pgTx) Append(ctx context.Context, start int64, leaves [][]byte, hashStart int64, hashes []tlog.Hash) error {
	var b pgx.Batch
	var short string // what was not inserted
	atEnd := func(what string) func(pgconn.CommandTag) error {
		return func(ct pgconn.CommandTag) error {
			if ct.RowsAffected() != 1 && short == "" {
				short = what
			}
			return nil
		}
	}
	if len(leaves) > 0 {
		block, err := blocks.EncodeLeafBlock(leaves)
		if err != nil {
			return fmt.Errorf("%w: entries from %d: %v", ledger.ErrInvalid, start, err)
		}
		b.Queue(pgAppendBlockQuery, start, int64(len(leaves)), block).Exec(atEnd("entries"))
	}
	if len(hashes) > 0 {
		b.Queue(pgAppendHashesQuery, hashStart, blocks.HashBytes(hashes)).Exec(atEnd("hashes"))
	}
	if b.Len() == 0 {
		return nil
	}
	if err := t.tx.SendBatch(ctx, &b).Close(); err != nil {
		return err
	}
	if short == "" {
		return nil
	}
	at, query := start, pgSizeQuery
	if short == "hashes" {
		at, query = hashStart, pgHashEndQuery
	}
	var end int64
	if err := t.tx.QueryRow(ctx, query).Scan(&end); err != nil {
		return err
	}
	return fmt.Errorf("appending %s at %d, but the stored ones end at %d", short, at, end)
}

func (t *pgTx) LatestCheckpoint(ctx context.Context) (ledger.StoredCheckpoint, bool, error) {
	cs, err := pgCheckpoints(ctx, t.tx, `SELECT id, size, note, created FROM ledger_checkpoints ORDER BY size DESC, id DESC LIMIT 1`)
	if err != nil || len(cs) == 0 {
		return ledger.StoredCheckpoint{}, false, err
	}
	return cs[0], true, nil
}

func (t *pgTx) AddCheckpoint(ctx context.Context, c ledger.StoredCheckpoint) error {
	_, err := t.tx.Exec(ctx, `INSERT INTO ledger_checkpoints (size, note, created) VALUES ($1, $2, $3)`, c.Size, c.Note, c.Created)
	return err
}

// Schema 1 (read-only stores, before migration).

func pgLegacyLeaves(ctx context.Context, tx pgx.Tx, from, to int64, f func(int64, []byte) error) error {
	rows, err := tx.Query(ctx, `SELECT seq, leaf FROM ledger_entries WHERE seq >= $1 AND seq < $2 ORDER BY seq`, from, to)
	if err != nil {
		return err
	}
	defer rows.Close()
	var seq int64
	var leaf []byte
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

// pgLegacyReadHashes reads a long run of consecutive indexes as one range
// scan, and scattered ones with = ANY.
func pgLegacyReadHashes(ctx context.Context, q pgQuerier, indexes []int64) ([]tlog.Hash, error) {
	if len(indexes) == 0 {
		return nil, nil
	}
	got := make(map[int64]tlog.Hash, len(indexes))
	read := func(query string, args ...any) error {
		rows, err := q.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		var idx int64
		var h []byte
		for rows.Next() {
			if err := rows.Scan(&idx, &h); err != nil {
				return err
			}
			if len(h) != tlog.HashSize {
				return fmt.Errorf("%w: stored hash %d has %d bytes", ledger.ErrCorrupt, idx, len(h))
			}
			got[idx] = tlog.Hash(h)
		}
		return rows.Err()
	}
	var scattered []int64
	for i := 0; i < len(indexes); {
		j := i + 1
		for j < len(indexes) && indexes[j] == indexes[j-1]+1 {
			j++
		}
		if j-i >= 64 {
			if err := read(`SELECT idx, hash FROM ledger_hashes WHERE idx >= $1 AND idx <= $2`, indexes[i], indexes[j-1]); err != nil {
				return nil, err
			}
		} else {
			scattered = append(scattered, indexes[i:j]...)
		}
		i = j
	}
	if len(scattered) > 0 {
		if err := read(`SELECT idx, hash FROM ledger_hashes WHERE idx = ANY($1)`, scattered); err != nil {
			return nil, err
		}
	}
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		h, ok := got[x]
		if !ok {
			return nil, fmt.Errorf("%w: stored hash %d is missing", ledger.ErrCorrupt, x)
		}
		out[i] = h
	}
	return out, nil
}
