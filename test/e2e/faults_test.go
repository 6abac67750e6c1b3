package e2e

import (
	"encoding/json"
	"github.com/gatehouse-mcp/gatehouse/test/harness"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// answeredErrors reads gatehouse's stdout until every id of want has had
// a JSON-RPC error response, and returns those errors by id. Other lines are
// skipped; the test fails at EOF or after readTimeout.
func answeredErrors(t *testing.T, p *proc, want ...string) map[string]rpcErr {
	t.Helper()
	got := map[string]rpcErr{}
	for len(got) < len(want) {
		l, err := p.tryReadLine(readTimeout)
		if err != nil {
			t.Fatalf("waiting for answers to %v (got %v): %v", want, got, err)
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Error  *rpcErr         `json:"error"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("gatehouse wrote a line that is not JSON: %q", l)
		}
		for _, id := range want {
			if string(m.ID) == id && m.Method == "" {
				if m.Error == nil {
					t.Fatalf("request %s answered %s, want an error", id, l)
				}
				got[id] = *m.Error
			}
		}
	}
	return got
}

type rpcErr struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// serverPid returns the pid of gatehouse's child (the MCP server).
func serverPid(t *testing.T, p *proc) int {
	t.Helper()
	var pid int
	if !waitFor(10*time.Second, func() bool {
		tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(p.Cmd.Process.Pid) + "/task/*/children")
		for _, f := range tasks {
			b, _ := os.ReadFile(f)
			if fs := strings.Fields(string(b)); len(fs) > 0 {
				pid, _ = strconv.Atoi(fs[0])
				return pid > 0
			}
		}
		return false
	}) {
		t.Fatal("no child process of gatehouse found")
	}
	return pid
}

// TestServerExitAnswersPendingRequests: when the server exits (or is
// killed) with client requests pending, each gets a -32603 error before
// gatehouse exits with the server's status (its code, or 128+N for signal
// N); the audit ledger is on, so the calls go through the evidence queues.
func TestServerExitAnswersPendingRequests(t *testing.T) {
	for _, tc := range []struct {
		name     string
		kill     bool
		wantCode int
		wantWhy  string
	}{
		{"exits with code 3", false, 3, "exit code 3"},
		{"killed by SIGKILL", true, 128 + 9, "SIGKILL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			dl := filepath.Join(dir, "d.jsonl")
			src := "gatehouse://e2e/faults"
			p := startGatehouse(t, "wrap", "--decision-log", dl, "--event-source", src, "--", fakeServerBin)
			p.initialize("2025-06-18")
			p.call(`"L"`, "tools/list", "") // the catalog known: nothing is held for a fetch
			p.SendLine(`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"sleep","arguments":{"ms":60000}}}`)
			p.SendLine(`{"jsonrpc":"2.0","id":7,"method":"ping"}`)
			if _, err := p.tryReadLine(readTimeout); err != nil { // the ping's answer: "s" reached the server
				t.Fatal(err)
			}
			want := []string{`"s"`}
			if tc.kill {
				if err := syscall.Kill(serverPid(t, p), syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
			} else {
				p.SendLine(`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"exit","arguments":{"code":3}}}`)
				want = append(want, `"x"`)
			}
			got := answeredErrors(t, p, want...)
			for id, e := range got {
				if e.Code != -32603 || !strings.Contains(e.Message, "exited before answering") || !strings.Contains(e.Message, tc.wantWhy) {
					t.Errorf("request %s answered %+v, want -32603 saying the server exited (%s)", id, e, tc.wantWhy)
				}
			}
			if code := p.wait(); code != tc.wantCode {
				t.Errorf("exit code %d, want %d", code, tc.wantCode)
			}
			events := readDecisionLog(t, dl, src)
			decisions(t, events, true)
		})
	}
}

// TestClientGoneEndsTheSession: when the client closes its end of
// gatehouse's stdout, the next write gets EPIPE; gatehouse must not die of
// SIGPIPE but end the session: exit 70 (ExitGatewayFailure), the session
// stop event written, and the server's process group (a grandchild
// included) stopped.
func TestClientGoneEndsTheSession(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"audit ledger on", nil},
		{"no ledger", []string{"--no-ledger"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			dl := filepath.Join(dir, "d.jsonl")
			src := "gatehouse://e2e/faults"
			pidfile := filepath.Join(dir, "grandchild.pid")
			args := append([]string{"wrap", "--shutdown-grace", "300ms", "--decision-log", dl, "--event-source", src}, tc.flags...)
			args = append(args, "--", fakeServerBin, "--grandchild", pidfile)
			cmd := exec.Command(gatehouseBin, args...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stdout = w
			stderr := &lockedBuffer{}
			cmd.Stderr = stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			w.Close()
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			t.Cleanup(func() {
				select {
				case <-done:
				default:
					_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
					<-done
				}
				if t.Failed() {
					t.Logf("stderr:\n%s", stderr.String())
				}
			})
			grandchild := harness.WaitPID(t, pidfile, 10*time.Second)
			t.Cleanup(func() { _ = syscall.Kill(grandchild, syscall.SIGKILL) })

			r.Close() // the client goes away
			// The answer to this request is the gateway's first write to
			// the closed pipe.
			_, _ = io.WriteString(stdin, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"0"}}}`+"\n")
			select {
			case <-done:
			case <-time.After(exitTimeout):
				t.Fatalf("gatehouse did not exit within %v of the client going away", exitTimeout)
			}
			ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if ws.Signaled() {
				t.Fatalf("gatehouse died of signal %v", ws.Signal())
			}
			if code := ws.ExitStatus(); code != 70 {
				t.Errorf("exit code %d, want 70 (ExitGatewayFailure)", code)
			}
			events := readDecisionLog(t, dl, src)
			decisions(t, events, true)
			last := events[len(events)-1]
			if last.Type != typeSessionStop || !strings.Contains(string(last.DataRaw), `"reason":"gateway_failure"`) || !strings.Contains(string(last.DataRaw), `"exit_code":70`) {
				t.Errorf("last event %s %s, want the session stop with gateway_failure and 70", last.Type, last.DataRaw)
			}
			if !waitFor(5*time.Second, func() bool { return !harness.Alive(grandchild) }) {
				t.Errorf("the server's grandchild %d outlived gatehouse", grandchild)
			}
		})
	}
}
