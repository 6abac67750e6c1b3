// Package ledger is Gatehouse's audit ledger (shared/spec/evidence.md §9): an
// append-only sequence of entries that is at the same time a hash chain
// (every entry names the hash of the one before it, as the McpSecurityReceipt
// draft's ledger_id / ledger_seq / previous_hash fields describe) and the
// leaves of an RFC 6962 Merkle tree. Signed checkpoints of that tree (the
// C2SP tlog-checkpoint text format, signed as a golang.org/x/mod/sumdb/note
// with Ed25519) let a third party verify the whole ledger, prove that one
// entry is included, and prove that a later checkpoint extends an earlier one,
// offline and without trusting the gateway.
//
// # Layers
//
// The package is a pure core with its storage passed in:
//
//   - [Entry], [ParseLeaf]: the exact bytes of one entry (its leaf) and their
//     hashes. Tree hashing is golang.org/x/mod/sumdb/tlog's, never this
//     package's own.
//   - [Checkpoint], [FormatCheckpoint], [ParseCheckpoint], [OpenCheckpoint]:
//     the signed tree heads.
//   - [Store]: what a backend persists (leaves, tlog stored hashes,
//     checkpoints) inside one exclusive transaction. [NewMemStore] is the
//     in-memory one; the SQL backends are packages of their own,
//     internal/ledger/sqlite and internal/ledger/postgres, so that this
//     package (and offline proof checking with it) links no database
//     driver. Every backend passes the shared suite in
//     internal/ledger/storetest.
//   - [Ledger]: appends with group commit on top of any Store;
//     internal/ledger/backends.Open picks the backend from a DSN.
//   - [Verify], [ProveEntry], [ProveConsistency], [VerifyProof]: whole-ledger
//     verification and offline proofs.
//
// # The contract
//
// Append never acknowledges before durable: it returns an [Entry] only after
// the transaction holding it has committed (SQLite with synchronous=FULL,
// PostgreSQL with synchronous_commit=on). Concurrent appends share one
// transaction (group commit). Several processes may append to one store; the
// backend serializes them (SQLite's write lock, a PostgreSQL lock row), and
// every batch re-reads the head of the ledger under that lock, so the chain
// stays linear. A crash leaves a prefix that verifies; [Verify] reports the
// first bad entry.
//
// # The leaf
//
// An entry's leaf is the RFC 8785 (JCS) canonical JSON of the object with the
// members kind, ledger_id, ledger_seq, payload, previous_hash, record_id and
// time, for example (one line in reality):
//
//	{"kind":"gateway_decision","ledger_id":"gw-prod","ledger_seq":0,
//	 "payload":{"action":"deny","tool_name":"apply_patch"},
//	 "previous_hash":"sha256:0000000000000000000000000000000000000000000000000000000000000000",
//	 "record_id":"gw_dec_1","time":"2026-05-19T08:15:31.123456Z"}
//
// Its RFC 6962 leaf hash is tlog.RecordHash(leaf) = SHA-256(0x00 || leaf);
// its chain hash, which the next entry carries as previous_hash, is
// "sha256:" + hex(SHA-256(leaf)).
package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/gatehouse-mcp/gatehouse/internal/jcs"
)

// Entry kinds written by Gatehouse. Any kind matching [a-z][a-z0-9_]{0,63}
// is accepted; these are the ones the rest of the code uses.
const (
	// KindGatewayDecision is a call's decision record (a gateway decision
	// receipt of phase "decision"); the entry's record_id is its
	// audit_event_id.
	KindGatewayDecision = "gateway_decision"
	// KindGatewayOutcome is a forwarded call's outcome record (a gateway
	// decision receipt of phase "outcome", carrying the server receipt);
	// the entry's record_id is its audit_event_id.
	KindGatewayOutcome = "gateway_outcome"
	// KindSession is reserved for session records.
	KindSession = "session"
	// KindAuditEvent and KindServerReceipt are written by Gatehouse
	// releases before the second cut of per-call evidence (evidence.md
	// §9.1), which wrote a separate audit event and server receipt entry;
	// such ledgers are still read and verified.
	KindAuditEvent    = "audit_event"
	KindServerReceipt = "server_receipt"
	// KindToolApproval, KindToolQuarantine and KindToolRelease record a
	// person's review of a tool (gatehouse tools approve, quarantine and
	// release; docs/drift.md, "Review"): who, why, and the definition
	// hash concerned; a gateway's own holds are tool_quarantine entries
	// too, and its first-use baselines KindToolBaseline. The entry's
	// record_id is an audit_event_id.
	KindToolApproval   = "tool_approval"
	KindToolQuarantine = "tool_quarantine"
	KindToolRelease    = "tool_release"
	KindToolBaseline   = "tool_baseline"
)

