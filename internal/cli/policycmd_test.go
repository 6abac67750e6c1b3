package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPolicyCheck: "gatehouse policy check" loads a policy as wrap does and
// reports it, or its problems, with the documented exit codes.
func TestPolicyCheck(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("name: x\nversion: \"1\"\nrules:\n  - id: r\n    when: tool.nme == \"x\"\n    action: deny\n    reason: r\n"), 0o600)
	unreadable := filepath.Join(dir, "missing.yaml")
	shadow := filepath.Join(dir, "shadow.yaml")
	os.WriteFile(shadow, []byte("name: s\nversion: \"1\"\ndefaults:\n  mode: shadow\n"), 0o600)
	example := "../../examples/policies/readonly-agent.yaml"
	for _, tc := range []struct {
		name      string
		args      []string
		code      int
		stdout    string
		stderr    string
		notStderr string
	}{
		{"loads", []string{example}, 0, "OK policy readonly-agent (" + example + "), version", "", "warning"},
		{"role named", []string{example, "--role", "readonly_agent"}, 0, "1 rule; default action allow", "", "warning"},
		{"role not named", []string{example, "--role", "readonly-agent"}, 0, "OK policy", `--role "readonly-agent" appears in no rule`, ""},
		{"invalid", []string{bad}, 1, "", bad + ":5: rule r: condition", ""},
		{"shadow mode", []string{shadow}, 0, "0 rules; default action allow; shadow mode (defaults.mode): every verdict recorded, none enforced\n", "", "warning"},
		{"unreadable", []string{unreadable}, 2, "", "no such file", ""},
		{"a directory", []string{dir}, 2, "", "is a directory", ""},
		{"no file", nil, 64, "", "want one policy FILE", ""},
		{"two files", []string{example, example}, 64, "", "got 2 arguments", ""},
		{"unknown flag", []string{example, "--rol", "x"}, 64, "", "unknown flag", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(append([]string{"policy", "check"}, tc.args...), strings.NewReader(""), &out, &errb)
			if code != tc.code || !strings.Contains(out.String(), tc.stdout) || !strings.Contains(errb.String(), tc.stderr) ||
				tc.notStderr != "" && strings.Contains(errb.String(), tc.notStderr) {
				t.Errorf("policy check %v: exit %d (want %d)\nstdout: %s\nstderr: %s", tc.args, code, tc.code, out.String(), errb.String())
			}
		})
	}
}
