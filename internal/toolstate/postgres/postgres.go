// Package postgres is the tool-state store's PostgreSQL backend: a
// toolstate.Store in the audit ledger's database (the --state URL), in
// tables of its own (tool_baselines, tool_observations, tool_quarantines,
// tool_state_meta), through pgx. Gateways sharing the database share the
// baselines, observations and quarantines; their writes are serialized by
// a row lock (the version row of tool_state_meta), and every write that
// changes something grows the version they poll. See docs/drift.md,
// "Storage". It passes internal/toolstate/storetest.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse-mcp/gatehouse/internal/toolstate"
	"github.com/gatehouse-mcp/gatehouse/internal/toolstate/internal/rows"
)

// SchemaVersion is the version of the tables this package reads and
// writes, recorded in tool_state_meta under the key "schema". Open refuses
// a database recording a later one.
const SchemaVersion = 1

// schema creates the tables when missing, in the first schema of the
// connection's search_path (as the ledger's). Column names are the JSON
// names of the toolstate fields.
const schema = `
CREATE TABLE IF NOT EXISTS tool_state_meta (key text PRIMARY KEY, value bigint NOT NULL);
CREATE TABLE IF NOT EXISTS tool_baselines (
	server_id text NOT NULL,
	tool text NOT NULL,
	definition_hash text NOT NULL,
	definition bytea NOT NULL,
	origin text NOT NULL,
	approved_by text NOT NULL,
	reason text NOT NULL,
	approved_at timestamptz NOT NULL,
	PRIMARY KEY (server_id, tool)
);
CREATE TABLE IF NOT EXISTS tool_observations (
	server_id text NOT NULL,
	tool text NOT NULL,
	definition_hash text NOT NULL,
	definition bytea,
	removed boolean NOT NULL,
	severity text NOT NULL,
	changes text[] NOT NULL,
	observed_by text NOT NULL,
	observed_at timestamptz NOT NULL,
	PRIMARY KEY (server_id, tool)
);
CREATE TABLE IF NOT EXISTS tool_quarantines (
	server_id text NOT NULL,
	tool text NOT NULL,
	definition_hash text NOT NULL,
	automatic boolean NOT NULL,
	severity text NOT NULL,
	changes text[] NOT NULL,
	quarantined_by text NOT NULL,
	rule text NOT NULL,
	reason text NOT NULL,
	quarantined_at timestamptz NOT NULL,
	PRIMARY KEY (server_id, tool)
);
`

// schemaLock is the advisory lock key Open creates the tables under
// (the ledger's is 8462731001), so that gateways starting together do not
// race.
const schemaLock = 8462731002

// Open opens the tool-state store in the PostgreSQL database at dsn (a
// postgres:// or postgresql:// URL, any parameter pgx understands,
// search_path included) with a pgx connection pool, creating its tables
// when they are missing, whether or not the ledger's are there. Every
// connection runs with synchronous_commit=on, so a committed approval or
// hold survives a crash of the server. Errors: the URL does not parse, the
// server cannot be reached, or the database records a tool-state schema
// later than SchemaVersion.
func Open(ctx context.Context, dsn string) (toolstate.Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("toolstate: parsing PostgreSQL URL: %w", err)
	}
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	if cfg.MaxConns < 4 {
		cfg.MaxConns = 4
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("toolstate: connecting to PostgreSQL: %w", err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, schemaLock); err != nil {
			return fmt.Errorf("taking the schema lock: %w", err)
		}
		if _, err := tx.Exec(ctx, schema); err != nil {
			return fmt.Errorf("creating the tool-state tables: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO tool_state_meta (key, value) VALUES ('schema', $1), ('version', 0) ON CONFLICT (key) DO NOTHING`, SchemaVersion); err != nil {
			return fmt.Errorf("creating the tool-state tables: %w", err)
		}
		var v int64
		if err := tx.QueryRow(ctx, `SELECT value FROM tool_state_meta WHERE key = 'schema'`).Scan(&v); err != nil {
			return fmt.Errorf("reading the tool-state schema version: %w", err)
		}
		if v > SchemaVersion {
			return fmt.Errorf("the tool-state tables are schema %d, later than this gatehouse's %d: upgrade gatehouse", v, SchemaVersion)
		}
		return nil
	})
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("toolstate: PostgreSQL: %w", err)
	}
	return &store{pool: pool}, nil
}

