package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/spf13/cobra"
	"golang.org/x/mod/sumdb/note"

	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger/backends"
	"github.com/gatehouse-mcp/gatehouse/internal/linesafe"
)

// Exit codes of the ledger commands.
const (
	ledgerExitBad        = 1  // verification failed, or nothing to prove
	ledgerExitUnreadable = 2  // the ledger or an input could not be read
	ledgerExitUsage      = 64 // bad flags
)

// newLedgerCmd is `gatehouse ledger`: reading, verifying and proving the
// audit ledger (docs/ledger.md).
func newLedgerCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ledger",
		Short: "Verify, show and prove entries of the audit ledger",
		Long: `The audit ledger is a hash chain whose entries are also the leaves of an
RFC 6962 Merkle tree with signed checkpoints (docs/ledger.md).

--state names the ledger: a SQLite file path or a postgres:// URL (default
$XDG_STATE_HOME/gatehouse/ledger.db, or ~/.local/state/gatehouse/ledger.db).
Every subcommand opens it read-only, except "checkpoint".`,
	}
	groupCommand(cmd)
	cmd.AddCommand(
		newLedgerVerifyCmd(stdout, stderr),
		newLedgerShowCmd(stdout, stderr),
		newLedgerProveCmd(stdout, stderr),
		newLedgerVerifyProofCmd(stdout, stderr),
		newLedgerCheckpointCmd(stdout, stderr),
	)
	return cmd
}

func ledgerUsageErrors(c *cobra.Command) {
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &exitError{code: ledgerExitUsage, err: err} })
}

// ledgerState resolves --state (default: ledger.DefaultPath).
func ledgerState(state string) (string, error) {
	if state != "" {
		return state, nil
	}
	return ledger.DefaultPath()
}

