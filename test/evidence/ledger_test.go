package evidencee2e

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite" // to tamper with the ledger file
)

// runCalls runs one gatehouse session on the ledger state with the keyed
// receipt server and calls each tool once; it returns when gatehouse has
// exited cleanly (final checkpoint written).
func runCalls(t *testing.T, state, prefix string, tools ...string) {
	t.Helper()
	g := startGW(t, nil, []string{"--state", state, "--receipt-keys", writeKeysFile(t, t.TempDir()), "--server-id", keyedID}, receiptServer(keyedID))
	g.handshake()
	for i, tool := range tools {
		expectResult(t, g.call(fmt.Sprintf("%s%d", prefix, i), tool, `{"k":"v"}`), tool)
	}
	if code := g.finish(); code != 0 {
		t.Fatalf("gatehouse exited %d; stderr:\n%s", code, g.Tail())
	}
}

// verifyJSON is `gatehouse ledger verify --json`.
type verifyJSON struct {
	OK                bool  `json:"ok"`
	Size              int64 `json:"size"`
	Verified          int64 `json:"verified"`
	Checkpoints       int   `json:"checkpoints"`
	SignaturesChecked bool  `json:"signatures_checked"`
	OutcomeUnknown    int   `json:"outcome_unknown"`
	Latest            *struct {
		Size int64 `json:"size"`
	} `json:"latest_checkpoint"`
	Problem *struct {
		Seq    int64  `json:"seq"`
		Reason string `json:"reason"`
	} `json:"problem"`
}

func verifyReport(t testing.TB, state string) (verifyJSON, cliResult) {
	t.Helper()
	r := gh(t, "ledger", "verify", "--state", state, "--key", vkeyPath(), "--json")
	var v verifyJSON
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil {
		t.Fatalf("ledger verify --json printed %q (exit %d, stderr %q): %v", r.Stdout, r.Code, r.Stderr, err)
	}
	return v, r
}

// copyLedger copies a SQLite ledger (with its WAL, if any) into a new
// directory and returns the copy's path.
func copyLedger(t testing.TB, state string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "ledger.db")
	copyFile(t, state, dst)
	if _, err := os.Stat(state + "-wal"); err == nil {
		copyFile(t, state+"-wal", dst+"-wal")
	}
	return dst
}

// flipLeafByte flips the low bit of byte pos of the stored leaf of entry
// seq, directly in the SQLite file: in the block of leaves (one line each)
// that holds the entry (docs/ledger.md, "Storage").
func flipLeafByte(t testing.TB, state string, seq int64, pos int) (before, after byte) {
	t.Helper()
	db, err := sql.Open("sqlite", state)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var start int64
	var block []byte
	if err := db.QueryRow(`SELECT start, leaves FROM ledger_blocks WHERE start <= ? ORDER BY start DESC LIMIT 1`, seq).Scan(&start, &block); err != nil {
		t.Fatalf("read entry %d: %v", seq, err)
	}
	off := 0
	for i := start; i < seq; i++ {
		off += bytes.IndexByte(block[off:], '\n') + 1
	}
	before = block[off+pos]
	block[off+pos] ^= 0x01
	if _, err := db.Exec(`UPDATE ledger_blocks SET leaves = ? WHERE start = ?`, block, start); err != nil {
		t.Fatalf("write entry %d: %v", seq, err)
	}
	return before, block[off+pos]
}

