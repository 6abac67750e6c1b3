package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger/backends"
)

// The shadow report's fixtures: testdata/shadow/decisions.jsonl is the
// decision log of internal/gateway's shadow.txtar transcript (events at
// 2026-12-01T10:00:00Z..13:00:00Z) with a malformed line (5), a tool
// decision outside shadow mode whose rule and tool hold control
// characters (14:00), and an event with a bad time (line 11);
// testdata/shadow/torn.jsonl one more decision (2026-12-02T08:00:00Z) and
// a torn last line.
const (
	shadowLog  = "testdata/shadow/decisions.jsonl"
	shadowTorn = "testdata/shadow/torn.jsonl"
)

// runReportCLI runs `gatehouse ARGS` with the report command and returns
// stdout, stderr and the exit code.
func runReportCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return runCommands("", func(out, errb io.Writer) []*cobra.Command {
		return []*cobra.Command{newReportCmd(out, errb)}
	}, args...)
}

// rowsOf is the report's rows as "rule would enforced count", in order.
func rowsOf(rep ShadowReport) []string {
	var out []string
	for _, r := range rep.Rules {
		out = append(out, fmt.Sprintf("%s %s %s %d", r.Rule, r.WouldHaveAction, r.EnforcedAction, r.Count))
	}
	return out
}

func TestReportShadowJSON(t *testing.T) {
	all := []string{
		"no_prod_deploys deny allow 2",
		"no_injected_responses deny allow 1",
		"trial\tno_rm deny allow 1",
		"scanning redact allow 4",
		"trial_watch_deploys monitor allow 3",
	}
	for _, tc := range []struct {
		name              string
		args              []string
		rows              []string
		records, malf     int
		shadowMode, dupes int
		stderr            []string
	}{
		{"both files", []string{shadowLog, shadowTorn}, all, 9, 3, 7, 0,
			[]string{shadowLog + ":5: invalid JSON at byte 35 (skipped)", shadowLog + ":11: time is not an RFC 3339 time (skipped)", shadowTorn + ":2: no LF at the end of the file (truncated) (skipped)"}},
		{"the same file twice counts once", []string{shadowLog, shadowLog}, []string{
			"no_injected_responses deny allow 1", "no_prod_deploys deny allow 1", "trial\tno_rm deny allow 1", "scanning redact allow 3", "trial_watch_deploys monitor allow 2",
		}, 8, 4, 6, 8, nil},
		{"since RFC 3339", []string{"--since", "2026-12-01T12:00:00Z", shadowLog}, []string{
			"no_injected_responses deny allow 1", "trial\tno_rm deny allow 1", "trial_watch_deploys monitor allow 1",
		}, 4, 2, 3, 0, nil},
		{"until RFC 3339", []string{"--until", "2026-12-01T10:00:01Z", shadowLog}, []string{
			"no_prod_deploys deny allow 1", "scanning redact allow 1", "trial_watch_deploys monitor allow 1",
		}, 2, 2, 1, 0, nil},
		{"include allow", []string{"--include-allow", "--until", "2026-12-01T12:00:00Z", shadowLog}, []string{
			"no_prod_deploys deny allow 1", "scanning redact allow 3", "trial_watch_deploys monitor allow 2", "default allow allow 1",
		}, 5, 2, 4, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runReportCLI(t, append([]string{"report", "shadow", "--format", "json"}, tc.args...)...)
			wantCode(t, code, 0, out, errOut)
			var rep ShadowReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("output is not JSON: %v\n%s", err, out)
			}
			if got := rowsOf(rep); strings.Join(got, "\n") != strings.Join(tc.rows, "\n") {
				t.Errorf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.rows, "\n"))
			}
			if rep.Records != tc.records || rep.Malformed != tc.malf || rep.ShadowModeRecords != tc.shadowMode || rep.Duplicates != tc.dupes {
				t.Errorf("records %d malformed %d shadow mode %d duplicates %d, want %d %d %d %d", rep.Records, rep.Malformed, rep.ShadowModeRecords, rep.Duplicates, tc.records, tc.malf, tc.shadowMode, tc.dupes)
			}
			if len(rep.Problems) != rep.Malformed {
				t.Errorf("%d problems listed for %d malformed lines", len(rep.Problems), rep.Malformed)
			}
			for _, w := range tc.stderr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}
}

