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