// oneEntryPerBlock stores the leaves of the ledger open in db again as one
// block per entry (start = seq, count = 1), so that the row cases below
// delete, swap or truncate entries with one statement each.
func oneEntryPerBlock(t testing.TB, db *sql.DB) {
	t.Helper()
	rows, err := db.Query(`SELECT start, count, leaves FROM ledger_blocks ORDER BY start`)
	if err != nil {
		t.Fatal(err)
	}
	var leaves [][]byte
	for rows.Next() {
		var start, count int64
		var block []byte
		if err := rows.Scan(&start, &count, &block); err != nil {
			t.Fatal(err)
		}
		lines := bytes.SplitAfter(block, []byte("\n"))
		if start != int64(len(leaves)) || int64(len(lines)) != count+1 {
			t.Fatalf("block at %d (count %d) does not follow %d entries", start, count, len(leaves))
		}
		leaves = append(leaves, lines[:count]...)
	}
	rows.Close()
	if _, err := db.Exec(`DELETE FROM ledger_blocks`); err != nil {
		t.Fatal(err)
	}
	for seq, leaf := range leaves {
		if _, err := db.Exec(`INSERT INTO ledger_blocks (start, count, leaves) VALUES (?, 1, ?)`, seq, leaf); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLedgerVerifyTamperAndProofs: after a run the ledger verifies with the
// checkpoint key; one flipped byte anywhere in one stored leaf makes
// `ledger verify` exit 1 naming that entry; an inclusion proof verifies
// offline with only the .vkey and fails with another key; a consistency
// proof from a checkpoint saved earlier verifies after more calls.
func TestLedgerVerifyTamperAndProofs(t *testing.T) {
	t.Parallel()
	state := filepath.Join(t.TempDir(), "ledger.db")
	runCalls(t, state, "a", "signed_ok", "unsigned", "none", "bad_signature")
	entries := showJSON(t, state)
	n := int64(len(entries))
	if c := len(perCall(entries)); c != 4*2 {
		t.Fatalf("%d per-call entries after 4 forwarded calls, want 8", c)
	}
	rep, _ := verifyReport(t, state)
	if !rep.OK || rep.Size != n || rep.Verified != n || !rep.SignaturesChecked || rep.Checkpoints < 1 || rep.Problem != nil {
		t.Fatalf("ledger verify: %+v", rep)
	}
	if rep.Latest == nil || rep.Latest.Size != n {
		t.Errorf("after a clean exit the latest checkpoint covers %+v entries, want all %d", rep.Latest, n)
	}
	verifyLedger(t, state)

	t.Run("tamper", func(t *testing.T) {
		rng := rand.New(rand.NewSource(4))
		for _, seq := range []int64{0, n / 2, n - 1} {
			leaf := entries[seq].leaf
			positions := map[string]int{
				"first byte":    0,
				"last byte":     len(leaf) - 1,
				"kind":          strings.Index(leaf, `"kind":"`) + 9,
				"payload":       strings.Index(leaf, `"payload":{`) + 30,
				"previous_hash": strings.Index(leaf, `"previous_hash":"sha256:`) + 30,
				"record_id":     strings.Index(leaf, `"record_id":"`) + 14,
				"ledger_seq":    strings.Index(leaf, `"ledger_seq":`) + 13,
				"time":          strings.Index(leaf, `"time":"`) + 12,
			}
			for i := 0; i < 4; i++ {
				positions[fmt.Sprintf("random %d", i)] = rng.Intn(len(leaf))
			}
			for what, pos := range positions {
				t.Run(fmt.Sprintf("entry %d %s", seq, what), func(t *testing.T) {
					t.Parallel()
					cp := copyLedger(t, state)
					before, after := flipLeafByte(t, cp, seq, pos)
					rep, r := verifyReport(t, cp)
					if r.Code != 1 || rep.OK || rep.Problem == nil {
						t.Fatalf("byte %d of entry %d changed %q -> %q: ledger verify exit %d, report %+v", pos, seq, before, after, r.Code, rep)
					}
					if rep.Problem.Seq != seq {
						t.Errorf("byte %d of entry %d changed %q -> %q: verify names entry %d (%s)", pos, seq, before, after, rep.Problem.Seq, rep.Problem.Reason)
					}
					txt := gh(t, "ledger", "verify", "--state", cp, "--key", vkeyPath())
					if txt.Code != 1 || !strings.Contains(txt.Stdout+txt.Stderr, fmt.Sprintf("entry %d:", seq)) {
						t.Errorf("ledger verify (text) exit %d does not name entry %d:\n%s%s", txt.Code, seq, txt.Stdout, txt.Stderr)
					}
				})
			}
		}
	})

	t.Run("rows", func(t *testing.T) {
		mid := n / 2
		cases := []struct {
			name    string
			sql     string
			args    []any
			wantSeq int64 // -1: any problem
		}{
			{"middle entry deleted", `DELETE FROM ledger_blocks WHERE start = ?`, []any{mid}, mid},
			{"newest entry deleted", `DELETE FROM ledger_blocks WHERE start = ?`, []any{n - 1}, -1},
			{"two entries swapped", `UPDATE ledger_blocks SET leaves = CASE start WHEN ? THEN (SELECT leaves FROM ledger_blocks WHERE start = ?) ELSE (SELECT leaves FROM ledger_blocks WHERE start = ?) END WHERE start IN (?, ?)`,
				[]any{mid, mid + 1, mid, mid, mid + 1}, mid},
			{"tree hash changed", `UPDATE ledger_hash_blocks SET hashes = zeroblob(length(hashes)) WHERE start = (SELECT max(start) FROM ledger_hash_blocks)`, nil, -1},
			{"checkpoint note changed", `UPDATE ledger_checkpoints SET note = CAST(replace(CAST(note AS TEXT), 'gatehouse-ledger/', 'gatehouse-ledgeR/') AS BLOB) WHERE id = (SELECT max(id) FROM ledger_checkpoints)`, nil, -1},
			{"newest five entries truncated", `DELETE FROM ledger_blocks WHERE start >= ?`, []any{n - 5}, -1},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				cp := copyLedger(t, state)
				db, err := sql.Open("sqlite", cp)
				if err != nil {
					t.Fatal(err)
				}
				oneEntryPerBlock(t, db)
				res, err := db.Exec(c.sql, c.args...)
				if err != nil {
					t.Fatalf("%s: %v", c.sql, err)
				}
				if k, _ := res.RowsAffected(); k == 0 {
					t.Fatalf("%s changed nothing", c.sql)
				}
				db.Close()
				rep, r := verifyReport(t, cp)
				if r.Code != 1 || rep.OK || rep.Problem == nil {
					t.Fatalf("ledger verify: exit %d, %+v", r.Code, rep)
				}
				if c.wantSeq >= 0 && rep.Problem.Seq != c.wantSeq {
					t.Errorf("verify names entry %d (%s), want %d", rep.Problem.Seq, rep.Problem.Reason, c.wantSeq)
				}
			})
		}
	})

	// An auditor saves the current checkpoint (signed now, covering every
	// entry), to ask later for a consistency proof.
	oldCkpt := mustGH(t, "ledger", "checkpoint", "--state", state, "--key", skeyPath())
	oldSize := checkpointSize(t, oldCkpt)
	if oldSize != n {
		t.Fatalf("saved checkpoint has size %d, want %d:\n%s", oldSize, n, oldCkpt)
	}

	otherKeys := t.TempDir()
	mustGH(t, "keys", "generate", "--name", "other-auditor", "--out", otherKeys)
	otherVkey := filepath.Join(otherKeys, "other-auditor.vkey")
	// keys generate never overwrites.
	vkeyBefore, _ := os.ReadFile(otherVkey)
	if r := gh(t, "keys", "generate", "--name", "other-auditor", "--out", otherKeys); r.Code != 1 {
		t.Errorf("keys generate over existing keys: exit %d, want 1", r.Code)
	}
	if after, _ := os.ReadFile(otherVkey); string(after) != string(vkeyBefore) {
		t.Errorf("keys generate overwrote %s", otherVkey)
	}
	// The whole ledger does not verify with another key.
	if r := gh(t, "ledger", "verify", "--state", state, "--key", otherVkey); r.Code != 1 || !strings.Contains(r.Stdout+r.Stderr, "checkpoint") {
		t.Errorf("ledger verify with another key: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}

	t.Run("inclusion", func(t *testing.T) {
		r := calls(t, entries)["signed_ok"]
		seq := r.outcome.Seq
		// Prove from a copy, then delete it: verification must need only
		// the proof and the public key.
		cp := copyLedger(t, state)
		proof := mustGH(t, "ledger", "prove", "--state", cp, "--entry", fmt.Sprint(seq))
		os.RemoveAll(filepath.Dir(cp))
		fresh := offlineDir(t, proof)
		out := verifyProofIn(t, fresh, "ledger.vkey", 0)
		if !strings.HasPrefix(out, fmt.Sprintf("OK entry %d (gateway_outcome %s)", seq, r.outcome.RecordID)) {
			t.Errorf("verify-proof printed %q", out)
		}
		if got := verifyProofIn(t, fresh, "ledger.vkey", 0, "--entry-json"); strings.TrimSpace(got) != entries[seq].leaf {
			t.Errorf("verify-proof --entry-json printed\n%s\nwant the stored leaf\n%s", got, entries[seq].leaf)
		}
		copyFile(t, otherVkey, filepath.Join(fresh, "other.vkey"))
		verifyProofIn(t, fresh, "other.vkey", 1)
		// The same proof, edited to claim another index, fails.
		edited := strings.Replace(proof, fmt.Sprintf(`"leaf_index":%d`, seq), fmt.Sprintf(`"leaf_index":%d`, seq-1), 1)
		edited = strings.Replace(edited, fmt.Sprintf(`"leaf_index": %d`, seq), fmt.Sprintf(`"leaf_index": %d`, seq-1), 1)
		if edited == proof {
			t.Fatalf("no leaf_index in the proof:\n%s", proof)
		}
		if err := os.WriteFile(filepath.Join(fresh, "proof.json"), []byte(edited), 0o600); err != nil {
			t.Fatal(err)
		}
		verifyProofIn(t, fresh, "ledger.vkey", 1)
	})

	t.Run("consistency", func(t *testing.T) {
		runCalls(t, state, "b", "signed_ok", "legacy_interlock", "conflicting")
		verifyLedger(t, state)
		oldFile := filepath.Join(t.TempDir(), "old.checkpoint")
		if err := os.WriteFile(oldFile, []byte(oldCkpt), 0o600); err != nil {
			t.Fatal(err)
		}
		proof := mustGH(t, "ledger", "prove", "--state", state, "--from", oldFile)
		fresh := offlineDir(t, proof)
		out := verifyProofIn(t, fresh, "ledger.vkey", 0)
		want := fmt.Sprintf("extends the tree of size %d", oldSize)
		if !strings.HasPrefix(out, "OK the tree of size ") || !strings.Contains(out, want) {
			t.Errorf("verify-proof printed %q, want %q", out, want)
		}
		if strings.HasPrefix(out, fmt.Sprintf("OK the tree of size %d ", oldSize)) {
			t.Errorf("the consistency proof does not reach the newer entries: %q", out)
		}
		copyFile(t, otherVkey, filepath.Join(fresh, "other.vkey"))
		verifyProofIn(t, fresh, "other.vkey", 1)
		// And an entry of the second run is provable offline too.
		last := showJSON(t, state)
		seq := last[len(last)-1].Seq
		fresh2 := offlineDir(t, mustGH(t, "ledger", "prove", "--state", state, "--entry", fmt.Sprint(seq)))
		verifyProofIn(t, fresh2, "ledger.vkey", 0)
	})
}

// checkpointSize reads the tree size (second line) of a signed checkpoint.
func checkpointSize(t testing.TB, note string) int64 {
	t.Helper()
	lines := strings.Split(note, "\n")
	var n int64
	if len(lines) < 3 {
		t.Fatalf("not a checkpoint: %q", note)
	}
	if _, err := fmt.Sscan(lines[1], &n); err != nil {
		t.Fatalf("checkpoint size %q: %v", lines[1], err)
	}
	return n
}

// offlineDir makes a fresh directory holding only proof.json and a copy of
// the checkpoint verifier key (ledger.vkey).
func offlineDir(t testing.TB, proof string) string {
	t.Helper()
	d := t.TempDir()
	if err := os.WriteFile(filepath.Join(d, "proof.json"), []byte(proof), 0o600); err != nil {
		t.Fatal(err)
	}
	copyFile(t, vkeyPath(), filepath.Join(d, "ledger.vkey"))
	return d
}

// verifyProofIn runs `gatehouse ledger verify-proof` inside dir with
// relative paths and an empty state directory, and checks its exit code.
func verifyProofIn(t testing.TB, dir, key string, wantCode int, extra ...string) string {
	t.Helper()
	args := append([]string{"ledger", "verify-proof", "--key", key, "--proof", "proof.json"}, extra...)
	r := ghIn(t, dir, []string{"XDG_STATE_HOME=" + filepath.Join(dir, "no-state")}, args...)
	if r.Code != wantCode {
		t.Fatalf("verify-proof --key %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", key, r.Code, wantCode, r.Stdout, r.Stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "no-state")); err == nil {
		t.Errorf("verify-proof created a state directory")
	}
	return r.Stdout
}
