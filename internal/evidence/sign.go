package evidence

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"gopkg.in/yaml.v3"
)

// Signature algorithms (signature_alg; evidence.md §2).
const (
	// AlgHMACSHA256 is HMAC-SHA256 with a secret shared per server_id; the
	// signature is the 32-byte MAC.
	AlgHMACSHA256 = "hmac-sha256"
	// AlgEd25519 is Ed25519 (RFC 8032) with a public key configured per
	// server_id; the signature is 64 bytes.
	AlgEd25519 = "ed25519"
)

// Status is a receipt's verification status as the gateway computes it
// ([Verify]; evidence.md §2), one of the draft's vocabulary.
type Status string

// The verification statuses.
const (
	// StatusOK: the signature verified with the key configured for the
	// receipt's server_id and its signature_alg.
	StatusOK Status = "ok"
	// StatusUnsigned: a receipt without receipt_signature (or with "").
	StatusUnsigned Status = "unsigned"
	// StatusTampered: the signature does not verify, cannot be decoded, or
	// the receipt cannot be parsed strictly (duplicate names, not an object).
	StatusTampered Status = "tampered"
	// StatusEmpty: no receipt.
	StatusEmpty Status = "empty"
	// StatusUnknown: a signature that cannot be checked: no key configured
	// for the server_id and signature_alg, an unknown or missing
	// signature_alg, or a receipt whose canonical form does not exist
	// (a number outside the exact double range, see [ErrInexactNumber]).
	StatusUnknown Status = "unknown"
)

// Keys are the verification keys per server_id. A server may have both; the
// receipt's signature_alg selects one. The zero value has no keys. Keys is
// read-only after construction and safe for concurrent use.
type Keys struct {
	// HMAC holds the shared secret per server_id for hmac-sha256.
	HMAC map[string][]byte
	// Ed25519 holds the public key per server_id for ed25519.
	Ed25519 map[string]ed25519.PublicKey
}

// keyEntry is one server's entry in a keys file.
type keyEntry struct {
	HMACSecretFile   string `yaml:"hmac_secret_file"`
	Ed25519PublicKey string `yaml:"ed25519_public_key"`
}

// Bounds on key material files, in bytes.
const (
	maxKeysFile   = 1 << 20
	maxSecretFile = 64 << 10
	minSecret     = 16
)

// LoadKeys reads the verification keys file at path (YAML, or JSON, which
// is YAML): a mapping from server_id to an entry with hmac_secret_file,
// ed25519_public_key or both (docs/evidence.md, "Keys file"):
//
//	roam-code-local:
//	  hmac_secret_file: secrets/roam.key   # relative to the keys file
//	  ed25519_public_key: "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="
//
// hmac_secret_file names a file whose bytes, minus one trailing "\n" or
// "\r\n", are the secret: at least 16 and at most 64 KiB bytes.
// ed25519_public_key is the standard padded base64 of the 32-byte key.
// Errors: unreadable or oversized files (1 MiB for the keys file), invalid
// YAML, unknown or duplicate fields, an empty server_id, an entry with
// neither key, a short secret, or a malformed public key. Errors name the
// server_id and file paths, never key material. Secrets are never logged.
func LoadKeys(path string) (Keys, error) {
	data, err := readBounded(path, maxKeysFile)
	if err != nil {
		return Keys{}, fmt.Errorf("evidence: keys file: %w", err)
	}
	var entries map[string]keyEntry
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&entries); err != nil && err != io.EOF {
		return Keys{}, fmt.Errorf("evidence: keys file %s: %w", path, err)
	}
	k := Keys{HMAC: map[string][]byte{}, Ed25519: map[string]ed25519.PublicKey{}}
	ids := make([]string, 0, len(entries))
	for id := range entries {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		e := entries[id]
		if id == "" {
			return Keys{}, fmt.Errorf("evidence: keys file %s: empty server_id", path)
		}
		if e.HMACSecretFile == "" && e.Ed25519PublicKey == "" {
			return Keys{}, fmt.Errorf("evidence: keys file %s: server %q has neither hmac_secret_file nor ed25519_public_key", path, id)
		}
		if e.HMACSecretFile != "" {
			f := e.HMACSecretFile
			if !filepath.IsAbs(f) {
				f = filepath.Join(filepath.Dir(path), f)
			}
			secret, err := readBounded(f, maxSecretFile)
			if err != nil {
				return Keys{}, fmt.Errorf("evidence: keys file %s: server %q: hmac secret: %w", path, id, err)
			}
			secret = bytes.TrimSuffix(secret, []byte("\n"))
			secret = bytes.TrimSuffix(secret, []byte("\r"))
			if len(secret) < minSecret {
				return Keys{}, fmt.Errorf("evidence: keys file %s: server %q: hmac secret in %s is shorter than %d bytes", path, id, f, minSecret)
			}
			k.HMAC[id] = secret
		}
		if e.Ed25519PublicKey != "" {
			pub, err := base64.StdEncoding.Strict().DecodeString(e.Ed25519PublicKey)
			if err != nil || len(pub) != ed25519.PublicKeySize {
				return Keys{}, fmt.Errorf("evidence: keys file %s: server %q: ed25519_public_key is not the base64 of %d bytes", path, id, ed25519.PublicKeySize)
			}
			k.Ed25519[id] = ed25519.PublicKey(pub)
		}
	}
	return k, nil
}

