package ledger

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// ProofFormat is the "format" member of every proof bundle.
const ProofFormat = "gatehouse-ledger-proof/v1"

// Proof types.
const (
	ProofInclusion   = "inclusion"
	ProofConsistency = "consistency"
)

// A Proof is a self-contained bundle that a third party checks with only
// the ledger's public key (VerifyProof): no database, no trust in the
// gateway. Its JSON form:
//
//	{"format":"gatehouse-ledger-proof/v1","type":"inclusion",
//	 "leaf":"<base64 of the entry's leaf bytes>","leaf_index":5,
//	 "tree_size":1000,"proof":["<base64 hash>",...],
//	 "checkpoint":"<signed checkpoint note>"}
//
//	{"format":"gatehouse-ledger-proof/v1","type":"consistency",
//	 "old_size":500,"old_checkpoint":"<signed note>",
//	 "tree_size":1000,"proof":[...],"checkpoint":"<signed note>"}
//
// An inclusion proof is an RFC 6962 §2.1.1 audit path (tlog.RecordProof);
// a consistency proof is an RFC 6962 §2.1.2 consistency proof
// (tlog.TreeProof). Hashes are standard padded base64 of 32 bytes.
type Proof struct {
	// Format is ProofFormat.
	Format string `json:"format"`
	// Type is ProofInclusion or ProofConsistency.
	Type string `json:"type"`
	// Leaf is the entry's leaf bytes (inclusion only).
	Leaf []byte `json:"leaf,omitempty"`
	// LeafIndex is the entry's seq (inclusion only).
	LeafIndex *int64 `json:"leaf_index,omitempty"`
	// OldSize is the size of the earlier tree (consistency only).
	OldSize *int64 `json:"old_size,omitempty"`
	// OldCheckpoint is the earlier tree's signed checkpoint (consistency
	// only).
	OldCheckpoint string `json:"old_checkpoint,omitempty"`
	// TreeSize is the size of the tree of Checkpoint.
	TreeSize int64 `json:"tree_size"`
	// Hashes is the proof, in tlog's order.
	Hashes []string `json:"proof"`
	// Checkpoint is the signed checkpoint the proof is relative to.
	Checkpoint string `json:"checkpoint"`
}

// MaxProofBytes bounds a proof bundle ParseProof accepts: 4 MiB (a leaf of
// at most MaxPayload plus overhead, base64-encoded).
const MaxProofBytes = 4 << 20

// ParseProof parses a proof bundle strictly: a single JSON object without
// duplicate or unknown members, the format and type known, the members of
// its type present and those of the other type absent, every hash 32 bytes
// of canonical base64. It checks no signature or hash (VerifyProof does).
// Errors wrap ErrInvalid.
func ParseProof(data []byte) (*Proof, error) {
	if len(data) > MaxProofBytes {
		return nil, fmt.Errorf("%w: proof bundle larger than %d bytes", ErrInvalid, MaxProofBytes)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		// Typically the output of a "ledger prove" that failed.
		return nil, fmt.Errorf("%w: proof bundle is empty (did the \"gatehouse ledger prove\" that wrote it fail?)", ErrInvalid)
	}
	var p Proof
	if err := jsonv2.Unmarshal(data, &p, jsonv2.RejectUnknownMembers(true)); err != nil {
		return nil, fmt.Errorf("%w: proof bundle: %v", ErrInvalid, err)
	}
	if p.Format != ProofFormat {
		return nil, fmt.Errorf("%w: proof format %q, want %q", ErrInvalid, p.Format, ProofFormat)
	}
	switch p.Type {
	case ProofInclusion:
		if p.Leaf == nil || p.LeafIndex == nil || p.OldSize != nil || p.OldCheckpoint != "" {
			return nil, fmt.Errorf("%w: an inclusion proof has leaf and leaf_index and no old_size or old_checkpoint", ErrInvalid)
		}
		if *p.LeafIndex < 0 || *p.LeafIndex >= p.TreeSize {
			return nil, fmt.Errorf("%w: leaf_index %d outside a tree of size %d", ErrInvalid, *p.LeafIndex, p.TreeSize)
		}
	case ProofConsistency:
		if p.Leaf != nil || p.LeafIndex != nil || p.OldSize == nil || p.OldCheckpoint == "" {
			return nil, fmt.Errorf("%w: a consistency proof has old_size and old_checkpoint and no leaf or leaf_index", ErrInvalid)
		}
		if *p.OldSize < 0 || *p.OldSize > p.TreeSize {
			return nil, fmt.Errorf("%w: old_size %d outside 0..%d", ErrInvalid, *p.OldSize, p.TreeSize)
		}
	default:
		return nil, fmt.Errorf("%w: proof type %q", ErrInvalid, p.Type)
	}
	if p.TreeSize < 0 {
		return nil, fmt.Errorf("%w: negative tree_size", ErrInvalid)
	}
	if p.Checkpoint == "" {
		return nil, fmt.Errorf("%w: proof without checkpoint", ErrInvalid)
	}
	if _, err := p.hashes(); err != nil {
		return nil, err
	}
	return &p, nil
}

