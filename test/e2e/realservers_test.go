package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// codeDenied is the JSON-RPC error code of a tools/call denied by policy.
const codeDenied = -32080

// denyRule is the rule of examples/policies/readonly-agent.yaml that denies
// non-read-only tools to role readonly_agent.
const denyRule = "readonly_agent_no_mutating_tools"

// sdkSession connects the Go SDK client to `gatehouse wrap ARGS... -- SERVER`
// and returns the session and the gatehouse command (to read its exit
// status after Close).
func sdkSession(t *testing.T, ctx context.Context, version string, opts *mcp.ClientOptions, wrapArgs ...string) (*mcp.ClientSession, *exec.Cmd, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(gatehouseBin, append([]string{"wrap"}, wrapArgs...)...)
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "gatehouse-e2e", Version: "0.0.1"}, opts)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("Go SDK client: connecting through gatehouse: %v\ngatehouse stderr:\n%s", err, stderr)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil && cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("gatehouse stderr:\n%s", stderr)
		}
	})
	return cs, cmd, stderr
}

// toolsByName lists every tool (all pages) through the session.
func toolsByName(t *testing.T, ctx context.Context, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	out := map[string]*mcp.Tool{}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list through gatehouse: %v", err)
		}
		out[tool.Name] = tool
	}
	return out
}

// textOf returns the concatenated text content of a tool result.
func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// requireDenied checks that err is gatehouse's JSON-RPC deny error naming rule.
func requireDenied(t *testing.T, res *mcp.CallToolResult, err error, rule string) {
	t.Helper()
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		t.Fatalf("call was not denied with a JSON-RPC error: result %+v, err %v", res, err)
	}
	if werr.Code != codeDenied || !strings.Contains(werr.Message, rule) {
		t.Fatalf("deny error: code %d message %q; want code %d naming rule %s", werr.Code, werr.Message, codeDenied, rule)
	}
}

// closeSession closes the client session and checks that gatehouse exited 0.
func closeSession(t *testing.T, cs *mcp.ClientSession, cmd *exec.Cmd) {
	t.Helper()
	if err := cs.Close(); err != nil {
		t.Errorf("closing the session (gatehouse's exit): %v", err)
	}
	if cmd.ProcessState == nil {
		t.Fatalf("gatehouse has not exited after Close")
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("gatehouse exit code %d, want 0 (the server's own)", code)
	}
}

// checkDecision compares a decision event with what the test expects.
func checkDecision(t *testing.T, d decisionData, tool, decision, rule, strongID string) {
	t.Helper()
	if d.Tool != tool || d.Decision != decision {
		t.Errorf("decision %s/%s, want %s/%s", d.Tool, d.Decision, tool, decision)
	}
	if rule != "" && d.MatchedRule != rule {
		t.Errorf("%s: matched_rule %q, want %q", tool, d.MatchedRule, rule)
	}
	if decision == "deny" && d.Reason == "" {
		t.Errorf("%s: deny without a reason", tool)
	}
	if d.RPCIDPresent == nil || !*d.RPCIDPresent {
		t.Errorf("%s: rpc_id_present is not true", tool)
	}
	var num json.Number
	if err := json.Unmarshal(d.RPCID, &num); err != nil {
		t.Errorf("%s: rpc_id %s is not the number the Go SDK sends", tool, d.RPCID)
	}
	if strongID != "" {
		if d.ToolCallID != strongID || d.ToolCallIDStrength != "strong" {
			t.Errorf("%s: tool_call_id %q (%s), want %q (strong)", tool, d.ToolCallID, d.ToolCallIDStrength, strongID)
		}
	} else if d.ToolCallID != "req_"+string(d.RPCID) || d.ToolCallIDStrength != "weak" {
		t.Errorf("%s: tool_call_id %q (%s), want %q (weak)", tool, d.ToolCallID, d.ToolCallIDStrength, "req_"+string(d.RPCID))
	}
}