// TestReportShadowRowDetails: a row names its tools, stages, first and
// last times and at most three example event ids.
func TestReportShadowRowDetails(t *testing.T) {
	out, errOut, code := runReportCLI(t, "report", "shadow", "--format", "json", shadowLog, shadowTorn)
	wantCode(t, code, 0, out, errOut)
	var rep ShadowReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	byRule := map[string]ShadowRow{}
	for _, r := range rep.Rules {
		byRule[r.Rule] = r
	}
	deny := byRule["no_prod_deploys"]
	if strings.Join(deny.Tools, ",") != "deploy,deploy_v2" || deny.First != "2026-12-01T10:00:01Z" || deny.Last != "2026-12-02T08:00:00Z" ||
		len(deny.Examples) != 2 || deny.Examples[1].EventID != "00000000-0000-4000-8000-000000000042" || strings.Join(deny.Stages, ",") != "policy" {
		t.Errorf("no_prod_deploys row: %+v", deny)
	}
	scanning := byRule["scanning"]
	if strings.Join(scanning.Tools, ",") != "(notifications/progress),deploy,deploy_v2" || scanning.Count != 4 || len(scanning.Examples) != 3 || strings.Join(scanning.Stages, ",") != "scan" {
		t.Errorf("scanning row: %+v", scanning)
	}
}

// TestReportShadowTable: the table is aligned (every row's columns start
// where the header's do) and shows control characters escaped.
func TestReportShadowTable(t *testing.T) {
	out, errOut, code := runReportCLI(t, "report", "shadow", shadowLog)
	wantCode(t, code, 0, out, errOut)
	lines := strings.Split(out, "\n")
	header := lines[0]
	col := strings.Index(header, "WOULD HAVE")
	count := strings.Index(header, "COUNT")
	if col < 0 || count < 0 {
		t.Fatalf("header %q", header)
	}
	rows := 0
	for _, l := range lines[1:] {
		if l == "" {
			break
		}
		rows++
		if len(l) <= count || l[col-1] != ' ' || l[col] == ' ' || l[count] == ' ' {
			t.Errorf("row not aligned with the header:\n%s\n%s", header, l)
		}
	}
	if rows != 5 {
		t.Errorf("%d rows, want 5:\n%s", rows, out)
	}
	if strings.ContainsAny(out, "\x1b\t") || !strings.Contains(out, `trial\u0009no_rm`) || !strings.Contains(out, `rm\u001b[31m`) {
		t.Errorf("control characters not escaped:\n%q", out)
	}
	if !strings.Contains(out, "8 decision records in "+shadowLog+" (6 in shadow mode, 7 with shadow decisions); 2 malformed lines skipped, 0 duplicate records") {
		t.Errorf("summary line missing:\n%s", out)
	}
}

func TestReportShadowErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no input", nil, reportExitUsage, "give one or more decision log files, or --state"},
		{"bad format", []string{"--format", "csv", shadowLog}, reportExitUsage, `--format "csv": want table or json`},
		{"bad since", []string{"--since", "yesterday", shadowLog}, reportExitUsage, `--since "yesterday": want an RFC 3339 time`},
		{"negative duration", []string{"--until", "-1h", shadowLog}, reportExitUsage, `--until "-1h"`},
		{"missing file", []string{filepath.Join(t.TempDir(), "none.jsonl")}, reportExitUnreadable, "no such file"},
		{"unknown flag", []string{"--sinse", "1h", shadowLog}, reportExitUsage, "unknown flag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runReportCLI(t, append([]string{"report", "shadow"}, tc.args...)...)
			wantCode(t, code, tc.code, out, errOut)
			if !strings.Contains(errOut, tc.want) {
				t.Errorf("stderr %q lacks %q", errOut, tc.want)
			}
		})
	}
}

// TestReportShadowDuration: --since 24h counts from now.
func TestReportShadowDuration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.jsonl")
	now := time.Now().UTC()
	var b strings.Builder
	for i, age := range []time.Duration{48 * time.Hour, 2 * time.Hour, time.Minute} {
		fmt.Fprintf(&b, `{"specversion":"1.0","id":"e%d","type":"gatehouse.tool.decision.v1","time":%q,"data":{"tool":"t","decision":"allow","shadow_mode":true,"shadow_decisions":[{"action":"deny","matched_rule":"r","reason":"x","stage":"policy"}]}}`+"\n", i, now.Add(-age).Format(time.RFC3339Nano))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runReportCLI(t, "report", "shadow", "--format", "json", "--since", "24h", "--until", "90s", path)
	wantCode(t, code, 0, out, errOut)
	var rep ShadowReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if got := rowsOf(rep); len(got) != 1 || got[0] != "r deny allow 1" || rep.Rules[0].Examples[0].EventID != "e1" {
		t.Errorf("rows %v, want the one record within 24h and 90s ago", got)
	}
}