// Marshal returns the bundle as indented JSON ending in a newline.
func (p *Proof) Marshal() ([]byte, error) {
	b, err := jsonv2.Marshal(p, jsontext.Multiline(true), jsontext.WithIndent("  "))
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// hashes decodes the proof hashes.
func (p *Proof) hashes() ([]tlog.Hash, error) {
	if len(p.Hashes) > 128 {
		return nil, fmt.Errorf("%w: proof of %d hashes is too long", ErrInvalid, len(p.Hashes))
	}
	out := make([]tlog.Hash, len(p.Hashes))
	for i, s := range p.Hashes {
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(raw) != tlog.HashSize || base64.StdEncoding.EncodeToString(raw) != s {
			return nil, fmt.Errorf("%w: proof hash %d is not 32 bytes of canonical base64", ErrInvalid, i)
		}
		copy(out[i][:], raw)
	}
	return out, nil
}

func encodeHashes(hs []tlog.Hash) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = base64.StdEncoding.EncodeToString(h[:])
	}
	return out
}

// A VerifiedProof is what VerifyProof established.
type VerifiedProof struct {
	// Checkpoint is the signed checkpoint the proof is relative to.
	Checkpoint Checkpoint
	// Entry is the included entry (inclusion proofs).
	Entry *Entry
	// Old is the earlier checkpoint (consistency proofs).
	Old *Checkpoint
}

// VerifyProof checks a proof bundle offline with only the known public
// keys. Inclusion: the checkpoint is signed by a known key; the leaf is a
// valid entry (ParseLeaf) of the ledger the checkpoint's origin names, at
// leaf_index; tlog.CheckRecord accepts the audit path from its leaf hash to
// the signed root. Consistency: both checkpoints are signed by known keys
// and have the same origin; tlog.CheckTree accepts the proof that the newer
// tree extends the older one. Errors wrap ErrInvalid and say what failed.
func VerifyProof(p *Proof, known note.Verifiers) (*VerifiedProof, error) {
	hs, err := p.hashes()
	if err != nil {
		return nil, err
	}
	c, err := OpenCheckpoint([]byte(p.Checkpoint), known)
	if err != nil {
		return nil, err
	}
	if c.Size != p.TreeSize {
		return nil, fmt.Errorf("%w: tree_size %d, but the checkpoint is of size %d", ErrInvalid, p.TreeSize, c.Size)
	}
	out := &VerifiedProof{Checkpoint: c}
	switch p.Type {
	case ProofInclusion:
		e, err := ParseLeaf(p.Leaf)
		if err != nil {
			return nil, err
		}
		if Origin(e.LedgerID) != c.Origin {
			return nil, fmt.Errorf("%w: the entry is of ledger %q, the checkpoint of origin %q", ErrInvalid, e.LedgerID, c.Origin)
		}
		if e.Seq != *p.LeafIndex {
			return nil, fmt.Errorf("%w: leaf_index %d, but the entry has ledger_seq %d", ErrInvalid, *p.LeafIndex, e.Seq)
		}
		if err := tlog.CheckRecord(hs, c.Size, c.Hash, e.Seq, tlog.RecordHash(p.Leaf)); err != nil {
			return nil, fmt.Errorf("%w: the entry is not in the signed tree: %v", ErrInvalid, err)
		}
		out.Entry = &e
	case ProofConsistency:
		old, err := OpenCheckpoint([]byte(p.OldCheckpoint), known)
		if err != nil {
			return nil, fmt.Errorf("old checkpoint: %w", err)
		}
		if old.Origin != c.Origin {
			return nil, fmt.Errorf("%w: the checkpoints are of different ledgers (%q, %q)", ErrInvalid, old.Origin, c.Origin)
		}
		if old.Size != *p.OldSize {
			return nil, fmt.Errorf("%w: old_size %d, but the old checkpoint is of size %d", ErrInvalid, *p.OldSize, old.Size)
		}
		if err := checkConsistency(hs, c, old); err != nil {
			return nil, err
		}
		out.Old = &old
	default:
		return nil, fmt.Errorf("%w: proof type %q", ErrInvalid, p.Type)
	}
	return out, nil
}

