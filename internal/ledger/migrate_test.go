package ledger_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger/backends"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger/postgres"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger/sqlite"
	"github.com/jackc/pgx/v5"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
	_ "modernc.org/sqlite"
)

// The schema of gatehouse before blocks (schema 1), verbatim: one row per
// entry and per stored hash.
const (
	schema1SQLite = `
CREATE TABLE ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE ledger_entries (seq INTEGER PRIMARY KEY, leaf BLOB NOT NULL);
CREATE TABLE ledger_hashes (idx INTEGER PRIMARY KEY, hash BLOB NOT NULL);
CREATE TABLE ledger_checkpoints (id INTEGER PRIMARY KEY AUTOINCREMENT, size INTEGER NOT NULL, note BLOB NOT NULL, created TEXT NOT NULL);
CREATE INDEX ledger_checkpoints_size ON ledger_checkpoints (size, id);`
	schema1Postgres = `
CREATE TABLE ledger_meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE ledger_entries (seq bigint PRIMARY KEY, leaf bytea NOT NULL);
CREATE TABLE ledger_hashes (idx bigint PRIMARY KEY, hash bytea NOT NULL);
CREATE TABLE ledger_checkpoints (id bigserial PRIMARY KEY, size bigint NOT NULL, note bytea NOT NULL, created timestamptz NOT NULL);
CREATE INDEX ledger_checkpoints_size ON ledger_checkpoints (size, id);`
)

// oldLedger is the content of a ledger as a schema-1 store holds it.
type oldLedger struct {
	leaves [][]byte
	hashes []tlog.Hash
	cps    []ledger.StoredCheckpoint
}