// TestReportShadowLedger: --state reads the gateway decision receipts of
// the ledger; their examples name the gateway_decision_id and the
// audit_event_id.
func TestReportShadowLedger(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	ctx := context.Background()
	l, err := backends.Open(ctx, path, ledger.Options{LedgerID: "shadow-test", CheckpointEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range []struct{ kind, id, payload string }{
		{ledger.KindGatewayDecision, "audit_1", `{"action":"allow","audit_event_id":"audit_1","gateway_decision_id":"gw_dec_1","phase":"decision","server_id":"fs","shadow_decisions":[{"action":"deny","matched_rule":"no_rm","reason":"x","stage":"policy"}],"shadow_mode":true,"tool_name":"rm"}`},
		{ledger.KindGatewayOutcome, "audit_2", `{"action":"allow","audit_event_id":"audit_2","completes_decision_id":"gw_dec_1","gateway_decision_id":"gw_dec_2","phase":"outcome","server_id":"fs","shadow_decisions":[{"action":"deny","matched_rule":"receipts.require","reason":"y","stage":"evidence"}],"shadow_mode":true,"tool_name":"rm"}`},
		{ledger.KindGatewayDecision, "audit_3", `{"action":"deny","audit_event_id":"audit_3","gateway_decision_id":"gw_dec_3","phase":"decision","server_id":"fs","tool_name":"rm"}`},
		{ledger.KindGatewayDecision, "audit_4", `{"action":7}`},
		{ledger.KindSession, "sess_1", `{"event":"stop"}`},
	} {
		if _, err := l.Append(ctx, rec.kind, rec.id, []byte(rec.payload)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runReportCLI(t, "report", "shadow", "--format", "json", "--state", path)
	wantCode(t, code, 0, out, errOut)
	var rep ShadowReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rowsOf(rep), "; "); got != "no_rm deny allow 1; receipts.require deny allow 1" {
		t.Errorf("rows %q", got)
	}
	if rep.Records != 3 || rep.Malformed != 1 || rep.ShadowModeRecords != 2 {
		t.Errorf("records %d malformed %d shadow mode %d, want 3 1 2", rep.Records, rep.Malformed, rep.ShadowModeRecords)
	}
	if ex := rep.Rules[0].Examples; len(ex) != 1 || ex[0].GatewayDecisionID != "gw_dec_1" || ex[0].AuditEventID != "audit_1" {
		t.Errorf("examples %+v", ex)
	}
	if !strings.Contains(errOut, "ledger:3: payload does not have the shape of a gateway decision receipt (skipped)") {
		t.Errorf("stderr %q", errOut)
	}
}

// FuzzParseShadowEvent: any line is either a record, ignored, or a
// problem whose reason never quotes the line; it never panics.
func FuzzParseShadowEvent(f *testing.F) {
	data, err := os.ReadFile(shadowLog)
	if err != nil {
		f.Fatal(err)
	}
	for _, l := range bytes.Split(data, []byte("\n")) {
		f.Add(l)
	}
	f.Add([]byte(`{"type":"gatehouse.scan.v1","id":"x","time":"2026-12-01T00:00:00Z","data":{"shadow_decisions":[{}]}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		rec, ok, reason := parseShadowEvent(line)
		if ok && reason != "" {
			t.Fatalf("a record with a problem: %q", reason)
		}
		if ok && rec.eventID == "" {
			t.Fatal("a record without an id")
		}
		if len(line) > 8 && reason != "" && strings.Contains(reason, string(line)) {
			t.Fatalf("the reason quotes the line: %q", reason)
		}
	})
}

// TestDefaultPolicyNoticeShadow: without --policy, the notice does not
// promise a redaction that shadow mode will not make.
func TestDefaultPolicyNoticeShadow(t *testing.T) {
	for _, tc := range []struct {
		noScan, shadow bool
		want, not      string
	}{
		{false, false, "high-confidence secrets redacted", "shadow"},
		{false, true, "in shadow mode scan findings are recorded, none redacted", "secrets redacted"},
		{true, true, "scanning off (--no-scan)", "redacted"},
	} {
		got := defaultPolicyNotice(true, "", tc.noScan, tc.shadow)
		if !strings.Contains(got, tc.want) || strings.Contains(got, tc.not) {
			t.Errorf("noScan %v shadow %v: %q, want %q and not %q", tc.noScan, tc.shadow, got, tc.want, tc.not)
		}
	}
}

// TestReportShadowLogAndLedger: the decision log and the ledger of one run
// record each decision twice (a tool decision event and a decision
// record, a scan event and an outcome record); the report counts each
// shadow decision once, adds the ledger's ids to the log's examples, and
// counts what only the ledger has (a receipt check).
func TestReportShadowLogAndLedger(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "d.jsonl")
	const ev, scanEv = "0b6f6bb0-0000-4000-8000-00000000000e", "0b6f6bb0-0000-4000-8000-00000000000f"
	lines := `{"specversion":"1.0","id":"` + ev + `","type":"gatehouse.tool.decision.v1","time":"2026-12-01T10:00:00Z","data":{"tool":"rm","decision":"allow","shadow_mode":true,"shadow_decisions":[{"action":"deny","matched_rule":"no_rm","reason":"x","stage":"policy"}]}}` + "\n" +
		`{"specversion":"1.0","id":"` + scanEv + `","type":"gatehouse.scan.v1","time":"2026-12-01T10:00:01Z","data":{"method":"tools/call","tool":"rm","decision_event_id":"` + ev + `","action":"allow","shadow_mode":true,"shadow_decisions":[{"action":"redact","matched_rule":"scanning","reason":"y","stage":"scan"}]}}` + "\n"
	if err := os.WriteFile(log, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "ledger.db")
	ctx := context.Background()
	l, err := backends.Open(ctx, path, ledger.Options{LedgerID: "shadow-join", CheckpointEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range []struct{ kind, id, payload string }{
		{ledger.KindGatewayDecision, "audit_1", `{"action":"allow","audit_event_id":"audit_1","decision_event_id":"` + ev + `","gateway_decision_id":"gw_dec_1","phase":"decision","server_id":"fs","shadow_decisions":[{"action":"deny","matched_rule":"no_rm","reason":"x","stage":"policy"}],"shadow_mode":true,"tool_name":"rm"}`},
		{ledger.KindGatewayOutcome, "audit_2", `{"action":"allow","audit_event_id":"audit_2","completes_decision_id":"gw_dec_1","gateway_decision_id":"gw_dec_2","phase":"outcome","server_id":"fs","shadow_decisions":[{"action":"redact","matched_rule":"scanning","reason":"y","stage":"scan"},{"action":"deny","matched_rule":"receipts.require","reason":"z","stage":"evidence"}],"shadow_mode":true,"tool_name":"rm"}`},
	} {
		if _, err := l.Append(ctx, rec.kind, rec.id, []byte(rec.payload)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runReportCLI(t, "report", "shadow", "--format", "json", "--state", path, log)
	wantCode(t, code, 0, out, errOut)
	var rep ShadowReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rowsOf(rep), "; "); got != "no_rm deny allow 1; receipts.require deny allow 1; scanning redact allow 1" {
		t.Errorf("rows %q", got)
	}
	if rep.Records != 2 || rep.Duplicates != 2 {
		t.Errorf("records %d duplicates %d, want 2 and 2", rep.Records, rep.Duplicates)
	}
	want := map[string]ShadowExample{
		"no_rm":            {EventID: ev, GatewayDecisionID: "gw_dec_1", AuditEventID: "audit_1"},
		"scanning":         {EventID: scanEv, GatewayDecisionID: "gw_dec_2", AuditEventID: "audit_2"},
		"receipts.require": {GatewayDecisionID: "gw_dec_2", AuditEventID: "audit_2"},
	}
	for _, r := range rep.Rules {
		if len(r.Examples) != 1 || r.Examples[0] != want[r.Rule] {
			t.Errorf("%s: examples %+v, want %+v", r.Rule, r.Examples, want[r.Rule])
		}
	}
}