// emptyRoot is the RFC 6962 hash of the empty tree, SHA-256 of nothing.
var emptyRoot, _ = tlog.TreeHash(0, nil)

func checkConsistency(hs []tlog.Hash, c, old Checkpoint) error {
	switch {
	case old.Size == 0:
		// Every tree extends the empty tree.
		if old.Hash != emptyRoot || len(hs) != 0 {
			return fmt.Errorf("%w: an empty old tree must have the empty root and an empty proof", ErrInvalid)
		}
	case old.Size > c.Size:
		return fmt.Errorf("%w: the old checkpoint (size %d) is newer than the new one (size %d)", ErrInvalid, old.Size, c.Size)
	default:
		if err := tlog.CheckTree(hs, c.Size, c.Hash, old.Size, old.Hash); err != nil {
			return fmt.Errorf("%w: the newer tree does not extend the older one: %v", ErrInvalid, err)
		}
	}
	return nil
}

// pickCheckpoint returns the stored checkpoint of the given size, or the
// largest one when size is 0.
func pickCheckpoint(ctx context.Context, s Store, size int64) (Checkpoint, error) {
	cps, err := s.Checkpoints(ctx)
	if err != nil {
		return Checkpoint{}, err
	}
	for i := len(cps) - 1; i >= 0; i-- {
		if size == 0 || cps[i].Size == size {
			c, err := openCheckpointUnverified(cps[i].Note)
			if err != nil {
				return Checkpoint{}, fmt.Errorf("%w: stored checkpoint %d: %v", ErrCorrupt, cps[i].ID, err)
			}
			return c, nil
		}
	}
	if size == 0 {
		return Checkpoint{}, fmt.Errorf("%w: the ledger has no signed checkpoint", ErrNoCheckpoint)
	}
	return Checkpoint{}, fmt.Errorf("%w: no stored checkpoint of size %d", ErrNoCheckpoint, size)
}