// ledgerDisplayDSN is dsn as messages show it, never with a secret: a
// PostgreSQL URL with the password of its user information and of every
// query parameter whose name suggests one (password, sslpassword, pwd,
// pass, secret, token, key) hidden and any fragment dropped; any other
// value meant as a URL (refused by ledger.CheckPath) as its scheme only; a
// keyword/value connection string not at all; a file path unchanged.
func ledgerDisplayDSN(dsn string) string {
	if ledger.IsKeywordDSN(dsn) {
		return "(a keyword/value connection string)"
	}
	if !ledger.IsPostgresDSN(dsn) {
		if scheme := ledger.URLScheme(dsn); scheme != "" {
			return scheme + ":..."
		}
		return dsn
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return ledger.URLScheme(dsn) + ":..."
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	u.Fragment, u.RawFragment = "", ""
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			lk := strings.ToLower(k)
			for _, secret := range []string{"pass", "pwd", "secret", "token", "key"} {
				if strings.Contains(lk, secret) {
					q.Set(k, "xxxxx")
				}
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// ledgerOpenRO opens the ledger at state read-only; failures are exit 2.
func ledgerOpenRO(ctx context.Context, state string) (ledger.Store, string, error) {
	dsn, err := ledgerState(state)
	if err != nil {
		return nil, "", &exitError{code: ledgerExitUnreadable, err: err}
	}
	s, err := backends.OpenStore(ctx, dsn, true)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, dsn, &exitError{code: ledgerExitUnreadable, err: fmt.Errorf("no ledger at %s yet (gatehouse wrap creates it on its first run; --state names another)", ledgerDisplayDSN(dsn))}
	}
	if err != nil {
		return nil, dsn, &exitError{code: ledgerExitUnreadable, err: fmt.Errorf("%s: %w", ledgerDisplayDSN(dsn), err)}
	}
	if _, err := s.Init(ctx, ""); err != nil {
		s.Close()
		if shown := ledgerDisplayDSN(dsn); !strings.Contains(err.Error(), shown) {
			err = fmt.Errorf("%s: %w", shown, err) // named once, not twice
		}
		return nil, dsn, &exitError{code: ledgerExitUnreadable, err: err}
	}
	return s, dsn, nil
}

// defaultKeyHint names the key file of that name that gatehouse wrap
// created in the default state directory, when there is one: "; gatehouse
// wrap's default key is PATH". Otherwise it returns "".
func defaultKeyHint(name string) string {
	dir, err := defaultStateDir()
	if err != nil {
		return ""
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return "; gatehouse wrap's default key is " + p
}

// ledgerVerifiers loads the verifier key files.
func ledgerVerifiers(paths []string) (note.Verifiers, error) {
	var vs []note.Verifier
	for _, p := range paths {
		v, err := ledger.LoadVerifier(p)
		if err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	if len(vs) == 0 {
		return nil, nil
	}
	return note.VerifierList(vs...), nil
}

// ledgerIsTerminal reports whether w is a character device (a terminal).
func ledgerIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// ledgerProgress returns a VerifyOptions.Progress that redraws one line on
// w at most every 100 ms, and a function that ends the line.
func ledgerProgress(w io.Writer) (func(done, total int64), func()) {
	var last time.Time
	drawn := false
	draw := func(done, total int64) {
		const width = 30
		filled := 0
		if total > 0 {
			filled = int(done * width / total)
		}
		pct := 100.0
		if total > 0 {
			pct = float64(done) * 100 / float64(total)
		}
		fmt.Fprintf(w, "\rverifying [%s%s] %d/%d entries (%.0f%%)", strings.Repeat("#", filled), strings.Repeat(".", width-filled), done, total, pct)
		drawn = true
	}
	return func(done, total int64) {
			if now := time.Now(); now.Sub(last) >= 100*time.Millisecond || done == total {
				last = now
				draw(done, total)
			}
		}, func() {
			if drawn {
				fmt.Fprintln(w)
			}
		}
}

// ledgerVerifyJSON is the --json form of a verification report.
type ledgerVerifyJSON struct {
	OK                bool            `json:"ok"`
	LedgerID          string          `json:"ledger_id"`
	Size              int64           `json:"size"`
	Verified          int64           `json:"verified"`
	Checkpoints       int             `json:"checkpoints"`
	SignaturesChecked bool            `json:"signatures_checked"`
	Latest            *ledgerCkptJSON `json:"latest_checkpoint,omitempty"`
	Problem           *ledger.Problem `json:"problem,omitempty"`
	// OutcomeUnknown is the number of forwarded calls whose decision
	// record has no outcome record (outcomeTracker).
	OutcomeUnknown int `json:"outcome_unknown"`
}

type ledgerCkptJSON struct {
	Origin string `json:"origin"`
	Size   int64  `json:"size"`
	Root   string `json:"root"`
}

func newLedgerVerifyCmd(stdout, stderr io.Writer) *cobra.Command {
	var state string
	var keys []string
	var asJSON, progress, skipSigs bool
	c := &cobra.Command{
		Use:   "verify --state DSN --key FILE.vkey [--json] [--progress]",
		Short: "Verify the whole ledger: chain, Merkle tree and signed checkpoints",
		Long: `verify reads every entry in order and checks that each is canonical, carries
its own seq and the ledger's id, links to the previous entry's hash
(previous_hash) and does not go back in time; that the stored tree hashes
equal those recomputed from the entries; and that every stored checkpoint is
signed by one of the --key verifier keys and its root equals the tree of the
entries it covers. It stops at the first problem and names it: the entry's
seq, or the checkpoint's id. It also counts the forwarded calls whose
decision record has no outcome record ("outcome unknown": the gateway
stopped before the response, the call was cancelled before forwarding, or
an outcome written with wrap --defer-outcome was lost in a crash), which is
not an error of the chain.

--key is required: without the verifier key nothing binds the ledger to the
gateway, and anyone who can write the database could rewrite it
consistently. --skip-signatures checks only the chain and the tree (a
warning says so).

A progress bar is drawn on stderr when it is a terminal, or with --progress.

Exit status: 0 the ledger verifies, 1 it does not, 2 it (or a key) cannot be
read.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := context.Background()
			if len(keys) == 0 && !skipSigs {
				return &exitError{code: 64, err: fmt.Errorf("ledger verify: --key FILE.vkey is required (the checkpoint verifier key; --skip-signatures checks only the chain and the tree)%s", defaultKeyHint("ledger.vkey"))}
			}
			verifiers, err := ledgerVerifiers(keys)
			if err != nil {
				return &exitError{code: ledgerExitUnreadable, err: fmt.Errorf("ledger verify: %w", err)}
			}
			s, _, err := ledgerOpenRO(ctx, state)
			if err != nil {
				return err
			}
			defer s.Close()
			var outcomes outcomeTracker
			opts := ledger.VerifyOptions{Verifiers: verifiers, Entry: outcomes.add}
			if progress || ledgerIsTerminal(stderr) {
				p, end := ledgerProgress(stderr)
				opts.Progress = p
				defer end()
			}
			start := time.Now()
			rep, err := ledger.Verify(ctx, s, opts)
			if opts.Progress != nil && rep != nil && rep.Problem != nil {
				fmt.Fprintln(stderr)
			}
			if err != nil {
				return &exitError{code: ledgerExitUnreadable, err: fmt.Errorf("ledger verify: %w", err)}
			}
			if asJSON {
				out := ledgerVerifyJSON{
					OK: rep.Problem == nil, LedgerID: rep.LedgerID, Size: rep.Size, Verified: rep.Verified,
					Checkpoints: rep.Checkpoints, SignaturesChecked: rep.SignaturesChecked, Problem: rep.Problem,
					OutcomeUnknown: len(outcomes.pending),
				}
				if rep.Latest != nil {
					out.Latest = &ledgerCkptJSON{Origin: rep.Latest.Origin, Size: rep.Latest.Size, Root: rep.Latest.Hash.String()}
				}
				b, _ := jsonv2.Marshal(out)
				if err := printJSONLine(stdout, b); err != nil {
					return &exitError{code: ledgerExitUnreadable, err: fmt.Errorf("ledger verify: %w", err)}
				}
			} else {
				ledgerPrintReport(stdout, rep, time.Since(start), keys)
				if n := len(outcomes.pending); n > 0 {
					fmt.Fprintf(stdout, "  %d forwarded calls have no outcome record (outcome unknown: the gateway stopped before the response, or a deferred outcome was lost); not an error of the chain\n", n)
				}
			}
			if verifiers == nil {
				fmt.Fprintln(stderr, "gatehouse: warning: no --key: checkpoint signatures were NOT checked")
			} else if rep.Checkpoints == 0 && rep.Problem == nil && rep.Size > 0 {
				fmt.Fprintln(stderr, "gatehouse: warning: the ledger has no signed checkpoint: nothing binds it to the key")
			}
			if rep.Problem != nil {
				return &exitError{code: ledgerExitBad, err: fmt.Errorf("ledger verify: %s", rep.Problem)}
			}
			return nil
		},
	}
	c.Flags().StringVar(&state, "state", "", "the ledger: a SQLite file or a postgres:// URL")
	c.Flags().StringSliceVar(&keys, "key", nil, "verifier key file (NAME.vkey); repeat for rotated keys")
	c.Flags().BoolVar(&asJSON, "json", false, "print the report as one JSON object")
	c.Flags().BoolVar(&progress, "progress", false, "draw a progress bar on stderr even when it is not a terminal")
	c.Flags().BoolVar(&skipSigs, "skip-signatures", false, "verify without a key: chain and tree only, checkpoint signatures NOT checked")
	ledgerUsageErrors(c)
	return c
}

// outcomeTracker counts, over the entries Verify passes, the forwarded
// calls whose decision record has no outcome record (evidence.md §9.1:
// "outcome unknown"): a decision without response_scan_result was
// forwarded; an outcome (kind gateway_outcome, or in older ledgers the
// outcome-phase gateway_decision under the same id) completes it. Memory
// is proportional to the calls in flight along the chain, not to the
// ledger.
type outcomeTracker struct {
	pending map[string]bool // gateway_decision_id
}

func (o *outcomeTracker) add(e *ledger.Entry) {
	switch e.Kind {
	case ledger.KindGatewayDecision:
		f := ledgerFields(e.Payload)
		if f.GatewayDecisionID == "" {
			return
		}
		if f.HasResponseScan {
			delete(o.pending, f.GatewayDecisionID) // held, or an old outcome phase
			return
		}
		if o.pending == nil {
			o.pending = map[string]bool{}
		}
		o.pending[f.GatewayDecisionID] = true
	case ledger.KindGatewayOutcome:
		delete(o.pending, ledgerFields(e.Payload).CompletesDecisionID)
	}
}

func ledgerPrintReport(w io.Writer, rep *ledger.Report, took time.Duration, keys []string) {
	if rep.Problem != nil {
		fmt.Fprintf(w, "FAIL ledger %s: %s\n", shown(rep.LedgerID), shown(rep.Problem.String()))
		if rep.Verified > 0 {
			fmt.Fprintf(w, "  entries 0..%d verified before it (of %d stored); %d checkpoints verified\n", rep.Verified-1, rep.Size, rep.Checkpoints)
		} else {
			fmt.Fprintf(w, "  no entry verified before it (of %d stored); %d checkpoints verified\n", rep.Size, rep.Checkpoints)
		}
		if strings.Contains(rep.Problem.Reason, "not signed by a known key") {
			// Key names repeat (gatehouse-HOST): the hash tells keys apart.
			var given []string
			for _, p := range keys {
				if v, err := ledger.LoadVerifier(p); err == nil {
					given = append(given, fmt.Sprintf("%s+%08x (%s)", v.Name(), v.KeyHash(), p))
				}
			}
			if len(given) > 0 {
				fmt.Fprintf(w, "  the keys given: %s\n", strings.Join(given, ", "))
			}
			fmt.Fprintf(w, "  if the signing key was rotated, give every verifier key the ledger was signed with: --key OLD.vkey --key NEW.vkey\n")
		}
		return
	}
	fmt.Fprintf(w, "OK ledger %s: %d entries, chain and Merkle tree verified in %s\n", shown(rep.LedgerID), rep.Size, took.Round(time.Millisecond))
	sig := "signatures checked"
	if !rep.SignaturesChecked {
		sig = "signatures NOT checked"
	}
	fmt.Fprintf(w, "  %d checkpoints verified (%s)", rep.Checkpoints, sig)
	if rep.Latest != nil {
		fmt.Fprintf(w, "; latest: size %d, root %s", rep.Latest.Size, rep.Latest.Hash)
		if n := rep.Size - rep.Latest.Size; n > 0 {
			fmt.Fprintf(w, "; %d newer entries not yet signed", n)
		}
	}
	fmt.Fprintln(w)
}

// ledgerShowFlags are the filters of `ledger show`.
type ledgerShowFlags struct {
	state                string
	tool, server, action string
	kind, record         string
	since, until         string
	lineage              string
	asJSON               bool
}

// ledgerPayloadFields are the payload members show filters and links on.
type ledgerPayloadFields struct {
	ToolName        string
	ServerID        string
	Action          string
	ServerReceiptID string
	// ReceiptStatus is the status the gateway computed for the server
	// receipt: server_receipt_status of a decision receipt,
	// verification_status of an audit event.
	ReceiptStatus     string
	GatewayDecisionID string
	AuditEventID      string
	// CompletesDecisionID is an outcome record's link to its decision.
	CompletesDecisionID string
	// HasResponseScan: the payload has a response_scan_result member (a
	// decision record of a call held before forwarding; in ledgers before
	// December 2026 also the outcome-phase decision receipt).
	HasResponseScan bool
}

// ledgerFields reads the top-level string members show uses from a
// payload object in one pass; anything else (not an object, members of
// other types) leaves them empty.
func ledgerFields(payload []byte) ledgerPayloadFields {
	var f ledgerPayloadFields
	d := jsontext.NewDecoder(bytes.NewReader(payload))
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return f
	}
	for d.PeekKind() == '"' {
		name, err := d.ReadToken()
		if err != nil {
			return f
		}
		var dst *string
		switch name.String() {
		case "tool_name":
			dst = &f.ToolName
		case "server_id":
			dst = &f.ServerID
		case "action":
			dst = &f.Action
		case "server_receipt_id":
			dst = &f.ServerReceiptID
		case "server_receipt_status", "verification_status":
			dst = &f.ReceiptStatus
		case "gateway_decision_id":
			dst = &f.GatewayDecisionID
		case "audit_event_id":
			dst = &f.AuditEventID
		case "completes_decision_id":
			dst = &f.CompletesDecisionID
		case "response_scan_result":
			f.HasResponseScan = true
		}
		if dst != nil && d.PeekKind() == '"' {
			v, err := d.ReadToken()
			if err != nil {
				return f
			}
			*dst = v.String()
			continue
		}
		if err := d.SkipValue(); err != nil {
			return f
		}
	}
	return f
}

// ledgerLinks returns the ids an entry is known by or points to.
func ledgerLinks(e *ledger.Entry, f *ledgerPayloadFields) []string {
	var out []string
	// A server receipt's own receipt_id is not followed: its record_id
	// is the id the gateway references, and the two differ only for a
	// receipt stored under an id of the gateway's because its own was
	// unusable, where following it would join every call whose receipt
	// carried the same unusable id.
	for _, s := range []string{e.RecordID, f.ServerReceiptID, f.GatewayDecisionID, f.AuditEventID, f.CompletesDecisionID} {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func newLedgerShowCmd(stdout, stderr io.Writer) *cobra.Command {
	var f ledgerShowFlags
	c := &cobra.Command{
		Use:   "show --state DSN [filters] [--json]",
		Short: "List ledger entries, filtered, as a table or JSON lines",
		Long: `show prints the entries that pass every filter given, in seq order: a text
table, or with --json one entry per line: its leaf (RFC 8785 canonical JSON)
with control characters and Unicode line breaks inside strings written as
\u escapes, so that each entry stays one line and a terminal shows it as
text; the same JSON value, whose RFC 8785 form is the exact leaf. The table
shows such characters as \uXXXX too. --tool, --server and --action match
the payload members tool_name, server_id and action; --kind and --record
the entry's kind and record_id; --since and --until (RFC 3339) bound its
time, inclusive.

--lineage ID prints the entries linked to ID in both directions: starting
from any server receipt id, gateway decision id or audit event id, it follows
record_id and the payload members server_receipt_id, gateway_decision_id,
audit_event_id and completes_decision_id until no new id appears (the
lineage server_receipt_id -> gateway_decision_id -> audit_event_id: a call's
decision record and its outcome record, which carries the server receipt;
in ledgers of releases before December 2026 also the separate server
receipt and audit event entries).

show does not verify the ledger (see "ledger verify").

Exit status: 0 printed (possibly nothing; with --lineage, a line on stderr
says when no entry carries or links to ID), 1 entries that do not parse were
met, 64 usage, 2 the ledger cannot be read.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runLedgerShow(&f, stdout, stderr)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.state, "state", "", "the ledger: a SQLite file or a postgres:// URL")
	fl.StringVar(&f.tool, "tool", "", "only entries whose payload tool_name is this")
	fl.StringVar(&f.server, "server", "", "only entries whose payload server_id is this")
	fl.StringVar(&f.action, "action", "", "only entries whose payload action is this (allow, deny, monitor, redact, quarantine)")
	fl.StringVar(&f.kind, "kind", "", "only entries of this kind (gateway_decision, gateway_outcome, session, tool_approval, tool_quarantine, tool_release; audit_event, server_receipt in older ledgers)")
	fl.StringVar(&f.record, "record", "", "only the entries with this record_id")
	fl.StringVar(&f.since, "since", "", "only entries at or after this RFC 3339 time")
	fl.StringVar(&f.until, "until", "", "only entries at or before this RFC 3339 time")
	fl.StringVar(&f.lineage, "lineage", "", "the entries linked to this server receipt, gateway decision or audit event id")
	fl.BoolVar(&f.asJSON, "json", false, "print JSON lines (each entry's leaf) instead of a table")
	ledgerUsageErrors(c)
	return c
}

// showActions are the values of --action: the decision vocabulary
// (policy actions, which receipts and audit events carry).
var showActions = []string{"allow", "deny", "monitor", "redact", "quarantine"}

// showKinds are the values of --kind: the entry kinds Gatehouse writes.
var showKinds = []string{ledger.KindGatewayDecision, ledger.KindGatewayOutcome, ledger.KindSession, ledger.KindAuditEvent, ledger.KindServerReceipt,
	ledger.KindToolApproval, ledger.KindToolQuarantine, ledger.KindToolRelease, ledger.KindToolBaseline}

func runLedgerShow(f *ledgerShowFlags, stdout, stderr io.Writer) error {
	var since, until time.Time
	var err error
	if f.action != "" && !slices.Contains(showActions, f.action) {
		return &exitError{code: ledgerExitUsage, err: fmt.Errorf("--action %q: want one of %s", f.action, strings.Join(showActions, ", "))}
	}
	if f.kind != "" && !slices.Contains(showKinds, f.kind) {
		return &exitError{code: ledgerExitUsage, err: fmt.Errorf("--kind %q: want one of %s", f.kind, strings.Join(showKinds, ", "))}
	}
	if f.since != "" {
		if since, err = time.Parse(time.RFC3339Nano, f.since); err != nil {
			return &exitError{code: ledgerExitUsage, err: fmt.Errorf("--since %q: want an RFC 3339 time such as 2026-11-30T00:00:00Z", f.since)}
		}
	}
	if f.until != "" {
		if until, err = time.Parse(time.RFC3339Nano, f.until); err != nil {
			return &exitError{code: ledgerExitUsage, err: fmt.Errorf("--until %q: want an RFC 3339 time such as 2026-11-30T00:00:00Z", f.until)}
		}
	}
	ctx := context.Background()
	s, _, err := ledgerOpenRO(ctx, f.state)
	if err != nil {
		return err
	}
	defer s.Close()
	size, err := s.Size(ctx)
	if err != nil {
		return &exitError{code: ledgerExitUnreadable, err: fmt.Errorf("ledger show: %w", err)}
	}
	match := func(e *ledger.Entry, pf *ledgerPayloadFields) bool {
		switch {
		case f.kind != "" && e.Kind != f.kind,
			f.record != "" && e.RecordID != f.record,
			f.tool != "" && pf.ToolName != f.tool,
			f.server != "" && pf.ServerID != f.server,
			f.action != "" && pf.Action != f.action,
			!since.IsZero() && e.Time.Before(since),
			!until.IsZero() && e.Time.After(until):
			return false
		}
		return true
	}
	// scan calls fn for every entry that parses and counts those that do
	// not.
	bad := 0
	scan := func(fn func(seq int64, leaf []byte, e *ledger.Entry, pf *ledgerPayloadFields)) error {
		bad = 0
		return s.Leaves(ctx, 0, size, func(seq int64, leaf []byte) error {
			e, err := ledger.ParseLeaf(leaf)
			if err != nil {
				bad++
				return nil
			}
			pf := ledgerFields(e.Payload)
			fn(seq, leaf, &e, &pf)
			return nil
		})
	}
	var marked map[int64]bool
	if f.lineage != "" {
		// Passes over the ledger until no new entry links to the ids
		// found so far: memory stays proportional to the lineage, not to
		// the ledger. Lineages are short, so this takes two or three
		// passes.
		ids := map[string]bool{f.lineage: true}
		marked = map[int64]bool{}
		for grew := true; grew; {
			grew = false
			err := scan(func(seq int64, _ []byte, e *ledger.Entry, pf *ledgerPayloadFields) {
				if marked[seq] {
					return
				}
				links := ledgerLinks(e, pf)
				for _, l := range links {
					// A server_receipt_id is the server's choice: two
					// calls may carry the same (a counter restarted, a
					// replayed receipt). It joins an entry to the lineage
					// only when the lineage starts from it; otherwise it
					// is followed (to an older ledger's server receipt
					// entry, by its record_id) but joins no other call.
					if ids[l] && (l != pf.ServerReceiptID || l == e.RecordID || l == f.lineage) {
						marked[seq], grew = true, true
						for _, l := range links {
							ids[l] = true
						}
						return
					}
				}
			})
			if err != nil {
				return &exitError{code: ledgerExitUnreadable, err: fmt.Errorf("ledger show: %w", err)}
			}
		}
		if len(marked) == 0 {
			// Most likely a mistyped or truncated id: say so rather
			// than print an empty table without a word.
			fmt.Fprintf(stderr, "gatehouse: ledger show: no entry carries or links to %q\n", f.lineage)
		}
	}
	// Stream the output: nothing is accumulated, whatever the ledger size.
	w := bufio.NewWriter(stdout)
	const row = "%7s  %-27s  %-16s  %-24s  %-24s  %-10s  %-8s  %s\n"
	if !f.asJSON {
		fmt.Fprintf(w, row, "SEQ", "TIME", "KIND", "SERVER", "TOOL", "ACTION", "RECEIPT", "RECORD")
	}
	var line []byte // reused for each --json line
	err = scan(func(seq int64, leaf []byte, e *ledger.Entry, pf *ledgerPayloadFields) {
		if marked != nil && !marked[seq] || !match(e, pf) {
			return
		}
		if f.asJSON {
			// The leaf with what linesafe escapes written as escapes:
			// the same JSON value, whose RFC 8785 form is the exact leaf.
			line = linesafe.Append(line[:0], leaf)
			w.Write(line)
			w.WriteByte('\n')
			return
		}
		fmt.Fprintf(w, row, strconv.FormatInt(seq, 10), e.Time.Format("2006-01-02T15:04:05.000000Z"),
			ledgerCell(e.Kind, 0), ledgerCell(pf.ServerID, 24), ledgerCell(pf.ToolName, 24), ledgerCell(pf.Action, 10), ledgerCell(receiptStatus(e.Kind, pf), 8), ledgerCell(e.RecordID, 0))
	})
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return &exitError{code: ledgerExitUnreadable, err: fmt.Errorf("ledger show: %w", err)}
	}
	if bad > 0 {
		return &exitError{code: ledgerExitBad, err: fmt.Errorf("ledger show: %d entries do not parse; run \"gatehouse ledger verify\"", bad)}
	}
	return nil
}

// receiptStatus is the RECEIPT cell of an entry: the status the gateway
// computed for the call's server receipt, on the decision receipts and
// audit events that carry it. A server_receipt entry's own
// verification_status is the server's claim, never shown as a status.
func receiptStatus(kind string, f *ledgerPayloadFields) string {
	if kind == ledger.KindServerReceipt {
		return ""
	}
	return f.ReceiptStatus
}

// ledgerCell is a table cell for a value that may come from a server (a
// tool name, a server id, a receipt id): "-" when empty; control and
// format characters (ANSI escapes, C1 controls, DEL, U+2028/U+2029,
// bidirectional overrides) written as \uXXXX by linesafe.Text, so the
// terminal shows what is stored rather than obeying it; cut to width
// characters with "…" when width > 0, so the columns stay aligned (--json
// has every value).
func ledgerCell(s string, width int) string {
	if s == "" {
		return "-"
	}
	out := shown(s)
	if width > 0 && utf8.RuneCountInString(out) > width {
		rs := []rune(out)
		out = string(rs[:width-1]) + "…"
	}
	return out
}

// ledgerCheckpointSize parses --checkpoint: "latest" (0) or a tree size.
func ledgerCheckpointSize(s string) (int64, error) {
	if s == "" || s == "latest" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("--checkpoint %q: want \"latest\" or the tree size of a stored checkpoint", s)
	}
	return n, nil
}

func newLedgerProveCmd(stdout, stderr io.Writer) *cobra.Command {
	var state, checkpoint, from string
	var entry int64
	c := &cobra.Command{
		Use:   "prove --state DSN (--entry N | --from CHECKPOINT_FILE) [--checkpoint latest|SIZE]",
		Short: "Print an inclusion or consistency proof bundle (JSON)",
		Long: `prove --entry N prints an inclusion proof: entry N's exact leaf bytes, its
index, the RFC 6962 audit path and the signed checkpoint it leads to (the
latest stored one, or the one of tree size SIZE). Anyone holding the verifier
key checks it offline with "gatehouse ledger verify-proof".

prove --from CHECKPOINT_FILE prints a consistency proof that the latest
stored checkpoint (or the one of size SIZE) extends the older signed
checkpoint in the file, e.g. one an auditor saved earlier. If the ledger's
tree at the old size is not the one that checkpoint signed, the ledger was
rewritten: prove says so and exits 1.

An entry newer than the latest checkpoint cannot be proved yet: wait for the
next checkpoint, or sign one with "gatehouse ledger checkpoint".

Exit status: 0 printed, 1 cannot be proved, 2 cannot be read, 64 usage.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			hasEntry := cmd.Flags().Changed("entry")
			if hasEntry == (from != "") {
				return &exitError{code: ledgerExitUsage, err: errors.New("ledger prove: give exactly one of --entry and --from")}
			}
			if hasEntry && entry < 0 {
				return &exitError{code: ledgerExitUsage, err: fmt.Errorf("ledger prove: --entry %d: want an entry's seq, 0 or more", entry)}
			}
			size, err := ledgerCheckpointSize(checkpoint)
			if err != nil {
				return &exitError{code: ledgerExitUsage, err: err}
			}
			var old []byte
			if from != "" {
				if old, err = os.ReadFile(from); err != nil {
					return &exitError{code: ledgerExitUnreadable, err: fmt.Errorf("ledger prove: %w", err)}
				}
			}
			ctx := context.Background()
			s, _, err := ledgerOpenRO(ctx, state)
			if err != nil {
				return err
			}
			defer s.Close()
			var p *ledger.Proof
			if hasEntry {
				p, err = ledger.ProveEntry(ctx, s, entry, size)
			} else {
				p, err = ledger.ProveConsistency(ctx, s, old, size)
			}
			if err != nil {
				code := ledgerExitUnreadable
				if errors.Is(err, ledger.ErrNoCheckpoint) || errors.Is(err, ledger.ErrCorrupt) || errors.Is(err, ledger.ErrInvalid) {
					code = ledgerExitBad
				}
				return &exitError{code: code, err: fmt.Errorf("ledger prove: %w", err)}
			}
			b, err := p.Marshal()
			if err != nil {
				return &exitError{code: ledgerExitBad, err: err}
			}
			return printJSON(stdout, b)
		},
	}
	c.Flags().StringVar(&state, "state", "", "the ledger: a SQLite file or a postgres:// URL")
	c.Flags().Int64Var(&entry, "entry", 0, "prove the inclusion of the entry with this seq")
	c.Flags().StringVar(&from, "from", "", "prove consistency from the signed checkpoint in this file")
	c.Flags().StringVar(&checkpoint, "checkpoint", "latest", "the checkpoint to prove against: latest, or a stored checkpoint's tree size")
	ledgerUsageErrors(c)
	return c
}

func newLedgerVerifyProofCmd(stdout, stderr io.Writer) *cobra.Command {
	var keys []string
	var proofPath string
	var entryJSON bool
	c := &cobra.Command{
		Use:   "verify-proof --key FILE.vkey --proof FILE [--entry-json]",
		Short: "Check a proof bundle offline with only the public key",
		Long: `verify-proof checks a bundle printed by "gatehouse ledger prove" with the
verifier key alone: no database, no trust in the gateway. For an inclusion
proof: the checkpoint is signed by the key, the leaf is a well-formed entry
of the ledger the checkpoint names, at the stated index, and its RFC 6962
audit path leads to the signed root. For a consistency proof: both
checkpoints are signed by the key, of the same ledger, and the newer tree
extends the older one. --proof - reads the bundle from stdin.

--entry-json prints the proven entry (its canonical JSON) on success.

Exit status: 0 the proof holds, 1 it does not (or cannot be read).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(keys) == 0 || proofPath == "" {
				return &exitError{code: ledgerExitUsage, err: errors.New("ledger verify-proof: --key and --proof are required")}
			}
			verifiers, err := ledgerVerifiers(keys)
			if err != nil {
				return &exitError{code: ledgerExitBad, err: fmt.Errorf("ledger verify-proof: %w", err)}
			}
			var data []byte
			if proofPath == "-" {
				data, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), ledger.MaxProofBytes+1))
			} else {
				data, err = os.ReadFile(proofPath)
			}
			if err != nil {
				return &exitError{code: ledgerExitBad, err: fmt.Errorf("ledger verify-proof: %w", err)}
			}
			p, err := ledger.ParseProof(data)
			if err != nil {
				return &exitError{code: ledgerExitBad, err: fmt.Errorf("ledger verify-proof: %w", err)}
			}
			got, err := ledger.VerifyProof(p, verifiers)
			if err != nil {
				fmt.Fprintf(stdout, "FAIL %s\n", shown(err.Error()))
				return &exitError{code: ledgerExitBad, err: fmt.Errorf("ledger verify-proof: %w", err)}
			}
			if got.Entry != nil {
				if entryJSON {
					if err := printJSONLine(stdout, got.Entry.Leaf()); err != nil {
						return err
					}
				} else {
					fmt.Fprintf(stdout, "OK entry %d (%s %s) is in the tree of size %d of %s, root %s, signed\n",
						got.Entry.Seq, shown(got.Entry.Kind), shown(got.Entry.RecordID), got.Checkpoint.Size, shown(got.Checkpoint.Origin), got.Checkpoint.Hash)
				}
			} else {
				fmt.Fprintf(stdout, "OK the tree of size %d of %s (root %s) extends the tree of size %d (root %s); both signed\n",
					got.Checkpoint.Size, shown(got.Checkpoint.Origin), got.Checkpoint.Hash, got.Old.Size, got.Old.Hash)
			}
			return nil
		},
	}
	c.Flags().StringSliceVar(&keys, "key", nil, "verifier key file (NAME.vkey); repeat for rotated keys")
	c.Flags().StringVar(&proofPath, "proof", "", "the proof bundle (JSON), or - for stdin")
	c.Flags().BoolVar(&entryJSON, "entry-json", false, "print the proven entry as canonical JSON instead of a summary")
	ledgerUsageErrors(c)
	return c
}

