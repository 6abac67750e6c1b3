package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gatehouse-mcp/gatehouse/internal/drift"
	"github.com/gatehouse-mcp/gatehouse/internal/evidence"
	"github.com/gatehouse-mcp/gatehouse/internal/inspect"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
	ledgerbackends "github.com/gatehouse-mcp/gatehouse/internal/ledger/backends"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/scan"
	"github.com/gatehouse-mcp/gatehouse/internal/toolstate"
	"github.com/gatehouse-mcp/gatehouse/internal/toolstate/backends"
	tspostgres "github.com/gatehouse-mcp/gatehouse/internal/toolstate/postgres"
)

// Exit codes of the tools commands (docs/drift.md, "Review").
const (
	// toolsExitRefused: the change was refused and nothing was changed:
	// the definition changed since it was shown (approve), the tool is
	// not quarantined (release), no state or no observed definition for
	// the tool.
	toolsExitRefused = 1
	// toolsExitUnreadable: the state or the ledger cannot be opened, read
	// or written (approve, quarantine and release say whether the change
	// was made before the failure).
	toolsExitUnreadable = 2
	// toolsExitUsage: bad flags or arguments.
	toolsExitUsage = 64
)

// newToolsCmd is `gatehouse tools`: reviewing the tool baselines, drift
// and quarantines kept in the --state database (docs/drift.md, "Review";
// evidence.md §7).
func newToolsCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "Review tool drift: list, diff, approve, quarantine and release tools",
		Long: `The gateway keeps, per server, the approved baseline of every tool (its full
canonical definition, bound to its hash), the definition it last saw in a
complete tools/list, and the quarantines (holds) in force, in the --state
database beside the audit ledger (docs/drift.md).

--state names it: a SQLite file path (default $XDG_STATE_HOME/gatehouse/ledger.db,
or ~/.local/state/gatehouse/ledger.db, as for gatehouse wrap), which must
exist, or a postgres:// URL.
approve, quarantine and release also append an entry to the audit ledger in
the same database (kinds tool_approval, tool_quarantine, tool_release),
signed at the end with the --ledger-key signer key (default as for wrap).

Exit status: 0 done, 1 refused (nothing changed), 2 the state or the ledger
cannot be read or written, 64 usage.`,
	}
	groupCommand(cmd)
	cmd.AddCommand(
		newToolsListCmd(stdout, stderr),
		newToolsDiffCmd(stdout, stderr),
		newToolsApproveCmd(stdout, stderr),
		newToolsQuarantineCmd(stdout, stderr),
		newToolsReleaseCmd(stdout, stderr),
	)
	return cmd
}

// toolsUsage is a usage error (exit 64).
func toolsUsage(format string, a ...any) error {
	return &exitError{code: toolsExitUsage, err: fmt.Errorf(format, a...)}
}

func toolsUsageErrors(c *cobra.Command) {
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &exitError{code: toolsExitUsage, err: err} })
}

// toolsArgs checks for SERVER TOOL, both non-empty.
func toolsArgs(name string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != 2 {
			return toolsUsage("tools %s: want SERVER TOOL (the server id and the tool name, as tools list shows them), got %d arguments", name, len(args))
		}
		if args[0] == "" || args[1] == "" {
			return toolsUsage("tools %s: SERVER and TOOL must not be empty", name)
		}
		return nil
	}
}

// toolsOpenState opens the tool-state store at state for the tools commands (default
// ledger.DefaultPath, as wrap). A SQLite file must exist already: a
// mistyped --state must not create a database that no gateway reads,
// where a quarantine would hold nothing. Failures are exit 2.
func toolsOpenState(ctx context.Context, state string) (toolstate.Store, string, error) {
	dsn, err := ledgerState(state)
	if err != nil {
		return nil, "", &exitError{code: toolsExitUnreadable, err: fmt.Errorf("--state: %w", err)}
	}
	if !ledger.IsPostgresDSN(dsn) {
		if err := ledger.CheckPath(dsn); err != nil {
			return nil, dsn, &exitError{code: toolsExitUnreadable, err: fmt.Errorf("--state %s: %w", ledgerDisplayDSN(dsn), err)}
		}
		if _, err := os.Stat(dsn); errors.Is(err, fs.ErrNotExist) {
			return nil, dsn, &exitError{code: toolsExitUnreadable, err: fmt.Errorf("no tool state at %s yet (gatehouse wrap records the tools it sees there; --state names another)", ledgerDisplayDSN(dsn))}
		} else if err != nil {
			return nil, dsn, &exitError{code: toolsExitUnreadable, err: fmt.Errorf("--state %s: %w", ledgerDisplayDSN(dsn), err)}
		}
	}
	if ledger.IsPostgresDSN(dsn) {
		// As for SQLite: a database where no gateway recorded anything
		// (a wrong database or search_path) is not given tables, nor a
		// hold that no gateway reads.
		ok, err := tspostgres.Exists(ctx, dsn)
		if err != nil {
			return nil, dsn, &exitError{code: toolsExitUnreadable, err: fmt.Errorf("--state %s: %w", ledgerDisplayDSN(dsn), err)}
		}
		if !ok {
			return nil, dsn, &exitError{code: toolsExitUnreadable, err: fmt.Errorf("no tool state at %s yet (gatehouse wrap records the tools it sees there; --state names another)", ledgerDisplayDSN(dsn))}
		}
	}
	s, err := backends.Open(ctx, dsn)
	if err != nil {
		if shown := ledgerDisplayDSN(dsn); !strings.Contains(err.Error(), shown) {
			err = fmt.Errorf("--state %s: %w", shown, err)
		}
		return nil, dsn, &exitError{code: toolsExitUnreadable, err: err}
	}
	return s, dsn, nil
}

