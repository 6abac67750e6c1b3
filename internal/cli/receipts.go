package cli

import (
	"bytes"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gatehouse-mcp/gatehouse/internal/receipts"
	"github.com/gatehouse-mcp/gatehouse/internal/verify"
)

// Exit codes of `gatehouse verify capture`.
const (
	// ExitVerifyRejected means the capture was read and rejected.
	ExitVerifyRejected = 1
	// ExitVerifyUnreadable means an input could not be opened or read.
	ExitVerifyUnreadable = 2
)

// newReceipts checks the --request-receipts-out path before the server is
// spawned and returns its recorder, or nil when the flag is not set. others
// are the run's other files (policy), to which the decision log is added.
func newReceipts(f *wrapFlags, others []string, stderr io.Writer) (*receipts.Recorder, error) {
	if f.receiptsPath == "" {
		return nil, nil
	}
	all := append([]string{f.decisionLog}, others...)
	if err := receipts.CheckPath(f.receiptsPath, all); err != nil {
		return nil, err
	}
	return receipts.NewRecorder(f.receiptsPath, receipts.DefaultLimits, stderr), nil
}

func newVerifyCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Verify evidence files offline",
	}
	groupCommand(cmd)
	var receiptsPath, logPath string
	var asJSON bool
	capture := &cobra.Command{
		Use:   "capture --receipts FILE --decision-log FILE [--json]",
		Short: "Verify a request-receipt capture against its decision log",
		Long: `capture resolves every request-decision receipt against the retained
decision-log bytes and accepts the capture only if every check holds
(docs/request-receipts.md lists them). It never modifies its inputs.

Exit status: 0 accepted, 1 rejected, 2 an input could not be read.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if receiptsPath == "" || logPath == "" {
				return &exitError{code: 64, err: fmt.Errorf("verify capture: --receipts and --decision-log are required")}
			}
			rep, err := verify.Capture(receiptsPath, logPath)
			if err != nil {
				return &exitError{code: ExitVerifyUnreadable, err: err}
			}
			if asJSON {
				var b bytes.Buffer
				if err = rep.WriteJSON(&b); err == nil {
					err = printJSON(stdout, b.Bytes())
				}
			} else {
				err = rep.WriteText(stdout)
			}
			if err != nil {
				return &exitError{code: ExitVerifyUnreadable, err: fmt.Errorf("verify capture: write report: %w", err)}
			}
			if !rep.OK {
				return &exitError{code: ExitVerifyRejected, err: fmt.Errorf("capture rejected: failed checks: %v", rep.Failed())}
			}
			return nil
		},
	}
	capture.Flags().StringVar(&receiptsPath, "receipts", "", "the request receipts file (NDJSON)")
	capture.Flags().StringVar(&logPath, "decision-log", "", "the decision log the receipts reference")
	capture.Flags().BoolVar(&asJSON, "json", false, "print the verdict as JSON, one entry per check")
	capture.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &exitError{code: 64, err: err} })
	cmd.AddCommand(capture)
	return cmd
}