func newLedgerCheckpointCmd(stdout, stderr io.Writer) *cobra.Command {
	var state, key string
	c := &cobra.Command{
		Use:   "checkpoint --state DSN --key FILE.skey",
		Short: "Sign and store a checkpoint of the ledger as it is now",
		Long: `checkpoint signs the current tree with the signer key, stores the checkpoint
in the ledger (unless the latest stored one already covers every entry) and
prints it (the signed note). Auditors keep printed checkpoints to ask later
for consistency proofs ("ledger prove --from").

Exit status: 0 printed, 1 failed, 2 cannot be read.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if key == "" {
				return &exitError{code: ledgerExitUsage, err: fmt.Errorf("ledger checkpoint: --key FILE.skey is required (the checkpoint signer key)%s", defaultKeyHint("ledger.skey"))}
			}
			signer, err := ledger.LoadSigner(key)
			if err != nil {
				return &exitError{code: ledgerExitUnreadable, err: fmt.Errorf("ledger checkpoint: %w", err)}
			}
			dsn, err := ledgerState(state)
			if err != nil {
				return &exitError{code: ledgerExitUnreadable, err: err}
			}
			ctx := context.Background()
			if !ledger.IsPostgresDSN(dsn) {
				if err := ledger.CheckPath(dsn); err != nil {
					return &exitError{code: ledgerExitUnreadable, err: fmt.Errorf("ledger checkpoint: --state %s: %w", ledgerDisplayDSN(dsn), err)}
				}
				if _, err := os.Stat(dsn); err != nil {
					return &exitError{code: ledgerExitUnreadable, err: fmt.Errorf("ledger checkpoint: %w", err)}
				}
			}
			s, err := backends.OpenStore(ctx, dsn, false)
			if err != nil {
				return &exitError{code: ledgerExitUnreadable, err: fmt.Errorf("ledger checkpoint: %s: %w", ledgerDisplayDSN(dsn), err)}
			}
			if _, err := s.Init(ctx, ""); err != nil {
				s.Close()
				return &exitError{code: ledgerExitUnreadable, err: fmt.Errorf("ledger checkpoint: %s: %w", ledgerDisplayDSN(dsn), err)}
			}
			l, err := ledger.New(ctx, s, ledger.Options{Signer: signer, CheckpointEvery: -1, CheckpointEveryN: -1})
			if err != nil {
				s.Close()
				return &exitError{code: ledgerExitBad, err: fmt.Errorf("ledger checkpoint: %w", err)}
			}
			cp, err := l.Checkpoint(ctx)
			if cerr := l.Close(ctx); err == nil {
				err = cerr
			}
			if err != nil {
				return &exitError{code: ledgerExitBad, err: fmt.Errorf("ledger checkpoint: %w", err)}
			}
			_, err = stdout.Write(cp.Note)
			return err
		},
	}
	c.Flags().StringVar(&state, "state", "", "the ledger: a SQLite file or a postgres:// URL")
	c.Flags().StringVar(&key, "key", "", "signer key file (NAME.skey)")
	ledgerUsageErrors(c)
	return c
}
