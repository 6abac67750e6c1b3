package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/gatehouse-mcp/gatehouse/internal/decisionlog"
	"github.com/gatehouse-mcp/gatehouse/internal/evidence"
	"github.com/gatehouse-mcp/gatehouse/internal/gateway"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger/sqlite"
	"github.com/gatehouse-mcp/gatehouse/internal/outpath"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
	"github.com/gatehouse-mcp/gatehouse/internal/scan"
	"github.com/gatehouse-mcp/gatehouse/internal/stdio"
	"github.com/gatehouse-mcp/gatehouse/internal/wire"
)

// defaultPolicyNotice is the one stderr line printed when wrap runs
// without --policy: the built-in default allows every call and (unless
// noScan) redacts high-confidence secrets, and the line says where the
// decisions are recorded (ledgerOn: the audit ledger; decisionLog: the
// --decision-log path, "" for none), or that they are not. In shadow mode
// (shadow) nothing is redacted, and the line says so.
func defaultPolicyNotice(ledgerOn bool, decisionLog string, noScan, shadow bool) string {
	var where []string
	if ledgerOn {
		where = append(where, "the audit ledger")
	}
	if decisionLog != "" {
		where = append(where, "the decision log")
	}
	recorded := "decisions are not recorded: --no-ledger and no --decision-log"
	if len(where) > 0 {
		recorded = "every decision recorded in " + strings.Join(where, " and ")
	}
	scanning := "; high-confidence secrets redacted, other scan findings monitored"
	switch {
	case noScan:
		scanning = "; scanning off (--no-scan)"
	case shadow:
		scanning = "; in shadow mode scan findings are recorded, none redacted"
	}
	return "gatehouse: no --policy given: using the built-in default policy (allow every tool call" + scanning + "; " + recorded + ")"
}

type wrapFlags struct {
	policyPath   string
	role         string
	principal    string
	serverID     string
	decisionLog  string
	eventSource  string
	maxFrame     int
	grace        time.Duration
	receiptsPath string
	logLevel     string

	state        string
	noLedger     bool
	ledgerKey    string
	ckptEvery    time.Duration
	ckptEntries  int64
	deferOutcome time.Duration
	receiptKeys  string
	requireRcpts string
	gatewayID    string
	noScan       bool
	baseline     string
	shadow       bool
}

func newWrapCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	var f wrapFlags
	cmd := &cobra.Command{
		Use:   "wrap [flags] -- COMMAND [ARGS...]",
		Short: "Relay one stdio MCP server, deciding every tools/call by policy",
		Long: `wrap starts COMMAND (without a shell) as a stdio MCP server and relays the
protocol between its own stdin/stdout (the MCP client) and the server, byte for
byte. Every tools/call request is decided by policy before it reaches the
server; decisions go to the decision log.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 0 || len(args) == 0 {
				return &exitError{code: stdio.ExitUsage, err: errors.New("wrap: give the server command after --, e.g. gatehouse wrap -- npx my-server")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWrap(cmd.Context(), &f, args, stdin, stdout, stderr)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: stdio.ExitUsage, err: err}
	})
	fl := cmd.Flags()
	fl.StringVar(&f.policyPath, "policy", "", "policy file (YAML); without it the built-in default policy applies")
	fl.StringVar(&f.role, "role", "", "the caller's role, for policy (principal.role)")
	fl.StringVar(&f.principal, "principal", "", "the caller's id, for policy (principal.id)")
	fl.StringVar(&f.serverID, "server-id", "", "the server's id, for policy and evidence (default: the command's base name, or for a package runner or interpreter such as npx, uvx, node or python the package's or script's name)")
	fl.StringVar(&f.decisionLog, "decision-log", "", "append CloudEvents decision events to this file (created 0600)")
	fl.StringVar(&f.eventSource, "event-source", "", "CloudEvents source URI of the events, e.g. gatehouse://host/name (required with --decision-log)")
	fl.IntVar(&f.maxFrame, "max-frame-bytes", wire.DefaultMaxFrameBytes, "largest frame in bytes, terminator included, in both directions")
	fl.DurationVar(&f.grace, "shutdown-grace", 2*time.Second, "wait after closing the server's stdin before SIGTERM, and after SIGTERM before SIGKILL")
	fl.StringVar(&f.receiptsPath, "request-receipts-out", "", "record request-decision receipts to this new file (requires --decision-log and --event-source)")
	fl.StringVar(&f.logLevel, "log-level", "warn", "diagnostics on stderr: debug, info, warn or error")
	fl.StringVar(&f.state, "state", "", "audit ledger: a SQLite file path or a postgres:// URL (default $XDG_STATE_HOME/gatehouse/ledger.db)")
	fl.BoolVar(&f.noLedger, "no-ledger", false, "do not record evidence in the audit ledger")
	fl.StringVar(&f.ledgerKey, "ledger-key", "", "note signer key for ledger checkpoints (default: ledger.skey beside the default ledger, created on first use)")
	fl.DurationVar(&f.ckptEvery, "checkpoint-every", ledger.DefaultCheckpointEvery, "sign a ledger checkpoint when entries have waited this long without one (0: no time trigger)")
	fl.Int64Var(&f.ckptEntries, "checkpoint-entries", ledger.DefaultCheckpointEveryN, "sign a ledger checkpoint when this many entries are not covered by one (0: no count trigger); one is always signed at exit")
	fl.DurationVar(&f.deferOutcome, "defer-outcome", 0, "let each call's outcome record ride the next ledger commit, at most this long after the response, instead of making it durable before the response is relayed (0: durable first; a crash in that window leaves the outcome unknown)")
	fl.StringVar(&f.receiptKeys, "receipt-keys", "", "keys that verify server security receipts, per server_id (YAML or JSON, docs/evidence.md)")
	fl.StringVar(&f.requireRcpts, "require-receipts", "", "what a missing or unverified server receipt does: none, present or verified (default: the policy's receipts.require for this server, else none)")
	fl.StringVar(&f.gatewayID, "gateway-id", "", "this gateway's id in its decision receipts (default: the host name)")
	fl.StringVar(&f.baseline, "baseline", "", "how tool baselines are taken: first_use (a tool's first listing is its baseline; first-use also accepted) or require (only gatehouse tools approve sets one; a tool never approved is refused); default: the policy's drift.baseline, else first_use")
	fl.BoolVar(&f.shadow, "shadow", false, "shadow mode: evaluate and record every verdict (policy, scanning, unknown tools, receipts) and enforce none; the server and the client get what they would with a policy that allows everything (docs/policy.md, \"Shadow mode\"; also defaults.mode: shadow)")
	fl.BoolVar(&f.noScan, "no-scan", false, "do not scan arguments, responses and tool definitions for secrets, personal data, prompt injection and poisoning (the policy's scanning block then has no effect)")
	return cmd
}

// The garbage collector settings of a wrap process (runtime/debug), unless
// the environment sets GOGC or GOMEMLIMIT itself. Between frames the
// gateway's live heap is a few MiB, so with the default GOGC=100 it
// collects after every few MiB of per-call garbage, which cost a fifth of
// its CPU at 64 calls in flight (a third with the ledger on). GOGC=400
// collects a quarter as often; the soft memory limit (Go-managed memory, in
// bytes) makes it collect sooner when the heap nears it, so that the peak
// stays bounded when the live heap is large (a 16 MiB frame): such frames
// then cost up to about half again as much CPU, which the memory bound of
// 4x a frame is worth (the runtime's GC CPU limiter keeps it from
// thrashing).
const (
	wrapGCPercent   = 400
	wrapMemoryLimit = 48 << 20
)

// tuneGC applies wrapGCPercent and wrapMemoryLimit where the environment
// does not set GOGC or GOMEMLIMIT.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(wrapGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(wrapMemoryLimit)
	}
}

// newScanner compiles the scanner under the default garbage-collector
// pacing and gives the garbage back: compiling the rules allocates about
// 30 MiB of which about 7 MiB stay live, and under wrapGCPercent that
// garbage would raise the process's peak for the rest of its life (a
// 16 MiB frame then peaked at 5.3x its size instead of 3.6x).
func newScanner() (*scan.Scanner, error) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	sc, err := scan.New(scan.Options{})
	debug.FreeOSMemory()
	return sc, err
}

// configError marks a configuration refused before the server is spawned.
func configError(format string, a ...any) error {
	return &exitError{code: stdio.ExitConfig, err: fmt.Errorf(format, a...)}
}

func runWrap(ctx context.Context, f *wrapFlags, argv []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return &exitError{code: stdio.ExitUsage, err: fmt.Errorf("--log-level %q: want debug, info, warn or error", f.logLevel)}
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	// Event ids (decision log, tool_call_id) are random UUIDs, one or two
	// per tools/call: draw their randomness from crypto/rand in blocks
	// rather than with a getrandom call each.
	uuid.EnableRandPool()
	tuneGC()

	// Everything that can be checked before the server starts is checked
	// here; a refused configuration never spawns it.
	if f.requireRcpts != "" {
		if _, err := evidence.ParseRequirement(f.requireRcpts); err != nil {
			return configError("--require-receipts %q: want none, present or verified", f.requireRcpts)
		}
	}
	if f.maxFrame < 1024 {
		return configError("--max-frame-bytes must be at least 1024, got %d", f.maxFrame)
	}
	pol := policy.Default()
	if f.policyPath != "" {
		p, err := policy.Load(f.policyPath)
		if err != nil {
			return configError("%v", err)
		}
		pol = p
		warnUnnamedRole(stderr, pol, f.role, f.policyPath)
		warnPolicy(stderr, pol, f.policyPath, f.noScan)
		if f.noScan {
			fmt.Fprintf(stderr, "gatehouse: warning: --no-scan: nothing is scanned; policy %s's scanning block has no effect\n", f.policyPath)
		}
	} else {
		fmt.Fprintln(stderr, defaultPolicyNotice(!f.noLedger, f.decisionLog, f.noScan, f.shadow))
	}
	// --baseline is checked before anything is created or spawned.
	var baseline string
	switch f.baseline {
	case "":
	case "first-use", policy.BaselineFirstUse:
		baseline = policy.BaselineFirstUse
	case policy.BaselineRequire:
		baseline = policy.BaselineRequire
	default:
		return configError("--baseline %q: want first_use or require", f.baseline)
	}
	if f.decisionLog == "" && (f.eventSource != "") {
		return configError("--event-source needs --decision-log")
	}
	if f.receiptsPath != "" && (f.decisionLog == "" || f.eventSource == "") {
		return configError("--request-receipts-out requires --decision-log and --event-source")
	}
	// The other files of the run, which no output may alias: the policy,
	// the receipt keys, Gatehouse's own state (the default ledger and its
	// signing key, with the files beside them: protected with --no-ledger
	// too, since later runs use them) and with the ledger the --state file
	// and --ledger-key. A SQLite --state is resolved once (symlinks, "..")
	// and opened as resolved: SQLite keeps its -wal and -shm beside the
	// file it opens, which is where they are checked.
	inputs := []string{}
	if f.policyPath != "" {
		inputs = append(inputs, f.policyPath)
	}
	if f.receiptKeys != "" {
		inputs = append(inputs, f.receiptKeys)
	}
	if def, err := ledger.DefaultPath(); err == nil {
		inputs = append(inputs, sqlite.Files(def)...)
	}
	if key, err := defaultSignerKeyPath(); err == nil {
		inputs = append(inputs, key, verifierKeyPath(key), key+".lock")
	}
	if !f.noLedger {
		if f.state == "" {
			p, err := ledger.DefaultPath()
			if err != nil {
				return configError("--state: %v", err)
			}
			f.state = p
		}
		if !ledger.IsPostgresDSN(f.state) {
			if err := ledger.CheckPath(f.state); err != nil {
				return configError("--state %s: %v", ledgerDisplayDSN(f.state), err)
			}
			// A path that cannot be walked (a directory this user may
			// not search) stays as given: opening the ledger reports it,
			// after the checks of the other paths.
			if resolved, err := outpath.Resolve(f.state); err == nil {
				f.state = resolved
			}
			inputs = append(inputs, sqlite.Files(f.state)...)
		}
		if f.ledgerKey != "" {
			inputs = append(inputs, f.ledgerKey)
		}
	}
	var dlog *decisionlog.Log
	if f.decisionLog != "" {
		if f.eventSource == "" {
			return configError("--decision-log requires --event-source (a URI such as gatehouse://localhost/wrap)")
		}
		if err := decisionlog.ValidateSource(f.eventSource); err != nil {
			return configError("--event-source: %v", err)
		}
		if err := checkOutput(f.decisionLog, inputs); err != nil {
			return configError("--decision-log: %v", err)
		}
	}
	rec, err := newReceipts(f, inputs, stderr)
	if err != nil {
		return configError("--request-receipts-out: %v", err)
	}
	evidenceFiles := map[string]string{"the decision log": f.decisionLog, "the request-decision receipts": f.receiptsPath}
	if !f.noLedger {
		if !ledger.IsPostgresDSN(f.state) {
			evidenceFiles["the audit ledger"] = f.state
		}
		// The signing key is a file with either store.
		key := f.ledgerKey
		if key == "" {
			key, _ = defaultSignerKeyPath() // "" when there is none
		}
		evidenceFiles["the ledger signing key"] = key
	}
	warnServedEvidence(stderr, argv[1:], evidenceFiles)
	if f.decisionLog != "" {
		l, err := decisionlog.Open(f.decisionLog, f.eventSource)
		if err != nil {
			return configError("--decision-log: %v", err)
		}
		defer l.Close()
		dlog = l
	}
	serverID := f.serverID
	if serverID == "" {
		serverID = defaultServerID(argv)
	}
	require := f.requireRcpts
	if fromPolicy := pol.Settings().ReceiptRequirement(serverID); require == "" {
		require = fromPolicy
	} else if receiptsWeaker(require, fromPolicy) {
		// Documented as an override, but one that lowers what the
		// policy file demands should not pass without a word.
		fmt.Fprintf(stderr, "gatehouse: warning: --require-receipts %s overrides receipts.require %s that policy %s sets for server %q\n", require, fromPolicy, f.policyPath, serverID)
	}
	led, rec2, err := openEvidence(ctx, f, require, pol, stderr, logger)
	if err != nil {
		return configError("%v", err)
	}
	if led != nil {
		defer func() {
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := led.Close(cctx); err != nil {
				fmt.Fprintf(stderr, "gatehouse: closing the audit ledger: %v\n", err)
			}
		}()
	}
	cfg := gateway.Config{
		Policy:    pol,
		Principal: policy.Principal{ID: f.principal, Role: f.role},
		ServerID:  serverID,
		Log:       dlog,
		Logger:    logger,
		GatewayID: gatewayIDOf(f.gatewayID),
		Shadow:    f.shadow,
	}
	if f.shadow || pol.Settings().Mode == policy.ModeShadow {
		fmt.Fprintln(stderr, "gatehouse: shadow mode: every verdict is recorded (shadow_decisions), none is enforced")
	}
	cfg.Baseline = baseline
	if !f.noLedger {
		// The tool baselines and holds live beside the ledger, in the
		// same database (docs/drift.md); with --no-ledger, in memory for
		// this run.
		ts, err := openToolState(ctx, f.state)
		if err != nil {
			return configError("--state %s: tool state: %v", ledgerDisplayDSN(f.state), err)
		}
		defer ts.Close()
		cfg.Tools = ts
	}
	if rec2 != nil {
		cfg.Evidence = rec2
	}
	if sc := pol.Scanning(); !f.noScan && (sc.Arguments || sc.Responses || sc.Tools) {
		scanner, err := newScanner()
		if err != nil {
			return configError("scanner: %v", err)
		}
		cfg.Scanner = scanner
	}
	if rec != nil {
		// Assigned only when set: a nil *Recorder in the interface would
		// not compare equal to nil.
		cfg.Receipts = rec
	}
	var capture *decisionlog.Capture
	if rec != nil {
		capture = &decisionlog.Capture{Scope: rec.Scope()}
	}
	opts := stdio.Options{
		Argv:          argv,
		Session:       cfg,
		MaxFrameBytes: f.maxFrame,
		Grace:         f.grace,
		Stdin:         stdin,
		Stdout:        stdout,
		Stderr:        stderr,
		Logger:        logger,
		OnStart: func(pid int) {
			if dlog == nil {
				return
			}
			_, err := dlog.Emit(decisionlog.TypeSessionStart, decisionlog.SessionStart{
				GatehouseVersion: Version,
				PID:              os.Getpid(),
				ServerCommand:    decisionlog.ServerCommand(argv),
				PolicyName:       pol.Name(),
				PolicyVersion:    pol.Version(),
				ShadowMode:       f.shadow || pol.Settings().Mode == policy.ModeShadow,
				Capture:          capture,
			})
			if err != nil {
				logger.Error("decision log write failed", "err", err)
			}
		},
		OnStop: func(reason string, code int) {
			if dlog == nil {
				return
			}
			stop := decisionlog.SessionStop{Reason: reason, ExitCode: &code}
			if rec != nil {
				_ = rec.Close()
				state, n := rec.State()
				stop.Capture = &decisionlog.Capture{Scope: rec.Scope(), State: state, Records: &n}
			}
			// The last event: a burst the client loop still flushes
			// after the server exited must not land after it.
			if _, err := dlog.EmitLast(decisionlog.TypeSessionStop, stop); err != nil {
				logger.Error("decision log write failed", "err", err)
			}
		},
	}
	code, err := stdio.Run(ctx, opts)
	if err != nil {
		if errors.Is(err, stdio.ErrStart) {
			return &exitError{code: code, err: err}
		}
		fmt.Fprintf(stderr, "gatehouse: %v\n", err)
	}
	if code != 0 {
		return &exitError{code: code, err: errors.New("")}
	}
	return nil
}

// checkOutput checks, before the server starts, that path can be used as an
// append-only output file: its directory exists and is writable, it is not a
// directory or other special file, and it aliases none of others (package
// outpath: relative paths, "..", symlinks, hard links).
func checkOutput(path string, others []string) error {
	if err := outpath.WritableDir(filepath.Dir(path)); err != nil {
		return err
	}
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s exists and is not a regular file", path)
	}
	for _, o := range others {
		why, alias, err := outpath.Alias(path, o)
		if err != nil {
			return fmt.Errorf("resolve %s: %w", path, err)
		}
		if alias {
			return fmt.Errorf("%s is the same file as %s (%s)", path, o, why)
		}
	}
	return nil
}

// warnServedEvidence writes a warning for each evidence file (files: what
// it is -> its path, "" for none) that lies inside a directory the server
// is given among its arguments args (a filesystem server's root, say, as
// DIR or --flag=DIR): the server, and the agent through it, may then read
// or rewrite the evidence of its own calls. Paths are compared after
// resolving symbolic links; arguments that are not existing directories
// are ignored. It never fails: it only warns.
func warnServedEvidence(stderr io.Writer, args []string, files map[string]string) {
	labels := make([]string, 0, len(files))
	for label, p := range files {
		if p != "" {
			labels = append(labels, label)
		}
	}
	slices.Sort(labels)
	warned := map[string]bool{}
	for _, a := range args {
		dir := a
		if strings.HasPrefix(a, "-") {
			i := strings.IndexByte(a, '=')
			if i < 0 {
				continue
			}
			dir = a[i+1:]
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		root := resolvePath(dir)
		for _, label := range labels {
			p := files[label]
			rel, err := filepath.Rel(root, resolvePath(p))
			if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || warned[label] {
				continue
			}
			warned[label] = true
			fmt.Fprintf(stderr, "gatehouse: warning: %s %s is inside %s, which the server is given: the server (and the agent through it) may read or change it; keep evidence outside what the server can reach\n", label, p, dir)
		}
	}
}

// resolvePath returns p absolute, with every symbolic link resolved: the
// file itself when it is a link (even one whose target does not exist
// yet), and the longest prefix of p that exists when p does not, the rest
// appended as it is.
func resolvePath(p string) string { return resolveLinks(p, 0) }

func resolveLinks(p string, depth int) string {
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	dir, base := filepath.Split(p)
	dir = filepath.Clean(dir)
	if dir == p || base == "" || depth > 40 { // 40: the kernel's own limit on links followed
		return p
	}
	if target, err := os.Readlink(p); err == nil {
		// A link to a file not created yet: where it will be.
		if !filepath.IsAbs(target) {
			target = filepath.Join(dir, target)
		}
		return resolveLinks(target, depth+1)
	}
	return filepath.Join(resolveLinks(dir, depth+1), base)
}

// receiptsWeaker reports whether receipts.require value a demands less than
// b (none < present < verified).
func receiptsWeaker(a, b string) bool {
	rank := map[string]int{policy.ReceiptsNone: 0, policy.ReceiptsPresent: 1, policy.ReceiptsVerified: 2}
	ra, okA := rank[a]
	rb, okB := rank[b]
	return okA && okB && ra < rb
}
