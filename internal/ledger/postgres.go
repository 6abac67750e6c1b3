package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/mod/sumdb/tlog"
)

// PostgreSQL schema, created in the first schema of the connection's
// search_path. The advisory lock serializes concurrent creation by replicas
// starting together.
const postgresSchema = `
SELECT pg_advisory_xact_lock(8462731001); -- the ledger schema lock
CREATE TABLE IF NOT EXISTS ledger_meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE IF NOT EXISTS ledger_entries (seq bigint PRIMARY KEY, leaf bytea NOT NULL);
CREATE TABLE IF NOT EXISTS ledger_hashes (idx bigint PRIMARY KEY, hash bytea NOT NULL);
CREATE TABLE IF NOT EXISTS ledger_checkpoints (
	id bigserial PRIMARY KEY,
	size bigint NOT NULL,
	note bytea NOT NULL,
	created timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS ledger_checkpoints_size ON ledger_checkpoints (size, id);
`

// OpenPostgres opens the PostgreSQL ledger at dsn (a postgres:// URL; any
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
func OpenPostgres(ctx context.Context, dsn string, readOnly bool) (Store, error) {
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
}

func (s *pgStore) Init(ctx context.Context, proposed string) (string, error) {
	if s.readOnly || proposed == "" {
		var id string
		err := s.pool.QueryRow(ctx, `SELECT value FROM ledger_meta WHERE key = 'ledger_id'`).Scan(&id)
		if err != nil {
			return "", fmt.Errorf("not a Gatehouse ledger: %w", err)
		}
		return id, nil
	}
	var id string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, postgresSchema); err != nil {
			return fmt.Errorf("creating schema: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO ledger_meta (key, value) VALUES ('ledger_id', $1), ('schema', '1') ON CONFLICT (key) DO NOTHING`, proposed); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT value FROM ledger_meta WHERE key = 'ledger_id'`).Scan(&id)
	})
	return id, err
}

func (s *pgStore) Update(ctx context.Context, f func(context.Context, Tx) error) error {
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
}

func pgSize(ctx context.Context, q pgQuerier) (int64, error) {
	var n int64
	err := q.QueryRow(ctx, `SELECT coalesce(max(seq) + 1, 0) FROM ledger_entries`).Scan(&n)
	return n, err
}

func (s *pgStore) Size(ctx context.Context) (int64, error) { return pgSize(ctx, s.pool) }

func (s *pgStore) Leaves(ctx context.Context, from, to int64, f func(int64, []byte) error) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
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

func (s *pgStore) ReadHashes(ctx context.Context, indexes []int64) ([]tlog.Hash, error) {
	return pgReadHashes(ctx, s.pool, indexes)
}

// pgReadHashes reads a long run of consecutive indexes (verification reads
// whole chunks) as one range scan, and scattered ones with = ANY.
func pgReadHashes(ctx context.Context, q pgQuerier, indexes []int64) ([]tlog.Hash, error) {
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
				return fmt.Errorf("%w: stored hash %d has %d bytes", ErrCorrupt, idx, len(h))
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
			return nil, fmt.Errorf("%w: stored hash %d is missing", ErrCorrupt, x)
		}
		out[i] = h
	}
	return out, nil
}

func (s *pgStore) Checkpoints(ctx context.Context) ([]StoredCheckpoint, error) {
	return pgCheckpoints(ctx, s.pool, `SELECT id, size, note, created FROM ledger_checkpoints ORDER BY size, id`)
}

func pgCheckpoints(ctx context.Context, q pgQuerier, query string) ([]StoredCheckpoint, error) {
	rows, err := q.Query(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []StoredCheckpoint
	for rows.Next() {
		var c StoredCheckpoint
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

func (t *pgTx) Size(ctx context.Context) (int64, error) { return pgSize(ctx, t.tx) }

func (t *pgTx) Leaf(ctx context.Context, seq int64) ([]byte, error) {
	var leaf []byte
	err := t.tx.QueryRow(ctx, `SELECT leaf FROM ledger_entries WHERE seq = $1`, seq).Scan(&leaf)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: entry %d is missing", ErrCorrupt, seq)
	}
	return leaf, err
}

func (t *pgTx) ReadHashes(ctx context.Context, indexes []int64) ([]tlog.Hash, error) {
	return pgReadHashes(ctx, t.tx, indexes)
}

func (t *pgTx) Append(ctx context.Context, start int64, leaves [][]byte, hashStart int64, hashes []tlog.Hash) error {
	seqs := make([]int64, len(leaves))
	for i := range leaves {
		seqs[i] = start + int64(i)
	}
	idx := make([]int64, len(hashes))
	hs := make([][]byte, len(hashes))
	for i := range hashes {
		idx[i] = hashStart + int64(i)
		hs[i] = hashes[i][:]
	}
	// Both multi-row INSERTs in one round trip (pgx caches the prepared
	// statements per connection).
	var b pgx.Batch
	b.Queue(`INSERT INTO ledger_entries (seq, leaf) SELECT * FROM unnest($1::bigint[], $2::bytea[])`, seqs, leaves)
	b.Queue(`INSERT INTO ledger_hashes (idx, hash) SELECT * FROM unnest($1::bigint[], $2::bytea[])`, idx, hs)
	return t.tx.SendBatch(ctx, &b).Close()
}

func (t *pgTx) LatestCheckpoint(ctx context.Context) (StoredCheckpoint, bool, error) {
	cs, err := pgCheckpoints(ctx, t.tx, `SELECT id, size, note, created FROM ledger_checkpoints ORDER BY size DESC, id DESC LIMIT 1`)
	if err != nil || len(cs) == 0 {
		return StoredCheckpoint{}, false, err
	}
	return cs[0], true, nil
}

func (t *pgTx) AddCheckpoint(ctx context.Context, c StoredCheckpoint) error {
	_, err := t.tx.Exec(ctx, `INSERT INTO ledger_checkpoints (size, note, created) VALUES ($1, $2, $3)`, c.Size, c.Note, c.Created)
	return err
}
