package cli

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/gatehouse-mcp/gatehouse/internal/audit"
	"github.com/gatehouse-mcp/gatehouse/internal/evidence"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger/backends"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
)

// openEvidence opens the audit ledger and the evidence recorder for wrap,
// before the server is spawned. It returns nils with --no-ledger. pol's
// receipt rules, if any, are evaluated by the recorder on responses.
func openEvidence(ctx context.Context, f *wrapFlags, require string, pol *policy.Policy, stderr io.Writer, logger *slog.Logger) (*ledger.Ledger, *audit.Recorder, error) {
	if f.noLedger {
		if require != "" && require != string(evidence.RequireNone) {
			return nil, nil, fmt.Errorf("receipts.require %q needs the audit ledger: drop --no-ledger", require)
		}
		if pol.HasReceiptRules() {
			return nil, nil, fmt.Errorf("policy %s has rules that read receipt, which need the audit ledger (receipts are read and verified there): drop --no-ledger", pol.Name())
		}
		return nil, nil, nil
	}
	req, err := evidence.ParseRequirement(require)
	if err != nil {
		return nil, nil, fmt.Errorf("--require-receipts: %w", err)
	}
	var keys evidence.Keys
	if f.receiptKeys != "" {
		if keys, err = evidence.LoadKeys(f.receiptKeys); err != nil {
			return nil, nil, fmt.Errorf("--receipt-keys: %w", err)
		}
	}
	dsn := f.state
	if dsn == "" {
		if dsn, err = ledger.DefaultPath(); err != nil {
			return nil, nil, fmt.Errorf("--state: %w", err)
		}
	}
	signer, err := loadLedgerSigner(f.ledgerKey, "or run with --no-ledger", stderr)
	if err != nil {
		return nil, nil, err
	}
	opts, err := checkpointOptions(f.ckptEvery, f.ckptEntries)
	if err != nil {
		return nil, nil, err
	}
	opts.Signer = signer
	led, err := backends.Open(ctx, dsn, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("--state %s: %w", ledgerDisplayDSN(dsn), err)
	}
	if f.deferOutcome < 0 {
		led.Close(ctx)
		return nil, nil, fmt.Errorf("--defer-outcome %s: want a positive duration, or 0 for outcomes durable before the response", f.deferOutcome)
	}
	rec, err := audit.New(audit.Config{Ledger: led, Keys: keys, Require: req, GatewayID: f.gatewayID, Logger: logger, Policy: pol, DeferOutcome: f.deferOutcome})
	if err != nil {
		led.Close(ctx)
		return nil, nil, err
	}
	return led, rec, nil
}

// loadLedgerSigner loads the checkpoint signing key of --ledger-key
// (keyFlag), or without it the default key (defaultSignerKeyPath), created
// on first use (ensureSignerKey), and warns when others may read it. For
// the default key the errors end with what the user can change: --ledger-key,
// XDG_STATE_HOME, and orElse (e.g. "or run with --no-ledger").
func loadLedgerSigner(keyFlag, orElse string, stderr io.Writer) (note.Signer, error) {
	keyPath := keyFlag
	if keyPath == "" {
		// The default key: the errors say what the user can change, since
		// they did not name this path themselves.
		hint := "pass --ledger-key FILE.skey, set XDG_STATE_HOME, " + orElse
		var err error
		keyPath, err = defaultSignerKeyPath()
		if err != nil {
			return nil, fmt.Errorf("the default ledger signing key: %w (%s)", err, hint)
		}
		if err := ensureSignerKey(keyPath, stderr); err != nil {
			return nil, fmt.Errorf("the default ledger signing key %s: %w (%s)", keyPath, err, hint)
		}
	}
	signer, err := ledger.LoadSigner(keyPath)
	if err != nil {
		if keyFlag == "" {
			return nil, fmt.Errorf("the default ledger signing key: %w", err)
		}
		return nil, fmt.Errorf("--ledger-key: %w", err)
	}
	warnReadableKey(stderr, keyPath)
	return signer, nil
}

// checkpointOptions are the ledger options of wrap's --checkpoint-every
// and --checkpoint-entries (docs/ledger.md, "Checkpoints"): a checkpoint is
// signed when entries have waited every without one, or when entries are
// not covered by one, whichever comes first, and at close; 0 turns that
// trigger off. Negative values are an error naming the flag.
func checkpointOptions(every time.Duration, entries int64) (ledger.Options, error) {
	var o ledger.Options
	switch {
	case every < 0:
		return o, fmt.Errorf("--checkpoint-every %s: want a positive duration, or 0 for no time trigger", every)
	case entries < 0:
		return o, fmt.Errorf("--checkpoint-entries %d: want a positive count, or 0 for no count trigger", entries)
	}
	o.CheckpointEvery, o.CheckpointEveryN = every, entries
	if every == 0 {
		o.CheckpointEvery = -1 // ledger.Options: negative disables, 0 is the default
	}
	if entries == 0 {
		o.CheckpointEveryN = -1
	}
	return o, nil
}

// defaultStateDir is the directory of the default ledger.
func defaultStateDir() (string, error) {
	p, err := ledger.DefaultPath()
	if err != nil {
		return "", err
	}
	return filepath.Dir(p), nil
}

// warnReadableKey writes a warning when the signing key at path may be
// read by its group or by others: whoever reads it can sign checkpoints
// that verify as the gateway's. It is not refused (a key mounted from a
// secret store is often 0644 in a private directory).
func warnReadableKey(stderr io.Writer, path string) {
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm()&0o077 == 0 {
		return
	}
	fmt.Fprintf(stderr, "gatehouse: warning: the ledger signing key %s has mode %04o: others who can read it can sign checkpoints as this gateway (chmod 600 %s)\n", path, fi.Mode().Perm(), path)
}

// defaultSignerKeyPath is the checkpoint signing key wrap uses without
// --ledger-key: ledger.skey in the default ledger's directory
// ($XDG_STATE_HOME/gatehouse). The error is ledger.DefaultPath's.
func defaultSignerKeyPath() (string, error) {
	dir, err := defaultStateDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "ledger.skey"), nil
}

// verifierKeyPath is where ensureSignerKey writes the verifier key of the
// signing key at path: path with .vkey for .skey.
func verifierKeyPath(path string) string { return strings.TrimSuffix(path, ".skey") + ".vkey" }

// ensureSignerKey creates a checkpoint signing key at path (0600) and its
// verifier key beside it (path with .vkey), unless path exists. The key's
// name is "gatehouse-<host>". One line on stderr names both files. Several
// gatehouse processes starting at once on a fresh state directory agree on
// one key pair: creation holds an exclusive flock(2) on a lock file beside
// the key.
func ensureSignerKey(path string, stderr io.Writer) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	lock, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(path); err == nil {
		return nil // another gatehouse created it while we waited
	}
	host, _ := os.Hostname()
	name := "gatehouse-" + strings.Map(func(r rune) rune {
		if r == '+' || r == ' ' || r < 0x21 || r > 0x7e {
			return '-'
		}
		return r
	}, host)
	skey, vkey, err := note.GenerateKey(rand.Reader, name)
	if err != nil {
		return fmt.Errorf("generate key: %w", err)
	}
	vpath := verifierKeyPath(path)
	if err := writeNew(vpath, vkey+"\n", 0o644); err != nil {
		return err
	}
	if err := writeNew(path, skey+"\n", 0o600); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "gatehouse: created the ledger checkpoint signing key %s (verifier key %s)\n", path, vpath)
	return nil
}

// writeNew writes content to path with mode, replacing any file there,
// through a temporary file renamed into place.
func writeNew(path, content string, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.WriteString(content); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
