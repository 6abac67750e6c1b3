// Package cli is Gatehouse's command line: it parses flags, loads and checks
// configuration, and wires the packages together. It holds no relay or
// policy logic of its own.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// Version is the Gatehouse version, set at build time with
// -ldflags "-X github.com/gatehouse-mcp/gatehouse/internal/cli.Version=...".
var Version = "0.1.0-dev"

// groupCommand makes a command that only holds subcommands print its help
// when called alone and refuse an unknown subcommand (a typo such as
// "ledger shwo") with a usage error instead of printing help and exiting 0.
func groupCommand(cmd *cobra.Command) {
	// A misspelled subcommand followed by its flags ("ledger verfy --key
	// x") is reported as the unknown command it is, not as an unknown
	// flag of the group. (Subcommands inherit the function; their own
	// flag errors pass through unchanged.)
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if c == cmd {
			if args := c.Flags().Args(); len(args) > 0 {
				return &exitError{code: 64, err: fmt.Errorf("unknown command %q for %q; see %q", args[0], c.CommandPath(), c.CommandPath()+" --help")}
			}
		}
		return err
	})
	cmd.Args = func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			return &exitError{code: 64, err: fmt.Errorf("unknown command %q for %q; see %q", args[0], c.CommandPath(), c.CommandPath()+" --help")}
		}
		return nil
	}
	cmd.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
}

// exitError carries an exit code out of a cobra command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// Main runs the command line with args (without the program name) and
// returns the process exit code.
func Main(args []string) int {
	return run(args, os.Stdin, os.Stdout, os.Stderr)
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := &cobra.Command{
		Use:           "gatehouse",
		Short:         "A security gateway for the Model Context Protocol",
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newWrapCmd(stdin, stdout, stderr))
	root.AddCommand(newVerifyCmd(stdout, stderr))
	root.AddCommand(newLedgerCmd(stdout, stderr))
	root.AddCommand(newKeysCmd(stdout, stderr))
	root.AddCommand(newPolicyCmd(stdout, stderr))
	root.AddCommand(newToolsCmd(stdout, stderr))
	root.AddCommand(newReportCmd(stdout, stderr))
	err := root.Execute()
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.err.Error() != "" {
			fmt.Fprintf(stderr, "gatehouse: %v\n", ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "gatehouse: %v\n", err)
	return 64
}
