package ledger

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// A Checkpoint is a tree head of the ledger: the RFC 6962 root hash of its
// first Size entries, in the C2SP tlog-checkpoint text format
// (https://c2sp.org/tlog-checkpoint), usually signed as a note
// (golang.org/x/mod/sumdb/note, Ed25519). The text body is three lines:
//
//	gatehouse-ledger/gw-prod
//	1000
//	n5ZCqVHmYHBRLxHTGwOvSD1jJ4zRdU95uj2mqIh8xZM=
//
// the origin ([Origin] of the ledger id), the tree size in decimal, and the
// root hash in standard base64. This package writes no extension lines and
// rejects them.
type Checkpoint struct {
	// Origin identifies the ledger: [Origin](ledger id).
	Origin string
	// Size is the number of entries the tree covers (entries 0..Size-1).
	Size int64
	// Hash is the RFC 6962 Merkle tree hash of those entries' leaves,
	// computed by tlog.TreeHash.
	Hash tlog.Hash
	// Note is the signed note (body, blank line, signature lines) exactly
	// as stored, or nil for an unsigned checkpoint.
	Note []byte
}

// Origin returns the checkpoint origin line of the ledger with the given id:
// "gatehouse-ledger/" + ledgerID.
func Origin(ledgerID string) string { return "gatehouse-ledger/" + ledgerID }

// Body returns the checkpoint's text body, the bytes that are signed.
func (c *Checkpoint) Body() []byte { return FormatCheckpoint(c.Origin, c.Size, c.Hash) }

// FormatCheckpoint returns the C2SP tlog-checkpoint body for a tree: origin,
// size and base64 root hash, each line ending in '\n'.
func FormatCheckpoint(origin string, size int64, hash tlog.Hash) []byte {
	var b bytes.Buffer
	b.WriteString(origin)
	b.WriteByte('\n')
	b.WriteString(strconv.FormatInt(size, 10))
	b.WriteByte('\n')
	b.WriteString(base64.StdEncoding.EncodeToString(hash[:]))
	b.WriteByte('\n')
	return b.Bytes()
}

// ParseCheckpoint parses a checkpoint body (not a signed note: see
// OpenCheckpoint). It accepts exactly what FormatCheckpoint produces: a
// non-empty origin of valid UTF-8 without spaces, '+' or control characters,
// a decimal size without sign or leading zeros, and a 32-byte hash in
// canonical padded standard base64, three lines in all. Errors wrap
// ErrInvalid.
func ParseCheckpoint(text []byte) (Checkpoint, error) {
	lines := bytes.SplitAfter(text, []byte("\n"))
	if len(lines) != 4 || len(lines[3]) != 0 {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint must be exactly three lines ending in newline", ErrInvalid)
	}
	origin := string(bytes.TrimSuffix(lines[0], []byte("\n")))
	if err := checkOrigin(origin); err != nil {
		return Checkpoint{}, err
	}
	sizeText := string(bytes.TrimSuffix(lines[1], []byte("\n")))
	size, err := strconv.ParseInt(sizeText, 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != sizeText {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint size %q is not a canonical decimal", ErrInvalid, sizeText)
	}
	hashText := string(bytes.TrimSuffix(lines[2], []byte("\n")))
	raw, err := base64.StdEncoding.DecodeString(hashText)
	if err != nil || len(raw) != tlog.HashSize || base64.StdEncoding.EncodeToString(raw) != hashText {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint root hash %q is not 32 bytes of canonical base64", ErrInvalid, hashText)
	}
	c := Checkpoint{Origin: origin, Size: size}
	copy(c.Hash[:], raw)
	return c, nil
}

func checkOrigin(origin string) error {
	if origin == "" || !utf8.ValidString(origin) {
		return fmt.Errorf("%w: checkpoint origin must be non-empty UTF-8", ErrInvalid)
	}
	for _, r := range origin {
		if r == '+' || unicode.IsSpace(r) || r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w: checkpoint origin %q contains a space, '+' or a control character", ErrInvalid, origin)
		}
	}
	return nil
}

