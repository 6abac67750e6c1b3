package ledger

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// TestLoadVerifierGivenSignerKey: a signer key passed where the verifier
// key belongs is named as such, and the secret is not echoed.
func TestLoadVerifierGivenSignerKey(t *testing.T) {
	skey, vkey, err := note.GenerateKey(rand.Reader, "gw-test")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	spath, vpath := filepath.Join(dir, "k.skey"), filepath.Join(dir, "k.vkey")
	if err := os.WriteFile(spath, []byte(skey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(vpath, []byte(vkey+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = LoadVerifier(spath)
	if err == nil || !strings.Contains(err.Error(), "is a signer key") || !strings.Contains(err.Error(), ".vkey") {
		t.Fatalf("LoadVerifier(signer key) = %v, want an error naming the signer key and the .vkey", err)
	}
	if strings.Contains(err.Error(), strings.Split(skey, "+")[3]) {
		t.Fatalf("the error echoes the secret key: %v", err)
	}
	if v, err := LoadVerifier(vpath); err != nil || v.Name() != "gw-test" {
		t.Fatalf("LoadVerifier(verifier key) = %v, %v", v, err)
	}
}