// Exists reports whether the database dsn names (with its search_path)
// holds a Gatehouse state: the tool-state tables or the audit ledger's.
// It creates nothing: gatehouse tools refuses a --state where no gateway
// ever recorded anything, as it refuses a SQLite file that does not exist.
// The error is a connection or query failure.
func Exists(ctx context.Context, dsn string) (bool, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return false, fmt.Errorf("toolstate: connecting to PostgreSQL: %w", err)
	}
	defer conn.Close(ctx)
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('tool_state_meta') IS NOT NULL OR to_regclass('ledger_meta') IS NOT NULL`).Scan(&ok); err != nil {
		return false, fmt.Errorf("toolstate: PostgreSQL: looking for the state tables: %w", err)
	}
	return ok, nil
}

type store struct {
	pool *pgxpool.Pool
	// mu is held shared by every call and exclusively by Close, so
	// that Close waits for the calls in progress and none starts after.
	mu     sync.RWMutex
	closed bool
}

// querier is what pgxpool.Pool and pgx.Tx have in common here.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// enter starts a call: false after Close; otherwise the caller holds
// s.mu shared until it returns.
func (s *store) enter() bool {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return false
	}
	return true
}

// wrap adds the store's context to err.
func (s *store) wrap(what string, err error) error {
	return fmt.Errorf("toolstate: PostgreSQL: %s: %w", what, err)
}

// Tools implements toolstate.Store.
func (s *store) Tools(ctx context.Context, serverID string) ([]toolstate.ToolState, error) {
	if !s.enter() {
		return nil, toolstate.ErrClosed
	}
	defer s.mu.RUnlock()
	where, args := "", []any(nil)
	if serverID != "" {
		where, args = " WHERE server_id = $1", []any{serverID}
	}
	out, err := s.read(ctx, where, args)
	if err != nil {
		return nil, s.wrap("reading tool states", err)
	}
	return out, nil
}

// Tool implements toolstate.Store.
func (s *store) Tool(ctx context.Context, serverID, tool string) (toolstate.ToolState, error) {
	if !s.enter() {
		return toolstate.ToolState{}, toolstate.ErrClosed
	}
	defer s.mu.RUnlock()
	out, err := s.read(ctx, " WHERE server_id = $1 AND tool = $2", []any{serverID, tool})
	if err != nil {
		return toolstate.ToolState{}, s.wrap(fmt.Sprintf("reading tool %q of server %q", tool, serverID), err)
	}
	if len(out) == 0 {
		return toolstate.ToolState{}, fmt.Errorf("tool %q of server %q: %w", tool, serverID, toolstate.ErrNotFound)
	}
	return out[0], nil
}

// read reads the rows of the three tables matching where in one
// read-only repeatable-read transaction (one snapshot).
func (s *store) read(ctx context.Context, where string, args []any) ([]toolstate.ToolState, error) {
	var out []toolstate.ToolState
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		bs, err := baselines(ctx, tx, where, args)
		if err != nil {
			return err
		}
		os, err := observations(ctx, tx, where, args)
		if err != nil {
			return err
		}
		qs, err := quarantines(ctx, tx, where, args)
		if err != nil {
			return err
		}
		out = rows.Collect(bs, os, qs)
		return nil
	})
	return out, err
}

func baselines(ctx context.Context, q querier, where string, args []any) ([]toolstate.Baseline, error) {
	rs, err := q.Query(ctx, `SELECT server_id, tool, definition_hash, definition, origin, approved_by, reason, approved_at FROM tool_baselines`+where, args...)
	if err != nil {
		return nil, fmt.Errorf("tool_baselines: %w", err)
	}
	out, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) (toolstate.Baseline, error) {
		var b toolstate.Baseline
		err := r.Scan(&b.ServerID, &b.Tool, &b.Hash, &b.Definition, &b.Origin, &b.By, &b.Reason, &b.At)
		b.At = b.At.UTC()
		return b, err
	})
	if err != nil {
		return nil, fmt.Errorf("tool_baselines: %w", err)
	}
	return out, nil
}

func observations(ctx context.Context, q querier, where string, args []any) ([]toolstate.Observation, error) {
	rs, err := q.Query(ctx, `SELECT server_id, tool, definition_hash, definition, removed, severity, changes, observed_by, observed_at FROM tool_observations`+where, args...)
	if err != nil {
		return nil, fmt.Errorf("tool_observations: %w", err)
	}
	out, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) (toolstate.Observation, error) {
		var o toolstate.Observation
		err := r.Scan(&o.ServerID, &o.Tool, &o.Hash, &o.Definition, &o.Removed, &o.Severity, &o.Changes, &o.By, &o.At)
		o.At = o.At.UTC()
		if len(o.Changes) == 0 {
			o.Changes = nil
		}
		if len(o.Definition) == 0 {
			o.Definition = nil
		}
		return o, err
	})
	if err != nil {
		return nil, fmt.Errorf("tool_observations: %w", err)
	}
	return out, nil
}

const quarantineColumns = `server_id, tool, definition_hash, automatic, severity, changes, quarantined_by, rule, reason, quarantined_at`

func scanQuarantine(r pgx.CollectableRow) (toolstate.Quarantine, error) {
	var h toolstate.Quarantine
	err := r.Scan(&h.ServerID, &h.Tool, &h.Hash, &h.Automatic, &h.Severity, &h.Changes, &h.By, &h.Rule, &h.Reason, &h.At)
	h.At = h.At.UTC()
	if len(h.Changes) == 0 {
		h.Changes = nil
	}
	return h, err
}

func quarantines(ctx context.Context, q querier, where string, args []any) ([]toolstate.Quarantine, error) {
	rs, err := q.Query(ctx, `SELECT `+quarantineColumns+` FROM tool_quarantines`+where, args...)
	if err != nil {
		return nil, fmt.Errorf("tool_quarantines: %w", err)
	}
	out, err := pgx.CollectRows(rs, scanQuarantine)
	if err != nil {
		return nil, fmt.Errorf("tool_quarantines: %w", err)
	}
	return out, nil
}

// changes returns c as stored: never NULL.
func changes(c []string) []string {
	if c == nil {
		return []string{}
	}
	return c
}

// write runs f in a read-committed transaction that first locks the
// version row, so that the writes of every gateway on the database are
// serialized; f returns whether it changed anything, and the version grows
// when it did. The errors f returns for callers to branch on
// (ErrChanged, ErrNotFound, ErrNotQuarantined) are returned as they are.
func (s *store) write(ctx context.Context, what string, f func(ctx context.Context, tx pgx.Tx) (bool, error)) error {
	if !s.enter() {
		return toolstate.ErrClosed
	}
	defer s.mu.RUnlock()
	var ferr error
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT value FROM tool_state_meta WHERE key = 'version' FOR UPDATE`); err != nil {
			return fmt.Errorf("locking the version row: %w", err)
		}
		changed, err := f(ctx, tx)
		if err != nil {
			ferr = err
			return err
		}
		if changed {
			if _, err := tx.Exec(ctx, `UPDATE tool_state_meta SET value = value + 1 WHERE key = 'version'`); err != nil {
				return fmt.Errorf("growing the version: %w", err)
			}
		}
		return nil
	})
	if err != nil && ferr != nil && (errors.Is(ferr, toolstate.ErrChanged) || errors.Is(ferr, toolstate.ErrNotFound) || errors.Is(ferr, toolstate.ErrNotQuarantined)) {
		return ferr
	}
	if err != nil {
		return s.wrap(what, err)
	}
	return nil
}

