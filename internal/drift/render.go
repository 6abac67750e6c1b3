package drift

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/rogpeppe/go-internal/diff"

	"github.com/gatehouse-mcp/gatehouse/internal/linesafe"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
)

// ANSI SGR sequences of Render's colour mode.
const (
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiBold   = "\x1b[1m"
	ansiReset  = "\x1b[0m"
)

// Pretty returns the canonical definition of t pretty-printed (members in
// RFC 8785 order, two-space indent, one member or element per line), each
// line made safe for a terminal with linesafe.Text; the error is
// Canonical's.
func Pretty(t mcp.Tool) ([]byte, error) {
	c, err := Canonical(t)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, c, "", "  "); err != nil {
		return nil, fmt.Errorf("%w: indent: %w", ErrDefinition, err)
	}
	var out bytes.Buffer
	sc := bufio.NewScanner(&buf)
	sc.Buffer(nil, buf.Len()+1)
	for sc.Scan() {
		out.WriteString(linesafe.Text(sc.Text()))
		out.WriteByte('\n')
	}
	return out.Bytes(), nil
}

// Render writes the review of one tool's drift for `gatehouse tools diff`
// (docs/drift.md, "Review"): a header naming the tool and both hashes, a
// unified line diff (an anchored diff, github.com/rogpeppe/go-internal/diff)
// of the two canonical definitions pretty-printed ([Pretty]), then r's
// severity and action, its changes one per line (severity, kind, path,
// or intent field, from -> to, "heuristic" when capped) and its warnings. A definition that
// cannot be canonicalized is shown as a line saying so. Every value from a
// definition goes through linesafe.Text: no terminal control reaches w.
// With color, removed lines are red, added lines green, hunk headers
// yellow, and severities critical and high red, moderate yellow (ANSI
// SGR); without it the output is plain text. The error is w's.
func Render(w io.Writer, base, cur mcp.Tool, r Result, color bool) error {
	bw := bufio.NewWriter(w)
	paint := func(code, s string) string {
		if !color || code == "" {
			return s
		}
		return code + s + ansiReset
	}
	side := func(t mcp.Tool) ([]byte, string) {
		p, err := Pretty(t)
		if err != nil {
			return []byte("(definition cannot be canonicalized: " + linesafe.Text(err.Error()) + ")\n"), "no hash"
		}
		h, _ := Hash(t)
		return p, h
	}
	a, ha := side(base)
	b, hb := side(cur)
	fmt.Fprintf(bw, "%s\n", paint(ansiBold, "tool "+linesafe.Text(display(cur.Name))))
	fmt.Fprintf(bw, "baseline %s\n", ha)
	fmt.Fprintf(bw, "current  %s\n", hb)
	d := diff.Diff("baseline", a, "current", b)
	if d == nil {
		bw.WriteString("\ndefinitions are identical\n")
	} else {
		bw.WriteByte('\n')
		lines := strings.SplitAfter(string(d), "\n")
		for _, l := range lines[1:] { // the first is "diff baseline current"
			if l == "" {
				continue
			}
			code := ""
			switch {
			case strings.HasPrefix(l, "---"), strings.HasPrefix(l, "+++"):
				code = ansiBold
			case strings.HasPrefix(l, "@@"):
				code = ansiYellow
			case l[0] == '-':
				code = ansiRed
			case l[0] == '+':
				code = ansiGreen
			}
			bw.WriteString(paint(code, strings.TrimSuffix(l, "\n")))
			bw.WriteByte('\n')
		}
	}
	bw.WriteByte('\n')
	sevColor := func(s Severity) string {
		switch s {
		case Critical, High:
			return ansiRed
		case Moderate:
			return ansiYellow
		}
		return ""
	}
	// The action is r's (Options.Actions, by default drift.DefaultActions):
	// a gateway's policy may say otherwise, so it is named as such.
	fmt.Fprintf(bw, "drift %s, default action %s, %d change(s)\n", paint(sevColor(r.Severity), r.Severity.String()), linesafe.Text(r.Action), len(r.Changes))
	width := 0
	for _, c := range r.Changes {
		width = max(width, len(linesafe.Text(c.Kind)))
	}
	for _, c := range r.Changes {
		sev := fmt.Sprintf("%-8s", c.Severity.String())
		line := "  " + paint(sevColor(c.Severity), sev) + "  " + fmt.Sprintf("%-*s", width, linesafe.Text(c.Kind))
		switch {
		case c.Path != "":
			line += "  " + linesafe.Text(display(c.Path))
		case c.Field != "":
			line += "  " + c.Field
		}
		if c.From != "" || c.To != "" {
			line += "  " + shown(c.From) + " -> " + shown(c.To)
		}
		if c.Heuristic {
			line += "  (heuristic)"
		}
		bw.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(bw, "warning: %s\n", linesafe.Text(w))
	}
	return bw.Flush()
}

// shown is a From or To value for Render: "(none)" when empty.
func shown(s string) string {
	if s == "" {
		return "(none)"
	}
	return linesafe.Text(s)
}
