package ledger

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// LoadSigner reads a note signer key file (one line,
// "PRIVATE+KEY+<name>+<hash>+<keydata>", as written by `gatehouse keys
// generate`) and returns its Signer. Surrounding whitespace is ignored.
func LoadSigner(path string) (note.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ledger: reading signer key: %w", err)
	}
	text := strings.TrimSpace(string(b))
	if !strings.HasPrefix(text, "PRIVATE+KEY+") {
		// Never echo the file: it may be some other secret.
		if _, err := note.NewVerifier(text); err == nil {
			return nil, fmt.Errorf("ledger: %s is a verifier key (the public one); pass the signer key, the .skey file it was generated with", path)
		}
		return nil, fmt.Errorf("ledger: %s is not a signer key (one line starting PRIVATE+KEY+, as gatehouse keys generate writes)", path)
	}
	if n := strings.Count(text, "\n"); n > 0 {
		return nil, fmt.Errorf("ledger: %s is not a single signer key line: %d more lines follow the key (was something appended to it?)", path, n)
	}
	s, err := note.NewSigner(text)
	if err != nil {
		return nil, fmt.Errorf("ledger: signer key %s: %w", path, err)
	}
	return s, nil
}

// LoadVerifier reads a note verifier key file (one line,
// "<name>+<hash>+<keydata>") and returns its Verifier.
func LoadVerifier(path string) (note.Verifier, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ledger: reading verifier key: %w", err)
	}
	text := strings.TrimSpace(string(b))
	if strings.HasPrefix(text, "PRIVATE+KEY+") {
		// Never echo the key itself: it is the secret one.
		return nil, fmt.Errorf("ledger: %s is a signer key (the secret one); pass its verifier key, the .vkey file beside it", path)
	}
	v, err := note.NewVerifier(text)
	if err != nil {
		return nil, fmt.Errorf("ledger: verifier key %s: %w", path, err)
	}
	return v, nil
}

// DefaultPath returns the default SQLite ledger file:
// $XDG_STATE_HOME/gatehouse/ledger.db, or ~/.local/state/gatehouse/ledger.db
// when XDG_STATE_HOME is unset or not absolute (XDG Base Directory
// specification). It creates nothing; sqlite.Open creates the directory
// 0700 and the file 0600.
func DefaultPath() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "gatehouse", "ledger.db"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return "", errors.New("ledger: no XDG_STATE_HOME and no home directory for the default ledger path")
	}
	return filepath.Join(home, ".local", "state", "gatehouse", "ledger.db"), nil
}