// TestGoSDKFilesystem drives the real filesystem server through gatehouse
// with the Go SDK client, once per protocol revision the client may choose.
func TestGoSDKFilesystem(t *testing.T) {
	fsBin := npmBin(t, "mcp-server-filesystem")
	policy := examplePolicy(t, "readonly-agent.yaml")
	for _, version := range []string{"", "2025-11-25", "2025-06-18"} {
		name := version
		if name == "" {
			name = "sdk-default"
		}
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			dir := t.TempDir()
			data := filepath.Join(dir, "data")
			if err := os.Mkdir(data, 0o755); err != nil {
				t.Fatal(err)
			}
			const content = "hello from the e2e test\nsecond line\n"
			hello := writeFile(t, data, "hello.txt", content)
			target := filepath.Join(data, "written.txt")
			dl := filepath.Join(dir, "decisions.jsonl")
			src := "gatehouse://e2e/gosdk-filesystem"

			cs, cmd, _ := sdkSession(t, ctx, version, nil,
				"--policy", policy, "--role", "readonly_agent",
				"--decision-log", dl, "--event-source", src,
				"--", fsBin, data)
			if version != "" {
				if got := cs.InitializeResult().ProtocolVersion; got != version {
					t.Errorf("negotiated protocol version %q, want %q", got, version)
				}
			}

			tools := toolsByName(t, ctx, cs)
			for _, n := range []string{"read_text_file", "write_file", "list_directory"} {
				if tools[n] == nil {
					t.Fatalf("tools/list through gatehouse lacks %s; got %d tools", n, len(tools))
				}
			}
			if a := tools["write_file"].Annotations; a == nil || a.ReadOnlyHint {
				t.Errorf("write_file annotations did not come through: %+v", a)
			}
			if a := tools["read_text_file"].Annotations; a == nil || !a.ReadOnlyHint {
				t.Errorf("read_text_file annotations did not come through: %+v", a)
			}

			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": hello}})
			if err != nil || res.IsError {
				t.Fatalf("read_text_file through gatehouse: %v %+v", err, res)
			}
			if got := textOf(res); got != content {
				t.Errorf("read_text_file returned %q, want %q", got, content)
			}

			// The same read with a caller-supplied tool call id.
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{
				Meta: mcp.Meta{"tool_call_id": "toolu_e2e_01"},
				Name: "read_text_file", Arguments: map[string]any{"path": hello},
			})
			if err != nil || res.IsError || textOf(res) != content {
				t.Fatalf("read_text_file with _meta.tool_call_id: %v %+v", err, res)
			}

			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": target, "content": "must not be written"}})
			requireDenied(t, res, err, denyRule)
			if fileExists(target) {
				t.Fatalf("%s was created: the denied write reached the server", target)
			}

			closeSession(t, cs, cmd)

			ds := decisions(t, readDecisionLog(t, dl, src), true)
			if len(ds) != 3 {
				t.Fatalf("%d decision events, want 3: %+v", len(ds), ds)
			}
			checkDecision(t, ds[0], "read_text_file", "allow", "", "")
			checkDecision(t, ds[1], "read_text_file", "allow", "", "toolu_e2e_01")
			checkDecision(t, ds[2], "write_file", "deny", denyRule, "")
		})
	}
}

// TestGoSDKEverything drives the real "everything" server through gatehouse
// with the Go SDK client: plain calls, progress notifications relayed from
// the server, and a denied mutating tool.
func TestGoSDKEverything(t *testing.T) {
	evBin := npmBin(t, "mcp-server-everything")
	policy := examplePolicy(t, "readonly-agent.yaml")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	dl := filepath.Join(dir, "decisions.jsonl")
	src := "gatehouse://e2e/gosdk-everything"

	var mu sync.Mutex
	var progress []float64
	opts := &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			if req.Params.ProgressToken == "e2e-progress" {
				mu.Lock()
				progress = append(progress, req.Params.Progress)
				mu.Unlock()
			}
		},
	}
	cs, cmd, _ := sdkSession(t, ctx, "", opts,
		"--policy", policy, "--role", "readonly_agent",
		"--decision-log", dl, "--event-source", src,
		"--", evBin)

	tools := toolsByName(t, ctx, cs)
	for _, n := range []string{"echo", "get-sum", "trigger-long-running-operation", "toggle-simulated-logging"} {
		if tools[n] == nil {
			t.Fatalf("tools/list through gatehouse lacks %s; got %v", n, slices.Sorted(func(yield func(string) bool) {
				for k := range tools {
					if !yield(k) {
						return
					}
				}
			}))
		}
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "through the gatehouse"}})
	if err != nil || res.IsError || !strings.Contains(textOf(res), "through the gatehouse") {
		t.Fatalf("echo: %v %+v", err, res)
	}

	params := &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 1, "steps": 3}}
	params.SetProgressToken("e2e-progress")
	res, err = cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("trigger-long-running-operation: %v %+v", err, res)
	}
	mu.Lock()
	got := slices.Clone(progress)
	mu.Unlock()
	if len(got) == 0 {
		t.Errorf("no progress notification reached the client through gatehouse")
	}

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "toggle-simulated-logging"})
	requireDenied(t, res, err, denyRule)

	closeSession(t, cs, cmd)
	ds := decisions(t, readDecisionLog(t, dl, src), true)
	if len(ds) != 3 {
		t.Fatalf("%d decision events, want 3: %+v", len(ds), ds)
	}
	checkDecision(t, ds[0], "echo", "allow", "", "")
	checkDecision(t, ds[1], "trigger-long-running-operation", "allow", "", "")
	checkDecision(t, ds[2], "toggle-simulated-logging", "deny", denyRule, "")
}

