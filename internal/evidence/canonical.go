package evidence

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/gatehouse-mcp/gatehouse/internal/jcs"
)

// ErrInexactNumber is returned (wrapped) by [Canonical] and [Hash] when a
// JSON number in the input would change value under RFC 8785 (see
// jcs.ErrInexactNumber): such a value is never silently rounded
// (evidence.md §3).
var ErrInexactNumber = jcs.ErrInexactNumber

// HashPrefix is the algorithm prefix of every hash (evidence.md §3).
const HashPrefix = "sha256:"

// Canonical returns the RFC 8785 canonical form of the single JSON value raw
// (evidence.md §3); see jcs.Canonical for the rules and errors, which wrap
// [ErrInexactNumber] for numbers that would change value.
func Canonical(raw []byte) ([]byte, error) { return jcs.Canonical(raw) }

// Hash returns "sha256:" followed by the 64 lowercase hexadecimal digits of
// the SHA-256 digest of Canonical(raw) (evidence.md §3). Its errors are
// those of [Canonical].
func Hash(raw []byte) (string, error) {
	h := sha256.New()
	// Streamed into the digest: a large value that is not canonical is not
	// also copied (jcs.WriteCanonical).
	if err := jcs.WriteCanonical(h, raw); err != nil {
		return "", err
	}
	var sum [sha256.Size]byte
	return HashPrefix + hex.EncodeToString(h.Sum(sum[:0])), nil
}

// hashBytes returns the "sha256:<hex>" form of b's digest.
func hashBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return HashPrefix + hex.EncodeToString(sum[:])
}