const insertBaseline = `INSERT INTO tool_baselines (server_id, tool, definition_hash, definition, origin, approved_by, reason, approved_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`

const upsertBaseline = insertBaseline + `
	ON CONFLICT (server_id, tool) DO UPDATE SET definition_hash = excluded.definition_hash, definition = excluded.definition,
	origin = excluded.origin, approved_by = excluded.approved_by, reason = excluded.reason, approved_at = excluded.approved_at`

func baselineArgs(b toolstate.Baseline) []any {
	return []any{b.ServerID, b.Tool, b.Hash, b.Definition, b.Origin, b.By, b.Reason, b.At}
}

const whereKey = " WHERE server_id = $1 AND tool = $2"

// FirstUse implements toolstate.Store.
func (s *store) FirstUse(ctx context.Context, b toolstate.Baseline) (toolstate.Baseline, bool, error) {
	b, err := toolstate.PrepareFirstUse(b, time.Now())
	if err != nil {
		return toolstate.Baseline{}, false, err
	}
	var got toolstate.Baseline
	var won bool
	err = s.write(ctx, fmt.Sprintf("first use of tool %q of server %q", b.Tool, b.ServerID), func(ctx context.Context, tx pgx.Tx) (bool, error) {
		bs, err := baselines(ctx, tx, whereKey, []any{b.ServerID, b.Tool})
		if err != nil {
			return false, err
		}
		if len(bs) > 0 {
			got = bs[0]
			return false, nil
		}
		// DO NOTHING: even were the version row not locked, a baseline
		// already there would stay.
		tag, err := tx.Exec(ctx, insertBaseline+` ON CONFLICT (server_id, tool) DO NOTHING`, baselineArgs(b)...)
		if err != nil {
			return false, fmt.Errorf("tool_baselines: %w", err)
		}
		if tag.RowsAffected() != 1 {
			return false, errors.New("tool_baselines: a baseline appeared during the transaction")
		}
		got, won = b, true
		return true, nil
	})
	if err != nil {
		return toolstate.Baseline{}, false, err
	}
	return got, won, nil
}

