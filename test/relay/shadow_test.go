package relay

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-mcp/gatehouse/test/harness"
)

// shadowToken is a GitHub token the built-in scanner finds with high
// confidence (redacted by the default scanning block).
const shadowToken = "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"

// shadowScript is the client's traffic of TestShadowModeWire: a call with
// a secret in its arguments that the server echoes back (redact, twice), a
// denied delete, a watched write, and a server notification with a secret
// (redact). Each step is a request line and the id of its response.
func shadowScript() [][2]string {
	note := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"token ` + shadowToken + `"}}` + "\n"
	return [][2]string{
		{toolCall("1", "echo", `{"token":"`+shadowToken+`"}`), "1"},
		{toolCall("2", "delete", `{"path":"/x"}`), "2"},
		{toolCall("3", "write", `{"path":"/y"}`), "3"},
		{toolCall("4", "emit", `{"lines_base64":["`+base64.StdEncoding.EncodeToString([]byte(note))+`"]}`), "4"},
		{ping(`"end"`), `"end"`},
	}
}

// runShadowScript runs shadowScript through gatehouse with flags and
// returns every line the client received after the handshake, and the
// bytes the server received.
func runShadowScript(t *testing.T, flags []string, env []string) (client []string, server string) {
	t.Helper()
	record := filepath.Join(t.TempDir(), "record")
	h := startGH(t, run{flags: flags, env: env, server: []string{"--record", record}})
	h.handshake("2025-06-18")
	for _, step := range shadowScript() {
		h.Send(step[0])
		resp, before := h.readUntilID(step[1], 10*time.Second)
		client = append(client, before...)
		client = append(client, resp)
	}
	h.CloseStdin()
	if code := h.Wait(10 * time.Second); code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, h.Stderr.String())
	}
	return client, readFile(t, record)
}

// TestShadowModeWire: through the real binary, wrap --shadow with a
// policy that denies, and the built-in scanner that redacts, changes
// nothing on the wire: the client and the server receive exactly the
// bytes of a run with no policy and no scanner. The decision log and the
// ledger record what would have happened, and gatehouse report shadow
// summarizes it per rule from either.
func TestShadowModeWire(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "decisions.jsonl")
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	shadowClient, shadowServer := runShadowScript(t, []string{"--shadow", "--policy", "testdata/shadow.yaml", "--decision-log", log, "--event-source", eventSource},
		[]string{"XDG_STATE_HOME=" + state})
	plainClient, plainServer := runShadowScript(t, []string{"--no-scan", "--no-ledger"}, nil)
	if strings.Join(shadowClient, "") != strings.Join(plainClient, "") {
		t.Errorf("the client received in shadow mode:\n%s\nwith no policy:\n%s", strings.Join(shadowClient, ""), strings.Join(plainClient, ""))
	}
	if shadowServer != plainServer {
		t.Errorf("the server received in shadow mode:\n%s\nwith no policy:\n%s", shadowServer, plainServer)
	}
	if !strings.Contains(strings.Join(shadowClient, ""), shadowToken) || !strings.Contains(shadowServer, shadowToken) {
		t.Error("the secret was not relayed as received")
	}

	decisions := eventsOf(t, log, typeDecision)
	if len(decisions) != 4 {
		t.Fatalf("%d decision events, want 4", len(decisions))
	}
	for _, ev := range decisions {
		if harness.Str(ev.Data["decision"]) != "allow" || string(ev.Data["shadow_mode"]) != "true" || string(ev.Data["forwarded"]) != "true" {
			t.Errorf("decision event of %s: decision %s shadow_mode %s forwarded %s; want allow, true, true", harness.Str(ev.Data["tool"]), ev.Data["decision"], ev.Data["shadow_mode"], ev.Data["forwarded"])
		}
	}
	if !strings.Contains(readFile(t, log), `{"action":"deny","matched_rule":"deny_delete","reason":"deleting is not allowed through this gateway","stage":"policy"}`) {
		t.Error("the decision log lacks the would-have deny of deny_delete")
	}

	ledgerDB := filepath.Join(state, "gatehouse", "ledger.db")
	// Both records of the echo call are in shadow mode: the decision with
	// the arguments' would-have redaction, the outcome with the response's.
	show := harness.RunCLI(t, 30*time.Second, "", nil, gatehouseBin, "ledger", "show", "--json", "--state", ledgerDB, "--tool", "echo")
	if show.Code != 0 {
		t.Fatalf("ledger show: exit %d\n%s", show.Code, show.Stderr)
	}
	phases := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(show.Stdout), "\n") {
		var e struct {
			Kind    string `json:"kind"`
			Payload struct {
				Action          string `json:"action"`
				ShadowMode      bool   `json:"shadow_mode"`
				ShadowDecisions []struct {
					Action      string `json:"action"`
					MatchedRule string `json:"matched_rule"`
					Reason      string `json:"reason"`
					Stage       string `json:"stage"`
				} `json:"shadow_decisions"`
			} `json:"payload"`
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("ledger show line: %v", err)
		}
		if !strings.HasPrefix(e.Kind, "gateway_") {
			continue // echo's first-use baseline (tool_baseline), not a record of the call
		}
		var sd []string
		for _, d := range e.Payload.ShadowDecisions {
			sd = append(sd, d.Action+" "+d.MatchedRule+" "+d.Stage+": "+d.Reason)
		}
		phases[e.Kind] = e.Payload.Action + " " + strings.Join(sd, "; ")
		if !e.Payload.ShadowMode {
			t.Errorf("%s of echo: shadow_mode false", e.Kind)
		}
	}
	for kind, want := range map[string]string{
		"gateway_decision": "allow redact scanning scan: the arguments hold secret (github-pat)",
		"gateway_outcome":  "allow redact scanning scan: the response holds secret (github-pat)",
	} {
		if !strings.HasPrefix(phases[kind], want) {
			t.Errorf("%s of echo: %q, want it to start %q", kind, phases[kind], want)
		}
	}
	counts := map[string]map[string]int{}
	for _, src := range [][]string{{log}, {"--state", ledgerDB}, {"--state", ledgerDB, log}} {
		res := harness.RunCLI(t, 30*time.Second, "", nil, append([]string{gatehouseBin, "report", "shadow", "--format", "json"}, src...)...)
		if res.Code != 0 {
			t.Fatalf("report shadow %v: exit %d\n%s", src, res.Code, res.Stderr)
		}
		var rep struct {
			Records int `json:"records"`
			Rules   []struct {
				Rule      string   `json:"rule"`
				WouldHave string   `json:"would_have_action"`
				Enforced  string   `json:"enforced_action"`
				Count     int      `json:"count"`
				Tools     []string `json:"tools"`
			} `json:"rules"`
		}
		if err := json.Unmarshal([]byte(res.Stdout), &rep); err != nil {
			t.Fatalf("report shadow %v: %v\n%s", src, err, res.Stdout)
		}
		got := map[string]int{}
		for _, r := range rep.Rules {
			got[r.Rule+" "+r.WouldHave+" "+r.Enforced] = r.Count
		}
		if got["deny_delete deny allow"] == 0 || got["scanning redact allow"] == 0 || got["trial_watch_writes monitor allow"] == 0 {
			t.Errorf("report shadow %v: rows %v, want deny_delete, scanning and trial_watch_writes", src, got)
		}
		counts[strings.Join(src, " ")] = got
	}
	// The log and the ledger of one run together count each decision
	// once: as the log alone (the ledger has nothing the log lacks here:
	// no receipt checks).
	if both, alone := counts["--state "+ledgerDB+" "+log], counts[log]; len(both) != len(alone) {
		t.Errorf("log and ledger: rows %v, log alone %v", both, alone)
	} else {
		for k, n := range alone {
			if both[k] != n {
				t.Errorf("log and ledger: %s counted %d, log alone %d", k, both[k], n)
			}
		}
	}
}
