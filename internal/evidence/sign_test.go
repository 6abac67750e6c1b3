package evidence

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Fixed test keys. The Ed25519 seed is RFC 8032 §7.1 TEST 1; its public key
// is d75a9801...511a. Never use them for anything else.
var (
	testSeed, _    = hex.DecodeString("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
	testEdPriv     = ed25519.NewKeyFromSeed(testSeed)
	testEdPub      = testEdPriv.Public().(ed25519.PublicKey)
	testHMACSecret = []byte("gatehouse-test-hmac-secret-0001")
	testKeys       = Keys{
		HMAC:    map[string][]byte{"roam-code-local": testHMACSecret},
		Ed25519: map[string]ed25519.PublicKey{"roam-code-local": testEdPub},
	}
)

func TestTestKeys(t *testing.T) {
	if hex.EncodeToString(testEdPub) != "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a" {
		t.Fatalf("unexpected test public key %x", testEdPub)
	}
}

// signed returns testdata/receipts/valid.json signed with alg.
func signed(t testing.TB, alg string) []byte {
	t.Helper()
	var key any = testHMACSecret
	if alg == AlgEd25519 {
		key = testEdPriv
	}
	out, err := Sign(readTestdata(t, "receipts/valid.json"), alg, key)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSignGolden pins the signed form of valid.json for both algorithms:
// canonical JSON, signature_alg and a standard base64 receipt_signature.
func TestSignGolden(t *testing.T) {
	for _, alg := range []string{AlgHMACSHA256, AlgEd25519} {
		out := signed(t, alg)
		golden(t, "signed/"+alg+".json", out)
		content, err := SignedContent(out)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, "signed/"+alg+".content", content)
		if bytes.Contains(content, []byte("receipt_signature")) || bytes.Contains(content, []byte("verification_status")) {
			t.Errorf("signed content contains an excluded member")
		}
		if !bytes.Contains(content, []byte(`"signature_alg":"`+alg+`"`)) {
			t.Errorf("signed content does not cover signature_alg")
		}
		// Signing again (replacing the signature) is stable.
		var key any = testHMACSecret
		if alg == AlgEd25519 {
			key = testEdPriv
		}
		again, err := Sign(out, alg, key)
		if err != nil || !bytes.Equal(again, out) {
			t.Errorf("re-signing changed the receipt: %v", err)
		}
	}
}

// reencode rewrites the receipt_signature of a signed receipt with enc.
func reencode(t *testing.T, raw []byte, enc func([]byte) string) []byte {
	t.Helper()
	r, _, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := base64.StdEncoding.DecodeString(r.ReceiptSignature)
	if err != nil {
		t.Fatal(err)
	}
	q, _ := quoteJSON(enc(sig))
	return withMember(t, raw, "receipt_signature", string(q))
}

func TestVerify(t *testing.T) {
	hm := signed(t, AlgHMACSHA256)
	ed := signed(t, AlgEd25519)
	unsigned := readTestdata(t, "receipts/valid.json")
	reordered := func(raw []byte) []byte {
		ms, _ := objectMembers(raw)
		var b bytes.Buffer
		b.WriteString("{\n")
		for i := len(ms) - 1; i >= 0; i-- {
			q, _ := quoteJSON(ms[i].name)
			b.Write(q)
			b.WriteString(" : ")
			b.Write(ms[i].value)
			if i > 0 {
				b.WriteString(",\n")
			}
		}
		b.WriteString("\n}")
		return b.Bytes()
	}
	legacy := func(raw []byte) []byte {
		ms, _ := objectMembers(raw)
		var dotted []member
		for _, m := range ms {
			dotted = append(dotted, member{name: "interlock." + m.name, value: m.value})
		}
		result := `{"content":[],"_meta":` + string(appendObject(nil, dotted)) + `}`
		found, _, ok := Find([]byte(result), DefaultReceiptKeys)
		if !ok {
			t.Fatal("legacy receipt not found")
		}
		return found
	}
	onlyEd := Keys{Ed25519: testKeys.Ed25519}
	otherEd := Keys{Ed25519: map[string]ed25519.PublicKey{"roam-code-local": ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32)).Public().(ed25519.PublicKey)}}
	otherHMAC := Keys{HMAC: map[string][]byte{"roam-code-local": []byte("another-secret-of-enough-length")}}

	tests := []struct {
		name string
		raw  []byte
		keys Keys
		want Status
	}{
		{"nil", nil, testKeys, StatusEmpty},
		{"empty", []byte{}, testKeys, StatusEmpty},
		{"whitespace", []byte(" \n\t"), testKeys, StatusEmpty},

		{"hmac ok", hm, testKeys, StatusOK},
		{"ed25519 ok", ed, testKeys, StatusOK},
		{"ed25519 base64url raw", reencode(t, ed, base64.RawURLEncoding.EncodeToString), testKeys, StatusOK},
		{"ed25519 base64 std raw", reencode(t, ed, base64.RawStdEncoding.EncodeToString), testKeys, StatusOK},
		{"ed25519 base64url padded", reencode(t, ed, base64.URLEncoding.EncodeToString), testKeys, StatusOK},
		{"ed25519 hex", reencode(t, ed, hex.EncodeToString), testKeys, StatusOK},
		{"hmac hex upper", reencode(t, hm, func(b []byte) string { return strings.ToUpper(hex.EncodeToString(b)) }), testKeys, StatusOK},
		{"claimed status ignored", withMember(t, ed, "verification_status", `"tampered"`), testKeys, StatusOK},
		{"claimed status added", withMember(t, withMember(t, hm, "verification_status", ""), "verification_status", `"unknown"`), testKeys, StatusOK},
		{"member order and whitespace", reordered(ed), testKeys, StatusOK},
		{"legacy dotted reassembled", legacy(ed), testKeys, StatusOK},
		{"ok despite problems", mustSign(t, `{"server_id":"roam-code-local","issued_at":"soon"}`, AlgEd25519), testKeys, StatusOK},

		{"unsigned", unsigned, testKeys, StatusUnsigned},
		{"empty signature", withMember(t, withMember(t, unsigned, "receipt_signature", `""`), "signature_alg", `"ed25519"`), testKeys, StatusUnsigned},
		{"alg without signature", withMember(t, ed, "receipt_signature", ""), testKeys, StatusUnsigned},
		{"unsigned without keys", unsigned, Keys{}, StatusUnsigned},

		{"no keys", ed, Keys{}, StatusUnknown},
		{"empty hmac secret", hm, Keys{HMAC: map[string][]byte{"roam-code-local": {}}}, StatusUnknown},
		{"short ed25519 key", ed, Keys{Ed25519: map[string]ed25519.PublicKey{"roam-code-local": testEdPub[:31]}}, StatusUnknown},
		{"no key of that alg", hm, onlyEd, StatusUnknown},
		{"server without key", withMember(t, ed, "server_id", `"other-server"`), testKeys, StatusUnknown},
		{"server_id invalid", withMember(t, ed, "server_id", `5`), testKeys, StatusUnknown},
		{"unknown alg", withMember(t, ed, "signature_alg", `"rsa-sha256"`), testKeys, StatusUnknown},
		{"alg case", withMember(t, ed, "signature_alg", `"Ed25519"`), testKeys, StatusUnknown},
		{"alg missing", withMember(t, ed, "signature_alg", ""), testKeys, StatusUnknown},
		{"alg not a string", withMember(t, ed, "signature_alg", `1`), testKeys, StatusUnknown},
		{"inexact number", withMember(t, ed, "x-big", `9007199254740993`), testKeys, StatusUnknown},

		{"field changed", withMember(t, ed, "side_effect", `"read_only"`), testKeys, StatusTampered},
		{"hmac field changed", withMember(t, hm, "ledger_seq", `43`), testKeys, StatusTampered},
		{"member added", withMember(t, ed, "x-new", `1`), testKeys, StatusTampered},
		{"member removed", withMember(t, ed, "redactions", ""), testKeys, StatusTampered},
		{"alg swapped", withMember(t, hm, "signature_alg", `"ed25519"`), testKeys, StatusTampered},
		{"wrong ed25519 key", ed, otherEd, StatusTampered},
		{"wrong hmac key", hm, otherHMAC, StatusTampered},
		{"signature not base64", withMember(t, ed, "receipt_signature", `"!!!!"`), testKeys, StatusTampered},
		{"signature too short", withMember(t, ed, "receipt_signature", `"`+base64.StdEncoding.EncodeToString(make([]byte, 63))+`"`), testKeys, StatusTampered},
		{"hmac signature of ed25519 size", withMember(t, hm, "receipt_signature", `"`+base64.StdEncoding.EncodeToString(make([]byte, 64))+`"`), testKeys, StatusTampered},
		{"signature not a string", withMember(t, ed, "receipt_signature", `5`), testKeys, StatusTampered},
		{"signature null", withMember(t, ed, "receipt_signature", `null`), testKeys, StatusTampered},
		{"not an object", []byte(`["receipt"]`), testKeys, StatusTampered},
		{"duplicate names", append(bytes.TrimSuffix(bytes.Clone(ed), []byte("}")), `,"server_id":"roam-code-local"}`...), testKeys, StatusTampered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _, _ := Parse(tt.raw)
			if got := Verify(tt.raw, r, tt.keys); got != tt.want {
				t.Errorf("Verify = %s, want %s", got, tt.want)
			}
		})
	}
}