// Limits on what Append accepts, in bytes.
const (
	// MaxPayload is the largest payload (canonical JSON) of one entry: 1 MiB.
	MaxPayload = 1 << 20
	// MaxRecordID is the longest record id.
	MaxRecordID = 256
	// MaxLedgerID is the longest ledger id.
	MaxLedgerID = 128
)

// ZeroHash is the previous_hash of the entry with seq 0.
const ZeroHash = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

// Sentinel errors. Errors returned by this package wrap one of them (test
// with errors.Is); the wrapping error says what and where.
var (
	// ErrClosed is returned by Append and Checkpoint after Close.
	ErrClosed = errors.New("ledger: closed")
	// ErrWrite wraps every failure to make an append or checkpoint durable:
	// the store's error (disk full, read-only file, lost connection, closed
	// database) is wrapped too and stays visible. An Append that returns
	// ErrWrite did not record its entry, except in the one ambiguous case of
	// a connection lost during COMMIT, where the entry may nevertheless be
	// present; callers must treat it as not recorded.
	ErrWrite = errors.New("ledger: write failed")
	// ErrInvalid is returned when the arguments of Append are unacceptable
	// (kind, record id, non-canonical or oversized payload) or a leaf,
	// checkpoint or proof does not parse.
	ErrInvalid = errors.New("ledger: invalid")
	// ErrCorrupt is returned when stored data fails a check while the ledger
	// reads it to append (for example, the last entry does not parse).
	// Verify reports such problems as a [Problem] instead.
	ErrCorrupt = errors.New("ledger: stored data is corrupt")
	// ErrLedgerID is returned by New (and backends.Open) when Options.LedgerID differs
	// from the id recorded in the store.
	ErrLedgerID = errors.New("ledger: ledger id mismatch")
	// ErrNoCheckpoint is returned by ProveEntry and ProveConsistency when no
	// stored checkpoint can serve the proof.
	ErrNoCheckpoint = errors.New("ledger: no suitable checkpoint")
)

// Entry is one record of the ledger. Its JSON form (the struct tags) is the
// leaf's member names; the leaf itself is produced by [Entry.Leaf], not by
// encoding/json.
type Entry struct {
	// LedgerID names the ledger; it is the same in every entry of a ledger.
	LedgerID string `json:"ledger_id"`
	// Seq is the 0-based position of the entry; it equals the RFC 6962
	// leaf index.
	Seq int64 `json:"ledger_seq"`
	// Kind is "audit_event", "gateway_decision", "server_receipt",
	// "session" or another [a-z][a-z0-9_]{0,63} word.
	Kind string `json:"kind"`
	// RecordID is the id of the record in Payload: audit_event_id,
	// gateway_decision_id, receipt_id, session id. 1 to 256 bytes of UTF-8
	// without control characters.
	RecordID string `json:"record_id"`
	// Time is set by Append: UTC, microsecond precision, never earlier than
	// the previous entry's time (it is max(now, previous time)), encoded as
	// RFC 3339 with up to 6 fractional digits.
	Time time.Time `json:"time"`
	// PreviousHash is the chain hash ("sha256:<64 lowercase hex>") of the
	// previous entry's leaf; [ZeroHash] for seq 0.
	PreviousHash string `json:"previous_hash"`
	// Payload is the record as RFC 8785 canonical JSON, at most MaxPayload
	// bytes.
	Payload json.RawMessage `json:"payload"`
}

