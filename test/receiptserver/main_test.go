package main

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/evidence"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
)

// Fixed test keys (the Ed25519 seed is RFC 8032 §7.1 TEST 1).
const (
	seedHex = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
	secret  = "receiptserver-test-hmac-secret"
)

func testKeys() evidence.Keys {
	seed, _ := hex.DecodeString(seedHex)
	return evidence.Keys{
		HMAC:    map[string][]byte{"receiptserver": []byte(secret)},
		Ed25519: map[string]ed25519.PublicKey{"receiptserver": ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)},
	}
}

func mustConfig(t *testing.T, args ...string) config {
	t.Helper()
	c, err := parseFlags(args)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// response is one JSON-RPC response line.
type response struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code int `json:"code"`
	} `json:"error"`
}

// exchange runs the server on lines and returns the response lines.
func exchange(t *testing.T, cfg config, lines ...string) []response {
	t.Helper()
	var out bytes.Buffer
	if err := run(cfg, strings.NewReader(strings.Join(lines, "\n")+"\n"), &out); err != nil {
		t.Fatal(err)
	}
	var rs []response
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var r response
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("bad line %s: %v", sc.Bytes(), err)
		}
		rs = append(rs, r)
	}
	return rs
}

func call(id, tool, args string) string {
	p := `{"name":"` + tool + `"`
	if args != "" {
		p += `,"arguments":` + args
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":` + p + `}}`
}

// TestReceipts checks every tool's receipt the way the gateway will:
// Find, Parse, Verify, Conflicts against the facts of the call.
func TestReceipts(t *testing.T) {
	type want struct {
		found     bool
		key       string
		status    evidence.Status
		conflicts []string
	}
	ok := func(key string) want { return want{true, key, evidence.StatusOK, nil} }
	tests := []struct {
		name  string
		args  []string
		keys  evidence.Keys
		tools map[string]want
	}{
		{"ed25519", []string{"--ed25519-seed-hex", seedHex}, testKeys(), map[string]want{
			"signed_ok":        ok(evidence.ReceiptKey),
			"unsigned":         {true, evidence.ReceiptKey, evidence.StatusUnsigned, nil},
			"bad_signature":    {true, evidence.ReceiptKey, evidence.StatusTampered, nil},
			"conflicting":      {true, evidence.ReceiptKey, evidence.StatusUnsigned, []string{evidence.ConflictServerID, evidence.ConflictToolName, evidence.ConflictInputHash}},
			"legacy_interlock": ok("interlock"),
			"none":             {false, "", evidence.StatusEmpty, nil},
		}},
		{"hmac", []string{"--hmac-secret", secret}, testKeys(), map[string]want{
			"signed_ok":        ok(evidence.ReceiptKey),
			"bad_signature":    {true, evidence.ReceiptKey, evidence.StatusTampered, nil},
			"legacy_interlock": ok("interlock"),
		}},
		{"both keys, hmac chosen", []string{"--hmac-secret", secret, "--ed25519-seed-hex", seedHex, "--alg", "hmac-sha256"}, testKeys(), map[string]want{
			"signed_ok": ok(evidence.ReceiptKey),
		}},
		{"gateway without keys", []string{"--ed25519-seed-hex", seedHex}, evidence.Keys{}, map[string]want{
			"signed_ok":     {true, evidence.ReceiptKey, evidence.StatusUnknown, nil},
			"bad_signature": {true, evidence.ReceiptKey, evidence.StatusUnknown, nil},
		}},
		{"server without keys", nil, testKeys(), map[string]want{
			"unsigned":         {true, evidence.ReceiptKey, evidence.StatusUnsigned, nil},
			"legacy_interlock": {true, "interlock", evidence.StatusUnsigned, nil},
			"bad_signature":    {true, evidence.ReceiptKey, evidence.StatusTampered, nil}, // built-in secret vs configured one
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mustConfig(t, append(tt.args, "--now", "2026-05-19T08:15:30Z")...)
			const args = `{"path":"/tmp/x","n":1.0}`
			lines := []string{`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"clientInfo":{"name":"test-client"}}}`}
			var order []string
			for tool := range tt.tools {
				order = append(order, tool)
				lines = append(lines, call(`"`+tool+`"`, tool, args))
			}
			rs := exchange(t, cfg, lines...)
			if len(rs) != len(lines) {
				t.Fatalf("%d responses to %d requests", len(rs), len(lines))
			}
			inputHash, _ := evidence.InputHash([]byte(args))
			var prev string
			for i, tool := range order {
				w := tt.tools[tool]
				res := rs[i+1]
				if res.Error != nil {
					t.Fatalf("%s: error %d", tool, res.Error.Code)
				}
				raw, key, found := evidence.Find(res.Result, evidence.DefaultReceiptKeys)
				if found != w.found || key != w.key {
					t.Fatalf("%s: Find = %v %q", tool, found, key)
				}
				r, problems, err := evidence.Parse(raw)
				if found && (err != nil || problems != nil) {
					t.Fatalf("%s: Parse: %v %v", tool, problems, err)
				}
				if s := evidence.Verify(raw, r, tt.keys); s != w.status {
					t.Errorf("%s: Verify = %s, want %s", tool, s, w.status)
				}
				if !found {
					continue
				}
				stripped, err := evidence.WithoutReceipt(res.Result, key)
				if err != nil {
					t.Fatal(err)
				}
				outputHash, _ := evidence.Hash(stripped)
				facts := evidence.CallFacts{ServerID: "receiptserver", ToolName: tool, ToolCallID: "req_" + tool,
					InputHash: inputHash, OutputHash: outputHash, ArgumentKeys: []string{"path", "n"}}
				if c := evidence.Conflicts(r, facts); !reflect.DeepEqual(c, w.conflicts) {
					t.Errorf("%s: Conflicts = %q, want %q", tool, c, w.conflicts)
				}
				if r.ClientID != "test-client" || r.IssuedAt != "2026-05-19T08:15:30.000Z" {
					t.Errorf("%s: client_id %q issued_at %q", tool, r.ClientID, r.IssuedAt)
				}
				// The receipts form a hash chain in emission order.
				if r.PreviousHash != prev {
					t.Errorf("%s: previous_hash %q, want %q", tool, r.PreviousHash, prev)
				}
				prev, _ = evidence.Hash(raw)
			}
		})
	}
}

func TestToolsList(t *testing.T) {
	rs := exchange(t, mustConfig(t), `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	var result struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(rs[0].Result, &result); err != nil {
		t.Fatal(err)
	}
	if len(result.Tools) != len(toolNames) {
		t.Fatalf("%d tools", len(result.Tools))
	}
	for _, raw := range result.Tools {
		var tool mcp.Tool
		if err := json.Unmarshal(raw, &tool); err != nil {
			t.Fatal(err)
		}
		declRaw, found := evidence.FindToolDeclaration(raw)
		if !found {
			t.Fatalf("%s: no declaration", tool.Name)
		}
		d, problems, err := evidence.ParseDeclaration(declRaw)
		if err != nil || problems != nil {
			t.Fatalf("%s: %v %v", tool.Name, problems, err)
		}
		schemaHash, _ := evidence.Hash(tool.InputSchema)
		descHash, _ := evidence.DescriptionHash(tool.Description)
		if d.ToolSchemaHash != schemaHash || d.ToolDescriptionHash != descHash {
			t.Errorf("%s: declaration hashes do not match the definition", tool.Name)
		}
		it := evidence.Normalize(evidence.IntentInput{Declaration: d, Tool: &tool})
		if it.SideEffect != "read_only" || it.Externality != "internal" || evidence.Confidence(it, 0) != 0.85 {
			t.Errorf("%s: intent %+v", tool.Name, it)
		}
	}
}

func TestProtocol(t *testing.T) {
	big := strings.Repeat("x", 3<<20)
	rs := exchange(t, mustConfig(t),
		`{"jsonrpc":"2.0","id":12345678901234567890,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1.0e2,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"s","method":"resources/list"}`,
		`not json`,
		call(`7`, "nope", ""),
		call(`8`, "signed_ok", ""), // no key configured
		call(`9`, "unsigned", `{"text":"`+big+`"}`),
		`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"unsigned","_meta":{"claudecode/toolUseId":"toolu_01"}}}`,
		`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"unsigned","_meta":{"tool_call_id":"req_forged"}}}`,
		call(`12`, "none", ""),
	)
	wantIDs := []string{`12345678901234567890`, `1.0e2`, `"s"`, `null`, `7`, `8`, `9`, `10`, `11`, `12`}
	if len(rs) != len(wantIDs) {
		t.Fatalf("%d responses", len(rs))
	}
	for i, r := range rs {
		if string(r.ID) != wantIDs[i] {
			t.Errorf("response %d id %s, want %s", i, r.ID, wantIDs[i])
		}
	}
	codes := map[int]int{2: codeMethodNotFound, 3: codeParseError, 4: codeInvalidParams, 5: codeInvalidParams}
	for i, code := range codes {
		if rs[i].Error == nil || rs[i].Error.Code != code {
			t.Errorf("response %d: error %+v, want %d", i, rs[i].Error, code)
		}
	}
	receiptOf := func(res json.RawMessage) *evidence.ServerReceipt {
		raw, _, _ := evidence.Find(res, evidence.DefaultReceiptKeys)
		r, _, _ := evidence.Parse(raw)
		return r
	}
	if r := receiptOf(rs[6].Result); r == nil || !reflect.DeepEqual(r.ArgumentKeys, []string{"text"}) {
		t.Errorf("3 MiB call: %+v", r)
	}
	if r := receiptOf(rs[7].Result); r == nil || r.ToolCallID != "toolu_01" {
		t.Errorf("caller tool-use id not used: %+v", r)
	}
	if r := receiptOf(rs[8].Result); r == nil || r.ToolCallID != "req_11" {
		t.Errorf("req_ tool-use id accepted: %+v", r)
	}
	if string(rs[9].Result) != `{"content":[{"text":"none ok","type":"text"}]}` {
		t.Errorf("none: %s", rs[9].Result)
	}
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--ed25519-seed-hex", "abcd"},
		{"--alg", "ed25519"},
		{"--alg", "hmac-sha256"},
		{"--alg", "rsa", "--hmac-secret", "x"},
		{"--now", "yesterday"},
		{"--server-id", ""},
		{"extra"},
	} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("parseFlags(%q) succeeded", args)
		}
	}
	c := mustConfig(t, "--hmac-secret", "s", "--ed25519-seed-hex", seedHex)
	if c.alg != evidence.AlgEd25519 {
		t.Errorf("default alg with both keys = %s", c.alg)
	}
}

// TestBinary builds the command and runs one signed call through it.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := filepath.Join(t.TempDir(), "receiptserver")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--ed25519-seed-hex", seedHex)
	cmd.Stdin = strings.NewReader(call(`1`, "signed_ok", `{"a":1}`) + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	var r response
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	raw, _, _ := evidence.Find(r.Result, evidence.DefaultReceiptKeys)
	p, _, _ := evidence.Parse(raw)
	if s := evidence.Verify(raw, p, testKeys()); s != evidence.StatusOK {
		t.Errorf("Verify = %s", s)
	}
	if !strings.Contains(stderr.String(), "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=") {
		t.Errorf("stderr: %s", stderr.String())
	}
}
