package cli

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/mod/sumdb/note"
)

// newKeysCmd is `gatehouse keys`: key management for ledger checkpoints.
func newKeysCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Manage the Ed25519 keys that sign audit ledger checkpoints",
	}
	groupCommand(cmd)
	var name, out string
	gen := &cobra.Command{
		Use:   "generate --name NAME --out DIR",
		Short: "Generate a checkpoint signing key pair (signed-note format)",
		Long: `generate writes a new Ed25519 key pair in the golang.org/x/mod/sumdb/note
formats: DIR/NAME.skey, the signer key ("PRIVATE+KEY+NAME+<hash>+<key>", mode
0600: keep it secret, give it to the gateway with --ledger-key), and
DIR/NAME.vkey, the verifier key ("NAME+<hash>+<key>", mode 0644: give it to
auditors for "gatehouse ledger verify --key" and "verify-proof --key"). DIR is
created 0700 when missing. Existing files are never overwritten.

NAME must be non-empty UTF-8 without spaces, '+' or '/' (it names the files;
a host name is customary).

Exit status: 0 written, 1 refused or failed, 64 usage.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if name == "" {
				return &exitError{code: 64, err: errors.New("keys generate: --name is required")}
			}
			skeyPath, vkeyPath, vkey, err := generateKeys(name, out)
			if err != nil {
				return &exitError{code: 1, err: fmt.Errorf("keys generate: %w", err)}
			}
			fmt.Fprintf(stdout, "signer key:   %s (secret)\nverifier key: %s\n%s\n", skeyPath, vkeyPath, vkey)
			return nil
		},
	}
	gen.Flags().StringVar(&name, "name", "", "key name (no spaces, '+' or '/'), e.g. gatehouse-prod")
	gen.Flags().StringVar(&out, "out", ".", "directory for NAME.skey and NAME.vkey")
	gen.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &exitError{code: 64, err: err} })
	cmd.AddCommand(gen)
	return cmd
}

// generateKeys creates dir/name.skey (0600) and dir/name.vkey (0644),
// refusing if either exists. It returns both paths and the verifier key.
func generateKeys(name, dir string) (skeyPath, vkeyPath, vkey string, err error) {
	if err := keysCheckName(name); err != nil {
		return "", "", "", err
	}
	skey, vkey, err := note.GenerateKey(rand.Reader, name)
	if err != nil {
		return "", "", "", fmt.Errorf("key name %q: %w", name, err)
	}
	// Round-trip through the parsers: what was written must load.
	if _, err := note.NewSigner(skey); err != nil {
		return "", "", "", fmt.Errorf("key name %q: %w", name, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", "", err
	}
	skeyPath = filepath.Join(dir, name+".skey")
	vkeyPath = filepath.Join(dir, name+".vkey")
	for _, p := range []string{skeyPath, vkeyPath} {
		if _, err := os.Lstat(p); err == nil {
			return "", "", "", fmt.Errorf("%s exists: refusing to overwrite", p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", "", "", err
		}
	}
	if err := keysWriteExclusive(skeyPath, skey+"\n", 0o600); err != nil {
		return "", "", "", err
	}
	if err := keysWriteExclusive(vkeyPath, vkey+"\n", 0o644); err != nil {
		os.Remove(skeyPath)
		return "", "", "", err
	}
	return skeyPath, vkeyPath, vkey, nil
}

// keysCheckName accepts what note accepts as a key name (non-empty UTF-8
// without spaces or '+'; note.GenerateKey itself does not check) that is
// also a single, printable file name element.
func keysCheckName(name string) error {
	if name == "" || name == "." || name == ".." || !utf8.ValidString(name) {
		return fmt.Errorf("key name %q: must be non-empty UTF-8", name)
	}
	for _, r := range name {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == '+' || r == '/' || r == '\\' {
			return fmt.Errorf("key name %q: no spaces, control characters, '+', '/' or backslash", name)
		}
	}
	return nil
}

// keysWriteExclusive creates path with mode (O_EXCL: never overwrites),
// writes content and syncs it.
func keysWriteExclusive(path, content string, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if err := f.Chmod(mode); err != nil { // umask may have narrowed it
		f.Close()
		os.Remove(path)
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}