// Leaf returns the exact bytes hashed for e: the RFC 8785 canonical JSON of
// the entry (see the package documentation). It is defined for entries
// returned by Append and ParseLeaf, whose fields are valid; for other values
// the result is not guaranteed canonical.
func (e *Entry) Leaf() []byte {
	enc := leafEncoder{ledgerID: e.LedgerID, time: e.Time}
	b := make([]byte, 0, enc.size(e.Kind, e.RecordID, len(e.Payload))+len(e.PreviousHash))
	return enc.append(b, e)
}

// leafEncoder encodes the leaves of entries that share a ledger id and a
// time (one batch) with those two encoded once.
type leafEncoder struct {
	ledgerID string
	time     time.Time
	enc      bool
	idJSON   []byte // `,"ledger_id":"…","ledger_seq":`
	timeJSON []byte // `,"time":"…"}`
}

func (c *leafEncoder) init() {
	if c.enc {
		return
	}
	c.enc = true
	c.idJSON = append(appendString(append(c.idJSON[:0], `,"ledger_id":`...), c.ledgerID), `,"ledger_seq":`...)
	c.timeJSON = append(appendTime(append(c.timeJSON[:0], `,"time":"`...), c.time), `"}`...)
}

// size is an upper bound of the leaf's length for a valid previous hash
// (escapes can only make kind and record id longer, and they are
// validated not to need any).
func (c *leafEncoder) size(kind, recordID string, payload int) int {
	c.init()
	return len(`{"kind":""`) + len(kind) + len(c.idJSON) + 20 + len(`,"payload":`) + max(payload, 4) +
		len(`,"previous_hash":""`) + len(ZeroHash) + len(`,"record_id":""`) + len(recordID) + len(c.timeJSON)
}

func (c *leafEncoder) append(b []byte, e *Entry) []byte {
	c.init()
	// RFC 8785 §3.2.3 orders members by their UTF-16 code units; for these
	// ASCII names that is byte order, fixed here.
	b = append(b, `{"kind":`...)
	b = appendString(b, e.Kind)
	b = append(b, c.idJSON...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = append(b, `,"payload":`...)
	if len(e.Payload) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, e.Payload...)
	}
	b = append(b, `,"previous_hash":`...)
	b = appendString(b, e.PreviousHash)
	b = append(b, `,"record_id":`...)
	b = appendString(b, e.RecordID)
	return append(b, c.timeJSON...)
}

// Hash returns the chain hash of e: "sha256:" followed by the lowercase hex
// SHA-256 of e.Leaf(). The next entry's PreviousHash is this value.
func (e *Entry) Hash() string { return chainHash(e.Leaf()) }

// chainHash is the chain hash of a leaf.
func chainHash(leaf []byte) string { return jcs.HashBytes(leaf) }

// appendTime appends t as RFC 3339 in UTC with microsecond precision and
// trailing fractional zeros removed (the time.RFC3339Nano layout of a time
// truncated to microseconds).
func appendTime(b []byte, t time.Time) []byte {
	return t.UTC().Truncate(time.Microsecond).AppendFormat(b, time.RFC3339Nano)
}