// toolsWriteFlags are the flags of the commands that change the state and
// record the change in the ledger.
type toolsWriteFlags struct {
	state, ledgerKey string
	by, reason       string
}

func (f *toolsWriteFlags) add(c *cobra.Command, what string) {
	c.Flags().StringVar(&f.state, "state", "", "the tool state and audit ledger: a SQLite file or a postgres:// URL (default as for gatehouse wrap)")
	c.Flags().StringVar(&f.ledgerKey, "ledger-key", "", "note signer key for the ledger checkpoint signed after the entry (default: ledger.skey beside the default ledger, as for gatehouse wrap)")
	c.Flags().StringVar(&f.by, "by", "", "who "+what+" (default $USER)")
	c.Flags().StringVar(&f.reason, "reason", "", "why (required; recorded in the state and the ledger)")
}

// check fills in --by from $USER and refuses an empty --by or --reason.
func (f *toolsWriteFlags) check(name string) error {
	if f.by == "" {
		f.by = os.Getenv("USER")
	}
	if strings.TrimSpace(f.by) == "" {
		return toolsUsage("tools %s: --by NAME is required ($USER is not set)", name)
	}
	if strings.TrimSpace(f.reason) == "" {
		return toolsUsage("tools %s: --reason TEXT is required: say why, it is recorded in the audit ledger", name)
	}
	// The placeholders of the approve hint that tools diff prints: pasted
	// unchanged they would sign "YOUR_NAME" and "WHY" into the ledger.
	if b := strings.TrimSpace(f.by); b == "YOUR_NAME" || b == "NAME" {
		return toolsUsage("tools %s: --by %s is the hint's placeholder: give your name", name, b)
	}
	if r := strings.TrimSpace(f.reason); r == "WHY" || r == "..." {
		return toolsUsage("tools %s: --reason %s is the hint's placeholder: say why", name, r)
	}
	return nil
}

// toolsLedger opens the audit ledger at dsn for one entry, signed with
// --ledger-key (loadLedgerSigner, as wrap), both checkpoint triggers off:
// closing it signs one checkpoint covering the entry. Failures are exit 2.
func toolsLedger(ctx context.Context, dsn, keyFlag string, stderr io.Writer) (*ledger.Ledger, error) {
	signer, err := loadLedgerSigner(keyFlag, "or name another with --ledger-key", stderr)
	if err != nil {
		return nil, &exitError{code: toolsExitUnreadable, err: err}
	}
	l, err := ledgerbackends.Open(ctx, dsn, ledger.Options{Signer: signer, CheckpointEvery: -1, CheckpointEveryN: -1})
	if err != nil {
		return nil, &exitError{code: toolsExitUnreadable, err: fmt.Errorf("the audit ledger at %s: %w", ledgerDisplayDSN(dsn), err)}
	}
	return l, nil
}

// appendToolRecord appends one entry of kind with payload v (RFC 8785) to
// l under a new audit_event_id, closes l (signing a checkpoint covering
// it) and returns the entry. done says what was already changed, for the
// error: the state change is made before it is recorded.
func appendToolRecord(ctx context.Context, l *ledger.Ledger, kind string, v any, done string) (ledger.Entry, error) {
	fail := func(err error) error {
		return &exitError{code: toolsExitUnreadable, err: fmt.Errorf("%s, but it could NOT be recorded in the audit ledger: %w", done, err)}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		l.Close(ctx)
		return ledger.Entry{}, fail(err)
	}
	payload, err := ledger.Canonicalize(raw)
	if err != nil {
		l.Close(ctx)
		return ledger.Entry{}, fail(err)
	}
	e, err := l.Append(ctx, kind, evidence.NewAuditEventID(), payload)
	if cerr := l.Close(ctx); err == nil && cerr != nil {
		// The entry is durable; only the checkpoint after it failed.
		return e, &exitError{code: toolsExitUnreadable, err: fmt.Errorf("%s and recorded in the audit ledger (entry %d), but signing the checkpoint after it failed: %w", done, e.Seq, cerr)}
	}
	if err != nil {
		return ledger.Entry{}, fail(err)
	}
	return e, nil
}