func mustSign(t *testing.T, raw, alg string) []byte {
	t.Helper()
	var key any = testHMACSecret
	if alg == AlgEd25519 {
		key = testEdPriv
	}
	out, err := Sign([]byte(raw), alg, key)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestVerifyEveryByte flips every byte of a signed receipt: no variant
// verifies.
func TestVerifyEveryByte(t *testing.T) {
	for _, alg := range []string{AlgHMACSHA256, AlgEd25519} {
		orig := signed(t, alg)
		counts := map[Status]int{}
		for i := range orig {
			for _, delta := range []byte{1, 0x20} {
				b := bytes.Clone(orig)
				b[i] ^= delta
				r, _, _ := Parse(b)
				s := Verify(b, r, testKeys)
				if s == StatusOK {
					// Only a change that decodes to the same JSON can
					// keep the signature: none exists here except
					// inside verification_status.
					if !bytes.Contains(orig[max(0, i-40):i+1], []byte(`"verification_status":"`)) {
						t.Errorf("%s: flipping byte %d (%q) still verifies", alg, i, orig[i])
					}
				}
				counts[s]++
			}
		}
		t.Logf("%s: %v", alg, counts)
	}
}

func TestSignErrors(t *testing.T) {
	valid := readTestdata(t, "receipts/valid.json")
	tests := []struct {
		name    string
		receipt []byte
		alg     string
		key     any
	}{
		{"unknown alg", valid, "rsa", testHMACSecret},
		{"hmac with ed25519 key", valid, AlgHMACSHA256, testEdPriv},
		{"hmac empty secret", valid, AlgHMACSHA256, []byte{}},
		{"ed25519 with bytes", valid, AlgEd25519, testHMACSecret},
		{"ed25519 with public key", valid, AlgEd25519, testEdPub},
		{"ed25519 short key", valid, AlgEd25519, ed25519.PrivateKey(testSeed)},
		{"not an object", []byte(`[]`), AlgEd25519, testEdPriv},
		{"duplicates", []byte(`{"a":1,"a":1}`), AlgEd25519, testEdPriv},
		{"inexact", []byte(`{"a":9007199254740993}`), AlgEd25519, testEdPriv},
	}
	for _, tt := range tests {
		if out, err := Sign(tt.receipt, tt.alg, tt.key); err == nil {
			t.Errorf("%s: Sign = %s, want an error", tt.name, out)
		}
	}
}

func TestLoadKeys(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pub := base64.StdEncoding.EncodeToString(testEdPub)
	write("secrets/roam.key", string(testHMACSecret)+"\n")
	write("secrets/crlf.key", string(testHMACSecret)+"\r\n")
	abs := write("abs.key", string(testHMACSecret))
	write("secrets/short.key", "short-secret\n")

	yamlPath := write("keys.yaml", `
# verification keys
roam-code-local:
  hmac_secret_file: secrets/roam.key
  ed25519_public_key: "`+pub+`"
crlf-server:
  hmac_secret_file: secrets/crlf.key
abs-server:
  hmac_secret_file: `+abs+`
ed-only:
  ed25519_public_key: `+pub+`
`)
	k, err := LoadKeys(yamlPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"roam-code-local", "crlf-server", "abs-server"} {
		if !bytes.Equal(k.HMAC[id], testHMACSecret) {
			t.Errorf("HMAC[%s] = %q", id, k.HMAC[id])
		}
	}
	if !bytes.Equal(k.Ed25519["ed-only"], testEdPub) || !bytes.Equal(k.Ed25519["roam-code-local"], testEdPub) || len(k.Ed25519) != 2 {
		t.Errorf("Ed25519 = %v", k.Ed25519)
	}
	if s := Verify(signed(t, AlgHMACSHA256), &ServerReceipt{ServerID: "roam-code-local"}, k); s != StatusOK {
		t.Errorf("Verify with loaded keys = %s", s)
	}

	jsonPath := write("keys.json", `{"roam-code-local": {"ed25519_public_key": "`+pub+`", "hmac_secret_file": "secrets/roam.key"}}`)
	if k, err := LoadKeys(jsonPath); err != nil || !bytes.Equal(k.Ed25519["roam-code-local"], testEdPub) {
		t.Errorf("LoadKeys(json) = %v, %v", k, err)
	}
	if k, err := LoadKeys(write("empty.yaml", "")); err != nil || len(k.HMAC)+len(k.Ed25519) != 0 {
		t.Errorf("LoadKeys(empty) = %v, %v", k, err)
	}

	bad := map[string]string{
		"neither key":      `s: {}`,
		"short secret":     "s: {hmac_secret_file: secrets/short.key}",
		"missing secret":   "s: {hmac_secret_file: secrets/none.key}",
		"bad base64":       "s: {ed25519_public_key: 'not base64!'}",
		"wrong key length": "s: {ed25519_public_key: " + base64.StdEncoding.EncodeToString(make([]byte, 31)) + "}",
		"url base64":       "s: {ed25519_public_key: " + base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32)) + "}",
		"unknown field":    "s: {ed25519_public_key: " + pub + ", hmac_secret: inline}",
		"duplicate server": "s: {ed25519_public_key: " + pub + "}\ns: {ed25519_public_key: " + pub + "}",
		"empty server id":  `"": {ed25519_public_key: ` + pub + `}`,
		"not a mapping":    "- a\n- b\n",
		"invalid yaml":     "s: [",
	}
	for name, content := range bad {
		p := write(strings.ReplaceAll(name, " ", "_")+".yaml", content)
		_, err := LoadKeys(p)
		if err == nil {
			t.Errorf("%s: LoadKeys succeeded", name)
			continue
		}
		if strings.Contains(err.Error(), "short-secret") || strings.Contains(err.Error(), string(testHMACSecret)) {
			t.Errorf("%s: error leaks a secret: %v", name, err)
		}
	}
	if _, err := LoadKeys(filepath.Join(dir, "absent.yaml")); err == nil {
		t.Error("LoadKeys of a missing file succeeded")
	}
	big := write("big.yaml", strings.Repeat("#", maxKeysFile+1))
	if _, err := LoadKeys(big); err == nil {
		t.Error("LoadKeys of an oversized file succeeded")
	}
}

