package cli

import (
	"io"

	"github.com/gatehouse-mcp/gatehouse/internal/linesafe"
)

// printJSON writes the JSON text b to w line-safe: every control character
// and Unicode line break inside its strings as an escape
// (linesafe.Append), so that a terminal shows what a server sent rather than
// obeys it, and a reader splitting on any line break sees each line whole.
// The values are unchanged. Every JSON the CLI prints goes through it.
func printJSON(w io.Writer, b []byte) error {
	_, err := w.Write(linesafe.Append(make([]byte, 0, len(b)+16), b))
	return err
}

// printJSONLine is printJSON of b followed by LF (b itself is not
// appended to).
func printJSONLine(w io.Writer, b []byte) error {
	out := linesafe.Append(make([]byte, 0, len(b)+17), b)
	_, err := w.Write(append(out, '\n'))
	return err
}

// shown is s for a line of text on a terminal (linesafe.Text): values that
// come from a ledger, a proof or a policy file are shown with their
// control and format characters escaped.
func shown(s string) string { return linesafe.Text(s) }
