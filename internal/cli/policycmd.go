package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/gatehouse-mcp/gatehouse/internal/policy"
)

// Exit codes of "gatehouse policy check".
const (
	policyExitInvalid    = 1  // the policy does not load
	policyExitUnreadable = 2  // the file cannot be read
	policyExitUsage      = 64 // bad arguments
)

// newPolicyCmd is "gatehouse policy": checking a policy file without
// starting a server.
func newPolicyCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Check policy files",
	}
	groupCommand(cmd)
	var role string
	check := &cobra.Command{
		Use:   "check FILE [--role ROLE]",
		Short: "Load a policy as gatehouse wrap would, without starting a server",
		Long: `check loads FILE exactly as "gatehouse wrap --policy FILE" does (YAML,
keys, actions, tool patterns, every CEL condition compiled and type-checked)
and prints its name, version and rules, or every problem found, each with
file, line and rule (docs/policy.md). With --role it also warns, as wrap
does, when rules read principal.role and none names ROLE.

Exit status: 0 the policy loads, 1 it does not (problems on stderr), 2 the
file cannot be read, 64 usage.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &exitError{code: policyExitUsage, err: fmt.Errorf("policy check: want one policy FILE, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			p, err := policy.Load(args[0])
			var pathErr *fs.PathError
			if errors.As(err, &pathErr) {
				// Missing, a directory, no permission, a link loop: the
				// file could not be read at all.
				return &exitError{code: policyExitUnreadable, err: err}
			}
			if err != nil {
				return &exitError{code: policyExitInvalid, err: err}
			}
			rules := "rules"
			if p.RuleCount() == 1 {
				rules = "rule"
			}
			mode := ""
			if p.Settings().Mode == policy.ModeShadow {
				// defaults.mode: shadow changes what wrap does more than
				// any rule: say so.
				mode = "; shadow mode (defaults.mode): every verdict recorded, none enforced"
			}
			fmt.Fprintf(stdout, "OK policy %s (%s), version %s: %d %s; default action %s%s\n",
				shown(p.Name()), shown(args[0]), shown(p.Version()), p.RuleCount(), rules, p.DefaultAction(), mode)
			warnUnnamedRole(stderr, p, role, args[0])
			warnPolicy(stderr, p, args[0], false)
			return nil
		},
	}
	check.Flags().StringVar(&role, "role", "", "warn when rules read principal.role and none names this role")
	check.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &exitError{code: policyExitUsage, err: err} })
	cmd.AddCommand(check)
	return cmd
}

// warnPolicy writes p.Warnings (scanOff: wrap --no-scan) to stderr, one
// "gatehouse: warning:" line each.
func warnPolicy(stderr io.Writer, p *policy.Policy, path string, scanOff bool) {
	for _, w := range p.Warnings(scanOff) {
		fmt.Fprintf(stderr, "gatehouse: warning: policy %s: %s\n", path, w)
	}
}

// warnUnnamedRole warns on stderr when role is set, some rule of p (loaded
// from path) reads principal.role, and no rule names role: most likely a
// typo that would leave every role-based rule silently unmatched.
func warnUnnamedRole(stderr io.Writer, p *policy.Policy, role, path string) {
	if role != "" && p.ReadsRole() && !p.MentionsString(role) {
		fmt.Fprintf(stderr, "gatehouse: warning: --role %q appears in no rule of policy %s: rules that test principal.role will not match it\n", role, path)
	}
}