// entryTime is the time Append stores: UTC, microseconds.
func entryTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// ParseLeaf parses the leaf bytes of an entry and accepts them only if they
// are exactly what [Entry.Leaf] produces for a valid entry: canonical JSON,
// all seven members in order and no others, valid field values. The error
// wraps ErrInvalid and says what is wrong and where.
func ParseLeaf(leaf []byte) (Entry, error) {
	s := canonScanner{b: leaf}
	bad := func(what string) (Entry, error) {
		return Entry{}, fmt.Errorf("%w: leaf is not a ledger entry: %s at byte %d", ErrInvalid, what, s.pos)
	}
	expect := func(lit string) bool {
		if len(leaf)-s.pos < len(lit) || string(leaf[s.pos:s.pos+len(lit)]) != lit {
			return false
		}
		s.pos += len(lit)
		return true
	}
	str := func() (string, error) {
		if s.pos >= len(leaf) || leaf[s.pos] != '"' {
			return "", s.fail("expected a string")
		}
		b, err := s.str(true)
		return string(b), err
	}
	var e Entry
	var err error
	if !expect(`{"kind":`) {
		return bad(`expected {"kind":`)
	}
	if e.Kind, err = str(); err != nil {
		return bad(err.Error())
	}
	if !expect(`,"ledger_id":`) {
		return bad(`expected ,"ledger_id":`)
	}
	if e.LedgerID, err = str(); err != nil {
		return bad(err.Error())
	}
	if !expect(`,"ledger_seq":`) {
		return bad(`expected ,"ledger_seq":`)
	}
	digits := s.pos
	for s.pos < len(leaf) && '0' <= leaf[s.pos] && leaf[s.pos] <= '9' {
		s.pos++
	}
	if e.Seq, err = strconv.ParseInt(string(leaf[digits:s.pos]), 10, 64); err != nil || (leaf[digits] == '0' && s.pos-digits > 1) {
		return bad("ledger_seq is not a canonical non-negative integer")
	}
	if !expect(`,"payload":`) {
		return bad(`expected ,"payload":`)
	}
	start := s.pos
	if err := s.value(0); err != nil {
		return Entry{}, fmt.Errorf("%w: payload is not RFC 8785 canonical JSON: %v", ErrInvalid, err)
	}
	e.Payload = json.RawMessage(bytes.Clone(leaf[start:s.pos]))
	if !expect(`,"previous_hash":`) {
		return bad(`expected ,"previous_hash":`)
	}
	if e.PreviousHash, err = str(); err != nil {
		return bad(err.Error())
	}
	if !expect(`,"record_id":`) {
		return bad(`expected ,"record_id":`)
	}
	if e.RecordID, err = str(); err != nil {
		return bad(err.Error())
	}
	if !expect(`,"time":`) {
		return bad(`expected ,"time":`)
	}
	ts, err := str()
	if err != nil {
		return bad(err.Error())
	}
	if !expect(`}`) || s.pos != len(leaf) {
		return bad("expected } at the end")
	}
	if e.Time, err = time.Parse(time.RFC3339Nano, ts); err != nil {
		return Entry{}, fmt.Errorf("%w: leaf time %q: %v", ErrInvalid, ts, err)
	}
	if err := e.validateFields(); err != nil {
		return Entry{}, err
	}
	// Every other part was checked to be canonical as it was scanned (a
	// canonical string or integer has one encoding), so the leaf is what
	// e.Leaf() produces once the time is in its one form too
	// (FuzzParseLeaf checks this).
	var tb [40]byte
	if string(appendTime(tb[:0], e.Time)) != ts {
		return Entry{}, fmt.Errorf("%w: leaf time %q is not in canonical form (UTC, RFC 3339, up to 6 fractional digits without trailing zeros)", ErrInvalid, ts)
	}
	if len(e.Payload) > MaxPayload {
		return Entry{}, fmt.Errorf("%w: payload of %d bytes exceeds %d", ErrInvalid, len(e.Payload), MaxPayload)
	}
	return e, nil
}

// validateFields checks every field of a complete entry but the payload.
func (e *Entry) validateFields() error {
	if err := checkLedgerID(e.LedgerID); err != nil {
		return err
	}
	if e.Seq < 0 || e.Seq >= 1<<53 {
		return fmt.Errorf("%w: ledger_seq %d out of range", ErrInvalid, e.Seq)
	}
	if err := checkKind(e.Kind); err != nil {
		return err
	}
	if err := checkRecordID(e.RecordID); err != nil {
		return err
	}
	if !validChainHash(e.PreviousHash) {
		return fmt.Errorf("%w: previous_hash %q is not sha256:<64 lowercase hex>", ErrInvalid, e.PreviousHash)
	}
	if e.Seq == 0 && e.PreviousHash != ZeroHash {
		return fmt.Errorf("%w: entry 0 has previous_hash %s, want the zero hash", ErrInvalid, e.PreviousHash)
	}
	if e.Time.Location() != time.UTC || !e.Time.Equal(entryTime(e.Time)) {
		return fmt.Errorf("%w: time %s is not UTC with microsecond precision", ErrInvalid, e.Time)
	}
	if y := e.Time.Year(); y < 1970 || y > 9999 {
		return fmt.Errorf("%w: time %s out of range", ErrInvalid, e.Time)
	}
	return nil
}

