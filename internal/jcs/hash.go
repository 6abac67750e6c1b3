package jcs

import (
	"crypto/sha256"
	"encoding/hex"
)

// HashPrefix is the algorithm prefix of every hash the gateway writes and
// checks: "sha256:" (evidence.md §3; the ledger's chain hashes).
const HashPrefix = "sha256:"

// Hash returns "sha256:" followed by the 64 lowercase hexadecimal digits of
// the SHA-256 digest of Canonical(raw) (evidence.md §3). raw is streamed
// into the digest (WriteCanonical): a large value that is not canonical is
// not also copied. Its errors are those of [Canonical] ([ErrInexactNumber]
// for a number that would change value, and invalid JSON).
func Hash(raw []byte) (string, error) {
	h := sha256.New()
	if err := WriteCanonical(h, raw); err != nil {
		return "", err
	}
	var sum [sha256.Size]byte
	return hashString(h.Sum(sum[:0])), nil
}

// HashBytes returns "sha256:" followed by the lowercase hex SHA-256 digest
// of b as it is (no canonicalization: b is already the exact bytes hashed,
// such as a ledger leaf).
func HashBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return hashString(sum[:])
}

func hashString(sum []byte) string {
	var b [len(HashPrefix) + 2*sha256.Size]byte
	copy(b[:], HashPrefix)
	hex.Encode(b[len(HashPrefix):], sum)
	return string(b[:])
}

// ValidHash reports whether s is exactly "sha256:" followed by 64 lowercase
// hexadecimal digits, the only form Hash and HashBytes produce and the only
// one accepted where a hash is read.
func ValidHash(s string) bool {
	return len(s) == len(HashPrefix)+2*sha256.Size && s[:len(HashPrefix)] == HashPrefix && IsHexDigest([]byte(s[len(HashPrefix):]))
}

// IsHexDigest reports whether b is exactly 64 lowercase hexadecimal
// digits: a SHA-256 digest's hex form without the prefix.
func IsHexDigest(b []byte) bool {
	if len(b) != 2*sha256.Size {
		return false
	}
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
