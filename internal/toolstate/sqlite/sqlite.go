// Package sqlite is the tool-state store's SQLite backend: a
// toolstate.Store in the audit ledger's database file (the --state path),
// in tables of its own (tool_baselines, tool_observations,
// tool_quarantines, tool_state_meta), opened as the ledger opens the file
// (internal/ledger/sqlite.OpenDB: WAL, synchronous=FULL, the file 0600,
// writers taking turns with the ledger's through the flock on
// path+"-lock"). See docs/drift.md, "Storage". It passes
// internal/toolstate/storetest.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	ledgersqlite "github.com/gatehouse-mcp/gatehouse/internal/ledger/sqlite"
	"github.com/gatehouse-mcp/gatehouse/internal/toolstate"
	"github.com/gatehouse-mcp/gatehouse/internal/toolstate/internal/rows"
)

// SchemaVersion is the version of the tables this package reads and
// writes, recorded in tool_state_meta under the key "schema". Open refuses
// a file recording a later one.
const SchemaVersion = 1

// schema creates the tables when missing. Column names are the JSON names
// of the toolstate fields. Times are RFC 3339 text in UTC with up to
// microseconds; changes a JSON array of strings.
const schema = `
CREATE TABLE IF NOT EXISTS tool_state_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS tool_baselines (
	server_id TEXT NOT NULL,
	tool TEXT NOT NULL,
	definition_hash TEXT NOT NULL,
	definition BLOB NOT NULL,
	origin TEXT NOT NULL,
	approved_by TEXT NOT NULL,
	reason TEXT NOT NULL,
	approved_at TEXT NOT NULL,
	PRIMARY KEY (server_id, tool)
);
CREATE TABLE IF NOT EXISTS tool_observations (
	server_id TEXT NOT NULL,
	tool TEXT NOT NULL,
	definition_hash TEXT NOT NULL,
	definition BLOB,
	removed INTEGER NOT NULL,
	severity TEXT NOT NULL,
	changes TEXT NOT NULL,
	observed_by TEXT NOT NULL,
	observed_at TEXT NOT NULL,
	PRIMARY KEY (server_id, tool)
);
CREATE TABLE IF NOT EXISTS tool_quarantines (
	server_id TEXT NOT NULL,
	tool TEXT NOT NULL,
	definition_hash TEXT NOT NULL,
	automatic INTEGER NOT NULL,
	severity TEXT NOT NULL,
	changes TEXT NOT NULL,
	quarantined_by TEXT NOT NULL,
	rule TEXT NOT NULL,
	reason TEXT NOT NULL,
	quarantined_at TEXT NOT NULL,
	PRIMARY KEY (server_id, tool)
);
`

// initMeta records the schema version and starts the version counter in
// a new file.
const initMeta = `INSERT INTO tool_state_meta (key, value) VALUES ('schema', ?), ('version', 0) ON CONFLICT (key) DO NOTHING`

// Open opens the tool-state store in the SQLite file at path (created,
// with its directory, when missing, as the ledger creates it), creating
// its tables when they are missing, whether or not the ledger's are there.
// Errors: the file cannot be created or opened, or it records a tool-state
// schema later than SchemaVersion.
func Open(ctx context.Context, path string) (toolstate.Store, error) {
	db, err := ledgersqlite.OpenDB(path)
	if err != nil {
		return nil, fmt.Errorf("toolstate: %w", err)
	}
	s := &store{db: db}
	err = db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, schema); err != nil {
			return fmt.Errorf("creating the tool-state tables: %w", err)
		}
		if _, err := tx.ExecContext(ctx, initMeta, SchemaVersion); err != nil {
			return fmt.Errorf("creating the tool-state tables: %w", err)
		}
		var v int64
		if err := tx.QueryRowContext(ctx, `SELECT value FROM tool_state_meta WHERE key = 'schema'`).Scan(&v); err != nil {
			return fmt.Errorf("reading the tool-state schema version: %w", err)
		}
		if v > SchemaVersion {
			return fmt.Errorf("the tool-state tables are schema %d, later than this gatehouse's %d: upgrade gatehouse", v, SchemaVersion)
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("toolstate: %s: %w", db.Path, err)
	}
	return s, nil
}

type store struct {
	db *ledgersqlite.DB
	// mu is held shared by every call and exclusively by Close, so
	// that Close waits for the calls in progress and none starts after.
	mu     sync.RWMutex
	closed bool
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
	return fmt.Errorf("toolstate: %s: %s: %w", s.db.Path, what, err)
}