// ProveEntry returns an inclusion proof of entry seq relative to the stored
// checkpoint of size treeSize, or the latest stored checkpoint when
// treeSize is 0. It fails with ErrInvalid when there is no entry seq, and
// with ErrNoCheckpoint when that checkpoint does not cover seq (wait for
// the next checkpoint, or write one with Checkpoint).
// The proof is checked against the checkpoint's root before it is returned
// (but not its signature, for which the caller holds the key): a ledger
// whose store was altered fails here with ErrCorrupt.
func ProveEntry(ctx context.Context, s Store, seq, treeSize int64) (*Proof, error) {
	// An entry that does not exist is a mistake, not a wait for the next
	// checkpoint.
	if size, err := s.Size(ctx); err == nil && (seq < 0 || seq >= size) {
		if size == 0 {
			return nil, fmt.Errorf("%w: entry %d does not exist (the ledger is empty)", ErrInvalid, seq)
		}
		return nil, fmt.Errorf("%w: entry %d does not exist (the ledger has %d entries, 0..%d)", ErrInvalid, seq, size, size-1)
	}
	c, err := pickCheckpoint(ctx, s, treeSize)
	if err != nil {
		return nil, err
	}
	if seq >= c.Size {
		return nil, fmt.Errorf("%w: the checkpoint of size %d does not cover entry %d", ErrNoCheckpoint, c.Size, seq)
	}
	var leaf []byte
	if err := s.Leaves(ctx, seq, seq+1, func(_ int64, l []byte) error {
		leaf = bytes.Clone(l)
		return nil
	}); err != nil {
		return nil, err
	}
	if leaf == nil {
		return nil, fmt.Errorf("%w: entry %d is missing", ErrCorrupt, seq)
	}
	rp, err := tlog.ProveRecord(c.Size, seq, storeHashReader(ctx, s))
	if err != nil {
		return nil, fmt.Errorf("proving entry %d: %w", seq, err)
	}
	if err := tlog.CheckRecord(rp, c.Size, c.Hash, seq, tlog.RecordHash(leaf)); err != nil {
		return nil, fmt.Errorf("%w: entry %d does not match the checkpoint of size %d: %v", ErrCorrupt, seq, c.Size, err)
	}
	return &Proof{
		Format:     ProofFormat,
		Type:       ProofInclusion,
		Leaf:       leaf,
		LeafIndex:  &seq,
		TreeSize:   c.Size,
		Hashes:     encodeHashes(rp),
		Checkpoint: string(c.Note),
	}, nil
}

// ProveConsistency returns a consistency proof from the checkpoint oldNote
// (a signed note, typically kept by an auditor; its signature is not
// checked here) to the stored checkpoint of size treeSize, or the latest
// when treeSize is 0. It fails with ErrCorrupt when the ledger's tree at the
// old size is not the one oldNote signed (the ledger was rewritten or forked)
// and with ErrNoCheckpoint when no stored checkpoint is at least as large.
func ProveConsistency(ctx context.Context, s Store, oldNote []byte, treeSize int64) (*Proof, error) {
	old, err := openCheckpointUnverified(oldNote)
	if err != nil {
		return nil, fmt.Errorf("old checkpoint: %w", err)
	}
	c, err := pickCheckpoint(ctx, s, treeSize)
	if err != nil {
		return nil, err
	}
	if old.Origin != c.Origin {
		return nil, fmt.Errorf("%w: the old checkpoint is of origin %q, this ledger's is %q", ErrInvalid, old.Origin, c.Origin)
	}
	if old.Size > c.Size {
		return nil, fmt.Errorf("%w: the old checkpoint (size %d) is larger than the latest stored (size %d)", ErrNoCheckpoint, old.Size, c.Size)
	}
	r := storeHashReader(ctx, s)
	root, err := tlog.TreeHash(old.Size, r)
	if err != nil {
		return nil, fmt.Errorf("computing the tree at size %d: %w", old.Size, err)
	}
	if root != old.Hash {
		return nil, fmt.Errorf("%w: the ledger's tree at size %d is not the one the old checkpoint signed: the ledger was rewritten", ErrCorrupt, old.Size)
	}
	var tp tlog.TreeProof
	if old.Size > 0 {
		if tp, err = tlog.ProveTree(c.Size, old.Size, r); err != nil {
			return nil, fmt.Errorf("proving consistency: %w", err)
		}
	}
	if err := checkConsistency(tp, c, old); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return &Proof{
		Format:        ProofFormat,
		Type:          ProofConsistency,
		OldSize:       &old.Size,
		OldCheckpoint: string(oldNote),
		TreeSize:      c.Size,
		Hashes:        encodeHashes(tp),
		Checkpoint:    string(c.Note),
	}, nil
}