// makeOldLedger appends n entries to a memory ledger "old" signed with the
// test key (checkpoints every 100) and returns its leaves, hashes and
// checkpoints.
func makeOldLedger(t *testing.T, n int) oldLedger {
	t.Helper()
	ctx := context.Background()
	signer, err := note.NewSigner(testSignerKey)
	if err != nil {
		t.Fatal(err)
	}
	mem := ledger.NewMemStore()
	l, err := ledger.New(ctx, &memHandle{s: mem}, ledger.Options{LedgerID: "old", Signer: signer, CheckpointEveryN: 100, CheckpointEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := l.Append(ctx, ledger.KindAuditEvent, fmt.Sprintf("old-%d", i), fmt.Appendf(nil, `{"i":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var o oldLedger
	if err := mem.Leaves(ctx, 0, int64(n), func(_ int64, leaf []byte) error {
		o.leaves = append(o.leaves, bytes.Clone(leaf))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	idx := make([]int64, tlog.StoredHashCount(int64(n)))
	for i := range idx {
		idx[i] = int64(i)
	}
	if o.hashes, err = mem.ReadHashes(ctx, idx); err != nil {
		t.Fatal(err)
	}
	if o.cps, err = mem.Checkpoints(ctx); err != nil {
		t.Fatal(err)
	}
	return o
}

func testVerifiers(t *testing.T) note.Verifiers {
	v, err := note.NewVerifier(testVerifierKey)
	if err != nil {
		t.Fatal(err)
	}
	return note.VerifierList(v)
}

// checkStore verifies s and checks that it holds exactly o's leaves and
// hashes (the first len(o.leaves) entries) and its checkpoints.
func checkStore(t *testing.T, s ledger.Store, o oldLedger, size int64) *ledger.Report {
	t.Helper()
	ctx := context.Background()
	rep, err := ledger.Verify(ctx, s, ledger.VerifyOptions{Verifiers: testVerifiers(t)})
	if err != nil || rep.Problem != nil || rep.Size != size || rep.Verified != size || rep.LedgerID != "old" {
		t.Fatalf("Verify: %+v, %v; want %d entries of ledger old verified", rep, err, size)
	}
	if rep.Checkpoints < len(o.cps) {
		t.Fatalf("Verify: %d checkpoints, want at least %d", rep.Checkpoints, len(o.cps))
	}
	i := 0
	if err := s.Leaves(ctx, 0, int64(len(o.leaves)), func(seq int64, leaf []byte) error {
		if seq != int64(i) || !bytes.Equal(leaf, o.leaves[i]) {
			return fmt.Errorf("entry %d: stored %q, want entry %d %q", seq, leaf, i, o.leaves[i])
		}
		i++
		return nil
	}); err != nil || i != len(o.leaves) {
		t.Fatalf("Leaves: %d entries, %v", i, err)
	}
	idx := make([]int64, len(o.hashes))
	for i := range idx {
		idx[i] = int64(i)
	}
	got, err := s.ReadHashes(ctx, idx)
	if err != nil {
		t.Fatalf("ReadHashes: %v", err)
	}
	for i := range got {
		if got[i] != o.hashes[i] {
			t.Fatalf("stored hash %d changed", i)
		}
	}
	return rep
}

// writeOldSQLite creates a schema-1 SQLite file at path holding o.
func writeOldSQLite(t *testing.T, path string, o oldLedger) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	mustExec(t, db, schema1SQLite)
	mustExec(t, db, `INSERT INTO ledger_meta (key, value) VALUES ('ledger_id', 'old'), ('schema', '1')`)
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for seq, leaf := range o.leaves {
		if _, err := tx.Exec(`INSERT INTO ledger_entries (seq, leaf) VALUES (?, ?)`, seq, leaf); err != nil {
			t.Fatal(err)
		}
	}
	for idx, h := range o.hashes {
		if _, err := tx.Exec(`INSERT INTO ledger_hashes (idx, hash) VALUES (?, ?)`, idx, h[:]); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range o.cps {
		if _, err := tx.Exec(`INSERT INTO ledger_checkpoints (size, note, created) VALUES (?, ?, ?)`, c.Size, c.Note, c.Created.UTC().Format(time.RFC3339Nano)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return db
}

func mustExec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// sqliteObjects returns the type of each ledger_ table or view in db.
func sqliteObjects(t *testing.T, db *sql.DB) map[string]string {
	t.Helper()
	rows, err := db.Query(`SELECT name, type FROM sqlite_master WHERE name LIKE 'ledger_%' AND type IN ('table', 'view')`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var n, typ string
		if err := rows.Scan(&n, &typ); err != nil {
			t.Fatal(err)
		}
		out[n] = typ
	}
	return out
}

// A SQLite ledger from before blocks (schema 1) is read as it is when
// opened read-only, and migrated to blocks by the first read-write open,
// in one transaction: the same bytes (so it verifies, with the same
// checkpoints), schema 2 recorded, the old tables replaced by views that
// make a gatehouse from before blocks fail instead of writing a second
// chain, and appends continue the chain.
func TestSQLiteMigrateSchema1(t *testing.T) {
	ctx := context.Background()
	o := makeOldLedger(t, 600)
	path := filepath.Join(t.TempDir(), "ledger.db")
	raw := writeOldSQLite(t, path, o)

	ro, err := sqlite.Open(ctx, path, true)
	if err != nil {
		t.Fatal(err)
	}
	checkStore(t, ro, o, 600)
	ro.Close()
	if got := sqliteObjects(t, raw); got["ledger_entries"] != "table" || got["ledger_blocks"] != "" {
		t.Fatalf("a read-only open changed the file: %v", got)
	}

	signer, _ := note.NewSigner(testSignerKey)
	l, err := backends.Open(ctx, path, ledger.Options{Signer: signer})
	if err != nil {
		t.Fatalf("Open of a schema-1 file: %v", err)
	}
	if l.ID() != "old" {
		t.Fatalf("ID() = %q after migration", l.ID())
	}
	got := sqliteObjects(t, raw)
	if got["ledger_entries"] != "view" || got["ledger_hashes"] != "view" || got["ledger_blocks"] != "table" || got["ledger_hash_blocks"] != "table" {
		t.Fatalf("after migration: %v", got)
	}
	var schema string
	var blocks, hblocks int
	if err := raw.QueryRow(`SELECT (SELECT value FROM ledger_meta WHERE key = 'schema'), (SELECT count(*) FROM ledger_blocks), (SELECT count(*) FROM ledger_hash_blocks)`).Scan(&schema, &blocks, &hblocks); err != nil {
		t.Fatal(err)
	}
	if schema != "2" || blocks != 3 || hblocks != 3 { // runs of at most 256 entries and 512 hashes
		t.Fatalf("after migration: schema %q, %d blocks, %d hash blocks; want 2, 3, 3", schema, blocks, hblocks)
	}
	// A gatehouse from before blocks: its CREATE TABLE IF NOT EXISTS
	// changes nothing, and its reads and writes fail, saying why.
	mustExec(t, raw, `CREATE TABLE IF NOT EXISTS ledger_entries (seq INTEGER PRIMARY KEY, leaf BLOB NOT NULL)`)
	for _, q := range []string{`SELECT coalesce(max(seq) + 1, 0) FROM ledger_entries`, `INSERT INTO ledger_entries (seq, leaf) VALUES (600, x'00')`, `SELECT hash FROM ledger_hashes WHERE idx = 0`} {
		if _, err := raw.Exec(q); err == nil || !strings.Contains(err.Error(), "upgrade gatehouse") {
			t.Fatalf("%s on a migrated ledger: %v, want the tombstone's message", q, err)
		}
	}

	e, err := l.Append(ctx, ledger.KindSession, "after-migration", []byte(`{"ok":true}`))
	if err != nil || e.Seq != 600 || e.PreviousHash != chainHashOf(o.leaves[599]) {
		t.Fatalf("Append after migration: seq %d previous %s, %v", e.Seq, e.PreviousHash, err)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Reopening migrates nothing more.
	l, err = backends.Open(ctx, path, ledger.Options{})
	if err != nil {
		t.Fatalf("second Open: %v", err)
	}
	l.Close(ctx)
	ro, err = sqlite.Open(ctx, path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if rep := checkStore(t, ro, o, 601); rep.Latest == nil || rep.Latest.Size != 601 {
		t.Fatalf("latest checkpoint %+v, want size 601", rep.Latest)
	}
}

func chainHashOf(leaf []byte) string {
	e, err := ledger.ParseLeaf(leaf)
	if err != nil {
		return err.Error()
	}
	return e.Hash()
}

// A damaged schema-1 file (a leaf with a line feed, a hash that is not 32
// bytes) cannot be stored as blocks: the read-write open fails naming the
// file, the entry or hash, and what to do, and leaves the file as it was;
// read-only verification still names the damage. A file with an entry
// missing is migrated as it is, and verification names the same entry
// before and after.
func TestSQLiteMigrateSchema1Damaged(t *testing.T) {
	ctx := context.Background()
	o := makeOldLedger(t, 20)
	for _, tc := range []struct {
		name    string
		damage  string
		args    []any
		openErr string // "" : the migration succeeds
		seq     int64
	}{
		{"leaf with a line feed", `UPDATE ledger_entries SET leaf = ? WHERE seq = 7`, []any{append(bytes.Clone(o.leaves[7]), '\n')}, "entry 7 contains a line feed", 7},
		{"short hash", `UPDATE ledger_hashes SET hash = x'0011' WHERE idx = 12`, nil, "stored hash 12 has 2 bytes", 7},
		{"entry missing", `DELETE FROM ledger_entries WHERE seq = 9`, nil, "", 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ledger.db")
			raw := writeOldSQLite(t, path, o)
			mustExec(t, raw, tc.damage, tc.args...)
			problem := func() *ledger.Problem {
				t.Helper()
				ro, err := sqlite.Open(ctx, path, true)
				if err != nil {
					t.Fatal(err)
				}
				defer ro.Close()
				rep, err := ledger.Verify(ctx, ro, ledger.VerifyOptions{Verifiers: testVerifiers(t)})
				if err != nil || rep.Problem == nil || rep.Problem.Seq != tc.seq {
					t.Fatalf("Verify: %+v, %v; want a problem at entry %d", rep, err, tc.seq)
				}
				return rep.Problem
			}
			before := problem()
			l, err := backends.Open(ctx, path, ledger.Options{})
			if tc.openErr == "" {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				l.Close(ctx)
				if after := problem(); *after != *before {
					t.Fatalf("after migration Verify reports %v, before %v", after, before)
				}
				return
			}
			if err == nil {
				l.Close(ctx)
				t.Fatal("Open of a damaged schema-1 file succeeded")
			}
			for _, want := range []string{path, tc.openErr, "gatehouse ledger verify"} {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("Open: %v; want it to say %q", err, want)
				}
			}
			t.Logf("refused: %v", err)
			if got := sqliteObjects(t, raw); got["ledger_entries"] != "table" || got["ledger_blocks"] != "" {
				t.Fatalf("a failed migration changed the file: %v", got)
			}
			problem()
		})
	}
}

// A ledger written in both layouts (an old gatehouse that found no
// tombstone wrote rows beside the blocks) and one from a newer gatehouse
// are refused, read-only and read-write, saying so.
func TestSQLiteRefusedLayouts(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		damage []string
		want   string
	}{
		{"both layouts", []string{`DROP VIEW ledger_entries`, `DROP VIEW ledger_hashes`, schema1SQLite[strings.Index(schema1SQLite, "CREATE TABLE ledger_entries"):strings.Index(schema1SQLite, "CREATE TABLE ledger_checkpoints")],
			`INSERT INTO ledger_entries (seq, leaf) VALUES (0, x'7b7d')`}, "both"},
		{"newer schema", []string{`UPDATE ledger_meta SET value = '3' WHERE key = 'schema'`}, "newer gatehouse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ledger.db")
			l, err := backends.Open(ctx, path, ledger.Options{LedgerID: "refused"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Append(ctx, ledger.KindSession, "s", []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
			l.Close(ctx)
			raw, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			for _, q := range tc.damage {
				mustExec(t, raw, q)
			}
			if l, err := backends.Open(ctx, path, ledger.Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
				if err == nil {
					l.Close(ctx)
				}
				t.Fatalf("read-write Open: %v, want %q", err, tc.want)
			}
			ro, err := sqlite.Open(ctx, path, true)
			if err != nil {
				t.Fatal(err)
			}
			defer ro.Close()
			if _, err := ro.Init(ctx, ""); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("read-only Init: %v, want %q and the path", err, tc.want)
			}
		})
	}
}

// The same migration in PostgreSQL, where replicas share the database: a
// schema-1 writer that holds the lock row while a new replica starts loses
// nothing (the migration waits for it, then copies its entry too), two
// replicas starting together migrate once, and the old tables become views
// that fail with the reason.
func TestPostgresMigrateSchema1(t *testing.T) {
	dsn := postgresSchemaDSN(t)
	open := func() ledger.Store {
		s, err := postgres.Open(context.Background(), dsn, false)
		if err != nil {
			t.Fatalf("OpenPostgres: %v", err)
		}
		return s
	}
	ctx := context.Background()
	o := makeOldLedger(t, 300)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(schema1Postgres)
	exec(`INSERT INTO ledger_meta (key, value) VALUES ('ledger_id', 'old'), ('schema', '1')`)
	last := len(o.leaves) - 1 // written by the "old writer" below
	for seq, leaf := range o.leaves[:last] {
		exec(`INSERT INTO ledger_entries (seq, leaf) VALUES ($1, $2)`, seq, leaf)
	}
	lastHashes := tlog.StoredHashCount(int64(last))
	for idx, h := range o.hashes[:lastHashes] {
		exec(`INSERT INTO ledger_hashes (idx, hash) VALUES ($1, $2)`, idx, h[:])
	}
	for _, c := range o.cps {
		exec(`INSERT INTO ledger_checkpoints (size, note, created) VALUES ($1, $2, $3)`, c.Size, c.Note, c.Created)
	}

	ro, err := postgres.Open(ctx, dsn, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Init(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if n, err := ro.Size(ctx); err != nil || n != int64(last) {
		t.Fatalf("read-only Size of the schema-1 database = %d, %v; want %d", n, err, last)
	}
	ro.Close()

	// The old writer: the lock row, then its entry, committed only after
	// the new replicas have started.
	oldTx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var id string
	if err := oldTx.QueryRow(ctx, `SELECT value FROM ledger_meta WHERE key = 'ledger_id' FOR UPDATE`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := oldTx.Exec(ctx, `INSERT INTO ledger_entries (seq, leaf) VALUES ($1, $2)`, last, o.leaves[last]); err != nil {
		t.Fatal(err)
	}
	for idx := lastHashes; idx < int64(len(o.hashes)); idx++ {
		if _, err := oldTx.Exec(ctx, `INSERT INTO ledger_hashes (idx, hash) VALUES ($1, $2)`, idx, o.hashes[idx][:]); err != nil {
			t.Fatal(err)
		}
	}
	type opened struct {
		l   *ledger.Ledger
		err error
	}
	results := make(chan opened, 2)
	for range 2 {
		go func() {
			l, err := ledger.New(ctx, open(), ledger.Options{})
			results <- opened{l, err}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	select {
	case r := <-results:
		t.Fatalf("a replica opened while the old writer held the lock: %v", r.err)
	default:
	}
	if err := oldTx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var replicas []*ledger.Ledger
	for range 2 {
		r := <-results
		if r.err != nil {
			t.Fatalf("replica: %v", r.err)
		}
		replicas = append(replicas, r.l)
	}
	for _, l := range replicas {
		if err := l.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	s := open()
	defer s.Close()
	checkStore(t, s, o, int64(len(o.leaves)))
	for _, q := range []string{`SELECT count(*) FROM ledger_entries`, `SELECT count(*) FROM ledger_hashes`} {
		var n int
		if err := conn.QueryRow(ctx, q).Scan(&n); err == nil || !strings.Contains(err.Error(), "upgrade gatehouse") {
			t.Fatalf("%s on a migrated ledger: %v, want the tombstone's message", q, err)
		}
	}
	if _, err := conn.Exec(ctx, `INSERT INTO ledger_entries (seq, leaf) VALUES (1000, '\x00')`); err == nil {
		t.Fatal("an insert into the tombstone view succeeded")
	}
	var schema string
	if err := conn.QueryRow(ctx, `SELECT value FROM ledger_meta WHERE key = 'schema'`).Scan(&schema); err != nil || schema != "2" {
		t.Fatalf("schema %q, %v; want 2", schema, err)
	}
}