// queryer is what *sql.DB and *sql.Tx have in common.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Tools implements toolstate.Store.
func (s *store) Tools(ctx context.Context, serverID string) ([]toolstate.ToolState, error) {
	if !s.enter() {
		return nil, toolstate.ErrClosed
	}
	defer s.mu.RUnlock()
	where, args := "", []any(nil)
	if serverID != "" {
		where, args = " WHERE server_id = ?", []any{serverID}
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
	out, err := s.read(ctx, " WHERE server_id = ? AND tool = ?", []any{serverID, tool})
	if err != nil {
		return toolstate.ToolState{}, s.wrap(fmt.Sprintf("reading tool %q of server %q", tool, serverID), err)
	}
	if len(out) == 0 {
		return toolstate.ToolState{}, fmt.Errorf("tool %q of server %q: %w", tool, serverID, toolstate.ErrNotFound)
	}
	return out[0], nil
}

// read reads the rows of the three tables matching where in one read
// transaction (one snapshot).
func (s *store) read(ctx context.Context, where string, args []any) ([]toolstate.ToolState, error) {
	tx, err := s.db.RO.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	bs, err := baselines(ctx, tx, where, args)
	if err != nil {
		return nil, err
	}
	os, err := observations(ctx, tx, where, args)
	if err != nil {
		return nil, err
	}
	qs, err := quarantines(ctx, tx, where, args)
	if err != nil {
		return nil, err
	}
	return rows.Collect(bs, os, qs), nil
}

const baselineColumns = `server_id, tool, definition_hash, definition, origin, approved_by, reason, approved_at`

func baselines(ctx context.Context, q queryer, where string, args []any) ([]toolstate.Baseline, error) {
	rs, err := q.QueryContext(ctx, `SELECT `+baselineColumns+` FROM tool_baselines`+where, args...)
	if err != nil {
		return nil, fmt.Errorf("tool_baselines: %w", err)
	}
	defer rs.Close()
	var out []toolstate.Baseline
	for rs.Next() {
		var b toolstate.Baseline
		var at string
		if err := rs.Scan(&b.ServerID, &b.Tool, &b.Hash, &b.Definition, &b.Origin, &b.By, &b.Reason, &at); err != nil {
			return nil, fmt.Errorf("tool_baselines: %w", err)
		}
		if b.At, err = parseTime(at); err != nil {
			return nil, fmt.Errorf("tool_baselines: tool %q of server %q: %w", b.Tool, b.ServerID, err)
		}
		out = append(out, b)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("tool_baselines: %w", err)
	}
	return out, nil
}

func observations(ctx context.Context, q queryer, where string, args []any) ([]toolstate.Observation, error) {
	rs, err := q.QueryContext(ctx, `SELECT server_id, tool, definition_hash, definition, removed, severity, changes, observed_by, observed_at FROM tool_observations`+where, args...)
	if err != nil {
		return nil, fmt.Errorf("tool_observations: %w", err)
	}
	defer rs.Close()
	var out []toolstate.Observation
	for rs.Next() {
		var o toolstate.Observation
		var changes, at string
		if err := rs.Scan(&o.ServerID, &o.Tool, &o.Hash, &o.Definition, &o.Removed, &o.Severity, &changes, &o.By, &at); err != nil {
			return nil, fmt.Errorf("tool_observations: %w", err)
		}
		if o.Changes, err = rows.DecodeChanges(changes); err == nil {
			o.At, err = parseTime(at)
		}
		if err != nil {
			return nil, fmt.Errorf("tool_observations: tool %q of server %q: %w", o.Tool, o.ServerID, err)
		}
		if len(o.Definition) == 0 {
			o.Definition = nil
		}
		out = append(out, o)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("tool_observations: %w", err)
	}
	return out, nil
}

func quarantines(ctx context.Context, q queryer, where string, args []any) ([]toolstate.Quarantine, error) {
	rs, err := q.QueryContext(ctx, `SELECT server_id, tool, definition_hash, automatic, severity, changes, quarantined_by, rule, reason, quarantined_at FROM tool_quarantines`+where, args...)
	if err != nil {
		return nil, fmt.Errorf("tool_quarantines: %w", err)
	}
	defer rs.Close()
	var out []toolstate.Quarantine
	for rs.Next() {
		var h toolstate.Quarantine
		var changes, at string
		if err := rs.Scan(&h.ServerID, &h.Tool, &h.Hash, &h.Automatic, &h.Severity, &changes, &h.By, &h.Rule, &h.Reason, &at); err != nil {
			return nil, fmt.Errorf("tool_quarantines: %w", err)
		}
		if h.Changes, err = rows.DecodeChanges(changes); err == nil {
			h.At, err = parseTime(at)
		}
		if err != nil {
			return nil, fmt.Errorf("tool_quarantines: tool %q of server %q: %w", h.Tool, h.ServerID, err)
		}
		out = append(out, h)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("tool_quarantines: %w", err)
	}
	return out, nil
}

// formatTime and parseTime convert the stored times (RFC 3339, UTC).
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored time: %w", err)
	}
	return t.UTC(), nil
}