// checkLedgerID accepts 1 to MaxLedgerID bytes of [A-Za-z0-9._:/-] and '_'.
// The id appears in checkpoint origins, which must not contain spaces or '+'.
func checkLedgerID(id string) error {
	if id == "" || len(id) > MaxLedgerID {
		return fmt.Errorf("%w: ledger id must be 1 to %d bytes", ErrInvalid, MaxLedgerID)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '.' || c == '_' || c == '-' || c == ':' || c == '/' {
			continue
		}
		return fmt.Errorf("%w: ledger id %q: only letters, digits and . _ - : / are allowed", ErrInvalid, id)
	}
	return nil
}

func checkKind(k string) error {
	if k == "" || len(k) > 64 || k[0] < 'a' || k[0] > 'z' {
		return fmt.Errorf("%w: kind %q must match [a-z][a-z0-9_]{0,63}", ErrInvalid, k)
	}
	for i := 1; i < len(k); i++ {
		c := k[i]
		if 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' {
			continue
		}
		return fmt.Errorf("%w: kind %q must match [a-z][a-z0-9_]{0,63}", ErrInvalid, k)
	}
	return nil
}

// CheckRecordID reports whether id can be an entry's record_id: 1 to
// MaxRecordID bytes of valid UTF-8 without control characters (U+0000 to
// U+001F, U+007F). The error wraps ErrInvalid and quotes id only when it
// has the right length and encoding. A caller holding an id from outside
// (a server's receipt_id) checks it first and names the record otherwise.
func CheckRecordID(id string) error { return checkRecordID(id) }

func checkRecordID(id string) error {
	if id == "" || len(id) > MaxRecordID {
		return fmt.Errorf("%w: record id must be 1 to %d bytes", ErrInvalid, MaxRecordID)
	}
	if !utf8.ValidString(id) {
		return fmt.Errorf("%w: record id is not valid UTF-8", ErrInvalid)
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w: record id %q contains a control character", ErrInvalid, id)
		}
	}
	return nil
}

// checkPayload accepts a JSON value of at most MaxPayload bytes that is
// already in RFC 8785 canonical form. Numbers that a double cannot carry
// exactly (integers beyond 2^53) change under canonicalization and are
// therefore rejected, never rounded.
func checkPayload(p []byte) error {
	if len(p) == 0 {
		return fmt.Errorf("%w: empty payload", ErrInvalid)
	}
	if len(p) > MaxPayload {
		return fmt.Errorf("%w: payload of %d bytes exceeds %d", ErrInvalid, len(p), MaxPayload)
	}
	if err := jcs.Check(p); err != nil {
		return fmt.Errorf("%w: payload is not RFC 8785 canonical JSON (see Canonicalize): %v", ErrInvalid, err)
	}
	return nil
}

// Canonicalize returns the RFC 8785 canonical form of the JSON value v, to
// be passed to Append as a payload. It is jcs.Canonical (the project's one
// RFC 8785 implementation): duplicate member names, invalid UTF-8 and
// numbers that a double cannot carry exactly (integers beyond 2^53, excess
// decimal precision, out of range) are errors, never rounded. Errors wrap
// ErrInvalid, and jcs.ErrInexactNumber for such numbers. When v is already
// canonical (one pass, no allocation) the result is v itself, not a copy;
// otherwise it is a new slice.
func Canonicalize(v []byte) ([]byte, error) {
	c, err := jcs.Canonical(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return c, nil
}

// validChainHash reports whether s is "sha256:" and 64 lowercase hex digits.
func validChainHash(s string) bool { return jcs.ValidHash(s) }

// appendString appends s as an RFC 8785 §3.2.2.2 JSON string
// (jcs.AppendString; the callers validate s as UTF-8).
func appendString(b []byte, s string) []byte { return jcs.AppendString(b, s) }