// toolsListJSON is one tool of `tools list --format json`.
type toolsListJSON struct {
	ServerID   string                 `json:"server_id"`
	Tool       string                 `json:"tool"`
	Status     string                 `json:"status"`
	Severity   string                 `json:"severity"`
	Changes    []string               `json:"changes"`
	Baseline   *toolstate.Baseline    `json:"baseline"`
	Observed   *toolstate.Observation `json:"observed"`
	Quarantine *toolstate.Quarantine  `json:"quarantine"`
}

// toolSeverity is the drift severity list shows for s: the observed
// definition's, else the hold's, else "none".
func toolSeverity(s toolstate.ToolState) (string, []string) {
	switch {
	case s.Observed != nil:
		return s.Observed.Severity, s.Observed.Changes
	case s.Quarantine != nil && s.Quarantine.Severity != "":
		return s.Quarantine.Severity, s.Quarantine.Changes
	}
	return toolstate.SeverityNone, nil
}

// holdCell is the HOLD cell of a quarantine: the rule that placed it, or
// "manual" for one a person placed.
func holdCell(q *toolstate.Quarantine) string {
	switch {
	case q == nil:
		return ""
	case q.Rule != "":
		return q.Rule
	case !q.Automatic:
		return "manual"
	}
	return "automatic"
}

// tableTime is a time in a table cell: RFC 3339, UTC, to the second.
func tableTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// printToolsTable writes the table of tools list: one row per tool, every
// cell through ledgerCell (linesafe.Text, cut with "…"). The error is w's.
func printToolsTable(w io.Writer, states []toolstate.ToolState) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tTOOL\tSTATUS\tSEVERITY\tBASELINE\tAPPROVED_BY\tAPPROVED_AT\tHOLD\tREASON")
	for _, st := range states {
		sev, _ := toolSeverity(st)
		var origin, by, at, reason string
		if b := st.Baseline; b != nil {
			origin, by, at = b.Origin, b.By, tableTime(b.At)
		}
		if q := st.Quarantine; q != nil {
			reason = q.Reason
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			ledgerCell(st.ServerID, 24), ledgerCell(st.Tool, 32), st.Status(), ledgerCell(sev, 0),
			ledgerCell(origin, 0), ledgerCell(by, 20), ledgerCell(at, 0), ledgerCell(holdCell(st.Quarantine), 24), ledgerCell(reason, 60))
	}
	return tw.Flush()
}