// write runs f in a write transaction; f returns whether it changed
// anything, and the version grows when it did.
func (s *store) write(ctx context.Context, what string, f func(ctx context.Context, tx *sql.Tx) (bool, error)) error {
	if !s.enter() {
		return toolstate.ErrClosed
	}
	defer s.mu.RUnlock()
	var ferr error // f's own error, returned as it is (ErrChanged, ...)
	err := s.db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		changed, err := f(ctx, tx)
		if err != nil {
			ferr = err
			return err
		}
		if changed {
			if _, err := tx.ExecContext(ctx, `UPDATE tool_state_meta SET value = value + 1 WHERE key = 'version'`); err != nil {
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

const insertBaseline = `INSERT INTO tool_baselines (` + baselineColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`

const upsertBaseline = insertBaseline + `
	ON CONFLICT (server_id, tool) DO UPDATE SET definition_hash = excluded.definition_hash, definition = excluded.definition,
	origin = excluded.origin, approved_by = excluded.approved_by, reason = excluded.reason, approved_at = excluded.approved_at`

func baselineArgs(b toolstate.Baseline) []any {
	return []any{b.ServerID, b.Tool, b.Hash, b.Definition, b.Origin, b.By, b.Reason, formatTime(b.At)}
}

// FirstUse implements toolstate.Store.
func (s *store) FirstUse(ctx context.Context, b toolstate.Baseline) (toolstate.Baseline, bool, error) {
	b, err := toolstate.PrepareFirstUse(b, time.Now())
	if err != nil {
		return toolstate.Baseline{}, false, err
	}
	var got toolstate.Baseline
	var won bool
	err = s.write(ctx, fmt.Sprintf("first use of tool %q of server %q", b.Tool, b.ServerID), func(ctx context.Context, tx *sql.Tx) (bool, error) {
		bs, err := baselines(ctx, tx, " WHERE server_id = ? AND tool = ?", []any{b.ServerID, b.Tool})
		if err != nil {
			return false, err
		}
		if len(bs) > 0 {
			got = bs[0]
			return false, nil
		}
		// DO NOTHING: even were the transaction not exclusive, a baseline
		// already there would stay.
		res, err := tx.ExecContext(ctx, insertBaseline+` ON CONFLICT (server_id, tool) DO NOTHING`, baselineArgs(b)...)
		if err != nil {
			return false, fmt.Errorf("tool_baselines: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return false, fmt.Errorf("tool_baselines: a baseline appeared during the transaction (%d rows, %v)", n, err)
		}
		got, won = b, true
		return true, nil
	})
	if err != nil {
		return toolstate.Baseline{}, false, err
	}
	return got, won, nil
}

const upsertObservation = `INSERT INTO tool_observations (server_id, tool, definition_hash, definition, removed, severity, changes, observed_by, observed_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (server_id, tool) DO UPDATE SET definition_hash = excluded.definition_hash, definition = excluded.definition,
	removed = excluded.removed, severity = excluded.severity, changes = excluded.changes,
	observed_by = excluded.observed_by, observed_at = excluded.observed_at`

// Observe implements toolstate.Store.
func (s *store) Observe(ctx context.Context, obs []toolstate.Observation) error {
	obs, err := toolstate.PrepareObservations(obs, time.Now())
	if err != nil {
		return err
	}
	if len(obs) == 0 {
		return nil
	}
	return s.write(ctx, fmt.Sprintf("recording %d observations", len(obs)), func(ctx context.Context, tx *sql.Tx) (bool, error) {
		st, err := tx.PrepareContext(ctx, upsertObservation)
		if err != nil {
			return false, fmt.Errorf("tool_observations: %w", err)
		}
		defer st.Close()
		for _, o := range obs {
			if _, err := st.ExecContext(ctx, o.ServerID, o.Tool, o.Hash, o.Definition, o.Removed, o.Severity,
				rows.EncodeChanges(o.Changes), o.By, formatTime(o.At)); err != nil {
				return false, fmt.Errorf("tool_observations: tool %q of server %q: %w", o.Tool, o.ServerID, err)
			}
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
	err = s.write(ctx, fmt.Sprintf("approving tool %q of server %q", a.Tool, a.ServerID), func(ctx context.Context, tx *sql.Tx) (bool, error) {
		key := []any{a.ServerID, a.Tool}
		os, err := observations(ctx, tx, " WHERE server_id = ? AND tool = ?", key)
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
		prev, err := baselines(ctx, tx, " WHERE server_id = ? AND tool = ?", key)
		if err != nil {
			return false, err
		}
		if len(prev) > 0 {
			out.Previous = &prev[0]
		}
		lifted, err := quarantines(ctx, tx, " WHERE server_id = ? AND tool = ? AND automatic", key)
		if err != nil {
			return false, err
		}
		if len(lifted) > 0 {
			out.Released = &lifted[0]
		}
		if _, err := tx.ExecContext(ctx, upsertBaseline, baselineArgs(b)...); err != nil {
			return false, fmt.Errorf("tool_baselines: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tool_observations SET severity = ?, changes = '[]' WHERE server_id = ? AND tool = ?`,
			toolstate.SeverityNone, a.ServerID, a.Tool); err != nil {
			return false, fmt.Errorf("tool_observations: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM tool_quarantines WHERE server_id = ? AND tool = ? AND automatic`, key...); err != nil {
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
	return s.write(ctx, fmt.Sprintf("quarantining tool %q of server %q", q.Tool, q.ServerID), func(ctx context.Context, tx *sql.Tx) (bool, error) {
		res, err := tx.ExecContext(ctx, `INSERT INTO tool_quarantines (server_id, tool, definition_hash, automatic, severity, changes, quarantined_by, rule, reason, quarantined_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (server_id, tool) DO UPDATE SET definition_hash = excluded.definition_hash, automatic = excluded.automatic,
			severity = excluded.severity, changes = excluded.changes, quarantined_by = excluded.quarantined_by,
			rule = excluded.rule, reason = excluded.reason, quarantined_at = excluded.quarantined_at
			WHERE tool_quarantines.automatic OR NOT excluded.automatic`,
			q.ServerID, q.Tool, q.Hash, q.Automatic, q.Severity, rows.EncodeChanges(q.Changes), q.By, q.Rule, q.Reason, formatTime(q.At))
		if err != nil {
			return false, fmt.Errorf("tool_quarantines: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return false, fmt.Errorf("tool_quarantines: %w", err)
		}
		return n > 0, nil // 0: a person's hold stays
	})
}

// Release implements toolstate.Store.
func (s *store) Release(ctx context.Context, serverID, tool string) (toolstate.Quarantine, error) {
	var q toolstate.Quarantine
	err := s.write(ctx, fmt.Sprintf("releasing tool %q of server %q", tool, serverID), func(ctx context.Context, tx *sql.Tx) (bool, error) {
		key := []any{serverID, tool}
		qs, err := quarantines(ctx, tx, " WHERE server_id = ? AND tool = ?", key)
		if err != nil {
			return false, err
		}
		if len(qs) == 0 {
			return false, fmt.Errorf("tool %q of server %q: %w", tool, serverID, toolstate.ErrNotQuarantined)
		}
		q = qs[0]
		if _, err := tx.ExecContext(ctx, `DELETE FROM tool_quarantines WHERE server_id = ? AND tool = ?`, key...); err != nil {
			return false, fmt.Errorf("tool_quarantines: %w", err)
		}
		return true, nil
	})
	if err != nil {
		return toolstate.Quarantine{}, err
	}
	return q, nil
}

// Version implements toolstate.Store: the version row of
// tool_state_meta, grown by every write transaction that changed
// something.
func (s *store) Version(ctx context.Context) (int64, error) {
	if !s.enter() {
		return 0, toolstate.ErrClosed
	}
	defer s.mu.RUnlock()
	var v int64
	if err := s.db.RO.QueryRowContext(ctx, `SELECT value FROM tool_state_meta WHERE key = 'version'`).Scan(&v); err != nil {
		return 0, s.wrap("reading the version", err)
	}
	return v, nil
}

// Close implements toolstate.Store, after the calls in progress.
func (s *store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("toolstate: %s: closing: %w", s.db.Path, err)
	}
	return nil
}
