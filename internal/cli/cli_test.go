package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
)

// TestUnknownSubcommands: a misspelled subcommand is named as such, with or
// without flags after it; flag errors of real subcommands stay flag errors.
func TestUnknownSubcommands(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ledger", "verfy"}, `unknown command "verfy" for "gatehouse ledger"`},
		{[]string{"ledger", "verfy", "--key", "x.vkey"}, `unknown command "verfy" for "gatehouse ledger"`},
		{[]string{"keys", "gen", "--name", "a"}, `unknown command "gen" for "gatehouse keys"`},
		{[]string{"ledger", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"ledger", "verify", "--bogus"}, "unknown flag: --bogus"},
	} {
		stdout, stderr, code := runLedgerCLI(t, "", tc.args...)
		wantCode(t, code, 64, stdout, stderr)
		if !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: stderr %q, want %q", tc.args, stderr, tc.want)
		}
	}
}

// TestLedgerCell: values from servers cannot steer the terminal or break
// the table's columns.
func TestLedgerCell(t *testing.T) {
	for _, tc := range []struct {
		in    string
		width int
		want  string
	}{
		{"", 24, "-"},
		{"read_file", 24, "read_file"},
		{"evil\x1b[31mred\u202eabc\x7f", 0, `evil\u001b[31mred\u202eabc\u007f`},
		{"a-very-long-server-identifier-indeed", 24, "a-very-long-server-iden…"},
		{"ééééé", 3, "éé…"},
	} {
		if got := ledgerCell(tc.in, tc.width); got != tc.want {
			t.Errorf("ledgerCell(%q, %d) = %q, want %q", tc.in, tc.width, got, tc.want)
		}
	}
}

// TestLedgerDisplayDSN: a PostgreSQL password never reaches a message,
// wherever the URL carries it.
func TestLedgerDisplayDSN(t *testing.T) {
	for in, want := range map[string]string{
		"/var/lib/gatehouse/ledger.db":                                  "/var/lib/gatehouse/ledger.db",
		"postgres://u@127.0.0.1:5432/db":                                "postgres://u@127.0.0.1:5432/db",
		"postgres://u:hunter2@127.0.0.1:5432/db":                        "postgres://u:xxxxx@127.0.0.1:5432/db",
		"postgres://u@127.0.0.1/db?password=hunter2":                    "postgres://u@127.0.0.1/db?password=xxxxx",
		"postgresql://u@h/db?sslmode=disable&sslpassword=hunter2":       "postgresql://u@h/db?sslmode=disable&sslpassword=xxxxx",
		"postgres://u:a@h/db?PASSWORD=hunter2&application_name=gateway": "postgres://u:xxxxx@h/db?PASSWORD=xxxxx&application_name=gateway",
		// Values refused as ledgers show only their scheme, or nothing.
		"mysql://u:hunter2@127.0.0.1/db":                  "mysql:...",
		"pg://u:hunter2@h/db":                             "pg:...",
		"postgres:/u:hunter2@h/db":                        "postgres:...",
		"postgres:u:hunter2@h%zz":                         "postgres:...",
		"mysql://h/db?pwd=hunter2":                        "mysql:...",
		"host=127.0.0.1 user=u password=hunter2 dbname=x": "(a keyword/value connection string)",
		"./mysql:x.db":                                    "./mysql:x.db",
		"ledger-2026-11-30T18:38:00.db":                   "ledger-2026-11-30T18:38:00.db",
		// PostgreSQL URLs: other spellings of a secret, and fragments.
		"postgres://u@h/db?pwd=hunter2&pass=hunter2": "postgres://u@h/db?pass=xxxxx&pwd=xxxxx",
		"postgres://u@h/db#hunter2":                  "postgres://u@h/db",
	} {
		got := ledgerDisplayDSN(in)
		if strings.Contains(got, "hunter2") || strings.HasPrefix(in, "postgres://") && strings.Contains(in, "?") && !strings.Contains(got, "xxxxx") {
			t.Errorf("ledgerDisplayDSN(%q) = %q", in, got)
		}
		if (!strings.Contains(in, "?") || !strings.HasPrefix(in, "postgres")) && got != want {
			t.Errorf("ledgerDisplayDSN(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestResolvePath: links are resolved in paths that do not exist yet, and
// in links whose target does not exist yet (where a file will be written).
func TestResolvePath(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(dir, "real")
	os.Mkdir(real, 0o700)
	os.Symlink(real, filepath.Join(dir, "link"))
	os.Symlink(filepath.Join("real", "later.db"), filepath.Join(dir, "dangling"))
	for in, want := range map[string]string{
		filepath.Join(dir, "link"):                      real,
		filepath.Join(dir, "link", "gatehouse", "x.db"): filepath.Join(real, "gatehouse", "x.db"),
		filepath.Join(dir, "dangling"):                  filepath.Join(real, "later.db"),
		filepath.Join(dir, "real", "..", "link", "a"):   filepath.Join(real, "a"),
	} {
		if got := resolvePath(in); got != want {
			t.Errorf("resolvePath(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestCheckpointOptions: wrap's --checkpoint-every and --checkpoint-entries
// reach the ledger options (0 turns a trigger off, which ledger.Options
// spells as negative); negative flags are refused, naming the flag.
func TestCheckpointOptions(t *testing.T) {
	for _, tc := range []struct {
		every   time.Duration
		entries int64
		want    ledger.Options
		err     string
	}{
		{ledger.DefaultCheckpointEvery, ledger.DefaultCheckpointEveryN, ledger.Options{CheckpointEvery: 30 * time.Second, CheckpointEveryN: 1000}, ""},
		{5 * time.Second, 50, ledger.Options{CheckpointEvery: 5 * time.Second, CheckpointEveryN: 50}, ""},
		{0, 50, ledger.Options{CheckpointEvery: -1, CheckpointEveryN: 50}, ""},
		{time.Minute, 0, ledger.Options{CheckpointEvery: time.Minute, CheckpointEveryN: -1}, ""},
		{-time.Second, 50, ledger.Options{}, "--checkpoint-every"},
		{time.Second, -1, ledger.Options{}, "--checkpoint-entries"},
	} {
		got, err := checkpointOptions(tc.every, tc.entries)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("checkpointOptions(%v, %d) error %v, want one naming %s", tc.every, tc.entries, err, tc.err)
			}
			continue
		}
		if err != nil || got.CheckpointEvery != tc.want.CheckpointEvery || got.CheckpointEveryN != tc.want.CheckpointEveryN {
			t.Errorf("checkpointOptions(%v, %d) = %+v, %v; want %+v", tc.every, tc.entries, got, err, tc.want)
		}
	}
}
