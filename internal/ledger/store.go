package ledger

import (
	"context"
	"time"

	"golang.org/x/mod/sumdb/tlog"
)

// A Store persists one ledger: its leaves (the exact bytes of each entry,
// keyed by seq), the tlog stored hashes of its Merkle tree (keyed by
// tlog.StoredHashIndex), its checkpoints and its ledger id. It knows nothing
// of hashing, chaining or signing; the [Ledger] computes everything and the
// Store only makes it durable.
//
// All methods are safe for concurrent use. Several Store values (in one or
// several processes) may refer to the same database; Update serializes them.
// Reads outside Update see committed data only; leaves and hashes never
// change once committed, so a read may be served from any committed state
// whose size covers it.
//
// Every backend runs the suite in internal/ledger/storetest.
type Store interface {
	// Init prepares the store for use (schema creation in a read-write
	// store) and returns the ledger id recorded in it. When none is
	// recorded yet, a non-empty proposed is recorded and returned; an
	// empty proposed records nothing and makes Init fail, as does a
	// read-only store with no ledger in it.
	Init(ctx context.Context, proposed string) (id string, err error)

	// Update runs f in one exclusive read-write transaction: no other
	// Update on the same database (from any process) runs concurrently, and
	// reads through tx see every transaction committed before it. If f
	// returns an error, nothing f wrote is kept and Update returns that
	// error. If f returns nil, Update commits and returns nil only once the
	// commit is durable (survives a crash of the process and of the
	// machine, as far as the database's own guarantees go). f is called at
	// most once.
	Update(ctx context.Context, f func(ctx context.Context, tx Tx) error) error

	// Size returns the number of committed entries.
	Size(ctx context.Context) (int64, error)

	// Leaves calls f for each stored entry with from <= seq < to in
	// increasing seq order, from one consistent snapshot. It passes the seq
	// as stored; a gap (a missing row) shows up as a skipped seq and is the
	// caller's to detect. leaf is valid only during the call. An error from
	// f stops the iteration and is returned.
	Leaves(ctx context.Context, from, to int64, f func(seq int64, leaf []byte) error) error

	// ReadHashes returns the stored hashes at the given storage indexes
	// (tlog.StoredHashIndex), in the order given. A missing hash is an
	// error.
	ReadHashes(ctx context.Context, indexes []int64) ([]tlog.Hash, error)

	// Checkpoints returns every stored checkpoint ordered by size, then by
	// ID.
	Checkpoints(ctx context.Context) ([]StoredCheckpoint, error)

	// Close releases the store's resources. Calls after Close fail.
	Close() error
}

// Tx is the view of a Store inside Update. It is valid only during the call
// to f and must not be used concurrently.
type Tx interface {
	// Size returns the number of entries, including those written by this
	// transaction.
	Size(ctx context.Context) (int64, error)
	// Leaf returns the leaf of entry seq.
	Leaf(ctx context.Context, seq int64) ([]byte, error)
	// ReadHashes is Store.ReadHashes within the transaction.
	ReadHashes(ctx context.Context, indexes []int64) ([]tlog.Hash, error)
	// Append stores leaves[i] as entry start+i and hashes[j] at storage
	// index hashStart+j. start must be Size and hashStart the number of
	// stored hashes; the backend rejects anything else (a seq or index
	// already stored, or a gap), which is what makes a lost race between
	// writers fail instead of forking the chain. A leaf must not contain
	// a line feed (no leaf does: it is canonical JSON).
	Append(ctx context.Context, start int64, leaves [][]byte, hashStart int64, hashes []tlog.Hash) error
	// LatestCheckpoint returns the stored checkpoint with the largest size
	// (the latest stored among equals), and ok=false if there is none.
	LatestCheckpoint(ctx context.Context) (c StoredCheckpoint, ok bool, err error)
	// AddCheckpoint stores a signed checkpoint note with its Size and
	// Created; the store assigns the ID.
	AddCheckpoint(ctx context.Context, c StoredCheckpoint) error
}

// StoredCheckpoint is a signed checkpoint as a Store keeps it.
type StoredCheckpoint struct {
	// ID is the store's identifier of the checkpoint, increasing in the
	// order they were stored.
	ID int64
	// Size is the tree size the checkpoint covers; the same as in Note's
	// body (Verify checks that).
	Size int64
	// Note is the signed note, exactly as signed.
	Note []byte
	// Created is when the checkpoint was stored (not signed; informative).
	Created time.Time
}

// The in-memory backend implements Store; the compiler checks it (the SQL
// backends, in internal/ledger/sqlite and internal/ledger/postgres, check
// themselves).
var (
	_ Store = (*memStore)(nil)
	_ Tx    = (*memTx)(nil)
)
