// Command logview prints a Gatehouse decision log (CloudEvents NDJSON, as
// written by `gatehouse wrap --decision-log`) as a readable table, and
// optionally checks that it holds the expected tool decisions. It is used by
// scripts/demo.sh so that the demo needs neither jq nor python.
//
// Usage:
//
//	logview [-expect TOOL=DECISION]... FILE
//
// Each -expect requires at least one gatehouse.tool.decision.v1 event for
// TOOL with that decision and none for TOOL with another decision. A line
// that is not a JSON object, or an unmet expectation, makes logview exit 1
// after printing the table; usage errors exit 2.
//
// Strings are shown with their control and format characters (and tabs)
// escaped as \uXXXX (internal/linesafe.Text): a tool name from a server
// cannot drive the terminal or break the table.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/linesafe"
)

// Event types written by gatehouse wrap.
const (
	typeDecision = "gatehouse.tool.decision.v1"
	typeStart    = "gatehouse.session.start.v1"
	typeStop     = "gatehouse.session.stop.v1"
	typeRejected = "gatehouse.frame.rejected.v1"
	typeRefused  = "gatehouse.tool.refused.v1"
	typeScanned  = "gatehouse.scan.v1"
	typeDrift    = "gatehouse.drift.v1"
)

// event is the part of a decision-log line that logview shows.
type event struct {
	Type string `json:"type"`
	Time string `json:"time"`
	Data struct {
		Tool               string          `json:"tool"`
		Decision           string          `json:"decision"`
		MatchedRule        string          `json:"matched_rule"`
		Reason             string          `json:"reason"`
		ReasonCode         string          `json:"reason_code"`
		RPCIDPresent       bool            `json:"rpc_id_present"`
		RPCID              json.RawMessage `json:"rpc_id"`
		ToolCallID         string          `json:"tool_call_id"`
		ToolCallIDStrength string          `json:"tool_call_id_strength"`
		PolicyName         string          `json:"policy_name"`
		ShadowDecisions    []struct {
			Action      string `json:"action"`
			MatchedRule string `json:"matched_rule"`
		} `json:"shadow_decisions"`
	} `json:"data"`
}

type expectations map[string]string

func (e expectations) String() string { return fmt.Sprint(map[string]string(e)) }

func (e expectations) Set(s string) error {
	tool, decision, ok := strings.Cut(s, "=")
	if !ok || tool == "" || decision == "" {
		return errors.New("want TOOL=DECISION")
	}
	e[tool] = decision
	return nil
}

func main() {
	exp := expectations{}
	fs := flag.NewFlagSet("logview", flag.ContinueOnError)
	fs.Var(exp, "expect", "require `TOOL=DECISION` (repeatable)")
	if err := fs.Parse(os.Args[1:]); err != nil || fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: logview [-expect TOOL=DECISION]... FILE")
		os.Exit(2)
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "logview:", err)
		os.Exit(2)
	}
	defer f.Close()
	if err := view(f, os.Stdout, exp); err != nil {
		fmt.Fprintln(os.Stderr, "logview:", err)
		os.Exit(1)
	}
}