// readBounded reads a regular file of at most limit bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return data, nil
}

// unsignedFields are excluded from the signed content (evidence.md §2).
var unsignedFields = []string{"receipt_signature", "verification_status"}

// SignedContent returns the bytes a receipt signature covers: the RFC 8785
// canonical form of the receipt object raw without its receipt_signature
// and verification_status members (evidence.md §2). Every other member,
// unknown ones and issued_by included, is covered. There is no prefix or
// domain separator: the message is exactly these bytes. Errors: raw is not
// a strict JSON object, or wraps [ErrInexactNumber].
func SignedContent(raw []byte) ([]byte, error) {
	ms, err := objectMembers(raw)
	if err != nil {
		return nil, err
	}
	var kept []member
	for _, m := range ms {
		if !slices.Contains(unsignedFields, m.name) {
			kept = append(kept, m)
		}
	}
	return Canonical(appendObject(nil, kept))
}

// Sign returns the receipt object receipt, signed: signature_alg set to alg,
// receipt_signature set to the standard padded base64 of the signature over
// [SignedContent], any previous receipt_signature replaced, every other
// member kept; the result is in RFC 8785 canonical form. key is the HMAC
// secret ([]byte, non-empty) for [AlgHMACSHA256] or an ed25519.PrivateKey
// for [AlgEd25519]. It is meant for tests, fixtures and test servers; the
// gateway only verifies. Errors: an unknown alg, a key of the wrong type or
// size, or the errors of [SignedContent].
func Sign(receipt []byte, alg string, key any) ([]byte, error) {
	switch alg {
	case AlgHMACSHA256:
		if secret, ok := key.([]byte); !ok || len(secret) == 0 {
			return nil, errors.New("evidence: hmac-sha256 needs a non-empty []byte key")
		}
	case AlgEd25519:
		if priv, ok := key.(ed25519.PrivateKey); !ok || len(priv) != ed25519.PrivateKeySize {
			return nil, errors.New("evidence: ed25519 needs an ed25519.PrivateKey")
		}
	default:
		return nil, errors.New("evidence: unknown signature_alg")
	}
	ms, err := objectMembers(receipt)
	if err != nil {
		return nil, err
	}
	var kept []member
	for _, m := range ms {
		if m.name != "receipt_signature" && m.name != "signature_alg" {
			kept = append(kept, m)
		}
	}
	algJSON, _ := quoteJSON(alg)
	kept = append(kept, member{name: "signature_alg", value: algJSON})
	content, err := SignedContent(appendObject(nil, kept))
	if err != nil {
		return nil, err
	}
	var sig []byte
	if alg == AlgHMACSHA256 {
		mac := hmac.New(sha256.New, key.([]byte))
		mac.Write(content)
		sig = mac.Sum(nil)
	} else {
		sig = ed25519.Sign(key.(ed25519.PrivateKey), content)
	}
	sigJSON, _ := quoteJSON(base64.StdEncoding.EncodeToString(sig))
	kept = append(kept, member{name: "receipt_signature", value: sigJSON})
	return Canonical(appendObject(nil, kept))
}

