package main

import (
	"bytes"
	"strings"
	"testing"
)

const sampleLog = `{"specversion":"1.0","id":"a","source":"gatehouse://t","type":"gatehouse.session.start.v1","time":"2026-11-30T09:41:54.111302796Z","data":{"policy_name":"readonly-agent"}}
{"specversion":"1.0","id":"b","source":"gatehouse://t","type":"gatehouse.tool.decision.v1","time":"2026-11-30T09:41:54.5Z","data":{"tool":"read_text_file","decision":"allow","matched_rule":"default","reason":"no rule matched","rpc_id_present":true,"rpc_id":2,"tool_call_id":"req_2","tool_call_id_strength":"weak"}}
{"specversion":"1.0","id":"c","source":"gatehouse://t","type":"gatehouse.tool.decision.v1","time":"2026-11-30T09:41:54.6Z","data":{"tool":"write_file","decision":"deny","matched_rule":"no_writes","reason":"read only","rpc_id_present":false,"rpc_id":null,"tool_call_id":"gen_x","tool_call_id_strength":"weak"}}
{"specversion":"1.0","id":"s","source":"gatehouse://t","type":"gatehouse.tool.decision.v1","time":"2026-11-30T09:41:54.65Z","data":{"tool":"read_secret","decision":"allow","matched_rule":"default","reason":"no rule matched","rpc_id_present":true,"rpc_id":3,"tool_call_id":"req_3","tool_call_id_strength":"weak","shadow_decisions":[{"action":"deny","matched_rule":"no_secrets","reason":"secret files","stage":"policy"}]}}
{"specversion":"1.0","id":"e","source":"gatehouse://t","type":"gatehouse.frame.rejected.v1","time":"2026-11-30T09:41:54.7Z","data":{"direction":"client","reason":"parse error: invalid character 'o' in literal null (expecting 'u') at byte 1","code":-32700,"bytes":9}}
{"specversion":"1.0","id":"r","source":"gatehouse://t","type":"gatehouse.tool.refused.v1","time":"2026-11-30T09:41:54.8Z","data":{"decision_event_id":"b","tool":"read_text_file","rpc_id_present":true,"rpc_id":2,"tool_call_id":"req_2","reason_code":"decision_not_recorded","reason":"the decision could not be recorded; refused (fail closed)","forwarded":false}}
{"specversion":"1.0","id":"d","source":"gatehouse://t","type":"gatehouse.session.stop.v1","time":"2026-11-30T09:41:55Z","data":{"reason":"client_eof","exit_code":0}}
`

func TestView(t *testing.T) {
	tests := []struct {
		name    string
		log     string
		expect  expectations
		wantErr string
		wantOut []string
	}{
		{
			name:   "table",
			log:    sampleLog,
			expect: expectations{"read_text_file": "allow", "write_file": "deny"},
			wantOut: []string{"session start", "policy readonly-agent", "read_text_file  ALLOW", "write_file      DENY", "req_2 (weak)", "client_eof, server exit code 0",
				"no rule matched [shadow: no_secrets would DENY]", "frame rejected", "from client: parse error: invalid character 'o' in literal null (expecting 'u') at byte 1 (-32700)",
				"refused", "NOT FORWARDED", "decision_not_recorded", "refused (fail closed)"},
		},
		{
			name:    "drift",
			log:     `{"specversion":"1.0","id":"d1","source":"gatehouse://t","type":"gatehouse.drift.v1","time":"2026-12-01T10:00:00Z","datacontenttype":"application/json","data":{"server_id":"s","tool":"publish_artifact","status":"changed","severity":"critical","action":"quarantine","changes":["externality_changed_to_external","effect_added_share"],"all_changes":[],"held":true,"matched_rule":"high_risk_externality_drift","reason":"r","method":"tools/list"}}` + "\n",
			wantOut: []string{"drift changed  publish_artifact  HELD", "high_risk_externality_drift", "critical: externality_changed_to_external, effect_added_share"},
		},
		{
			name:    "expected deny is missing",
			log:     sampleLog,
			expect:  expectations{"read_text_file": "deny"},
			wantErr: `no "deny" decision for tool read_text_file`,
		},
		{
			name:    "tool never called",
			log:     sampleLog,
			expect:  expectations{"delete": "deny"},
			wantErr: `no "deny" decision for tool delete`,
		},
		{
			name:    "mixed decisions",
			log:     sampleLog + strings.Replace(strings.Split(sampleLog, "\n")[2], `"deny"`, `"allow"`, 1) + "\n",
			expect:  expectations{"write_file": "deny"},
			wantErr: "has decisions other than",
		},
		{
			name:    "malformed line",
			log:     sampleLog + "{truncated\n",
			wantErr: "line 8: not a JSON object",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := view(strings.NewReader(tt.log), &out, tt.expect)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

// TestViewEscapesControls: a decision log written line-safe (controls and
// line separators as \u escapes) is read, and the table shows a hostile
// tool name and reason escaped: no control character, line separator or
// tab reaches the terminal, and -expect still matches the decoded name.
func TestViewEscapesControls(t *testing.T) {
	const log = `{"specversion":"1.0","id":"b","source":"gatehouse://t","type":"gatehouse.tool.decision.v1","time":"2026-11-30T09:41:54.5Z","data":{"tool":"x\u001b]0;pwned\u0007","decision":"deny","matched_rule":"r\u0085","reason":"a\u2028b\u2029c\u009b31m\u007f\td","rpc_id_present":true,"rpc_id":"\u2028","tool_call_id":"req_\u001b","tool_call_id_strength":"weak"}}` + "\n"
	var out bytes.Buffer
	if err := view(strings.NewReader(log), &out, expectations{"x\x1b]0;pwned\x07": "deny"}); err != nil {
		t.Fatalf("view: %v", err)
	}
	got := out.String()
	for _, r := range got {
		if r < 0x20 && r != '\n' && r != ' ' || 0x7f <= r && r <= 0x9f || r == '\u2028' || r == '\u2029' {
			t.Fatalf("table holds U+%04X as it is:\n%q", r, got)
		}
	}
	for _, want := range []string{`x\u001b]0;pwned\u0007`, `r\u0085`, `a\u2028b\u2029c\u009b31m\u007f\u0009d`, `"\u2028"`, `req_\u001b`} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %s:\n%s", want, got)
		}
	}
}