// view writes the table for the log in r to w and returns an error naming
// every malformed line and unmet expectation.
func view(r io.Reader, w io.Writer, exp expectations) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tEVENT\tTOOL\tDECISION\tRULE\tRPC ID\tTOOL CALL ID\tREASON")
	var problems []string
	seen := map[string]map[string]bool{} // tool -> decisions
	br := bufio.NewReader(r)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var ev event
			var raw map[string]json.RawMessage
			if jerr := json.Unmarshal(line, &raw); jerr != nil {
				problems = append(problems, fmt.Sprintf("line %d: not a JSON object: %v", n, jerr))
			} else if jerr := json.Unmarshal(line, &ev); jerr != nil {
				problems = append(problems, fmt.Sprintf("line %d: %v", n, jerr))
			} else {
				row(tw, ev, raw)
				if ev.Type == typeDecision {
					if seen[ev.Data.Tool] == nil {
						seen[ev.Data.Tool] = map[string]bool{}
					}
					seen[ev.Data.Tool][ev.Data.Decision] = true
				}
			}
		}
		if err != nil {
			if err != io.EOF {
				problems = append(problems, err.Error())
			}
			break
		}
	}
	tw.Flush()
	for tool, want := range exp {
		switch {
		case !seen[tool][want]:
			problems = append(problems, fmt.Sprintf("no %q decision for tool %s", want, tool))
		case len(seen[tool]) > 1:
			problems = append(problems, fmt.Sprintf("tool %s has decisions other than %q: %v", tool, want, seen[tool]))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

func row(w io.Writer, ev event, raw map[string]json.RawMessage) {
	// Every string shown comes from the log, and through it from the
	// client and the server (tool names, ids, reasons): its control and
	// format characters are shown escaped (linesafe.Text), and a tab, which
	// would shift the table's columns, is one of them.
	ev.Type, ev.Time = linesafe.Text(ev.Type), linesafe.Text(ev.Time)
	d := &ev.Data
	for _, p := range []*string{&d.Tool, &d.Decision, &d.MatchedRule, &d.Reason, &d.ReasonCode, &d.ToolCallID, &d.ToolCallIDStrength, &d.PolicyName} {
		*p = linesafe.Text(*p)
	}
	for i := range d.ShadowDecisions {
		sd := &d.ShadowDecisions[i]
		sd.Action, sd.MatchedRule = linesafe.Text(sd.Action), linesafe.Text(sd.MatchedRule)
	}
	d.RPCID = json.RawMessage(linesafe.Text(string(d.RPCID)))
	ts := ev.Time
	if t, err := time.Parse(time.RFC3339Nano, ev.Time); err == nil {
		ts = t.UTC().Format("15:04:05.000")
	}
	switch ev.Type {
	case typeDecision:
		id := "-"
		if d.RPCIDPresent {
			id = string(d.RPCID)
		}
		callID := d.ToolCallID
		if d.ToolCallIDStrength != "" {
			callID += " (" + d.ToolCallIDStrength + ")"
		}
		reason := d.Reason
		for _, sd := range d.ShadowDecisions {
			// What a shadow rule would have done: the point of running
			// it in shadow mode.
			reason += fmt.Sprintf(" [shadow: %s would %s]", orDash(sd.MatchedRule), strings.ToUpper(orDash(sd.Action)))
		}
		fmt.Fprintf(w, "%s\tdecision\t%s\t%s\t%s\t%s\t%s\t%s\n", ts, d.Tool, strings.ToUpper(d.Decision), d.MatchedRule, id, callID, reason)
	case typeRefused:
		// An allowed call refused after its decision event: its
		// evidence could not be recorded (fail closed).
		id := "-"
		if d.RPCIDPresent {
			id = string(d.RPCID)
		}
		fmt.Fprintf(w, "%s\trefused\t%s\tNOT FORWARDED\t%s\t%s\t%s\t%s\n", ts, d.Tool, d.ReasonCode, id, d.ToolCallID, d.Reason)
	case typeScanned:
		// A message with scan findings: what was found (rule ids and
		// where, never the value) and what the gateway did with it.
		var data struct {
			Method       string          `json:"method"`
			Action       string          `json:"action"`
			RPCIDPresent bool            `json:"rpc_id_present"`
			RPCID        json.RawMessage `json:"rpc_id"`
			ScanResult   struct {
				Findings []struct {
					Rule string `json:"rule"`
					Path string `json:"path"`
				} `json:"findings"`
			} `json:"scan_result"`
		}
		_ = json.Unmarshal(raw["data"], &data)
		id := "-"
		if data.RPCIDPresent {
			id = linesafe.Text(string(data.RPCID))
		}
		var found []string
		for _, f := range data.ScanResult.Findings {
			found = append(found, linesafe.Text(f.Rule)+" at "+linesafe.Text(f.Path))
		}
		fmt.Fprintf(w, "%s\tscanned %s\t%s\t%s\tscanning\t%s\t\t%s\n", ts, orDash(linesafe.Text(data.Method)), d.Tool, strings.ToUpper(linesafe.Text(data.Action)), id, strings.Join(found, "; "))
	case typeDrift:
		// A listed tool that drifted from its baseline: its status,
		// severity and the changes that decided it, and whether it is
		// held.
		var data struct {
			Status   string   `json:"status"`
			Severity string   `json:"severity"`
			Action   string   `json:"action"`
			Changes  []string `json:"changes"`
			Held     bool     `json:"held"`
		}
		_ = json.Unmarshal(raw["data"], &data)
		action := strings.ToUpper(linesafe.Text(data.Action))
		if data.Held {
			action = "HELD"
		}
		var changes []string
		for _, c := range data.Changes {
			changes = append(changes, linesafe.Text(c))
		}
		fmt.Fprintf(w, "%s\tdrift %s\t%s\t%s\t%s\t\t\t%s: %s\n", ts, orDash(linesafe.Text(data.Status)), d.Tool, action, orDash(d.MatchedRule),
			orDash(linesafe.Text(data.Severity)), strings.Join(changes, ", "))
	case typeStart:
		fmt.Fprintf(w, "%s\tsession start\t\t\t\t\t\tpolicy %s\n", ts, orDash(d.PolicyName))
	case typeStop:
		var data struct {
			Reason   string `json:"reason"`
			ExitCode *int   `json:"exit_code"`
		}
		_ = json.Unmarshal(raw["data"], &data)
		what := orDash(linesafe.Text(data.Reason))
		if data.ExitCode != nil {
			what += fmt.Sprintf(", server exit code %d", *data.ExitCode)
		}
		fmt.Fprintf(w, "%s\tsession stop\t\t\t\t\t\t%s\n", ts, what)
	case typeRejected:
		var data struct {
			Direction string          `json:"direction"`
			Reason    string          `json:"reason"`
			Code      int             `json:"code"`
			RPCID     json.RawMessage `json:"rpc_id"`
		}
		_ = json.Unmarshal(raw["data"], &data)
		id := "-"
		if len(data.RPCID) > 0 && string(data.RPCID) != "null" {
			id = linesafe.Text(string(data.RPCID))
		}
		what := "from " + orDash(linesafe.Text(data.Direction)) + ": " + orDash(linesafe.Text(data.Reason))
		if data.Code != 0 {
			what += fmt.Sprintf(" (%d)", data.Code)
		}
		fmt.Fprintf(w, "%s\tframe rejected\t\t\t\t%s\t\t%s\n", ts, id, what)
	default:
		fmt.Fprintf(w, "%s\t%s\t\t\t\t\t\t\n", ts, ev.Type)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