// Verify computes the verification status of the receipt raw, which r must
// be the [Parse] result of (nil when Parse failed), with keys; whatever the
// receipt's own verification_status claims is ignored (evidence.md §2).
// In order:
//
//   - [StatusEmpty]: raw is empty or only whitespace (no receipt);
//   - [StatusTampered]: r is nil (raw is not a strict JSON object), or
//     receipt_signature is present but not a string;
//   - [StatusUnsigned]: no receipt_signature, or "";
//   - [StatusUnknown]: signature_alg absent, not a string or not one of
//     [AlgHMACSHA256] and [AlgEd25519]; no usable key of that algorithm
//     for r.ServerID (absent, an empty HMAC secret, or an Ed25519 key that
//     is not 32 bytes); or no canonical form ([ErrInexactNumber]);
//   - [StatusTampered]: the signature cannot be decoded to the algorithm's
//     size (32 bytes for HMAC, 64 for Ed25519) or does not verify;
//   - [StatusOK] otherwise.
//
// Signature encodings accepted: standard or URL-safe base64, padded or not,
// and lowercase or uppercase hex; the decoded length selects among them,
// which is unambiguous for both sizes. Verify does not consult Problems: a
// receipt may verify and still have problems. HMAC comparison is constant
// time. Cost: one strict parse and one canonicalization of raw.
func Verify(raw []byte, r *ServerReceipt, keys Keys) Status {
	if len(bytes.TrimSpace(raw)) == 0 {
		return StatusEmpty
	}
	if r == nil {
		return StatusTampered
	}
	ms, err := objectMembers(raw)
	if err != nil {
		return StatusTampered
	}
	var sigVal, algVal []byte
	for _, m := range ms {
		switch m.name {
		case "receipt_signature":
			sigVal = m.value
		case "signature_alg":
			algVal = m.value
		}
	}
	if sigVal == nil {
		return StatusUnsigned
	}
	if sigVal[0] != '"' {
		return StatusTampered
	}
	sigText := unquote(sigVal)
	if sigText == "" {
		return StatusUnsigned
	}
	if algVal == nil || algVal[0] != '"' {
		return StatusUnknown
	}
	alg := unquote(algVal)
	var size int
	switch alg {
	case AlgHMACSHA256:
		if len(keys.HMAC[r.ServerID]) == 0 {
			return StatusUnknown
		}
		size = sha256.Size
	case AlgEd25519:
		if len(keys.Ed25519[r.ServerID]) != ed25519.PublicKeySize {
			return StatusUnknown
		}
		size = ed25519.SignatureSize
	default:
		return StatusUnknown
	}
	content, err := SignedContent(raw)
	if err != nil {
		if errors.Is(err, ErrInexactNumber) {
			return StatusUnknown
		}
		return StatusTampered
	}
	sig := decodeSignature(sigText, size)
	if sig == nil {
		return StatusTampered
	}
	switch alg {
	case AlgHMACSHA256:
		mac := hmac.New(sha256.New, keys.HMAC[r.ServerID])
		mac.Write(content)
		if !hmac.Equal(mac.Sum(nil), sig) {
			return StatusTampered
		}
	case AlgEd25519:
		if !ed25519.Verify(keys.Ed25519[r.ServerID], content, sig) {
			return StatusTampered
		}
	}
	return StatusOK
}

// VerifyAs is [Verify] with the keys configured for serverID, the server
// the gateway relays to, whatever server_id the receipt claims: a receipt
// signed with another server's key (replayed from it, say) does not verify
// as this server's evidence ([StatusTampered], or [StatusUnknown] when no
// key is configured for serverID). The receipt's own claim is compared
// with the call separately, as a conflict.
func VerifyAs(raw []byte, r *ServerReceipt, keys Keys, serverID string) Status {
	if r != nil {
		keyed := *r
		keyed.ServerID = serverID
		r = &keyed
	}
	return Verify(raw, r, keys)
}

// decodeSignature decodes s as base64 (standard or URL-safe, padded or
// not, strict) or hex, and returns the result when it is size bytes long.
func decodeSignature(s string, size int) []byte {
	for _, enc := range []*base64.Encoding{
		base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding,
	} {
		if b, err := enc.Strict().DecodeString(s); err == nil && len(b) == size {
			return b
		}
	}
	if b, err := hex.DecodeString(s); err == nil && len(b) == size {
		return b
	}
	return nil
}