// TestVerifyAs: keys are those of the server the gateway relays to, not
// of the server the receipt claims: another server's genuine receipt does
// not verify as this one's.
func TestVerifyAs(t *testing.T) {
	otherPriv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	keys := Keys{
		HMAC: map[string][]byte{"roam-code-local": testHMACSecret},
		Ed25519: map[string]ed25519.PublicKey{
			"roam-code-local": testEdPub,
			"payments":        otherPriv.Public().(ed25519.PublicKey),
		},
	}
	for _, alg := range []string{AlgEd25519, AlgHMACSHA256} {
		raw := signed(t, alg) // claims server_id roam-code-local, signed with its key
		r, _, err := Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]Status{
			"roam-code-local": StatusOK,       // the claimed and configured server agree
			"payments":        StatusTampered, // a key exists for the server relayed to, and it did not sign
			"nobody":          StatusUnknown,  // no key for the server relayed to
		}
		if alg == AlgHMACSHA256 {
			want["payments"] = StatusUnknown // payments has no HMAC secret
		}
		for server, st := range want {
			if got := VerifyAs(raw, r, keys, server); got != st {
				t.Errorf("%s: VerifyAs(..., %q) = %s, want %s", alg, server, got, st)
			}
		}
		if r.ServerID != "roam-code-local" {
			t.Errorf("VerifyAs changed the parsed receipt: server_id %q", r.ServerID)
		}
	}
}
