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

// TestLoadSignerGivenOtherFiles: a verifier key, or any other file, passed
// where the signer key belongs is named as such without echoing the file;
// the signer key itself loads.
func TestLoadSignerGivenOtherFiles(t *testing.T) {
	skey, vkey, err := note.GenerateKey(rand.Reader, "gw-test")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		path, want string
	}{
		{write("k.vkey", vkey+"\n"), "is a verifier key"},
		{write("other.txt", "password=hunter2\n"), "is not a signer key"},
		{write("empty", ""), "is not a signer key"},
		{write("appended.skey", skey+"\n{\"specversion\":\"1.0\"}\n"), "is not a single signer key line"},
	} {
		_, err := LoadSigner(tc.path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("LoadSigner(%s) = %v, want an error saying it %s, never its content", filepath.Base(tc.path), err, tc.want)
		}
	}
	if s, err := LoadSigner(write("k.skey", skey+"\n")); err != nil || s.Name() != "gw-test" {
		t.Fatalf("LoadSigner(signer key) = %v, %v", s, err)
	}
}
