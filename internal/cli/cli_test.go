package cli

import (
	"strings"
	"testing"
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
