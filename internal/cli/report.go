package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gatehouse-mcp/gatehouse/internal/decisionlog"
	"github.com/gatehouse-mcp/gatehouse/internal/evidence"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
	"github.com/gatehouse-mcp/gatehouse/internal/pipeline"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
	"github.com/gatehouse-mcp/gatehouse/internal/verify"
)

// Exit codes of gatehouse report.
const (
	reportExitUnreadable = 2  // an input could not be opened or read
	reportExitUsage      = 64 // bad flags or arguments
)

// maxReportProblems bounds the malformed lines a shadow report lists
// (JSON problems, stderr); every one is counted.
const maxReportProblems = 100

// maxRowTools bounds the tools a shadow report row lists in JSON; the
// rest are counted (tools_more). The table shows three.
const maxRowTools = 100

// maxRowExamples is the number of example records per row.
const maxRowExamples = 3

func newReportCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Summarize recorded decisions",
	}
	groupCommand(cmd)
	cmd.AddCommand(newReportShadowCmd(stdout, stderr))
	return cmd
}

// reportShadowFlags are the flags of gatehouse report shadow.
type reportShadowFlags struct {
	since, until string
	format       string
	state        string
	includeAllow bool
}

func newReportShadowCmd(stdout, stderr io.Writer) *cobra.Command {
	var f reportShadowFlags
	cmd := &cobra.Command{
		Use:   "shadow [--since T] [--until T] [--format table|json] [--state LEDGER] [LOGFILE...]",
		Short: "Summarize, per rule, what shadow rules and shadow mode would have done",
		Long: `report shadow reads decision logs (the NDJSON files of wrap --decision-log)
and, with --state, the audit ledger, and summarizes per rule what would have
been denied, redacted, quarantined or monitored had the rule been enforced:
the shadow_decisions of every tool decision, scan event and gateway decision
receipt (docs/policy.md, "Shadow mode"). Each row is one (rule, would-have
action, enforced action) with its count, the tools it concerned, the first and
last time, and up to three example record ids (decision event ids; for ledger
records the gateway_decision_id and audit_event_id).

--since and --until take an RFC 3339 time or a duration back from now (24h).
A malformed line is reported on stderr as FILE:LINE and skipped; the count of
skipped lines is part of the report. A decision recorded twice (the same
file given twice; the decision log and the ledger of one run, joined by the
decision event id) is counted once, with the ledger's ids in its examples.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReportShadow(cmd.Context(), &f, args, time.Now(), stdout, stderr)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &exitError{code: reportExitUsage, err: err} })
	fl := cmd.Flags()
	fl.StringVar(&f.since, "since", "", "only records at or after this time: RFC 3339 (2026-12-01T00:00:00Z) or a duration back from now (24h)")
	fl.StringVar(&f.until, "until", "", "only records at or before this time: RFC 3339 or a duration back from now")
	fl.StringVar(&f.format, "format", "table", "output: table or json")
	fl.StringVar(&f.state, "state", "", "also read the audit ledger: a SQLite file path or a postgres:// URL")
	fl.BoolVar(&f.includeAllow, "include-allow", false, "also count would-have allow decisions (in shadow mode every call has the policy's)")
	return cmd
}

// parseReportTime reads a --since/--until value: an RFC 3339 time, or a
// non-negative duration (time.ParseDuration) back from now.
func parseReportTime(flag, s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, &exitError{code: reportExitUsage, err: fmt.Errorf("--%s %q: want an RFC 3339 time such as 2026-12-01T00:00:00Z or a duration such as 24h", flag, s)}
}

// shadowRecord is one decision record read for the report: a tool
// decision or scan event of a decision log, or a gateway decision receipt
// of the ledger.
//
// call and phase say which decision of which call it records, the same
// for the two records of one decision (a tool decision event and the
// ledger's decision record, a tools/call scan event and the outcome
// record): call is the call's decision event id when known (the decision
// record's decision_event_id, the scan event's), else the
// gateway_decision_id of its decision, else the record's own id; phase is
// "decision", "response" or "message" (a scanned message that is not a
// tools/call response).
type shadowRecord struct {
	eventID, gatewayDecisionID, auditEventID string
	call, phase                              string
	time                                     time.Time
	tool                                     string
	enforced                                 string
	shadowMode                               bool
	shadows                                  []decisionlog.ShadowDecision
}

// ShadowReport is the JSON form of gatehouse report shadow.
type ShadowReport struct {
	// Sources are the inputs read: the log files, and "ledger" with
	// --state.
	Sources []string `json:"sources"`
	// Since and Until are the window (RFC 3339), empty when open.
	Since string `json:"since,omitempty"`
	Until string `json:"until,omitempty"`
	// Records counts the decision records in the window;
	// ShadowModeRecords those with shadow_mode true, WithShadows those
	// with at least one shadow decision.
	Records           int `json:"records"`
	ShadowModeRecords int `json:"shadow_mode_records"`
	WithShadows       int `json:"records_with_shadow_decisions"`
	// Duplicates counts records of a decision already counted: the same
	// file given twice, or the decision log and the ledger of one run
	// (whose records name the same decision event). Their shadow decisions
	// are counted once; a ledger record adds its ids to the examples.
	Duplicates int `json:"duplicates"`
	// Malformed counts the lines (and ledger entries) skipped; Problems
	// lists the first of them.
	Malformed int             `json:"malformed"`
	Problems  []ReportProblem `json:"problems,omitempty"`
	// Rules are the rows, most severe would-have action first, then by
	// count.
	Rules []ShadowRow `json:"rules"`
}

// ReportProblem is one skipped input line: the file, its 1-based line (or
// the ledger entry's sequence number, file "ledger") and why.
type ReportProblem struct {
	File   string `json:"file"`
	Line   int64  `json:"line"`
	Reason string `json:"reason"`
}

// ShadowRow is one (rule, would-have action, enforced action) of a shadow
// report.
type ShadowRow struct {
	Rule            string `json:"rule"`
	WouldHaveAction string `json:"would_have_action"`
	EnforcedAction  string `json:"enforced_action"`
	// Stages are the stages that gave the would-have decisions (policy,
	// scan, unknown_tool, evidence, ...).
	Stages []string `json:"stages"`
	Count  int      `json:"count"`
	// Tools are the tools concerned, sorted, at most 100; ToolsMore
	// counts the rest. A message that is not a tools/call (a scanned
	// notification) is named by its method in parentheses.
	Tools     []string `json:"tools"`
	ToolsMore int      `json:"tools_more,omitempty"`
	// First and Last are the times of the first and last record (RFC 3339).
	First string `json:"first"`
	Last  string `json:"last"`
	// Examples are up to three records.
	Examples []ShadowExample `json:"examples"`

	first, last time.Time
	tools       map[string]bool
	exampleOf   map[[2]string]int // (call, phase) -> index in Examples
}

// ShadowExample names one record of a row: a decision log's event id, or
// a ledger record's gateway_decision_id and audit_event_id.
type ShadowExample struct {
	EventID           string `json:"event_id,omitempty"`
	GatewayDecisionID string `json:"gateway_decision_id,omitempty"`
	AuditEventID      string `json:"audit_event_id,omitempty"`
}

// shadowReporter accumulates a ShadowReport.
type shadowReporter struct {
	rep          ShadowReport
	since, until time.Time
	includeAllow bool
	rows         map[[3]string]*ShadowRow
	// records are the (call, phase) counted; shadows the (call, phase,
	// rule, would-have action) counted, and the row each went to.
	records map[[2]string]bool
	shadows map[[4]string]*ShadowRow
	// eventOf maps the ledger's decision records' gateway_decision_id to
	// their call, for the outcome records that complete them.
	eventOf map[string]string
	stderr  io.Writer
}

func runReportShadow(ctx context.Context, f *reportShadowFlags, files []string, now time.Time, stdout, stderr io.Writer) error {
	if f.format != "table" && f.format != "json" {
		return &exitError{code: reportExitUsage, err: fmt.Errorf("--format %q: want table or json", f.format)}
	}
	if len(files) == 0 && f.state == "" {
		return &exitError{code: reportExitUsage, err: errors.New("report shadow: give one or more decision log files, or --state")}
	}
	r := &shadowReporter{includeAllow: f.includeAllow, rows: map[[3]string]*ShadowRow{}, records: map[[2]string]bool{},
		shadows: map[[4]string]*ShadowRow{}, eventOf: map[string]string{}, stderr: stderr}
	var err error
	if r.since, err = parseReportTime("since", f.since, now); err != nil {
		return err
	}
	if r.until, err = parseReportTime("until", f.until, now); err != nil {
		return err
	}
	if !r.since.IsZero() {
		r.rep.Since = r.since.UTC().Format(time.RFC3339Nano)
	}
	if !r.until.IsZero() {
		r.rep.Until = r.until.UTC().Format(time.RFC3339Nano)
	}
	for _, path := range files {
		if err := r.readLog(path); err != nil {
			return &exitError{code: reportExitUnreadable, err: err}
		}
	}
	if f.state != "" {
		if err := r.readLedger(ctx, f.state); err != nil {
			return err
		}
	}
	if r.rep.Malformed > len(r.rep.Problems) {
		fmt.Fprintf(stderr, "gatehouse: report shadow: %d more malformed lines skipped\n", r.rep.Malformed-len(r.rep.Problems))
	}
	rep := r.finish()
	if f.format == "json" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return fmt.Errorf("report shadow: %w", err)
		}
		return printJSONLine(stdout, b)
	}
	return writeShadowTable(stdout, rep)
}

// problem counts a skipped line and reports the first ones on stderr.
func (r *shadowReporter) problem(file string, line int64, reason string) {
	r.rep.Malformed++
	if len(r.rep.Problems) < maxReportProblems {
		r.rep.Problems = append(r.rep.Problems, ReportProblem{File: file, Line: line, Reason: reason})
		fmt.Fprintf(r.stderr, "gatehouse: report shadow: %s:%d: %s (skipped)\n", shown(file), line, reason)
	}
}

// readLog reads one decision log file. Only an unreadable file is an
// error; a malformed line is a problem.
func (r *shadowReporter) readLog(path string) error {
	fh, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("report shadow: %w", err)
	}
	defer fh.Close()
	r.rep.Sources = append(r.rep.Sources, path)
	err = verify.EachLine(fh, verify.MaxEventLineBytes, func(l verify.Line) error {
		if l.Problem != "" {
			r.problem(path, int64(l.Num), l.Problem)
			return nil
		}
		rec, ok, reason := parseShadowEvent(l.Bytes)
		switch {
		case reason != "":
			r.problem(path, int64(l.Num), reason)
		case ok:
			r.add(rec)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("report shadow: read %s: %w", path, err)
	}
	return nil
}

// parseShadowEvent reads one decision log line: ok is true for a tool
// decision or scan event; reason says why a line is malformed (never
// quoting it). Other events are neither.
func parseShadowEvent(line []byte) (rec shadowRecord, ok bool, reason string) {
	var typ, id, ts string
	var data []byte
	var badMember string
	err := verify.ObjectMembers(line, func(name string, raw []byte) {
		var dst *string
		switch name {
		case "type":
			dst = &typ
		case "id":
			dst = &id
		case "time":
			dst = &ts
		case "data":
			data = raw
		}
		if dst != nil && json.Unmarshal(raw, dst) != nil && badMember == "" {
			badMember = name
		}
	})
	switch {
	case err != nil:
		return rec, false, err.Error()
	case badMember != "":
		return rec, false, badMember + " is not a string"
	case typ != decisionlog.TypeToolDecision && typ != decisionlog.TypeScanned && typ != decisionlog.TypeDrift:
		if typ == "" {
			return rec, false, "no event type"
		}
		return rec, false, ""
	case id == "":
		return rec, false, "no event id"
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return rec, false, "time is not an RFC 3339 time"
	}
	rec = shadowRecord{eventID: id, time: t, call: id, phase: "decision"}
	if typ == decisionlog.TypeToolDecision {
		var d decisionlog.ToolDecision
		if json.Unmarshal(data, &d) != nil {
			return rec, false, "data does not have the shape of a tool decision"
		}
		rec.tool, rec.enforced, rec.shadowMode, rec.shadows = d.Tool, d.Decision, d.ShadowMode, d.ShadowDecisions
		return rec, true, ""
	}
	if typ == decisionlog.TypeDrift {
		// A listing in shadow mode that would have held a tool: the
		// hold enforcing would have placed, for every later call.
		var d decisionlog.Drift
		if json.Unmarshal(data, &d) != nil {
			return rec, false, "data does not have the shape of a drift event"
		}
		rec.tool, rec.phase, rec.enforced, rec.shadowMode, rec.shadows = d.Tool, "listing", "allow", d.ShadowMode, d.ShadowDecisions
		if d.Held {
			rec.enforced = string(policy.ActionQuarantine)
		}
		return rec, true, ""
	}
	var d decisionlog.Scanned
	if json.Unmarshal(data, &d) != nil {
		return rec, false, "data does not have the shape of a scan event"
	}
	rec.tool, rec.phase = d.Tool, "message"
	if d.DecisionEventID != "" {
		rec.call, rec.phase = d.DecisionEventID, "response"
	}
	if rec.tool == "" {
		rec.tool = "(" + d.Method + ")"
	}
	rec.enforced, rec.shadowMode, rec.shadows = d.Action, d.ShadowMode, d.ShadowDecisions
	return rec, true, ""
}

// readLedger reads every gateway decision and outcome record of the
// ledger at state (read-only).
func (r *shadowReporter) readLedger(ctx context.Context, state string) error {
	s, _, err := ledgerOpenRO(ctx, state)
	if err != nil {
		return err
	}
	defer s.Close()
	size, err := s.Size(ctx)
	if err != nil {
		return &exitError{code: reportExitUnreadable, err: fmt.Errorf("report shadow: %w", err)}
	}
	r.rep.Sources = append(r.rep.Sources, "ledger")
	err = s.Leaves(ctx, 0, size, func(seq int64, leaf []byte) error {
		e, err := ledger.ParseLeaf(leaf)
		if err != nil {
			r.problem("ledger", seq, "entry does not parse")
			return nil
		}
		if e.Kind != ledger.KindGatewayDecision && e.Kind != ledger.KindGatewayOutcome {
			return nil
		}
		var rc evidence.GatewayDecisionReceipt
		if json.Unmarshal(e.Payload, &rc) != nil {
			r.problem("ledger", seq, "payload does not have the shape of a gateway decision receipt")
			return nil
		}
		rec := shadowRecord{gatewayDecisionID: rc.GatewayDecisionID, auditEventID: rc.AuditEventID, time: e.Time,
			tool: rc.ToolName, enforced: rc.Action, shadowMode: rc.ShadowMode, phase: "decision", call: "g:" + rc.GatewayDecisionID}
		if rc.CompletesDecisionID != "" {
			rec.phase, rec.call = "response", "g:"+rc.CompletesDecisionID
			if c, ok := r.eventOf[rc.CompletesDecisionID]; ok {
				rec.call = c
			}
		} else if rc.DecisionEventID != "" {
			rec.call, rec.eventID = rc.DecisionEventID, rc.DecisionEventID
			r.eventOf[rc.GatewayDecisionID] = rc.DecisionEventID
		}
		for _, sd := range rc.ShadowDecisions {
			rec.shadows = append(rec.shadows, decisionlog.ShadowDecision{Action: sd.Action, MatchedRule: sd.MatchedRule, Reason: sd.Reason, Stage: sd.Stage})
		}
		r.add(rec)
		return nil
	})
	if err != nil {
		return &exitError{code: reportExitUnreadable, err: fmt.Errorf("report shadow: read the ledger: %w", err)}
	}
	return nil
}

// add counts one record in the window and each of its shadow decisions
// in its row.
func (r *shadowReporter) add(rec shadowRecord) {
	if !r.since.IsZero() && rec.time.Before(r.since) || !r.until.IsZero() && rec.time.After(r.until) {
		return
	}
	if rec.call == "" {
		rec.call = "g:" + rec.gatewayDecisionID
	}
	if r.records[[2]string{rec.call, rec.phase}] {
		r.rep.Duplicates++
	} else {
		r.records[[2]string{rec.call, rec.phase}] = true
		r.rep.Records++
		if rec.shadowMode {
			r.rep.ShadowModeRecords++
		}
		if len(rec.shadows) > 0 {
			r.rep.WithShadows++
		}
	}
	for _, sd := range rec.shadows {
		if sd.Action == "allow" && !r.includeAllow {
			continue
		}
		occ := [4]string{rec.call, rec.phase, sd.MatchedRule, sd.Action}
		if row := r.shadows[occ]; row != nil {
			// Counted from the other record of this decision: only its
			// ids are added to the example.
			if i, ok := row.exampleOf[[2]string{rec.call, rec.phase}]; ok {
				ex := &row.Examples[i]
				if ex.EventID == "" {
					ex.EventID = rec.eventID
				}
				if ex.GatewayDecisionID == "" {
					ex.GatewayDecisionID, ex.AuditEventID = rec.gatewayDecisionID, rec.auditEventID
				}
			}
			if !slices.Contains(row.Stages, sd.Stage) {
				row.Stages = append(row.Stages, sd.Stage)
			}
			continue
		}
		key := [3]string{sd.MatchedRule, sd.Action, rec.enforced}
		row := r.rows[key]
		if row == nil {
			row = &ShadowRow{Rule: sd.MatchedRule, WouldHaveAction: sd.Action, EnforcedAction: rec.enforced, tools: map[string]bool{},
				first: rec.time, last: rec.time, exampleOf: map[[2]string]int{}}
			r.rows[key] = row
		}
		r.shadows[occ] = row
		if !slices.Contains(row.Stages, sd.Stage) {
			row.Stages = append(row.Stages, sd.Stage)
		}
		row.Count++
		row.tools[rec.tool] = true
		if rec.time.Before(row.first) {
			row.first = rec.time
		}
		if rec.time.After(row.last) {
			row.last = rec.time
		}
		if len(row.Examples) < maxRowExamples {
			row.exampleOf[[2]string{rec.call, rec.phase}] = len(row.Examples)
			row.Examples = append(row.Examples, ShadowExample{EventID: rec.eventID, GatewayDecisionID: rec.gatewayDecisionID, AuditEventID: rec.auditEventID})
		}
	}
}

// finish sorts the rows (most severe would-have action first, then by
// count, rule and enforced action) and fills in their tools and times.
func (r *shadowReporter) finish() ShadowReport {
	rep := r.rep
	if rep.Sources == nil {
		rep.Sources = []string{}
	}
	rep.Rules = []ShadowRow{}
	for _, row := range r.rows {
		tools := make([]string, 0, len(row.tools))
		for t := range row.tools {
			tools = append(tools, t)
		}
		slices.Sort(tools)
		if len(tools) > maxRowTools {
			row.ToolsMore = len(tools) - maxRowTools
			tools = tools[:maxRowTools]
		}
		row.Tools = tools
		row.First, row.Last = row.first.UTC().Format(time.RFC3339Nano), row.last.UTC().Format(time.RFC3339Nano)
		rep.Rules = append(rep.Rules, *row)
	}
	slices.SortFunc(rep.Rules, func(a, b ShadowRow) int {
		if sa, sb := actionSeverity(a.WouldHaveAction), actionSeverity(b.WouldHaveAction); sa != sb {
			return sb - sa
		}
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		if c := strings.Compare(a.Rule, b.Rule); c != 0 {
			return c
		}
		return strings.Compare(a.EnforcedAction, b.EnforcedAction)
	})
	return rep
}

// actionSeverity orders the action vocabulary (pipeline.Action); -1 for a
// name outside it.
func actionSeverity(a string) int {
	act, err := pipeline.ParseAction(a)
	if err != nil {
		return -1
	}
	return int(act)
}

// writeShadowTable writes rep as an aligned table, every value through
// linesafe.Text (shown), then a summary line.
func writeShadowTable(w io.Writer, rep ShadowReport) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tWOULD HAVE\tENFORCED\tCOUNT\tSTAGE\tTOOLS\tFIRST\tLAST\tEXAMPLES")
	for _, row := range rep.Rules {
		tools := row.Tools
		more := row.ToolsMore
		if len(tools) > 3 {
			more += len(tools) - 3
			tools = tools[:3]
		}
		toolCell := shownList(tools)
		if more > 0 {
			toolCell += " +" + strconv.Itoa(more)
		}
		var ex []string
		for _, e := range row.Examples {
			switch {
			case e.EventID != "":
				ex = append(ex, e.EventID)
			case e.AuditEventID != "":
				ex = append(ex, e.AuditEventID)
			default:
				ex = append(ex, e.GatewayDecisionID)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", orDash(shown(row.Rule)), orDash(shown(row.WouldHaveAction)), orDash(shown(row.EnforcedAction)),
			row.Count, orDash(shownList(row.Stages)), orDash(toolCell), row.First, row.Last, orDash(shownList(ex)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%d decision records in %s (%d in shadow mode, %d with shadow decisions); %d malformed lines skipped, %d duplicate records\n",
		rep.Records, orDash(shownList(rep.Sources)), rep.ShadowModeRecords, rep.WithShadows, rep.Malformed, rep.Duplicates)
	return err
}

// shownList is the values, each shown line-safe, joined by ",".
func shownList(vs []string) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = shown(v)
	}
	return strings.Join(out, ",")
}

// orDash is s, or "-" when s is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