func newToolsListCmd(stdout, stderr io.Writer) *cobra.Command {
	var state, server, format string
	c := &cobra.Command{
		Use:   "list [--state S] [--server ID] [--format table|json]",
		Short: "Every tool's state: approved, changed, new, quarantined or removed",
		Long: `list prints, per server and tool (sorted), the tool's status:

  approved     the last listed definition is the baseline
  changed      the last listed definition differs from the baseline
  new          listed, with no baseline yet
  removed      a baseline, but not in the last listing
  quarantined  held: no call reaches it (whatever else holds)

with the drift severity of the last listed definition from the baseline
(none, minor, moderate, high, critical), the baseline's origin (first_use:
taken by a gateway; approval: gatehouse tools approve), who approved it and
when, and for a held tool the rule that placed the hold ("manual" for one a
person placed) and its reason. Table cells show control and format
characters as \uXXXX and are cut with "…" (--format json has every value).

--format json prints one JSON object {"tools": [...]}, each tool with
server_id, tool, status, severity, changes, and its baseline, observed and
quarantine objects (null when absent; docs/drift.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format != "table" && format != "json" {
				return toolsUsage("tools list: --format %q: want table or json", format)
			}
			ctx := context.Background()
			s, dsn, err := toolsOpenState(ctx, state)
			if err != nil {
				return err
			}
			defer s.Close()
			states, err := s.Tools(ctx, server)
			if err != nil {
				return &exitError{code: toolsExitUnreadable, err: fmt.Errorf("tools list: %w", err)}
			}
			if format == "json" {
				out := struct {
					Tools []toolsListJSON `json:"tools"`
				}{Tools: make([]toolsListJSON, 0, len(states))}
				for _, st := range states {
					sev, changes := toolSeverity(st)
					if changes == nil {
						changes = []string{}
					}
					out.Tools = append(out.Tools, toolsListJSON{ServerID: st.ServerID, Tool: st.Tool, Status: st.Status(),
						Severity: sev, Changes: changes, Baseline: st.Baseline, Observed: st.Observed, Quarantine: st.Quarantine})
				}
				b, err := json.Marshal(out)
				if err != nil {
					return &exitError{code: toolsExitUnreadable, err: fmt.Errorf("tools list: %w", err)}
				}
				return printJSONLine(stdout, b)
			}
			if err := printToolsTable(stdout, states); err != nil {
				return &exitError{code: toolsExitUnreadable, err: fmt.Errorf("tools list: %w", err)}
			}
			if len(states) == 0 {
				if server != "" {
					fmt.Fprintf(stderr, "gatehouse: tools list: %s holds no tool of server %q\n", ledgerDisplayDSN(dsn), server)
				} else {
					fmt.Fprintf(stderr, "gatehouse: tools list: %s holds no tool yet\n", ledgerDisplayDSN(dsn))
				}
			}
			return nil
		},
	}
	c.Flags().StringVar(&state, "state", "", "the tool state: a SQLite file or a postgres:// URL (default as for gatehouse wrap)")
	c.Flags().StringVar(&server, "server", "", "only the tools of this server id")
	c.Flags().StringVar(&format, "format", "table", "table or json")
	toolsUsageErrors(c)
	return c
}

// toolsReadState returns one tool's state; ErrNotFound is exit 1.
func toolsReadState(ctx context.Context, s toolstate.Store, name, server, tool string) (toolstate.ToolState, error) {
	st, err := s.Tool(ctx, server, tool)
	if errors.Is(err, toolstate.ErrNotFound) {
		return st, &exitError{code: toolsExitRefused, err: fmt.Errorf("tools %s: no state for tool %q of server %q (see gatehouse tools list)", name, tool, server)}
	}
	if err != nil {
		return st, &exitError{code: toolsExitUnreadable, err: fmt.Errorf("tools %s: %w", name, err)}
	}
	return st, nil
}

// driftDirectives returns drift.Options.Directives as wrap computes them
// with scanning on: the ids of the poisoning and prompt-injection findings
// of the built-in scanner in a tool's description. Without a scanner
// (nil) no directive is found.
func driftDirectives(sc *scan.Scanner) func(mcp.Tool) []string {
	if sc == nil {
		return nil
	}
	return func(t mcp.Tool) []string {
		def, err := json.Marshal(t)
		if err != nil {
			return nil
		}
		rep, err := inspect.InspectTool(sc, def)
		if err != nil {
			return nil
		}
		var out []string
		for _, f := range rep.Findings {
			if (f.Class == scan.ClassPoisoning || f.Class == scan.ClassInjection) && strings.HasPrefix(f.Path, "/description") {
				out = append(out, f.Rule)
			}
		}
		return out
	}
}

// shellWord quotes s for a POSIX shell when it holds anything but
// letters, digits and -_.:/@+=, (single quotes), then makes it safe for a
// terminal (linesafe.Text).
func shellWord(s string) string {
	if s != "" && shellPlain.MatchString(s) {
		return s
	}
	return shown("'" + strings.ReplaceAll(s, "'", `'\''`) + "'")
}

var shellPlain = regexp.MustCompile(`^[A-Za-z0-9_.:/@+=,-]+$`)

func newToolsDiffCmd(stdout, stderr io.Writer) *cobra.Command {
	var state, color string
	c := &cobra.Command{
		Use:   "diff SERVER TOOL [--state S] [--color auto|always|never]",
		Short: "Show how a tool's last listed definition differs from its baseline",
		Long: `diff prints the tool's baseline and its last listed definition, both in
canonical form pretty-printed, as a unified diff, then the classified
changes (kind, severity, path or intent field, from -> to) with the drift's
severity and the action the default drift actions give it (a policy's
drift.actions may map it otherwise; the severity the gateway recorded is on
the "observed" line). Directives in a description are found with the
built-in scanner, as wrap does with scanning on. A tool with no baseline is
shown against its name alone. Every value from the server is shown with
control and format characters as \uXXXX.

It ends with the hash of the listed definition and the command that
approves exactly it:

  approve with: gatehouse tools approve SERVER TOOL --hash sha256:... --by YOUR_NAME --reason WHY
  definition_hash: sha256:...

approve refuses that hash if the definition changes again in between.

--color auto (the default) colours the diff when stdout is a terminal and
NO_COLOR is not set; always and never force it.

Exit status: 0 shown, 1 no state or no listed definition for the tool, 2
the state cannot be read, 64 usage.`,
		Args: toolsArgs("diff"),
		RunE: func(cmd *cobra.Command, args []string) error {
			server, tool := args[0], args[1]
			var paint bool
			switch color {
			case "auto":
				paint = ledgerIsTerminal(stdout) && os.Getenv("NO_COLOR") == ""
			case "always":
				paint = true
			case "never":
			default:
				return toolsUsage("tools diff: --color %q: want auto, always or never", color)
			}
			ctx := context.Background()
			s, _, err := toolsOpenState(ctx, state)
			if err != nil {
				return err
			}
			defer s.Close()
			st, err := toolsReadState(ctx, s, "diff", server, tool)
			if err != nil {
				return err
			}
			return toolsDiff(stdout, st, paint)
		},
	}
	c.Flags().StringVar(&state, "state", "", "the tool state: a SQLite file or a postgres:// URL (default as for gatehouse wrap)")
	c.Flags().StringVar(&color, "color", "auto", "colour the diff: auto (when stdout is a terminal), always or never")
	toolsUsageErrors(c)
	return c
}

// toolsDiff writes the review of st (see newToolsDiffCmd).
func toolsDiff(w io.Writer, st toolstate.ToolState, paint bool) error {
	server, tool := st.ServerID, st.Tool
	var base *mcp.Tool
	if st.Baseline != nil {
		t, err := drift.Parse(st.Baseline.Definition)
		if err != nil {
			return &exitError{code: toolsExitUnreadable, err: fmt.Errorf("tools diff: the stored baseline of tool %q of server %q: %w", tool, server, err)}
		}
		base = &t
	}
	obs := st.Observed
	hold := func() {
		if q := st.Quarantine; q != nil {
			what := "any definition"
			if q.Hash != "" {
				what = "definition " + q.Hash
			}
			fmt.Fprintf(w, "quarantined (%s): %s, by %s at %s: %s\n", shown(holdCell(q)), what, shown(q.By), tableTime(q.At), shown(q.Reason))
		}
	}
	switch {
	case obs == nil:
		fmt.Fprintf(w, "tool %s\n", shown(tool))
		if st.Baseline != nil {
			fmt.Fprintf(w, "baseline %s\n", st.Baseline.Hash)
		}
		hold()
		return &exitError{code: toolsExitRefused, err: fmt.Errorf("tools diff: tool %q of server %q: no definition listed yet (a gateway records one from each complete tools/list)", tool, server)}
	case obs.Removed:
		fmt.Fprintf(w, "tool %s\n", shown(tool))
		if st.Baseline != nil {
			fmt.Fprintf(w, "baseline %s (%s by %s at %s)\n", st.Baseline.Hash, shown(st.Baseline.Origin), shown(st.Baseline.By), tableTime(st.Baseline.At))
		}
		fmt.Fprintf(w, "current  (not in the last listing, observed by %s at %s)\n", shown(obs.By), tableTime(obs.At))
		hold()
		fmt.Fprintln(w, "nothing to approve: the tool is not listed")
		return nil
	}
	cur, err := drift.Parse(obs.Definition)
	if err != nil {
		return &exitError{code: toolsExitUnreadable, err: fmt.Errorf("tools diff: the stored definition of tool %q of server %q: %w", tool, server, err)}
	}
	sc, err := newScanner()
	if err != nil {
		return &exitError{code: toolsExitUnreadable, err: fmt.Errorf("tools diff: scanner: %w", err)}
	}
	opts := drift.Options{Directives: driftDirectives(sc)}
	var r drift.Result
	var out strings.Builder
	if base != nil {
		r = drift.Compare(*base, cur, opts)
		if err := drift.Render(&out, *base, cur, r, paint); err != nil {
			return err
		}
	} else {
		// No baseline: shown against the name alone, the baseline line
		// saying there is none.
		named := mcp.Tool{Name: cur.Name}
		r = drift.AddedTool(cur, opts)
		if err := drift.Render(&out, named, cur, r, paint); err != nil {
			return err
		}
	}
	text := out.String()
	if base == nil {
		if h, err := drift.Hash(mcp.Tool{Name: cur.Name}); err == nil {
			text = strings.Replace(text, "baseline "+h+"\n", "baseline (none: the tool has no baseline)\n", 1)
		}
	}
	if _, err := io.WriteString(w, text); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if b := st.Baseline; b != nil {
		fmt.Fprintf(w, "baseline %s: %s by %s at %s", b.Hash, shown(b.Origin), shown(b.By), tableTime(b.At))
		if b.Reason != "" {
			fmt.Fprintf(w, ": %s", shown(b.Reason))
		}
		fmt.Fprintln(w)
	}
	recorded := make([]string, len(obs.Changes))
	for i, c := range obs.Changes {
		recorded[i] = shown(c)
	}
	fmt.Fprintf(w, "observed %s by %s at %s; as the gateway classified it under its policy: severity %s, changes %s\n",
		obs.Hash, shown(obs.By), tableTime(obs.At), shown(obs.Severity), orNone(strings.Join(recorded, ", ")))
	if st.Baseline == nil {
		fmt.Fprintln(w, "no baseline: under --baseline require every call to it is denied (baseline_required) until it is approved")
	}
	hold()
	fmt.Fprintf(w, "approve with: gatehouse tools approve %s %s --hash %s --by YOUR_NAME --reason WHY\n", shellWord(server), shellWord(tool), obs.Hash)
	_, err = fmt.Fprintf(w, "definition_hash: %s\n", obs.Hash)
	return err
}

// toolHashRE is the shape of a definition hash (evidence.md §3).
var toolHashRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

func newToolsApproveCmd(stdout, stderr io.Writer) *cobra.Command {
	var f toolsWriteFlags
	var hash string
	c := &cobra.Command{
		Use:   "approve SERVER TOOL --hash H --by NAME --reason TEXT [--state S]",
		Short: "Make the tool's last listed definition its baseline, bound to its hash",
		Long: `approve makes the definition last listed for the tool its new baseline
(origin approval), provided its hash is still H, the definition_hash that
"gatehouse tools diff SERVER TOOL" printed: if the server has listed another
definition since, the approval is refused (exit 1) and nothing changes; run
diff again. Approving releases a quarantine the gateway placed because of
drift; one a person placed stays until "gatehouse tools release".

The approval is recorded in the audit ledger in the --state database: an
entry of kind tool_approval with server_id, tool_name, definition_hash,
previous_definition_hash and previous_origin (the baseline replaced),
severity and changes (the drift approved), approved_by, reason, approved_at
and released_quarantine (docs/drift.md). The state is changed first: if the
ledger cannot be written the error says that the approval was made but not
recorded.

Exit status: 0 approved, 1 refused (the definition changed since it was
shown, nothing listed, no such tool), 2 the state or the ledger cannot be
read or written, 64 usage.`,
		Args: toolsArgs("approve"),
		RunE: func(cmd *cobra.Command, args []string) error {
			server, tool := args[0], args[1]
			if hash == "" {
				return toolsUsage("tools approve: --hash is required: the definition_hash that \"gatehouse tools diff %s %s\" prints", shellWord(server), shellWord(tool))
			}
			if !toolHashRE.MatchString(hash) {
				return toolsUsage("tools approve: --hash %q: want sha256: and 64 lowercase hex digits, the definition_hash that tools diff prints", hash)
			}
			if err := f.check("approve"); err != nil {
				return err
			}
			ctx := context.Background()
			s, dsn, err := toolsOpenState(ctx, f.state)
			if err != nil {
				return err
			}
			defer s.Close()
			before, err := toolsReadState(ctx, s, "approve", server, tool)
			if err != nil {
				return err
			}
			l, err := toolsLedger(ctx, dsn, f.ledgerKey, stderr)
			if err != nil {
				return err
			}
			b, err := s.Approve(ctx, toolstate.Approval{ServerID: server, Tool: tool, ExpectHash: hash, By: f.by, Reason: f.reason})
			if err != nil {
				l.Close(ctx)
				switch {
				case errors.Is(err, toolstate.ErrChanged):
					now := "another definition"
					if st, rerr := s.Tool(ctx, server, tool); rerr == nil && st.Observed != nil && st.Observed.Hash != "" {
						now = st.Observed.Hash
					}
					return &exitError{code: toolsExitRefused, err: fmt.Errorf("tools approve: refused, nothing changed: the hash given is not the definition of tool %q of server %q listed now (given %s, listed %s): it changed since it was shown, or the hash is mistyped; run \"gatehouse tools diff %s %s\" again and approve the hash it prints",
						tool, server, hash, now, shellWord(server), shellWord(tool))}
				case errors.Is(err, toolstate.ErrNotFound):
					return &exitError{code: toolsExitRefused, err: fmt.Errorf("tools approve: refused, nothing changed: %w", err)}
				}
				return &exitError{code: toolsExitUnreadable, err: fmt.Errorf("tools approve: %w", err)}
			}
			rec := toolstate.ApprovalRecord{ServerID: server, Tool: tool, Hash: b.Hash, ApprovedBy: b.By, Reason: b.Reason, ApprovedAt: toolstate.LedgerTime(b.At)}
			// What the approval replaced is the store's answer, read in
			// its transaction: another approval racing this one (a second
			// terminal) must not make both claim the same hold and baseline.
			if pb := b.Previous; pb != nil {
				rec.PreviousHash, rec.PreviousOrigin = pb.Hash, pb.Origin
			}
			if o := before.Observed; o != nil && o.Hash == b.Hash {
				rec.Severity, rec.Changes = o.Severity, o.Changes
			}
			after, aerr := s.Tool(ctx, server, tool)
			if q := b.Released; q != nil {
				rec.Released = toolstate.HoldRecordOf(q)
			}
			done := fmt.Sprintf("tools approve: tool %q of server %q was approved (baseline %s)", tool, server, b.Hash)
			e, err := appendToolRecord(ctx, l, ledger.KindToolApproval, rec, done)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "approved tool %s of server %s: baseline %s", shown(tool), shown(server), b.Hash)
			if rec.PreviousHash != "" && rec.PreviousHash != b.Hash {
				fmt.Fprintf(stdout, " (was %s, %s)", rec.PreviousHash, rec.PreviousOrigin)
			}
			fmt.Fprintf(stdout, "\nrecorded in the audit ledger: entry %d, %s %s\n", e.Seq, e.Kind, e.RecordID)
			if rec.Released != nil {
				fmt.Fprintf(stdout, "released the quarantine placed by %s (%s)\n", shown(rec.Released.QuarantinedBy), shown(holdCell(b.Released)))
			}
			if aerr == nil && after.Quarantine != nil {
				fmt.Fprintf(stderr, "gatehouse: tools approve: tool %s of server %s stays quarantined (placed by %s: %s); \"gatehouse tools release\" lifts it\n",
					shown(tool), shown(server), shown(after.Quarantine.By), shown(after.Quarantine.Reason))
			}
			return nil
		},
	}
	c.Flags().StringVar(&hash, "hash", "", "the definition_hash tools diff printed (required): the definition approved")
	f.add(c, "approves")
	toolsUsageErrors(c)
	return c
}

func newToolsQuarantineCmd(stdout, stderr io.Writer) *cobra.Command {
	var f toolsWriteFlags
	c := &cobra.Command{
		Use:   "quarantine SERVER TOOL --by NAME --reason TEXT [--state S]",
		Short: "Hold a tool: no call reaches it until it is released",
		Long: `quarantine places a hold on the tool: every gateway sharing the --state
database answers its calls itself (JSON-RPC error -32084) and never forwards
them, whatever the tool's definition, until "gatehouse tools release". An
approval does not lift it. The hold names the definition last listed (or
none, when the tool was never listed: it is then held by name, from the
first listing on). It replaces a hold already there.

The hold is recorded in the audit ledger in the --state database: an entry
of kind tool_quarantine with server_id, tool_name, definition_hash,
quarantined_by, reason, quarantined_at and replaced_quarantine
(docs/drift.md).

Exit status: 0 held, 2 the state or the ledger cannot be read or written,
64 usage.`,
		Args: toolsArgs("quarantine"),
		RunE: func(cmd *cobra.Command, args []string) error {
			server, tool := args[0], args[1]
			if err := f.check("quarantine"); err != nil {
				return err
			}
			ctx := context.Background()
			s, dsn, err := toolsOpenState(ctx, f.state)
			if err != nil {
				return err
			}
			defer s.Close()
			before, err := s.Tool(ctx, server, tool)
			known := err == nil
			if err != nil && !errors.Is(err, toolstate.ErrNotFound) {
				return &exitError{code: toolsExitUnreadable, err: fmt.Errorf("tools quarantine: %w", err)}
			}
			l, err := toolsLedger(ctx, dsn, f.ledgerKey, stderr)
			if err != nil {
				return err
			}
			q := toolstate.Quarantine{ServerID: server, Tool: tool, By: f.by, Reason: f.reason, At: time.Now().UTC().Truncate(toolstate.TimeResolution)}
			if o := before.Observed; o != nil && !o.Removed {
				q.Hash, q.Severity, q.Changes = o.Hash, o.Severity, o.Changes
			}
			if err := s.Hold(ctx, q); err != nil {
				l.Close(ctx)
				return &exitError{code: toolsExitUnreadable, err: fmt.Errorf("tools quarantine: %w", err)}
			}
			rec := toolstate.QuarantineRecord{ServerID: server, Tool: tool, Hash: q.Hash, QuarantinedBy: q.By, Reason: q.Reason,
				QuarantinedAt: toolstate.LedgerTime(q.At), Replaced: toolstate.HoldRecordOf(before.Quarantine)}
			done := fmt.Sprintf("tools quarantine: tool %q of server %q was quarantined", tool, server)
			e, err := appendToolRecord(ctx, l, ledger.KindToolQuarantine, rec, done)
			if err != nil {
				return err
			}
			what := "any definition (none listed yet)"
			if q.Hash != "" {
				what = "listed definition " + q.Hash
			}
			fmt.Fprintf(stdout, "quarantined tool %s of server %s (%s)\nrecorded in the audit ledger: entry %d, %s %s\n", shown(tool), shown(server), what, e.Seq, e.Kind, e.RecordID)
			if before.Quarantine != nil {
				fmt.Fprintf(stdout, "replaced the quarantine placed by %s (%s)\n", shown(before.Quarantine.By), shown(holdCell(before.Quarantine)))
			}
			if !known {
				fmt.Fprintf(stderr, "gatehouse: warning: tools quarantine: %s held nothing about tool %q of server %q: the hold applies once a gateway for server %q lists it (check the names with gatehouse tools list)\n",
					ledgerDisplayDSN(dsn), tool, server, server)
			}
			return nil
		},
	}
	f.add(c, "quarantines")
	toolsUsageErrors(c)
	return c
}

func newToolsReleaseCmd(stdout, stderr io.Writer) *cobra.Command {
	var f toolsWriteFlags
	c := &cobra.Command{
		Use:   "release SERVER TOOL --by NAME --reason TEXT [--state S]",
		Short: "Lift the quarantine on a tool",
		Long: `release lifts the hold on the tool, whoever placed it. A tool whose listed
definition still differs from its baseline by drift whose action is
quarantine is held again by a running gateway at its next call or listing
of the tool: approve the definition (gatehouse tools diff, then approve)
to keep it released.

The release is recorded in the audit ledger in the --state database: an
entry of kind tool_release with server_id, tool_name, released_by, reason,
released_at and released_quarantine, the hold lifted (docs/drift.md).

Exit status: 0 released, 1 the tool is not quarantined (nothing changed),
2 the state or the ledger cannot be read or written, 64 usage.`,
		Args: toolsArgs("release"),
		RunE: func(cmd *cobra.Command, args []string) error {
			server, tool := args[0], args[1]
			if err := f.check("release"); err != nil {
				return err
			}
			ctx := context.Background()
			s, dsn, err := toolsOpenState(ctx, f.state)
			if err != nil {
				return err
			}
			defer s.Close()
			before, err := s.Tool(ctx, server, tool)
			if errors.Is(err, toolstate.ErrNotFound) || err == nil && before.Quarantine == nil {
				return &exitError{code: toolsExitRefused, err: fmt.Errorf("tools release: refused, nothing changed: tool %q of server %q is not quarantined", tool, server)}
			}
			if err != nil {
				return &exitError{code: toolsExitUnreadable, err: fmt.Errorf("tools release: %w", err)}
			}
			l, err := toolsLedger(ctx, dsn, f.ledgerKey, stderr)
			if err != nil {
				return err
			}
			q, err := s.Release(ctx, server, tool)
			if err != nil {
				l.Close(ctx)
				if errors.Is(err, toolstate.ErrNotQuarantined) {
					return &exitError{code: toolsExitRefused, err: fmt.Errorf("tools release: refused, nothing changed: tool %q of server %q is not quarantined (released meanwhile)", tool, server)}
				}
				return &exitError{code: toolsExitUnreadable, err: fmt.Errorf("tools release: %w", err)}
			}
			rec := toolstate.ReleaseRecord{ServerID: server, Tool: tool, ReleasedBy: f.by, Reason: f.reason,
				ReleasedAt: toolstate.LedgerTime(time.Now()), Released: toolstate.HoldRecordOf(&q)}
			done := fmt.Sprintf("tools release: tool %q of server %q was released", tool, server)
			e, err := appendToolRecord(ctx, l, ledger.KindToolRelease, rec, done)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "released tool %s of server %s (the quarantine placed by %s, %s)\nrecorded in the audit ledger: entry %d, %s %s\n",
				shown(tool), shown(server), shown(q.By), shown(holdCell(&q)), e.Seq, e.Kind, e.RecordID)
			if before.Status() == toolstate.StatusQuarantined && before.Baseline != nil && before.Observed != nil && !before.Observed.Removed && before.Observed.Hash != before.Baseline.Hash {
				fmt.Fprintf(stderr, "gatehouse: tools release: the listed definition of tool %s still differs from its baseline (drift %s): a gateway may hold it again at its next call or listing of it; \"gatehouse tools diff %s %s\" and approve it to keep it released\n",
					shown(tool), shown(before.Observed.Severity), shellWord(server), shellWord(tool))
			}
			return nil
		},
	}
	f.add(c, "releases")
	toolsUsageErrors(c)
	return c
}

// orNone is s, or "(none)" when it is empty.
func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