// SignCheckpoint returns the signed note of c's body signed by s, and sets
// c.Note to it.
func SignCheckpoint(c *Checkpoint, s note.Signer) ([]byte, error) {
	msg, err := note.Sign(&note.Note{Text: string(c.Body())}, s)
	if err != nil {
		return nil, fmt.Errorf("ledger: signing checkpoint: %w", err)
	}
	c.Note = msg
	return msg, nil
}

// OpenCheckpoint verifies the signed note msg with the known verifiers and
// parses its body. It fails unless at least one signature verifies (an
// unknown key is not enough) and no signature by a known key is invalid; the
// error says which. Errors wrap ErrInvalid.
func OpenCheckpoint(msg []byte, known note.Verifiers) (Checkpoint, error) {
	n, err := note.Open(msg, known)
	if err != nil {
		var unv *note.UnverifiedNoteError
		var inv *note.InvalidSignatureError
		switch {
		case errors.As(err, &unv):
			// Name the keys that did sign: after a key rotation the
			// verifier needs the old key too.
			var by []string
			if unv.Note != nil {
				for _, sig := range unv.Note.UnverifiedSigs {
					by = append(by, fmt.Sprintf("%q", fmt.Sprintf("%s+%08x", sig.Name, sig.Hash))) // unverified: quoted
				}
			}
			if len(by) == 0 {
				return Checkpoint{}, fmt.Errorf("%w: checkpoint is not signed by a known key", ErrInvalid)
			}
			return Checkpoint{}, fmt.Errorf("%w: checkpoint is not signed by a known key (it claims to be signed by %s)", ErrInvalid, strings.Join(by, ", "))
		case errors.As(err, &inv):
			return Checkpoint{}, fmt.Errorf("%w: checkpoint signature by %q does not verify", ErrInvalid, fmt.Sprintf("%s+%08x", inv.Name, inv.Hash))
		}
		return Checkpoint{}, fmt.Errorf("%w: checkpoint note: %v", ErrInvalid, err)
	}
	// note.Open decodes signatures with lenient base64, which ignores the
	// unused low bits of the last character: require the canonical
	// encoding, so that no byte of a stored note can change unnoticed.
	for _, sig := range append(n.Sigs, n.UnverifiedSigs...) {
		raw, err := base64.StdEncoding.DecodeString(sig.Base64)
		if err != nil || base64.StdEncoding.EncodeToString(raw) != sig.Base64 {
			return Checkpoint{}, fmt.Errorf("%w: checkpoint signature by %s is not canonical base64", ErrInvalid, sig.Name)
		}
	}
	c, err := ParseCheckpoint([]byte(n.Text))
	if err != nil {
		return Checkpoint{}, err
	}
	c.Note = bytes.Clone(msg)
	return c, nil
}

// openCheckpointUnverified parses a signed note's body without checking any
// signature (used to locate an old checkpoint's size; never trusted).
func openCheckpointUnverified(msg []byte) (Checkpoint, error) {
	i := bytes.Index(msg, []byte("\n\n"))
	if i < 0 {
		return ParseCheckpoint(msg)
	}
	c, err := ParseCheckpoint(msg[:i+1])
	if err != nil {
		return Checkpoint{}, err
	}
	c.Note = bytes.Clone(msg)
	return c, nil
}

// signedBy reports whether the signed note msg carries a signature line of
// s (its name and key hash; the signature itself is not checked here, only
// who claims it). Signed-note format: signature lines follow the first
// blank line, "— NAME BASE64", where BASE64 starts with the 4-byte key hash.
func signedBy(msg []byte, s note.Signer) bool {
	i := bytes.Index(msg, []byte("\n\n"))
	if i < 0 {
		return false
	}
	for _, line := range strings.Split(string(msg[i+2:]), "\n") {
		rest, ok := strings.CutPrefix(line, "\u2014 ")
		if !ok {
			continue
		}
		name, b64, ok := strings.Cut(rest, " ")
		if !ok || name != s.Name() {
			continue
		}
		sig, err := base64.StdEncoding.DecodeString(b64)
		if err == nil && len(sig) >= 4 && binary.BigEndian.Uint32(sig) == s.KeyHash() {
			return true
		}
	}
	return false
}
