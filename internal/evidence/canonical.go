package evidence

import "github.com/gatehouse-mcp/gatehouse/internal/jcs"

// The canonical JSON of evidence is internal/jcs, the project's one RFC
// 8785 package: what is here are its names in this package's vocabulary.

// ErrInexactNumber is returned (wrapped) by [Canonical], [Hash] and
// [CanonicalJSON] when a JSON number in the input would change value under
// RFC 8785 (jcs.ErrInexactNumber): such a value is never silently rounded
// (evidence.md §3).
var ErrInexactNumber = jcs.ErrInexactNumber

// HashPrefix is the algorithm prefix of every hash (evidence.md §3):
// jcs.HashPrefix.
const HashPrefix = jcs.HashPrefix

// Canonical returns the RFC 8785 canonical form of the single JSON value raw
// (evidence.md §3); see jcs.Canonical for the rules and errors, which wrap
// [ErrInexactNumber] for numbers that would change value.
func Canonical(raw []byte) ([]byte, error) { return jcs.Canonical(raw) }

// Hash returns "sha256:" followed by the 64 lowercase hexadecimal digits of
// the SHA-256 digest of Canonical(raw) (evidence.md §3): jcs.Hash. Its
// errors are those of [Canonical].
func Hash(raw []byte) (string, error) { return jcs.Hash(raw) }

// CanonicalJSON returns the RFC 8785 canonical JSON of v, one of this
// package's records ([GatewayDecisionReceipt], [AuditEvent],
// [ServerReceipt], [ScanResult], ... or a pointer to one): jcs.Marshal,
// byte for byte what [Canonical] makes of json.Marshal(v), with its errors.
func CanonicalJSON(v any) ([]byte, error) { return jcs.Marshal(v) }

// hashBytes returns the "sha256:<hex>" form of b's digest (jcs.HashBytes).
func hashBytes(b []byte) string { return jcs.HashBytes(b) }