// inspectorRun runs scripts/inspector with the given inspector options in
// front of `gatehouse wrap WRAPARGS...` and returns its exit code, stdout
// and stderr.
func inspectorRun(t *testing.T, opts []string, wrapArgs ...string) (int, string, string) {
	t.Helper()
	script := inspectorScript(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append(slices.Clone(opts), "--", gatehouseBin, "wrap")
	args = append(args, wrapArgs...)
	cmd := exec.CommandContext(ctx, script, args...)
	cmd.Dir = t.TempDir() // the wrapper must not depend on the caller's directory
	var stdout, stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("inspector timed out\nstderr:\n%s", stderr.String())
	}
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("running inspector: %v", err)
		}
		code = ee.ExitCode()
	}
	return code, stdout.String(), stderr.String()
}

// TestInspector drives real servers through gatehouse with the real
// mcp-inspector-cli client, one client process (and one gatehouse session,
// with its own decision log) per step.
func TestInspector(t *testing.T) {
	fsBin := npmBin(t, "mcp-server-filesystem")
	evBin := npmBin(t, "mcp-server-everything")
	policy := examplePolicy(t, "readonly-agent.yaml")
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	const content = "inspected through gatehouse\n"
	hello := writeFile(t, data, "hello.txt", content)
	target := filepath.Join(data, "pwned.txt")

	tests := []struct {
		name       string
		server     []string
		opts       []string
		wantCode   int    // inspector's exit code: 0, or 1 for a failed call
		wantOut    string // in stdout
		wantErr    string // in stderr
		wantTool   string // the one decision event's tool ("" for none)
		wantAction string
		wantRule   string
	}{
		{
			name:    "filesystem tools/list",
			server:  []string{fsBin, data},
			opts:    []string{"--method", "tools/list"},
			wantOut: `"read_text_file"`,
		},
		{
			name:       "filesystem read allowed",
			server:     []string{fsBin, data},
			opts:       []string{"--method", "tools/call", "--tool-name", "read_text_file", "--tool-arg", "path=" + hello},
			wantOut:    `"text": "inspected through gatehouse\n"`,
			wantTool:   "read_text_file",
			wantAction: "allow",
		},
		{
			name:       "filesystem write denied",
			server:     []string{fsBin, data},
			opts:       []string{"--method", "tools/call", "--tool-name", "write_file", "--tool-arg", "path=" + target, "--tool-arg", "content=pwned"},
			wantCode:   1,
			wantErr:    "MCP error -32080",
			wantTool:   "write_file",
			wantAction: "deny",
			wantRule:   denyRule,
		},
		{
			name:       "everything echo allowed",
			server:     []string{evBin},
			opts:       []string{"--method", "tools/call", "--tool-name", "echo", "--tool-arg", "message=hi there"},
			wantOut:    "hi there",
			wantTool:   "echo",
			wantAction: "allow",
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dl := filepath.Join(dir, "decisions-"+string(rune('a'+i))+".jsonl")
			src := "gatehouse://e2e/inspector"
			wrap := append([]string{"--policy", policy, "--role", "readonly_agent", "--decision-log", dl, "--event-source", src, "--"}, tt.server...)
			code, stdout, stderr := inspectorRun(t, tt.opts, wrap...)
			if code != tt.wantCode {
				t.Fatalf("inspector exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, stdout, stderr)
			}
			if !strings.Contains(stdout, tt.wantOut) {
				t.Errorf("inspector stdout lacks %q:\n%s", tt.wantOut, stdout)
			}
			if !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("inspector stderr lacks %q:\n%s", tt.wantErr, stderr)
			}
			if tt.wantErr != "" && !strings.Contains(stderr, denyRule) {
				t.Errorf("the deny message does not name the rule %s:\n%s", denyRule, stderr)
			}
			if fileExists(target) {
				t.Fatalf("%s exists: a denied write went through", target)
			}
			// The inspector kills its server on exit, so gatehouse may not
			// have written its stop event: do not require it.
			ds := decisions(t, readDecisionLog(t, dl, src), false)
			if tt.wantTool == "" {
				if len(ds) != 0 {
					t.Errorf("unexpected decision events: %+v", ds)
				}
				return
			}
			if len(ds) != 1 {
				t.Fatalf("%d decision events, want 1: %+v", len(ds), ds)
			}
			checkDecision(t, ds[0], tt.wantTool, tt.wantAction, tt.wantRule, "")
		})
	}
}
