package cli

import (
	"errors"
	"io"

	"github.com/gatehouse-mcp/gatehouse/internal/decisionlog"
	"github.com/spf13/cobra"
)

type recorder interface {
	Scope() string
	Open() error
	Record(line []byte, decision decisionlog.Event, rpcIDPresent bool, rpcIDRaw []byte)
	State() (string, int)
	Close() error
}

func newReceipts(f *wrapFlags, inputs []string, stderr io.Writer) (recorder, error) {
	if f.receiptsPath == "" {
		return nil, nil
	}
	return nil, errors.New("request receipts are not available in this build yet")
}

func newVerifyCmd(stdout, stderr io.Writer) *cobra.Command {
	return &cobra.Command{Use: "verify", Short: "Verify evidence files"}
}