// Observe implements toolstate.Store: one batch of upserts.
func (s *store) Observe(ctx context.Context, obs []toolstate.Observation) error {
	obs, err := toolstate.PrepareObservations(obs, time.Now())
	if err != nil {
		return err
	}
	if len(obs) == 0 {
		return nil
	}
	return s.write(ctx, fmt.Sprintf("recording %d observations", len(obs)), func(ctx context.Context, tx pgx.Tx) (bool, error) {
		var b pgx.Batch
		for _, o := range obs {
			b.Queue(`INSERT INTO tool_observations (server_id, tool, definition_hash, definition, removed, severity, changes, observed_by, observed_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
				ON CONFLICT (server_id, tool) DO UPDATE SET definition_hash = excluded.definition_hash, definition = excluded.definition,
				removed = excluded.removed, severity = excluded.severity, changes = excluded.changes,
				observed_by = excluded.observed_by, observed_at = excluded.observed_at`,
				o.ServerID, o.Tool, o.Hash, o.Definition, o.Removed, o.Severity, changes(o.Changes), o.By, o.At)
		}
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return false, fmt.Errorf("tool_observations: %w", err)
		}
		return true, nil
	})
}

// Approve implements toolstate.Store.
func (s *store) Approve(ctx context.Context, a toolstate.Approval) (toolstate.Approved, error) {
	a, err := toolstate.PrepareApproval(a, time.Now())
	if err != nil {
		return toolstate.Approved{}, err
	}
	var out toolstate.Approved
	err = s.write(ctx, fmt.Sprintf("approving tool %q of server %q", a.Tool, a.ServerID), func(ctx context.Context, tx pgx.Tx) (bool, error) {
		key := []any{a.ServerID, a.Tool}
		os, err := observations(ctx, tx, whereKey, key)
		if err != nil {
			return false, err
		}
		var o *toolstate.Observation
		if len(os) > 0 {
			o = &os[0]
		}
		b, err := toolstate.ApprovedBaseline(a, o)
		if err != nil {
			return false, err
		}
		out = toolstate.Approved{Baseline: b}
		prev, err := baselines(ctx, tx, whereKey, key)
		if err != nil {
			return false, err
		}
		if len(prev) > 0 {
			out.Previous = &prev[0]
		}
		lifted, err := quarantines(ctx, tx, whereKey+" AND automatic", key)
		if err != nil {
			return false, err
		}
		if len(lifted) > 0 {
			out.Released = &lifted[0]
		}
		if _, err := tx.Exec(ctx, upsertBaseline, baselineArgs(b)...); err != nil {
			return false, fmt.Errorf("tool_baselines: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE tool_observations SET severity = $3, changes = '{}'`+whereKey, a.ServerID, a.Tool, toolstate.SeverityNone); err != nil {
			return false, fmt.Errorf("tool_observations: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM tool_quarantines`+whereKey+` AND automatic`, key...); err != nil {
			return false, fmt.Errorf("tool_quarantines: %w", err)
		}
		return true, nil
	})
	if err != nil {
		return toolstate.Approved{}, err
	}
	return out, nil
}

// Hold implements toolstate.Store.
func (s *store) Hold(ctx context.Context, q toolstate.Quarantine) error {
	q, err := toolstate.PrepareHold(q, time.Now())
	if err != nil {
		return err
	}
	return s.write(ctx, fmt.Sprintf("quarantining tool %q of server %q", q.Tool, q.ServerID), func(ctx context.Context, tx pgx.Tx) (bool, error) {
		tag, err := tx.Exec(ctx, `INSERT INTO tool_quarantines (server_id, tool, definition_hash, automatic, severity, changes, quarantined_by, rule, reason, quarantined_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
			ON CONFLICT (server_id, tool) DO UPDATE SET definition_hash = excluded.definition_hash, automatic = excluded.automatic,
			severity = excluded.severity, changes = excluded.changes, quarantined_by = excluded.quarantined_by,
			rule = excluded.rule, reason = excluded.reason, quarantined_at = excluded.quarantined_at
			WHERE tool_quarantines.automatic OR NOT excluded.automatic`,
			q.ServerID, q.Tool, q.Hash, q.Automatic, q.Severity, changes(q.Changes), q.By, q.Rule, q.Reason, q.At)
		if err != nil {
			return false, fmt.Errorf("tool_quarantines: %w", err)
		}
		return tag.RowsAffected() > 0, nil // 0: a person's hold stays
	})
}

// Release implements toolstate.Store.
func (s *store) Release(ctx context.Context, serverID, tool string) (toolstate.Quarantine, error) {
	var q toolstate.Quarantine
	err := s.write(ctx, fmt.Sprintf("releasing tool %q of server %q", tool, serverID), func(ctx context.Context, tx pgx.Tx) (bool, error) {
		rs, err := tx.Query(ctx, `DELETE FROM tool_quarantines`+whereKey+` RETURNING `+quarantineColumns, serverID, tool)
		if err != nil {
			return false, fmt.Errorf("tool_quarantines: %w", err)
		}
		qs, err := pgx.CollectRows(rs, scanQuarantine)
		if err != nil {
			return false, fmt.Errorf("tool_quarantines: %w", err)
		}
		if len(qs) == 0 {
			return false, fmt.Errorf("tool %q of server %q: %w", tool, serverID, toolstate.ErrNotQuarantined)
		}
		q = qs[0]
		return true, nil
	})
	if err != nil {
		return toolstate.Quarantine{}, err
	}
	return q, nil
}

// Version implements toolstate.Store: the version row of
// tool_state_meta, grown by every write transaction that changed
// something, whichever gateway made it.
func (s *store) Version(ctx context.Context) (int64, error) {
	if !s.enter() {
		return 0, toolstate.ErrClosed
	}
	defer s.mu.RUnlock()
	var v int64
	if err := s.pool.QueryRow(ctx, `SELECT value FROM tool_state_meta WHERE key = 'version'`).Scan(&v); err != nil {
		return 0, s.wrap("reading the version", err)
	}
	return v, nil
}

// Close implements toolstate.Store: it closes the connection pool, after
// the calls in progress.
func (s *store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		s.pool.Close()
	}
	return nil
}
